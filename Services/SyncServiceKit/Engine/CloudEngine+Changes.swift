import CloudWire
import MeowWire
import SQLiteKit

extension CloudEngine {
    /// records.fetch: records by ID; missing ones are unknownItem inside partialFailure.
    public func fetchRecords(caller: String, _ params: FetchRecordsParams, trace: RequestTrace? = nil) throws -> FetchRecordsResult {
        trace?.database = params.database.rawValue
        let (records, errors) = try read { state -> ([CloudRecord], [String: JSONValue]) in
            var records: [CloudRecord] = []
            var errors: [String: JSONValue] = [:]
            var zones: [ZoneID: ZoneRow] = [:]
            var page = PageBudget()
            for id in params.recordIDs {
                do {
                    let key = id.zoneID.resolved(caller: caller)
                    let zone = try zones[key] ?? state.openZone(id.zoneID, scope: params.database, caller: caller, trace: trace)
                    zones[key] = zone
                    guard let stored = try state.liveRecord(zone: zone.id, name: id.recordName) else {
                        throw WireError(.unknownItem, "Record '\(id.recordName)' does not exist in zone \(zone.name).")
                    }
                    if params.database == .shared {
                        let share = try state.governingShare(zone: zone.id, from: stored.name)
                        try state.requireSharedAccess(zone: zone, share: share, caller: caller, write: false, record: stored.name, trace: trace)
                    }
                    let record = try state.render(stored, zone: zone, caller: caller)
                    let cost = PageBudget.cost(of: stored, zoneBytes: PageBudget.zoneCost(record.zoneID)) + PageBudget.shareInfoCost(record.shareInfo)
                    guard page.take(cost) else {
                        throw WireError(.limitExceeded, "Record '\(id.recordName)' did not fit in this reply: a reply holds at most \(PageBudget.bytes) bytes of records; fetch it in another request.",
                                        details: ["maxBytes": .int(PageBudget.bytes)])
                    }
                    records.append(record)
                } catch var error as WireError {
                    error.details["recordName"] = .string(id.recordName)
                    error.details["zoneID"] = state.zoneJSON(id.zoneID)
                    errors[id.recordName] = try JSONValue(encoding: error)
                }
            }
            return (records, errors)
        }
        if !errors.isEmpty {
            throw WireError(.partialFailure, "\(errors.count) of \(params.recordIDs.count) records could not be fetched.",
                            details: ["partialErrors": .object(errors), "records": try JSONValue(encoding: records)])
        }
        return FetchRecordsResult(records: records)
    }

    /// changes.fetchZone: records changed and deleted since a zone token, one page at a time.
    /// An index range scan on (zone, seq): the cost follows the changes, not the zone's size.
    /// `fieldsAsText`: records carry their stored fields text (`fieldsText`) for a text reply
    /// instead of parsed `fields` (the wire op; in-process callers read `fields`).
    public func fetchZoneChanges(caller: String, _ params: FetchZoneChangesParams, trace: RequestTrace? = nil,
                                 fieldsAsText: Bool = false) throws -> FetchZoneChangesResult {
        trace?.database = params.database.rawValue
        try pruneExpiredHistory(of: params.zoneID, scope: params.database, caller: caller)
        return try read { state in
            let zone = try state.openZone(params.zoneID, scope: params.database, caller: caller, trace: trace)
            guard !zone.isDefaultZone else {
                throw WireError(.invalidArguments, "_defaultZone does not support change fetching; use a custom zone.")
            }
            let horizon = zone.horizon
            // A participant's reading of the zone that began after a token was issued makes the
            // token useless: the records it could not see then are behind it.
            let reading = params.database == .shared ? try state.readingStart(zone: zone.id, user: caller) : 0
            let after = try state.changesStart(since: params.since, zone: zone, reading: reading, caller: caller, requested: params.zoneID)
            let limit = max(1, min(params.limit ?? state.limits.defaultFetchLimit, 10_000))
            let presented = zone.zoneID.presented(to: caller)
            let zoneBytes = PageBudget.zoneCost(presented)
            let scan = try state.changeRows(zone: zone.id, after: after, limit: limit, liveOnly: params.since == nil, zoneBytes: zoneBytes)
            let page = try state.changesPage(scan.rows.prefix(limit), after: after,
                                             moreComing: scan.rows.count > limit || (scan.budgetFull && scan.rows.count > 0),
                                             zone: zone, caller: caller, shared: params.database == .shared,
                                             presented: presented, zoneBytes: zoneBytes, fieldsAsText: fieldsAsText)
            let last = page.moreComing ? page.last : max(page.last, try state.zoneHighWater(zone: zone.id, after: after))
            return FetchZoneChangesResult(changed: page.changed, deleted: page.deleted, token: ZoneToken(zone: zone.id, seq: last, horizon: horizon, reading: reading).text,
                                          moreComing: page.moreComing)
        }
    }

    /// Drops the zone's tombstones and superseded versions older than the retention before its
    /// changes are read, so the horizon a token is checked against is current. Looked for in a
    /// read first: a fetch takes the writer only when there is something to drop.
    private func pruneExpiredHistory(of zoneID: ZoneID, scope: DatabaseScope, caller: String) throws {
        let expired = try read { state in
            let zone = try state.openZone(zoneID, scope: scope, caller: caller, trace: nil)
            return try state.hasExpiredHistory(zone: zone) ? zone.id : nil
        }
        if let expired {
            try write { state in
                if let zone = try state.zone(id: expired) { _ = try state.pruneTombstones(zone: zone) }
            }
        }
    }

    /// changes.fetchDatabase: zones changed, deleted and purged since a database token.
    public func fetchDatabaseChanges(caller: String, _ params: FetchDatabaseChangesParams, trace: RequestTrace? = nil) throws -> FetchDatabaseChangesResult {
        trace?.database = params.database.rawValue
        if try read({ try $0.hasExpiredDatabaseChanges() }) {
            try write { state in _ = try state.pruneDatabaseChanges() }
        }
        return try read { state in
            let horizon = try state.databaseHorizon()
            var after: Int64 = 0
            if let since = params.since {
                let parts = since.dropFirst().split(separator: ".")
                guard since.hasPrefix("d"), parts.count == 2, let seq = Int64(parts[0]), let issuedHorizon = Int64(parts[1]) else {
                    throw WireError(.invalidArguments, "params.since is not a database change token from this service.")
                }
                guard seq >= horizon || issuedHorizon == horizon else {
                    throw WireError(.changeTokenExpired, "The database change token is too old; fetch again from nil.")
                }
                after = seq
            }
            let limit = max(1, min(params.limit ?? state.limits.defaultFetchLimit, 10_000))
            let sql = params.since == nil
                ? "SELECT owner, zone_name, kind, seq FROM database_changes WHERE environment = ? AND user = ? AND scope = ? AND seq > ? AND kind = 'changed' ORDER BY seq LIMIT ?"
                : "SELECT owner, zone_name, kind, seq FROM database_changes WHERE environment = ? AND user = ? AND scope = ? AND seq > ? ORDER BY seq LIMIT ?"
            let rows = try state.db.query(sql, [state.environment.rawValue, caller, params.database.rawValue, after, Int64(limit + 1)])
            var result = FetchDatabaseChangesResult(changedZones: [], deletedZones: [], purgedZones: [], encryptedDataResetZones: [],
                                                    token: "", moreComing: rows.count > limit)
            var last = after
            var page = PageBudget()
            for row in rows.prefix(limit) {
                let zoneID = ZoneID(zoneName: row[1].string ?? "", ownerName: row[0].string ?? "").presented(to: caller)
                guard page.take(PageBudget.zoneCost(zoneID)) else {
                    result.moreComing = true
                    break
                }
                last = row[3].int64 ?? last
                switch row[2].string {
                case "deleted": result.deletedZones.append(zoneID)
                case "purged": result.purgedZones.append(zoneID)
                case "encryptedDataReset": result.encryptedDataResetZones.append(zoneID)
                default: result.changedZones.append(zoneID)
                }
            }
            if !result.moreComing { last = max(last, try state.storedSeq()) }
            result.token = "d\(last).\(horizon)"
            return result
        }
    }
}

/// A zone change token: the zone's row id (a recreated zone gets a new one), the sequence
/// reached, and the zone's horizon when it was issued. A token is still good when nothing
/// after its sequence was dropped: its sequence is at or above the horizon, or the horizon has
/// not moved since it was issued.
/// `z<zone>.<seq>.<horizon>[.<reading>]`: the zone, the last change the holder has, the zone's
/// horizon when issued, and for a participant the start of their current reading of the zone
/// (`CloudTransaction.readingStart`), left out when 0.
struct ZoneToken {
    var zone: Int64
    var seq: Int64
    var horizon: Int64
    var reading: Int64 = 0
    init(zone: Int64, seq: Int64, horizon: Int64, reading: Int64 = 0) {
        self.zone = zone
        self.seq = seq
        self.horizon = horizon
        self.reading = reading
    }
    init?(_ text: String) {
        let parts = text.split(separator: ".")
        guard parts.count == 3 || parts.count == 4, parts[0].hasPrefix("z"), let zone = Int64(parts[0].dropFirst()), let seq = Int64(parts[1]),
              let horizon = Int64(parts[2]) else { return nil }
        self.zone = zone
        self.seq = seq
        self.horizon = horizon
        if parts.count == 4 {
            guard let reading = Int64(parts[3]) else { return nil }
            self.reading = reading
        }
    }
    var text: String { reading == 0 ? "z\(zone).\(seq).\(horizon)" : "z\(zone).\(seq).\(horizon).\(reading)" }
}

/// One page of a zone's changes: the records changed and deleted, the last sequence it covers
/// (its token's), and whether more changes follow.
private struct ZoneChangesPage {
    var changed: [CloudRecord]
    var deleted: [DeletedRecord]
    var last: Int64
    var moreComing: Bool
}

extension CloudTransaction {
    /// A zone's changes after a sequence: a range scan of the (zone, seq) index.
    static let changesAfterSQL = "SELECT \(StoredRecord.columns) FROM records WHERE zone = ? AND seq > ? ORDER BY seq LIMIT ?"
    static let liveRecordsAfterSQL = "SELECT \(StoredRecord.columns) FROM records WHERE zone = ? AND seq > ? AND deleted = 0 ORDER BY seq LIMIT ?"

    /// Drops tombstones older than the retention and returns the zone's horizon (tokens below it expired).
    /// Superseded versions (serverRecordChanged's ancestors) older than the retention go too.
    func pruneTombstones(zone: ZoneRow) throws -> Int64 {
        let cutoff = now - Double(limits.retentionSeconds)
        try db.execute("DELETE FROM record_versions WHERE zone = ? AND superseded < ?", [zone.id, cutoff])
        guard let dropped = try db.scalar("SELECT max(seq) FROM records WHERE zone = ? AND deleted = 1 AND modified < ?", [zone.id, cutoff])?.int64 else {
            return zone.horizon
        }
        try db.execute("DELETE FROM records WHERE zone = ? AND deleted = 1 AND modified < ?", [zone.id, cutoff])
        let horizon = max(zone.horizon, dropped)
        try db.execute("UPDATE zones SET horizon = ? WHERE id = ?", [horizon, zone.id])
        return horizon
    }

    /// Whether tombstones or superseded versions of the zone are older than the retention.
    func hasExpiredHistory(zone: ZoneRow) throws -> Bool {
        let cutoff = now - Double(limits.retentionSeconds)
        return try db.scalar("SELECT 1 FROM records WHERE zone = ? AND deleted = 1 AND modified < ? LIMIT 1", [zone.id, cutoff]) != nil
            || db.scalar("SELECT 1 FROM record_versions WHERE zone = ? AND superseded < ? LIMIT 1", [zone.id, cutoff]) != nil
    }

    func hasExpiredDatabaseChanges() throws -> Bool {
        let cutoff = now - Double(limits.retentionSeconds)
        return try db.scalar("SELECT 1 FROM database_changes WHERE environment = ? AND kind != 'changed' AND changed < ? LIMIT 1",
                             [environment.rawValue, cutoff]) != nil
    }

    /// The `meta` key of this environment's database horizon (development's keeps the name it had before production existed).
    var databaseHorizonKey: String { environment == .development ? "databaseHorizon" : "databaseHorizon.\(environment.rawValue)" }

    func databaseHorizon() throws -> Int64 {
        try db.scalar("SELECT value FROM meta WHERE key = ?", [databaseHorizonKey])?.int64 ?? 0
    }

    func setDatabaseHorizon(_ horizon: Int64) throws {
        try db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [databaseHorizonKey, horizon])
    }

    /// The last committed sequence (readers do not share the writer's counter).
    func storedSeq() throws -> Int64 {
        try db.scalar("SELECT value FROM meta WHERE key = 'seq'")?.int64 ?? 0
    }

    /// Drops zone deletions older than the retention from the database change log; returns the horizon.
    func pruneDatabaseChanges() throws -> Int64 {
        let cutoff = now - Double(limits.retentionSeconds)
        var horizon = try databaseHorizon()
        if let dropped = try db.scalar("SELECT max(seq) FROM database_changes WHERE environment = ? AND kind != 'changed' AND changed < ?",
                                       [environment.rawValue, cutoff])?.int64 {
            try db.execute("DELETE FROM database_changes WHERE environment = ? AND kind != 'changed' AND changed < ?", [environment.rawValue, cutoff])
            horizon = max(horizon, dropped)
            try setDatabaseHorizon(horizon)
        }
        return horizon
    }

    /// The sequence a page of changes starts after: 0 with no token, else the token's, once the
    /// token is known good for this zone (`requested`: the zone ID as the caller named it, for
    /// the error's details).
    fileprivate func changesStart(since: String?, zone: ZoneRow, reading: Int64, caller: String, requested: ZoneID) throws -> Int64 {
        guard let since else { return 0 }
        guard let token = ZoneToken(since) else {
            throw WireError(.invalidArguments, "params.since is not a zone change token from this service.")
        }
        guard token.zone == zone.id, token.seq >= zone.horizon || token.horizon == zone.horizon else {
            throw WireError(.changeTokenExpired, "The change token is too old (or from an earlier incarnation of the zone); fetch again from nil.",
                            details: ["zoneID": zoneJSON(requested)])
        }
        guard token.reading >= reading else {
            throw WireError(.changeTokenExpired, "The change token was issued before \(caller)'s access to the zone began again; fetch again from nil.",
                            details: ["zoneID": zoneJSON(requested)])
        }
        return token.seq
    }

    /// The zone's rows after `after` in sequence order, at most `limit + 1` (the one over says
    /// more are coming). `liveOnly` (a fetch from nil) leaves tombstones out. Rows are read until
    /// the count or the byte budget is reached (a page of records of a megabyte each is a few
    /// rows, not `limit` of them held in memory); `budgetFull` says the bytes stopped it.
    fileprivate func changeRows(zone: Int64, after: Int64, limit: Int, liveOnly: Bool, zoneBytes: Int) throws -> (rows: [StoredRecord], budgetFull: Bool) {
        let sql = liveOnly ? CloudTransaction.liveRecordsAfterSQL : CloudTransaction.changesAfterSQL
        var rows: [StoredRecord] = []
        rows.reserveCapacity(min(limit + 1, 1024))
        var scanned = PageBudget()
        try db.cached(sql).forEach([zone, after, Int64(limit + 1)]) { statement in
            let stored = StoredRecord(statement)
            rows.append(stored)
            _ = scanned.take(stored.deleted ? PageBudget.deletionCost(of: stored) : PageBudget.cost(of: stored, zoneBytes: zoneBytes))
            return !scanned.isFull
        }
        return (rows, scanned.isFull)
    }

    /// A page of changes from the scanned rows, in sequence order, until the reply's byte budget
    /// is spent (`moreComing` then turns true). Rows hidden from a participant (`shared`) are left
    /// out but still move `last` past them, so the token does not bring them back.
    fileprivate func changesPage(_ rows: ArraySlice<StoredRecord>, after: Int64, moreComing: Bool, zone: ZoneRow, caller: String,
                                 shared: Bool, presented: ZoneID, zoneBytes: Int, fieldsAsText: Bool) throws -> ZoneChangesPage {
        var moreComing = moreComing
        var changed: [CloudRecord] = []
        changed.reserveCapacity(rows.count)
        var deleted: [DeletedRecord] = []
        var last = after
        var shareOf: [String: Bool] = [:]
        var page = PageBudget()
        for stored in rows {
            if stored.deleted {
                if shared, !(try shareVisible(stored.share, zone: zone, caller: caller, cache: &shareOf)) {
                    last = stored.seq
                    continue
                }
                guard page.take(PageBudget.deletionCost(of: stored)) else { moreComing = true; break }
                last = stored.seq
                deleted.append(DeletedRecord(recordName: stored.name, recordType: stored.type))
                continue
            }
            if shared, !(try visibleToParticipant(stored, zone: zone, caller: caller, cache: &shareOf)) {
                last = stored.seq
                continue
            }
            let record = try renderChange(stored, zone: zone, presented: presented, fieldsAsText: fieldsAsText)
            guard page.take(PageBudget.cost(of: stored, zoneBytes: zoneBytes) + PageBudget.shareInfoCost(record.shareInfo)) else {
                moreComing = true
                break
            }
            last = stored.seq
            changed.append(record)
        }
        return ZoneChangesPage(changed: changed, deleted: deleted, last: last, moreComing: moreComing)
    }

    /// A changed record for a page: with parsed `fields`, or with `fieldsAsText` its stored
    /// fields text as `fieldsText` (share records and records without fields are always parsed).
    private func renderChange(_ stored: StoredRecord, zone: ZoneRow, presented: ZoneID, fieldsAsText: Bool) throws -> CloudRecord {
        if !fieldsAsText || stored.type == CloudKitNames.shareRecordType || stored.fields == nil {
            return try render(stored, zone: zone, presentedZoneID: presented)
        }
        // The stored text goes out as it is (RecordFields wrote it, so it is valid JSON).
        var record = try render(stored, zone: zone, presentedZoneID: presented, fields: [:])
        record.fieldsText = stored.fields
        return record
    }

    /// The zone's newest sequence after `after` (so a caught-up token stays put when nothing changed).
    func zoneHighWater(zone: Int64, after: Int64) throws -> Int64 {
        try db.scalar("SELECT max(seq) FROM records WHERE zone = ?", [zone])?.int64 ?? after
    }

    /// Whether a participant sees a record: zone-wide shares show everything; hierarchy shares
    /// show the records under a root whose share the caller accepted.
    func visibleToParticipant(_ record: StoredRecord, zone: ZoneRow, caller: String, cache: inout [String: Bool]) throws -> Bool {
        try shareVisible(try governingShare(zone: zone.id, from: record.name), zone: zone, caller: caller, cache: &cache)
    }

    /// Whether the caller is an accepted participant (permission above none) of `share`.
    func shareVisible(_ share: String?, zone: ZoneRow, caller: String, cache: inout [String: Bool]) throws -> Bool {
        guard let share else { return false }
        if let known = cache[share] { return known }
        let visible = try participation(zone: zone.id, share: share, user: caller)?.reads ?? false
        cache[share] = visible
        return visible
    }
}
