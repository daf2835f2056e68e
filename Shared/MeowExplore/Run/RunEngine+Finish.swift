import MeowCareCluster
import MeowHistory
import MeowWire
import Synchronization

extension RunEngine {
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
            let report = try await self.cluster.settle(cloudLogSeenThrough: self.logSeq)
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
    /// took effect when one of its device's `records.modify` after it committed. A sharing step
    /// is settled by its own cloud request (`sharingEvidence`), and so is one that answered a
    /// failure: its request may have committed before the reply was lost (a drop after commit,
    /// the repeat meeting the copies it made), so the failure the device saw does not tell.
    func resolveUnseen() async throws {
        var runLog: [(device: String, seq: Int, op: String, code: String)]?
        for index in history.indices {
            let entry = history[index]
            if Self.sharingSteps[entry.op] != nil {
                // A failure with no cloud request (not ready, refused before sending) reached nothing.
                let unseen = if case .unknown = entry.outcome { true } else { false }
                let failed = if case .fail = entry.outcome { !entry.cloudRequests.isEmpty } else { false }
                if unseen || failed, let outcome = try await resolveSharing(entry) { history[index].outcome = outcome }
                continue
            }
            guard case .unknown = entry.outcome else { continue }
            if runLog == nil { runLog = try await runLogEntries() }
            let requests = (runLog ?? []).filter { $0.device == entry.actor && (entry.cloudRequests.isEmpty || entry.cloudRequests.contains($0.seq)) }
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

    /// The cloud request that makes each sharing step take effect, and the share change a
    /// `records.modify` of it names in the log (`shares`), where one does.
    static let sharingSteps: [String: (op: String, change: String?)] = [
        HistoryOp.shareCreate: ("records.modify", "created"), HistoryOp.shareStop: ("records.modify", "stopped"),
        HistoryOp.shareAccept: ("shares.accept", nil), HistoryOp.shareLeave: ("shares.leave", nil),
        HistoryOp.shareRemove: ("participants.remove", nil), HistoryOp.sharePermission: ("participants.setPermission", nil),
    ]

    /// A sharing step's outcome from its requests in the log: committed when its cloud request
    /// (`sharingSteps`; a permission step's `participants.add` or `participants.setPermission`)
    /// answered ok there, with the share change it makes. An unknown outcome without one did
    /// not commit; a failure without one stays as the device saw it (nil). A share created so
    /// is named in the step's params (`zoneName`), as its answer would have named it.
    func resolveSharing(_ entry: HistoryEntry) async throws -> Outcome? {
        guard let expected = Self.sharingSteps[entry.op] else { return nil }
        let cloudOp = entry.op == HistoryOp.sharePermission
            ? (entry.params["add"]?.boolValue == true ? "participants.add" : "participants.setPermission") : expected.op
        let requests = entry.cloudRequests.isEmpty ? [] : try await cluster.cloud.admin.requestLog(after: (entry.cloudRequests.min() ?? 1) - 1)
            .filter { ($0["seq"]?.intValue).map(entry.cloudRequests.contains) ?? false }
        let committed = requests.first { request in
            guard request["op"]?.stringValue == cloudOp, request["code"]?.stringValue == "ok" else { return false }
            guard let change = expected.change else { return true }
            return (request["shares"]?.arrayValue ?? []).contains { $0["change"]?.stringValue == change }
        }
        guard let committed, let seq = committed["seq"]?.intValue else {
            guard case .unknown = entry.outcome else { return nil }
            let what = expected.change.map { " that \($0) a share" } ?? ""
            return .resolved(committed: false, evidence: "request log: no \(cloudOp)\(what) among \(entry.actor)'s requests for it answered ok")
        }
        var answered = ""
        if case let .fail(code, _) = entry.outcome { answered = "answered \(code), but " }
        var evidence = "\(answered)request log #\(seq): \(cloudOp) ok"
        if entry.op == HistoryOp.shareCreate,
           let zone = (committed["shares"]?.arrayValue ?? []).first(where: { $0["change"]?.stringValue == "created" })?["zone"]?.stringValue,
           let zoneName = zone.split(separator: "/", maxSplits: 1).last.map(String.init) {
            nameCreatedShare(zoneName, of: entry)
            evidence += ", the share of zone \(zoneAliases[zoneName] ?? zoneName) created"
        }
        return .resolved(committed: true, evidence: evidence)
    }

    /// A share whose creation was settled from the log: its zone gets the alias an answer
    /// would have given it, the step names it, and every entry says the alias.
    func nameCreatedShare(_ zoneName: String, of entry: HistoryEntry) {
        let steps = flow.actors.flatMap(\.steps)
        guard let global = entry.step, steps.indices.contains(global), case let .shareCreate(share) = steps[global].kind else { return }
        zoneAliases[zoneName] = "com.apple.coredata.cloudkit.share." + Self.seededUUID(seed: mode.seed, name: "share:" + share)
        if case var .object(params) = history[entry.index].params {
            params["zoneName"] = .string(zoneName)
            history[entry.index].params = .object(params)
        }
        for index in history.indices {
            history[index].params = aliased(history[index].params)
            history[index].outcome = aliased(history[index].outcome)
        }
    }
}
