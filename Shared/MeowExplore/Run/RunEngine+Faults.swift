import MeowCareCluster
import MeowHistory
import MeowWire
import Synchronization

extension RunEngine {
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
        // The held send may import once it goes on (a record it misses is fetched).
        absent[device] = nil
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
        absent[device] = nil
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
}
