import MeowWire
import StoreServiceKit
import StoreWire

/// The per-field three-way merge (docs/RULES.md, mirroring): a field only one side changed (against the
/// ancestor) keeps that side's value; a field both changed is decided by the policy. A missing
/// field is nil, and setting nil is an edit like any other.
struct MirrorMerge {
    var policy: MirrorConflictPolicy

    struct Outcome: Equatable {
        /// The merged data fields (no bookkeeping fields).
        var fields: [String: JSONValue]
        var times: [String: FieldStamp]
        /// True when some field keeps the client's value, so the merge must be sent again.
        var clientWon: Bool
    }

    /// - server/client/ancestor: data fields of each copy (ancestor nil: unknown, e.g. a record
    ///   both sides created), and each copy's per-field stamps.
    /// - localChanged: record field names the client's queue entry names as edited.
    /// - seen: with no ancestor, the version of the record the client last fetched (a copy the
    ///   server's side moved without it: `mergeConcurrent`). A field the server's copy holds
    ///   exactly as `seen` had it, value and stamp, and the client restamped since, was edited
    ///   on the client's side only: its edit stands whatever the clocks say (`editedOnlyHere`).
    ///
    /// A side edited a field when its value differs from the ancestor's or its stamp does: an
    /// edit back to the ancestor's value is still an edit (A sets a note, B clears it, A sets
    /// it back: A's is the latest edit and wins), and a field the queue still names after the
    /// server took its value (the entry outlived a verdict for a newer edit) carries the
    /// ancestor's own stamp, so it is no edit.
    func merge(server: [String: JSONValue], serverTimes: [String: FieldStamp],
               client: [String: JSONValue], clientTimes: [String: FieldStamp],
               ancestor: [String: JSONValue]?, ancestorTimes: [String: FieldStamp] = [:], localChanged: Set<String>,
               seen: (fields: [String: JSONValue], times: [String: FieldStamp])? = nil) -> Outcome {
        var outcome = Outcome(fields: [:], times: serverTimes, clientWon: false)
        for name in Set(server.keys).union(client.keys).union(ancestor.map { Array($0.keys) } ?? []) {
            let serverValue = server[name]
            let clientValue = client[name]
            let clientChanged = localChanged.contains(name)
                && (ancestor == nil || clientValue != ancestor?[name] || Self.restamped(clientTimes[name], from: ancestorTimes[name]))
            let serverChanged = ancestor.map { serverValue != $0[name] || Self.restamped(serverTimes[name], from: ancestorTimes[name]) }
                ?? (serverValue != clientValue && !Self.editedOnlyHere(name, server: serverValue, serverStamp: serverTimes[name],
                                                                        clientStamp: clientTimes[name], seen: seen))
            var takeClient = false
            if clientChanged && clientValue != serverValue {
                if !serverChanged {
                    takeClient = true
                } else {
                    switch policy {
                    case .serverWins: takeClient = false
                    case .clientWins: takeClient = true
                    case .latestEdit:
                        if let clientStamp = clientTimes[name] {
                            takeClient = serverTimes[name].map { clientStamp.isLater(than: $0) } ?? true
                        }
                    }
                }
            }
            // Both sides set the same value: the field's last edit is the later of the two. A
            // later local stamp is kept and sent, or a third edit made between them would win
            // against the earlier stamp on the next device to merge.
            if clientChanged, clientValue == serverValue, let clientStamp = clientTimes[name],
               serverTimes[name].map({ clientStamp.isLater(than: $0) }) ?? true {
                takeClient = true
            }
            let chosen = takeClient ? clientValue : serverValue
            if let chosen { outcome.fields[name] = chosen }
            if takeClient {
                outcome.clientWon = true
                if let stamp = clientTimes[name] { outcome.times[name] = stamp }
            }
        }
        return outcome
    }

    /// Whether a field differs only by the client's edit since `seen`: the server's copy holds
    /// it as `seen` did (value and stamp) and the client's stamp moved on. A client value that
    /// differs without a new stamp is no edit (a relationship whose object the device lacked
    /// was never set on it), and the policy decides as for any concurrent field.
    static func editedOnlyHere(_ name: String, server: JSONValue?, serverStamp: FieldStamp?, clientStamp: FieldStamp?,
                               seen: (fields: [String: JSONValue], times: [String: FieldStamp])?) -> Bool {
        guard let seen, server == seen.fields[name], serverStamp == seen.times[name] else { return false }
        return restamped(clientStamp, from: seen.times[name])
    }

    /// Whether a side's stamp for a field shows an edit since the ancestor's. A side without a
    /// stamp for it (a record written without `MC_fieldModified`) shows none: its value decides.
    static func restamped(_ stamp: FieldStamp?, from ancestor: FieldStamp?) -> Bool {
        guard let stamp else { return false }
        return stamp != ancestor
    }
}
