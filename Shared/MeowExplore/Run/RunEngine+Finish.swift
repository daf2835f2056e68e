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
    /// took effect when one of its device's `records.modify` after it committed.
    func resolveUnseen() async throws {
        var runLog: [(device: String, seq: Int, op: String, code: String)]?
        for index in history.indices {
            guard case .unknown = history[index].outcome else { continue }
            let entry = history[index]
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
}
