import MeowCareCluster
import MeowHistory
import MeowWire
import Synchronization

extension RunEngine {
    // MARK: Steps

    func runStep(actorIndex: Int, position: Int) async throws {
        let actor = flow.actors[actorIndex]
        let step = actor.steps[position]
        let global = flow.globalStepIndexes[actorIndex] + position
        let name = actor.device
        let device = try cluster.device(named: name)
        let reachesCloud = Self.usesMirror(step)
        if reachesCloud { try await settleRequests(before: name) }
        let firstEntry = history.count
        defer { if reachesCloud, history.count > firstEntry { awaitingRequests[name] = history.count - 1 } }
        switch step.kind {
        case let .insert(object, entity, fields, values, share):
            var params: [String: JSONValue] = ["entity": .string(entity), "uuid": .string(uuids[object] ?? "")]
            let written = freshValues(entity: entity, fields: fields, explicit: values, actor: name)
            params["values"] = .object(written)
            var zone: (zoneName: String, owner: String)?
            if let share {
                guard let known = zones[share] else { return notReady(global, name, HistoryOp.insert, .object(params), "share \(share) is not created yet") }
                zone = known
                params["store"] = .string(known.owner == users[name] ? "private" : "shared")
            }
            await trySetClock(name)
            params["stamp"] = .double(stamp(name))
            let storeName = zone.flatMap { $0.owner == users[name] ? nil : bench.sharedStoreName }
            await record(step: global, actor: name, op: HistoryOp.insert, params: .object(params)) { () throws(MeowCareError) -> JSONValue in
                try await self.inContext(name) { context throws(MeowCareError) -> JSONValue in
                    let temporary = try await context.insert(entity, written, store: storeName, uuid: self.uuids[object], zone: zone?.zoneName, zoneOwner: zone?.owner)
                    let saved = try await context.save()
                    let inserted = saved.inserted?.first { $0.temporaryID == temporary }
                    if let inserted, let uuid = self.uuids[object] { self.ids[name, default: [:]][uuid] = inserted.objectID }
                    return ["store": .string(inserted.map { self.bench.storeScopes[$0.store] ?? $0.store } ?? "private")]
                }
            }
            dirty.insert(name)
        case let .update(object, fields, values):
            guard let entity = entities[object] else { return notReady(global, name, HistoryOp.update, [:], "object \(object) is never inserted") }
            let written = freshValues(entity: entity, fields: fields, explicit: values, actor: name)
            let params: JSONValue = ["entity": .string(entity), "uuid": .string(uuids[object] ?? ""), "values": .object(written), "stamp": .double(stamp(name))]
            await writeExisting(global, name, device, object, HistoryOp.update, params) { context, id throws(MeowCareError) in
                _ = try await context.set(id, written)
            }
        case let .delete(object):
            guard let entity = entities[object] else { return notReady(global, name, HistoryOp.delete, [:], "object \(object) is never inserted") }
            let params: JSONValue = ["entity": .string(entity), "uuid": .string(uuids[object] ?? ""), "stamp": .double(stamp(name))]
            await writeExisting(global, name, device, object, HistoryOp.delete, params) { context, id throws(MeowCareError) in
                try await context.delete(id)
            }
        case let .link(object, relationship, to):
            guard let entity = entities[object] else { return notReady(global, name, HistoryOp.link, [:], "object \(object) is never inserted") }
            let params: JSONValue = ["entity": .string(entity), "uuid": .string(uuids[object] ?? ""), "relationship": .string(relationship),
                                     "to": to.flatMap { uuids[$0] }.map { .string($0) } ?? .null, "stamp": .double(stamp(name))]
            await writeExisting(global, name, device, object, HistoryOp.link, params) { context, id throws(MeowCareError) in
                var target: JSONValue = .null
                if let to {
                    guard let targetID = try await self.objectID(of: to, on: device) else {
                        throw MeowCareError(ErrorCode("stepNotReady"), "\(to) is not on \(name) (not fetched yet, or deleted).", service: "explorer")
                    }
                    target = .string(targetID)
                }
                _ = try await context.set(id, [relationship: target])
            }
        case let .shareCreate(share):
            guard let spec = flow.shares.first(where: { $0.name == share }), let entity = entities[spec.root] else {
                return notReady(global, name, HistoryOp.shareCreate, [:], "the flow has no share \(share) with an inserted root")
            }
            let participants = spec.participants.map { JSONValue.object(["user": .string($0.user), "permission": .string($0.permission)]) }
            let params: JSONValue = ["entity": .string(entity), "uuid": .string(uuids[spec.root] ?? ""), "participants": .array(participants)]
            let owner = users[name] ?? actor.user
            let result = await record(step: global, actor: name, op: HistoryOp.shareCreate, params: params) { () throws(MeowCareError) -> JSONValue in
                guard let root = try await self.objectID(of: spec.root, on: device) else {
                    throw MeowCareError(ErrorCode("stepNotReady"), "\(spec.root) is not on \(name) (not fetched yet, or deleted).", service: "explorer")
                }
                let created = try await device.share.create(root, participants: spec.participants.map { ($0.user, SharePermission(rawValue: $0.permission) ?? .readOnly) })
                self.zones[share] = (created.zoneName, owner)
                self.zoneAliases[created.zoneName] = "com.apple.coredata.cloudkit.share." + Self.seededUUID(seed: self.mode.seed, name: "share:" + share)
                return ["zoneName": .string(created.zoneName)]
            }
            if result.result != nil { cloudChanged(by: name) }
        case let .shareAccept(share):
            await shareOp(global, name, share, HistoryOp.shareAccept, ownerParam: true) { zone throws(MeowCareError) in
                _ = try await device.share.accept(zoneName: zone.zoneName, ownerName: zone.owner)
            }
        case let .shareLeave(share):
            await shareOp(global, name, share, HistoryOp.shareLeave, ownerParam: true) { zone throws(MeowCareError) in
                _ = try await device.share.leave(zoneName: zone.zoneName, ownerName: zone.owner)
            }
        case let .shareStop(share):
            await shareOp(global, name, share, HistoryOp.shareStop, ownerParam: false) { zone throws(MeowCareError) in
                _ = try await device.share.stop(zoneName: zone.zoneName)
            }
        case let .addParticipant(share, user, permission):
            await shareOp(global, name, share, HistoryOp.sharePermission, ownerParam: false,
                          extra: ["user": .string(user), "permission": .string(permission), "add": true]) { zone throws(MeowCareError) in
                _ = try await device.share.invite(user, permission: SharePermission(rawValue: permission) ?? .readOnly, zoneName: zone.zoneName)
            }
        case let .setPermission(share, user, permission):
            await shareOp(global, name, share, HistoryOp.sharePermission, ownerParam: false,
                          extra: ["user": .string(user), "permission": .string(permission)]) { zone throws(MeowCareError) in
                _ = try await device.share.setPermission(user, SharePermission(rawValue: permission) ?? .readOnly, zoneName: zone.zoneName)
            }
        case let .removeParticipant(share, user):
            await shareOp(global, name, share, HistoryOp.shareRemove, ownerParam: false, extra: ["user": .string(user)]) { zone throws(MeowCareError) in
                _ = try await device.share.removeParticipant(user, zoneName: zone.zoneName)
            }
        case let .accountSwitch(user):
            let credential = cluster.cloud.credentials[user]
            let result = await record(step: global, actor: name, op: HistoryOp.accountSwitch, params: ["device": .string(name), "user": .string(user)]) {
                () throws(MeowCareError) -> JSONValue in
                _ = try await device.account.signOut()
                return .string(try await device.account.signIn(credential: credential))
            }
            if result.result != nil {
                users[name] = user
                ids[name] = nil
                dirty.remove(name)
                pushes.remove(name)
                fetchedVersion[name] = 0
            }
        case let .custom(stepName, params):
            guard let body = step.body ?? flow.boundSteps[stepName] else {
                return notReady(global, name, HistoryOp.customPrefix + stepName, params, "custom step \(stepName) has no code")
            }
            let context = StepContext(device: device, cluster: cluster, actor: name, user: users[name] ?? actor.user, params: params, seed: mode.seed,
                                      memory: memory(of: name), uuids: uuids, entities: entities, zones: zones)
            await trySetClock(name)
            let invoke = nextTick()
            do {
                let result = try await body(context)
                append(step: global, actor: name, user: users[name], op: HistoryOp.customPrefix + stepName, params: params, invoke: invoke,
                       complete: nextTick(), outcome: .ok(result))
            } catch let error as MeowCareError {
                append(step: global, actor: name, user: users[name], op: HistoryOp.customPrefix + stepName, params: params, invoke: invoke,
                       complete: Self.isUnseen(error) ? nil : nextTick(), outcome: Self.outcome(error))
            } catch {
                append(step: global, actor: name, user: users[name], op: HistoryOp.customPrefix + stepName, params: params, invoke: invoke,
                       complete: nextTick(), outcome: .fail(code: "customStepFailed", message: "\(error)"))
            }
            // A team's step may save, send or fetch: the device may have something to send, and others news.
            dirty.insert(name)
            cloudChanged(by: name)
        }
    }

    /// The clock set before a write: a failure here (a dead device) shows as the failure of
    /// the step's own request, which follows.
    func trySetClock(_ device: String) async {
        try? await setClock(device)
    }

    var sharedStoreName: String? { bench.sharedStoreName }

    /// A fresh value for each field (unique in the run, so any value seen names its write),
    /// and the explicit values as given.
    func freshValues(entity: String, fields: [String], explicit: [String: JSONValue], actor: String) -> [String: JSONValue] {
        var values = explicit
        for field in fields {
            writeSeq += 1
            let type = bench.model.entities[entity]?.attributes[field] ?? "string"
            switch type {
            case "integer16", "integer32", "integer64", "int16", "int32", "int64", "integer": values[field] = .int(writeSeq)
            case "double", "float", "decimal": values[field] = .double(Double(writeSeq) + 0.5)
            case "date": values[field] = .double(Self.baseTime + Double(writeSeq))
            case "boolean", "bool": values[field] = .bool(writeSeq % 2 == 0)
            default: values[field] = .string("\(field)·\(actor)·w\(writeSeq)")
            }
        }
        return values
    }

    /// The object's ID on the device: remembered from an earlier step, else looked up by UUID.
    func objectID(of object: String, on device: MeowDevice, fresh: Bool = false) async throws(MeowCareError) -> String? {
        guard let uuid = uuids[object], let entity = entities[object] else { return nil }
        if !fresh, let known = ids[device.name]?[uuid] { return known }
        let found = try await device.fetch(entity, where: "uuid == %@", [.string(uuid)]).first?.objectID
        ids[device.name, default: [:]][uuid] = found
        return found
    }

    /// Runs `body` in the device's context for this run (opened once, reset after each step
    /// so every step starts from the store as it is, as a fresh context would).
    func inContext<T>(_ name: String, _ body: (MeowContext) async throws(MeowCareError) -> T) async throws(MeowCareError) -> T {
        let context: MeowContext
        if let open = contexts[name] {
            context = open
        } else {
            context = try await cluster.device(named: name).openContext(name: "explore", mergePolicy: "mergeByPropertyObjectTrump")
            contexts[name] = context
        }
        do throws(MeowCareError) {
            let result = try await body(context)
            try await context.reset()
            return result
        } catch {
            if !Self.isUnseen(error) { try? await context.reset() }
            throw error
        }
    }

    /// A change to an object the device may or may not hold yet, in a context of its own.
    func writeExisting(_ global: Int, _ name: String, _ device: MeowDevice, _ object: String, _ op: String, _ params: JSONValue,
                       _ change: @escaping (MeowContext, String) async throws(MeowCareError) -> Void) async {
        await record(step: global, actor: name, op: op, params: params) { () throws(MeowCareError) -> JSONValue in
            // A remembered ID may name an object gone since (deleted, or left with its share): look again once.
            for fresh in [false, true] {
                guard let id = try await self.objectID(of: object, on: device, fresh: fresh) else {
                    throw MeowCareError(ErrorCode("stepNotReady"), "\(object) is not on \(name) (not fetched yet, or deleted).", service: "explorer")
                }
                // The device's clock reads the step's stamp when it saves (set once the object is there).
                if !fresh { try await self.setClock(name) }
                do throws(MeowCareError) {
                    try await self.inContext(name) { context throws(MeowCareError) in
                        try await change(context, id)
                        _ = try await context.save()
                    }
                    return .object([:])
                } catch where error.code == ErrorCode("unknownObject") && !fresh {
                    continue
                }
            }
            return .object([:])
        }
        dirty.insert(name)
    }

    func shareOp(_ global: Int, _ name: String, _ share: String, _ op: String, ownerParam: Bool, extra: [String: JSONValue] = [:],
                 _ body: ((zoneName: String, owner: String)) async throws(MeowCareError) -> Void) async {
        guard let zone = zones[share] else {
            return notReady(global, name, op, .object(extra), "share \(share) is not created yet")
        }
        var params = extra
        params["zoneName"] = .string(zone.zoneName)
        if ownerParam { params["owner"] = .string(zone.owner) }
        let result = await record(step: global, actor: name, op: op, params: .object(params)) { () throws(MeowCareError) -> JSONValue in
            try await body(zone)
            return .object([:])
        }
        if result.result != nil { cloudChanged(by: name) }
    }

    /// A step that cannot run at its point (its object or share does not exist yet): recorded
    /// as failed, changing nothing.
    func notReady(_ global: Int, _ name: String, _ op: String, _ params: JSONValue, _ why: String) {
        let tick = nextTick()
        append(step: global, actor: name, user: users[name], op: op, params: params, invoke: tick, complete: tick,
               outcome: .fail(code: "stepNotReady", message: why))
    }

    /// Something reached the cloud: every other device has a push coming and news to fetch.
    func cloudChanged(by device: String) {
        cloudVersion += 1
        for other in devices where other != device { pushes.insert(other) }
    }

    // MARK: Sends, fetches, holds

    func send(_ device: String) async throws {
        guard let lane = bench.lane(device) else { return }
        try await settleRequests(before: device)
        // Only a device with changes needs its clock: it decides which retry-after deferrals are due.
        if dirty.contains(device) { try? await setClock(device) }
        let (index, result) = await record(actor: device, op: HistoryOp.send, params: [:]) { () throws(MeowCareError) -> JSONValue in
            try await lane.call("sync.send")
        }
        awaitingRequests[device] = index
        noteSent(device, result)
        try await reviveIfDead(device, after: index)
    }

    func noteSent(_ device: String, _ result: JSONValue?) {
        guard let result else { return }
        if (result["saved"]?.intValue ?? 0) + (result["deleted"]?.intValue ?? 0) > 0 { cloudChanged(by: device) }
        if (result["pending"]?.intValue ?? 0) == 0 { dirty.remove(device) }
    }

    func fetch(_ device: String, op: String) async throws {
        guard let lane = bench.lane(device) else { return }
        try await settleRequests(before: device)
        let version = cloudVersion
        let (index, result) = await record(actor: device, op: op, params: [:]) { () throws(MeowCareError) -> JSONValue in
            try await lane.call("sync.fetch")
        }
        awaitingRequests[device] = index
        if result != nil { fetchedVersion[device] = version }
        try await reviveIfDead(device, after: index)
        // A fetch that brought nothing leaves the device showing what it did plus its own
        // saves, which the history has: only a fetch that changed something is observed.
        if let result, options.observeAfterFetch, Self.changedSomething(result) { try await observe(device) }
    }

    static func changedSomething(_ fetch: JSONValue) -> Bool {
        (fetch["changedRecords"]?.intValue ?? 1) > 0 || (fetch["deletedRecords"]?.intValue ?? 1) > 0 || (fetch["merged"]?.intValue ?? 0) > 0
            || !(fetch["zonesRemoved"]?.arrayValue?.isEmpty ?? true) || !(fetch["zonesReset"]?.arrayValue?.isEmpty ?? true)
    }


    func release(_ device: String) async throws {
        guard let current = held, current.device == device else { return }
        held = nil
        _ = try await cluster.cloud.admin.releaseHeldRequests()
        let result = await current.task.value
        let entry: Int
        switch result {
        case let .success(value):
            entry = append(step: nil, actor: device, user: users[device], op: HistoryOp.send, params: [:], invoke: current.invoke,
                           complete: nextTick(), outcome: .ok(value))
            noteSent(device, value)
        case let .failure(error):
            // The device died holding the request open: released, it still runs in the cloud,
            // and is logged when it ends. Wait for that entry, so the log can settle the outcome.
            if Self.isUnseen(error) { try await awaitLogged(op: "records.modify", of: device, after: current.logSeq) }
            entry = append(step: nil, actor: device, user: users[device], op: HistoryOp.send, params: [:], invoke: current.invoke,
                           complete: Self.isUnseen(error) ? nil : nextTick(), outcome: Self.outcome(error))
        }
        awaitingRequests[device] = entry
        try await readLog()
        try await reviveIfDead(device, after: entry)
    }

    /// Reads the request log until `device`'s mirror has an `op` entry after `after` (at most
    /// about 5 s: a released request runs at once, so this is a few reads).
    func awaitLogged(op: String, of device: String, after: Int) async throws {
        let admin = cluster.cloud.admin
        for _ in 0..<1000 {
            let entries = try await admin.requestLog(after: after)
            if entries.contains(where: { $0["client"]?.stringValue == "store-service mirror (\(device))" && $0["op"]?.stringValue == op }) { return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: Faults

    func inject(_ fault: Fault) async throws {
        let admin = cluster.cloud.admin
        var params: [String: JSONValue] = ["kind": .string(fault.kind.rawValue)]
        if let device = fault.device { params["device"] = .string(device) }
        func arm(_ cloudFault: CloudFault) async {
            await record(actor: "explorer", op: HistoryOp.fault, params: .object(params)) { () throws(MeowCareError) -> JSONValue in
                .array(try await admin.injectFault(cloudFault))
            }
        }
        switch fault {
        case let .dropAfterCommit(device):
            await arm(CloudFault(op: "records.modify", user: users[device], count: 1, effect: .dropAfterCommit))
            try await send(device)
        case let .transient(device, code, retryAfter):
            params["code"] = .string(code)
            params["retryAfterSeconds"] = .int(retryAfter)
            await arm(CloudFault(code: ErrorCode(code), op: "records.modify", user: users[device], count: 1, retryAfterSeconds: Double(retryAfter)))
            try await send(device)
        case let .zoneBusy(device):
            params["code"] = "zoneBusy"
            await arm(CloudFault(code: ErrorCode("zoneBusy"), op: "records.modify", user: users[device], count: 1, retryAfterSeconds: 1))
            try await send(device)
        case let .hold(device):
            try await hold(device, params: params)
        case .tokenExpiry:
            await record(actor: "explorer", op: HistoryOp.fault, params: .object(params)) { () throws(MeowCareError) -> JSONValue in
                try await admin.expireChangeTokens()
                return .null
            }
        case let .clockJump(device, jump):
            skew[device, default: 0] += jump
            await record(actor: "explorer", op: HistoryOp.clock, params: ["device": .string(device), "now": .double(stamp(device))]) {
                () throws(MeowCareError) -> JSONValue in
                _ = try await self.cluster.device(named: device).setClock(now: self.stamp(device))
                return .null
            }
        case let .kill(device):
            try await kill(device, point: nil)
        case let .crash(device, point):
            try await kill(device, point: point)
        }
    }

    /// Hold-and-deliver: the device's send reaches the cloud and waits there, undecided, while
    /// other choices run; `release` lets it through.
    func hold(_ device: String, params: [String: JSONValue]) async throws {
        guard let lane = bench.lane(device) else { return }
        try await settleRequests(before: device)
        let status = try? await lane.sync.status()
        guard let status, status.pending > status.deferred else {
            let tick = nextTick()
            append(step: nil, actor: "explorer", user: nil, op: HistoryOp.fault, params: .object(params), invoke: tick, complete: tick,
                   outcome: .fail(code: "nothingToHold", message: "\(device) had nothing ready to send"))
            return
        }
        let admin = cluster.cloud.admin
        await record(actor: "explorer", op: HistoryOp.fault, params: .object(params)) { () throws(MeowCareError) -> JSONValue in
            .array(try await admin.injectFault(CloudFault(op: "records.modify", user: self.users[device], count: 1, effect: .hold)))
        }
        try? await setClock(device)
        let before = logSeq
        let invoke = nextTick()
        let finished = Mutex(false)
        let task = Task { () async -> Result<JSONValue, MeowCareError> in
            defer { finished.withLock { $0 = true } }
            do throws(MeowCareError) { return .success(try await lane.call("sync.send")) } catch { return .failure(error) }
        }
        held = (device, task, invoke, before)
        // Either the send's modify is held at the cloud, or the send ended without one (all it
        // had was deferred, or went in another request first): then there is nothing to deliver.
        while true {
            if (try? await admin.awaitHeldRequests(count: 1, timeoutSeconds: 0.05)) != nil { return }
            if finished.withLock({ $0 }) {
                try await admin.clearFaults()
                try await release(device)
                return
            }
        }
    }

    /// kill -9 (at `point` when given: the device is restarted armed, and dies when it next
    /// passes the point), then a restart as the user it was signed in as.
    func kill(_ device: String, point: String?) async throws {
        guard let process = cluster.process(of: device) else { return }
        if held?.device != device { try await settleRequests(before: device) }
        var params: [String: JSONValue] = ["device": .string(device)]
        if let point { params["point"] = .string(point) }
        let tick = nextTick()
        process.kill()
        _ = await process.waitForExit()
        append(step: nil, actor: "explorer", user: nil, op: HistoryOp.kill, params: .object(params), invoke: tick, complete: tick, outcome: .ok(.null))
        if let current = held, current.device == device { try await release(device) }
        try await restart(device, environment: point.map { ["MEOW_CRASH_AT": $0] } ?? [:])
        if let point { armed[device] = point } else { armed[device] = nil }
    }

    func restart(_ device: String, environment: [String: String]) async throws {
        let user = users[device] ?? bench.homeUsers[device] ?? ""
        await record(actor: "explorer", op: HistoryOp.restart, params: ["device": .string(device)]) { () throws(MeowCareError) -> JSONValue in
            try await self.cluster.addDevice(.init(name: device, user: user, environment: environment))
            try await self.bench.renewLane(device)
            return .null
        }
        pushes.remove(device)
        fetchedVersion[device] = 0
        contexts[device] = nil
        ids[device] = nil
        memories[device] = nil
    }

    func memory(of device: String) -> AppMemory {
        if let known = memories[device] { return known }
        let made = AppMemory()
        memories[device] = made
        return made
    }

    /// A device armed with a crash point that died on a request is started again, unarmed.
    /// `entry`: the request just made; when it ended with the connection on a device armed with
    /// a crash point, the device died on it, even if its exit is not reaped yet: wait for it, so
    /// the next op meets a live device.
    func reviveIfDead(_ device: String, after entry: Int? = nil) async throws {
        guard let process = cluster.process(of: device) else { return }
        if let entry, case .unknown = history[entry].outcome, armed[device] != nil {
            _ = await process.waitForExit(timeout: .seconds(10))
        }
        guard process.exitStatus != nil else { return }
        armed[device] = nil
        try await restart(device, environment: [:])
    }

    // MARK: The end of a run

    /// Held sends delivered, faults cleared, every clock past any retry-after, then a settle
    /// and an observation of every device; unseen outcomes resolved from the cloud's log.
    func finish() async throws {
        if let current = held { try await release(current.device) }
        for context in contexts.values { try? await context.close() }
        contexts = [:]
        try await cluster.cloud.admin.clearFaults()
        for device in devices where armed[device] != nil {
            armed[device] = nil
            if let process = cluster.process(of: device) {
                process.kill()
                _ = await process.waitForExit()
            }
            try await restart(device, environment: [:])
        }
        seconds += 7_200
        for device in devices { try? await setClock(device) }
        try await readLog()
        await record(actor: "explorer", op: HistoryOp.settle, params: [:]) { () throws(MeowCareError) -> JSONValue in
            let report = try await self.cluster.settle()
            return ["rounds": .int(report.rounds)]
        }
        for device in devices { try await observe(device) }
        try await resolveUnseen()
    }

    /// What the device shows now, as an `observe` entry.
    func observe(_ device: String) async throws {
        let objects = try await FinalStateCollector(engine: self).objects(on: device)
        lastObserved[device] = objects
        let tick = nextTick()
        let encoded = (try? JSONValue(encoding: objects)) ?? .array([])
        append(step: nil, actor: device, user: users[device], op: HistoryOp.observe, params: [:], invoke: tick, complete: tick,
               outcome: .ok(["objects": encoded]))
    }

    /// Each request no client saw the end of is settled from the cloud's request log: a send
    /// took effect when one of its device's `records.modify` after it committed.
    func resolveUnseen() async throws {
        for index in history.indices {
            guard case .unknown = history[index].outcome else { continue }
            let entry = history[index]
            let requests = try await logEntries(of: entry.actor, after: 0).filter { entry.cloudRequests.isEmpty || entry.cloudRequests.contains($0.seq) }
            let modifies = requests.filter { $0.op == "records.modify" }
            if entry.op == HistoryOp.send {
                if let committed = modifies.first(where: { $0.code == "ok" }) {
                    history[index].outcome = .resolved(committed: true, evidence: "request log #\(committed.seq): records.modify ok")
                } else if let refused = modifies.first {
                    history[index].outcome = .resolved(committed: false, evidence: "request log #\(refused.seq): records.modify \(refused.code)")
                } else {
                    history[index].outcome = .resolved(committed: false, evidence: "request log: no records.modify from \(entry.actor) after it")
                }
            } else if entry.op == HistoryOp.fetch {
                history[index].outcome = .resolved(committed: false, evidence: "a fetch writes nothing to the cloud (request log: \(requests.count) request(s))")
            }
        }
    }
}
