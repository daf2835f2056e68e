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
            mayExist.insert(object)
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
            // A team's step may insert any of the flow's objects.
            mayExist.formUnion(uuids.keys)
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
        // No device can hold an object whose insert has not gone out in this run: no need to ask.
        guard mayExist.contains(object) else { return nil }
        if !fresh, let known = ids[device.name]?[uuid] { return known }
        if !fresh, absent[device.name]?.contains(uuid) == true { return nil }
        let found = try await device.fetch(entity, where: "uuid == %@", [.string(uuid)]).first?.objectID
        ids[device.name, default: [:]][uuid] = found
        if found == nil { absent[device.name, default: []].insert(uuid) } else { absent[device.name]?.remove(uuid) }
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
}
