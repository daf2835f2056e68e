/// What `settle()` did: the rounds it took and each device's last status.
public struct SettleReport: Sendable {
    /// Rounds of `sync.now` over every device, the last of which changed nothing.
    public var rounds: Int
    public var statuses: [String: SyncStatus]
}

extension MeowCluster {
    /// Returns once every device has sent and fetched everything and nothing is pending or in
    /// flight: `sync.now` on every signed-in device, round after round, until a whole round
    /// moved nothing and every device's `sync.status` is quiescent. Never sleeps; after
    /// `maxRounds` it fails with what each device still reports (entries deferred by a server
    /// retry-after never go out on their own: `advanceClocks(by:)` moves time past them).
    @discardableResult
    public func settle(maxRounds: Int = 12) async throws(MeowCareError) -> SettleReport {
        var statuses: [String: SyncStatus] = [:]
        var lastRound: [String] = []
        for round in 1...maxRounds {
            var moved: [String] = []
            for device in devices {
                let status = try await device.sync.status()
                guard status.signedIn else { continue }
                do throws(MeowCareError) {
                    let now = try await device.sync.now()
                    if now.changedAnything { moved.append("\(device.name): \(Self.describe(now))") }
                } catch where Self.transient.contains(error.code) {
                    // The entries stay queued, deferred by the retry-after: a later round reports them.
                    moved.append("\(device.name): \(error.code): \(error.message)")
                }
            }
            statuses = [:]
            var busy: [String] = []
            for device in devices {
                let status = try await device.sync.status()
                statuses[device.name] = status
                if status.signedIn, !status.quiescent { busy.append("\(device.name): \(Self.describe(status))") }
            }
            if moved.isEmpty && busy.isEmpty { return SettleReport(rounds: round, statuses: statuses) }
            lastRound = moved + busy
        }
        throw MeowCareError(.didNotSettle, "settle() gave up after \(maxRounds) rounds of sync.now on every device; the last round still had:\n  "
                            + lastRound.joined(separator: "\n  "), service: "cluster")
    }

    /// The cloud's errors after which a device keeps its queue and retries later.
    static let transient: Set<ErrorCode> = [.serviceUnavailable, .requestRateLimited, .zoneBusy]

    static func describe(_ now: SyncNowResult) -> String {
        "sent \(now.send.saved) saved / \(now.send.deleted) deleted / \(now.send.conflictsResolved) merged / \(now.send.reverted) reverted "
            + "(\(now.send.requests) requests, \(now.send.pending) pending, \(now.send.deferred) deferred); fetched \(now.fetch.changedRecords) changed / "
            + "\(now.fetch.deletedRecords) deleted / \(now.fetch.merged) merged"
    }

    static func describe(_ status: SyncStatus) -> String {
        var parts = ["not quiescent", "pending \(status.pending)", "deferred \(status.deferred)"]
        if let step = status.inFlight { parts.append("in flight: \(step)") }
        if let error = status.lastError { parts.append("last error \(error.code): \(error.message)") }
        if status.deferred > 0 { parts.append("(deferred entries wait for a retry-after: advanceClocks(by:) passes it)") }
        return parts.joined(separator: ", ")
    }
}
