import Synchronization

/// Where `settle()` last looked in the cloud's request log. A round that saw a write by anyone
/// (an automatic mirror, another client) is not the last: some device's fetch may predate it.
final class CloudWriteCursor: Sendable {
    /// Ops that change nothing on the cloud; every other op in the log counts as a write.
    static let readOnlyOps: Set<String> = [
        "changes.fetchDatabase", "changes.fetchZone", "records.fetch", "zones.fetch", "shares.fetch",
        "shares.invitations", "shares.owned", "admin.requestLog", "admin.listUsers", "admin.schema",
        "admin.awaitHeldRequests", "subscriptions.fetch", "admin.exportSchema", "admin.diffSchema",
        "hello", "ping",
    ]

    private let seen = Mutex(0)
    static let page = 10_000

    /// Moves the cursor past `seq` (never back).
    func skip(through seq: Int) { seen.withLock { $0 = max($0, seq) } }

    /// The writes logged since the last call (`client: op`), moving the cursor past them.
    func writesSinceLastLook(_ admin: MeowCloudAdmin) async throws(MeowCareError) -> [String] {
        try await look(admin).writes.map(\.text)
    }

    /// What the log shows since the last look, moving the cursor past it.
    func look(_ admin: MeowCloudAdmin) async throws(MeowCareError) -> CloudLogLook {
        var look = CloudLogLook()
        while true {
            let after = seen.withLock { $0 }
            let entries = try await admin.requestLog(after: after, limit: Self.page)
            guard let last = entries.compactMap({ $0["seq"]?.intValue }).max(), last > after else { return look }
            seen.withLock { $0 = max($0, last) }
            for entry in entries {
                guard let op = entry["op"]?.stringValue, let seq = entry["seq"]?.intValue else { continue }
                let client = entry["client"]?.stringValue
                if op == "changes.fetchDatabase", let client, look.firstFetch[client] == nil { look.firstFetch[client] = seq }
                guard !Self.readOnlyOps.contains(op) else { continue }
                look.writes.append((seq, "\(client ?? entry["user"]?.stringValue ?? "?"): \(op)"))
            }
            // A page short of the limit is the log's end: asking again would only read this look's own entry.
            if entries.count < Self.page { return look }
        }
    }
}

/// The request log between two looks: its writes, and where each client first asked for a
/// database's changes (a device's mirror names itself `store-service mirror (<device>)`).
struct CloudLogLook {
    var writes: [(seq: Int, text: String)] = []
    var firstFetch: [String: Int] = [:]

    /// Whether `client`'s first fetch in the look came after every write in it: it saw them all.
    func fetchedAfterEveryWrite(_ client: String) -> Bool {
        guard let first = firstFetch[client] else { return false }
        return writes.allSatisfy { $0.seq < first }
    }
}
