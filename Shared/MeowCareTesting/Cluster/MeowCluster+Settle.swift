/// What `settle()` did: the rounds it took and each device's last status.
public struct SettleReport: Sendable {
    /// Rounds of `sync.now` (over every device that could move anything), the last of which changed nothing.
    public var rounds: Int
    public var statuses: [String: SyncStatus]
}

extension MeowCluster {
    /// Returns once every device has sent and fetched everything and nothing is pending or in
    /// flight: `sync.now` on every signed-in device, round after round, until a round in which no
    /// device moved anything, the cloud's request log shows no write by anyone (so every fetch
    /// saw the cloud's final state, automatic mirrors included) and every device's `sync.status`
    /// is quiescent. A round passes over a device whose `sync.now` could change nothing: it was
    /// quiescent after its last one, whose fetch came after every write the log has shown since,
    /// and no device before it in this round sent anything (a fetch writes nothing to the
    /// cloud). Never sleeps; after `maxRounds`
    /// (the same 20 as the Python client's) it fails with what the last round still had (entries
    /// deferred by a server retry-after never go out on their own: `advanceClocks(by:)` moves
    /// time past them).
    /// `cloudLogSeenThrough`: the request log's last sequence number the caller has read (the
    /// writes up to it are behind the settle), so it need not read the log to its end first.
    @discardableResult
    public func settle(maxRounds: Int = 20, cloudLogSeenThrough: Int? = nil) async throws(MeowCareError) -> SettleReport {
        guard maxRounds >= 1 else {
            throw MeowCareError(.invalidArguments, "settle(maxRounds: \(maxRounds)): give at least one round.", service: "cluster")
        }
        if let seen = cloudLogSeenThrough {
            lifecycle.cloudWrites.skip(through: seen)
        } else {
            _ = try await lifecycle.cloudWrites.look(cloud.admin)
        }
        var statuses: [String: SyncStatus] = [:]
        var lastRound: [String] = []
        // Devices whose last `sync.now` fetched after every write the log has shown since.
        var upToDate: Set<String> = []
        for round in 1...maxRounds {
            var moved: [String] = []
            var asked: Set<String> = []
            var sent = false
            for device in devices {
                // After the first round, the last round's closing status says who is signed in.
                let status: SyncStatus
                if let last = statuses[device.name] { status = last } else { status = try await device.sync.status() }
                statuses[device.name] = status
                guard status.signedIn else { continue }
                if !sent, status.quiescent, upToDate.contains(device.name) { continue }
                asked.insert(device.name)
                do throws(MeowCareError) {
                    let now = try await device.sync.now()
                    sent = sent || now.send.requests > 0
                    if now.changedAnything { moved.append("\(device.name): \(Self.describe(now))") }
                } catch where CloudKitError(error.code)?.retry == .afterRetryAfter {
                    // The entries stay queued, deferred by the retry-after: a later round reports them.
                    sent = true
                    moved.append("\(device.name): \(error.code): \(error.message)")
                }
            }
            let look = try await lifecycle.cloudWrites.look(cloud.admin)
            // A device asked this round is up to date if its fetch came after every write of the
            // round; one passed over stays so if the round wrote nothing.
            for name in devices.map(\.name) {
                let current = asked.contains(name) ? look.fetchedAfterEveryWrite(Self.mirrorClient(name)) : upToDate.contains(name) && look.writes.isEmpty
                if current { upToDate.insert(name) } else { upToDate.remove(name) }
            }
            var busy: [String] = []
            for device in devices {
                // A device passed over ran nothing since its status was read.
                let status: SyncStatus
                if !asked.contains(device.name), let last = statuses[device.name] { status = last } else { status = try await device.sync.status() }
                statuses[device.name] = status
                if status.signedIn, !status.quiescent { busy.append("\(device.name): \(Self.describe(status))") }
            }
            let writes = look.writes.map(\.text)
            if moved.isEmpty && writes.isEmpty && busy.isEmpty { return SettleReport(rounds: round, statuses: statuses) }
            lastRound = moved + busy + Self.describe(cloudWrites: writes)
        }
        throw MeowCareError(.didNotSettle, "settle() gave up after \(maxRounds) rounds of sync.now on every device; the last round still had:\n  "
                            + lastRound.joined(separator: "\n  ") + "\n" + Self.whatToDo, service: "cluster")
    }

    /// The name a device's mirror gives the cloud in its `hello`.
    static func mirrorClient(_ device: String) -> String { "store-service mirror (\(device))" }

    /// What a person can do about a cluster that does not settle.
    static let whatToDo = """
        What to do: something kept changing or stayed queued. A device that sends the same entries every \
        round is being refused (see its last error and cluster.logs()); deferred entries wait for a \
        retry-after (advanceClocks(by:)); writes by another client or an automatic mirror during \
        the rounds need them to stop first; a long backlog may need settle(maxRounds:) higher.
        """

    static func describe(cloudWrites writes: [String]) -> [String] {
        guard !writes.isEmpty else { return [] }
        return ["cloud: \(writes.count) write(s) during the round, the last: " + writes.suffix(5).joined(separator: ", ")]
    }

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
