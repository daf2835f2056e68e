import CloudWire
import MeowWire

/// What one request touched and every permission decision taken for it, with its reason:
/// the request log's raw material. Used on one thread (the request's).
public final class RequestTrace {
    // Its stored properties skip the runtime's exclusivity checks: a records.modify appends
    // to them for every record, on the request's one thread.
    @exclusivity(unchecked) public var database: String?
    @exclusivity(unchecked) public var zones: [String] = []
    @exclusivity(unchecked) public var decisions: [JSONValue] = []
    /// Shares this request created, changed or ended: the request log's `shares`.
    @exclusivity(unchecked) public var shares: [JSONValue] = []
    /// Records this request saved or deleted, with the fields each save changed: the request
    /// log's `writes` (a report's per-record view).
    @exclusivity(unchecked) public var writes: [JSONValue] = []
    /// How many writes `writes` keeps (nil: all). Without a request-log file only the first
    /// ones are ever read, and a 400-record batch need not work out what each save changed.
    @exclusivity(unchecked) var writesKept: Int?
    /// Writes past `writesKept`, counted.
    @exclusivity(unchecked) public private(set) var writesOmitted = 0
    /// How many decisions `decisions` keeps before it keeps only denied ones (nil: all). Without
    /// a request-log file the in-memory copy keeps no allowed decision past the first ones
    /// (`RequestLog.retained`), and a 400-record batch need not build 380 only to drop them.
    @exclusivity(unchecked) var decisionsKept: Int?
    /// Allowed decisions past `decisionsKept`, counted.
    @exclusivity(unchecked) public private(set) var decisionsOmitted = 0
    /// Set by a `holdBeforeCommit` fault: a records.modify calls it once it has decided, before
    /// it takes the writer (a test makes its move between a decision and its commit).
    @exclusivity(unchecked) var pauseBeforeCommit: (() -> Void)?

    public init() {}

    func noteZone(_ zone: ZoneID) {
        let text = "\(zone.ownerName)/\(zone.zoneName)"
        if !zones.contains(text) { zones.append(text) }
    }

    func decide(_ allowed: Bool, _ reason: String, zone: ZoneID? = nil, record: String? = nil) {
        if allowed, let decisionsKept, decisions.count >= decisionsKept {
            decisionsOmitted += 1
            return
        }
        var entry: [String: JSONValue] = [:]
        entry.reserveCapacity(4)  // one allocation per decision: a batch makes one per record
        entry["decision"] = .string(allowed ? "allowed" : "denied")
        entry["reason"] = .string(reason)
        if let zone { entry["zone"] = zoneText(zone) }
        if let record { entry["recordName"] = .string(record) }
        decisions.append(.object(entry))
    }

    /// `participants`: every participation of the share once the request changed it (none for
    /// a share that ended): a report works out who could see the share's records when.
    func noteShare(_ change: String, share: String, zone: ZoneID, participants: [ShareParticipant]) {
        let members: [JSONValue] = participants.map {
            ["user": .string($0.userRecordName), "role": .string($0.role.rawValue), "permission": .string($0.permission.rawValue),
             "acceptanceStatus": .string($0.acceptanceStatus.rawValue)]
        }
        shares.append(["change": .string(change), "recordName": .string(share), "zone": zoneText(zone), "participants": .array(members)])
    }

    /// Whether a write noted after `pending` more ones would be kept (`writesKept`): a batch
    /// need not gather what the log would drop.
    func keepsWrite(after pending: Int) -> Bool {
        writesKept.map { writes.count + pending < $0 } ?? true
    }

    /// Counts writes past `writesKept` that were left out without being noted.
    func omitWrites(_ count: Int) {
        writesOmitted += count
    }

    /// `changed`: the fields whose value the save changed (every field of a new record);
    /// `share`: the share the record is in (after a save, before a delete). Both are worked out
    /// only for a write that is kept.
    func noteWrite(_ action: String, record: String, type: String, zone: ZoneID, changed: @autoclosure () -> [String] = [],
                   share: @autoclosure () throws -> String? = nil) rethrows {
        if let writesKept, writes.count >= writesKept {
            writesOmitted += 1
            return
        }
        var entry: [String: JSONValue] = ["action": .string(action), "recordName": .string(record), "recordType": .string(type), "zone": zoneText(zone)]
        if action == "saved" { entry["changed"] = .array(changed().map { .string($0) }) }
        if let share = try share() { entry["share"] = .string(share) }
        writes.append(.object(entry))
    }

    /// "owner/zone", kept for the last zone: a batch decides once per record, mostly in one zone.
    private var lastZone: (zone: ZoneID, text: JSONValue)?
    private func zoneText(_ zone: ZoneID) -> JSONValue {
        if let lastZone, lastZone.zone == zone { return lastZone.text }
        let text = JSONValue.string("\(zone.ownerName)/\(zone.zoneName)")
        lastZone = (zone, text)
        return text
    }
}

/// CloudKit's text for a write to the shared database's core-data or default zone, which its refusals carry.
public let sharedDatabaseDefaultZoneFault = "Illegal attempt to work with the core-data or default zone in the shared database"

extension CloudTransaction {
    /// Resolves a zone for `caller` in `scope`, enforcing who may reach it at all. In the
    /// shared database the caller must be an accepted participant of some share of the zone;
    /// per-record rights are checked by `requireSharedAccess`.
    func openZone(_ requested: ZoneID, scope: DatabaseScope, caller: String, trace: RequestTrace?) throws -> ZoneRow {
        let zoneID = requested.resolved(caller: caller)
        trace?.noteZone(zoneID)
        switch scope {
        case .private:
            guard zoneID.ownerName == caller else {
                trace?.decide(false, "private database of \(caller) cannot reach a zone owned by \(zoneID.ownerName)", zone: zoneID)
                throw WireError(.permissionFailure, "PrivateDB can't be used to access another user's zone (\(zoneID.zoneName) of \(zoneID.ownerName)); use the shared database.",
                                details: ["zoneID": zoneJSON(requested)])
            }
            guard let zone = try zone(owner: caller, name: zoneID.zoneName) else { throw zoneNotFound(requested) }
            return zone
        case .shared:
            if requested.isDefaultOrCoreDataZone {
                trace?.decide(false, "the shared database has no default or core-data zone", zone: zoneID)
                throw WireError(.permissionFailure,
                                "\(sharedDatabaseDefaultZoneFault): <CKRecordZoneID: zoneName=\(requested.zoneName), ownerName=\(requested.ownerName)>",
                                details: ["zoneID": zoneJSON(requested)])
            }
            guard zoneID.ownerName != caller else {
                trace?.decide(false, "own zone addressed through the shared database", zone: zoneID)
                throw WireError(.permissionFailure, "The shared database only holds zones other users shared with \(caller); \(caller)'s own zone \(zoneID.zoneName) is in the private database.",
                                details: ["zoneID": zoneJSON(requested)])
            }
            guard let zone = try zone(owner: zoneID.ownerName, name: zoneID.zoneName) else { throw zoneNotFound(requested) }
            let states = try db.query("SELECT share, acceptance FROM participants WHERE zone = ? AND user = ?", [zone.id, caller]).map {
                try ShareAcceptanceStatus.stored($0[1].string, in: Self.participantRow(zone: zone.id, share: $0[0].string, user: caller, column: "acceptance"))
            }
            guard states.contains(.accepted) else {
                let reason = states.isEmpty ? "\(caller) is not a participant of any share in this zone"
                    : "\(caller)'s participation is \(states.contains(.pending) ? "pending (not accepted)" : "removed")"
                trace?.decide(false, reason, zone: zoneID)
                throw WireError(.permissionFailure, "\(caller) cannot use zone \(zoneID.zoneName) of \(zoneID.ownerName): \(reason).",
                                details: ["zoneID": zoneJSON(requested), "reason": .string(reason)])
            }
            return zone
        }
    }

    func zoneNotFound(_ zoneID: ZoneID) -> WireError {
        WireError(.zoneNotFound, "Zone '\(zoneID.zoneName)' (owner \(zoneID.ownerName)) does not exist.", details: ["zoneID": zoneJSON(zoneID)])
    }

    /// The share a record belongs to: the zone-wide share, else the first `share` found walking
    /// up the parent chain from `name` (records of the current request win over stored ones).
    func governingShare(zone: Int64, from name: String?, pending: [String: CloudRecord] = [:]) throws -> String? {
        if try db.scalar("SELECT 1 FROM shares WHERE zone = ? AND name = ?", [zone, CloudKitNames.zoneShareName]) != nil {
            return CloudKitNames.zoneShareName
        }
        var current = name
        var seen: Set<String> = []
        while let name = current, seen.insert(name).inserted {
            if let record = pending[name] {
                if record.isShare { return record.recordName }
                if let share = record.share?.recordName { return share }
                current = record.parent?.recordName
            } else if let record = try liveRecord(zone: zone, name: name) {
                if record.type == CloudKitNames.shareRecordType { return record.name }
                if let share = record.share { return share }
                current = record.parent
            } else {
                return nil
            }
        }
        return nil
    }

    /// `governingShare(zone:from:)` of a record whose current row the caller holds (one it
    /// has just written), without reading that row again.
    func governingShare(zone: Int64, of record: StoredRecord) throws -> String? {
        guard record.type == CloudKitNames.shareRecordType || record.share != nil else {
            return try governingShare(zone: zone, from: record.parent)
        }
        if try db.scalar("SELECT 1 FROM shares WHERE zone = ? AND name = ?", [zone, CloudKitNames.zoneShareName]) != nil {
            return CloudKitNames.zoneShareName
        }
        return record.type == CloudKitNames.shareRecordType ? record.name : record.share
    }

    /// The caller's participation in one share, or nil.
    func participation(zone: Int64, share: String, user: String) throws -> Participation? {
        guard let row = try db.query("SELECT permission, acceptance, role FROM participants WHERE zone = ? AND share = ? AND user = ?",
                                     [zone, share, user]).first else { return nil }
        return Participation(
            permission: try .stored(row[0].string, in: Self.participantRow(zone: zone, share: share, user: user, column: "permission")),
            acceptance: try .stored(row[1].string, in: Self.participantRow(zone: zone, share: share, user: user, column: "acceptance")),
            role: try .stored(row[2].string, in: Self.participantRow(zone: zone, share: share, user: user, column: "role")))
    }

    /// Where a damaged participants value was read, for the error.
    static func participantRow(zone: Int64, share: String?, user: String, column: String) -> String {
        "The participants row of zone \(zone), share \(share.map(CloudKitNames.quoted) ?? "?"), user \(CloudKitNames.quoted(user)), column \(column),"
    }

    /// Checks that a shared-database caller may read (or write) a record governed by `share`.
    func requireSharedAccess(zone: ZoneRow, share: String?, caller: String, write: Bool, record: String, trace: RequestTrace?) throws {
        guard let share else {
            let reason = "record is outside any share"
            trace?.decide(false, reason, zone: zone.zoneID, record: record)
            throw WireError(.permissionFailure, "Record '\(record)' is not in a share \(caller) participates in (\(reason)); the shared database only holds shared records.",
                            details: ["recordName": .string(record), "reason": .string(reason)])
        }
        let reason: String
        if let part = try participation(zone: zone.id, share: share, user: caller) {
            if part.acceptance != .accepted {
                reason = "participant of share \(share) is \(part.acceptance.rawValue)"
            } else if write && part.permission != .readWrite {
                reason = "participant of share \(share) has permission \(part.permission.rawValue)"
            } else if !write && part.permission == .none {
                reason = "participant of share \(share) has permission none"
            } else {
                trace?.decide(true, "accepted participant of share \(share) with permission \(part.permission.rawValue)", zone: zone.zoneID, record: record)
                return
            }
        } else {
            reason = "\(caller) is not a participant of share \(share)"
        }
        trace?.decide(false, reason, zone: zone.zoneID, record: record)
        throw WireError(.permissionFailure, "\(caller) may not \(write ? "write" : "read") record '\(record)': \(reason).",
                        details: ["recordName": .string(record), "share": .string(share), "reason": .string(reason)])
    }

    func zoneJSON(_ zoneID: ZoneID) -> JSONValue {
        ["zoneName": .string(zoneID.zoneName), "ownerName": .string(zoneID.ownerName)]
    }
}
