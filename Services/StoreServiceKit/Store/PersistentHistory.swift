import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// Persistent history (NSPersistentHistoryTransaction): per store, every save's transaction
/// with a monotonic token, its author and context name, and its changes.
package enum PersistentHistory {
    /// Transactions after `afterToken` (all when nil), oldest first, at most `limit`. Those by
    /// `skippingChangesOf` come without their changes (the mirror passes over its own imports,
    /// which can be thousands of changes each).
    static func fetch(_ store: PersistentStore, afterToken: Int?, limit: Int, skippingChangesOf skipped: String? = nil) throws -> [HistoryResult.Transaction] {
        let rows = try store.database.query(
            "SELECT token, timestamp, author, context_name, CASE WHEN author IS ? THEN '[]' ELSE changes END FROM z_transaction WHERE token > ? ORDER BY token LIMIT ?",
            [SQLValue(skipped), afterToken ?? 0, limit])
        return rows.map { row in
            let author = row[2].string ?? ""
            let changes = HistoryChanges.entries(row[4].string ?? "[]").map { entry in
                HistoryResult.Change(kind: entry.kind.rawValue, objectID: store.objectID(entry.entity, entry.primaryKey).uri,
                                          entity: entry.entity, uuid: entry.uuid, changedProperties: entry.changed, tombstone: entry.tombstone)
            }
            return HistoryResult.Transaction(store: store.name, storeUUID: store.uuid, token: Int(row[0].int64 ?? 0), timestamp: row[1].string ?? "",
                                      author: author, contextName: row[3].string, changes: changes)
        }
    }

    /// One transaction's changes as stored, without the object-ID URIs `fetch` builds for
    /// clients (the mirror's queue reads history by the thousand and names records by uuid).
    package struct StoredTransaction {
        package var token: Int
        package var timestamp: String
        package var author: String
        package var entries: [HistoryChanges.Entry]
    }

    package static func fetchStored(_ store: PersistentStore, afterToken: Int, limit: Int, skippingChangesOf skipped: String? = nil) throws -> [StoredTransaction] {
        try store.database.query(
            "SELECT token, timestamp, author, CASE WHEN author IS ? THEN '[]' ELSE changes END FROM z_transaction WHERE token > ? ORDER BY token LIMIT ?",
            [SQLValue(skipped), afterToken, limit]).map { row in
            StoredTransaction(token: Int(row[0].int64 ?? 0), timestamp: row[1].string ?? "", author: row[2].string ?? "",
                              entries: HistoryChanges.entries(row[3].string ?? "[]"))
        }
    }

    /// The changes of one transaction (empty when it was purged).
    package static func changes(_ store: PersistentStore, token: Int) throws -> [HistoryChanges.Entry] {
        HistoryChanges.entries(try store.database.scalar("SELECT changes FROM z_transaction WHERE token = ?", [token])?.string ?? "[]")
    }

    /// z_metadata's key for the newest timestamp of any purged transaction.
    static let purgedThroughKey = "historyPurgedThrough"

    /// The newest timestamp of any transaction purged so far (nil: none was), in seconds.
    package static func purgedThrough(_ store: PersistentStore) throws -> Double? {
        try store.database.scalar("SELECT value FROM z_metadata WHERE key = ?", [purgedThroughKey])?.string
            .flatMap(ISOTime.seconds)
    }

    /// Deletes transactions before `beforeToken`; returns how many went. Tokens never repeat.
    static func purge(_ store: PersistentStore, beforeToken: Int) throws -> Int {
        try store.database.transaction {
            // The newest time among what goes: every change purged now was made by then, which
            // is all a later reader that needed them can still know (`purgedThrough`).
            if let newest = try store.database.scalar("SELECT max(timestamp) FROM z_transaction WHERE token < ?", [beforeToken])?.string {
                try store.database.execute("""
                    INSERT INTO z_metadata(key, value) VALUES (?, ?)
                    ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)
                    """, [purgedThroughKey, newest])
            }
            try store.database.execute("DELETE FROM z_transaction WHERE token < ?", [beforeToken])
            return store.database.changes
        }
    }
}

/// The changes of one history transaction, packed into its `z_transaction.changes` column as a
/// JSON array of `[kind, entity, primaryKey, uuid, changedProperties|null, tombstone|null]`.
/// One row per save instead of one per object: history stays complete and ordered, and a big
/// save writes one value instead of a thousand rows and index entries.
package struct HistoryChanges {
    package struct Entry: Equatable {
        package var kind: ChangeKind
        package var entity: String
        package var primaryKey: Int64
        package var uuid: String
        package var changed: [String]?
        var tombstone: [String: JSONValue]?
    }

    /// The packed text so far, as UTF-8 bytes (a String appended piece by piece cost a
    /// thousand-object save more than the bytes do), always closed: each append goes before
    /// the closing bracket, so the column is written from these bytes as they are.
    private var text = JSONBytes(bytes: Array("[]".utf8))
    private(set) var count = 0
    var isEmpty: Bool { count == 0 }

    init() {}

    /// Adds one change; `changedJSON` is the changed-property list already as JSON text
    /// (`JSONWriter.text(strings:)`), since a batch repeats the same few lists.
    mutating func append(kind: ChangeKind, entity: String, primaryKey: Int64, uuid: String,
                         changedJSON: String?, tombstone: [String: JSONValue]? = nil) {
        text.bytes.removeLast()
        text.append(count == 0 ? "[" : ",[")
        text.append(string: kind.rawValue)
        text.append(",")
        text.append(string: entity)
        text.append(",")
        text.append(integer: primaryKey)
        text.append(",")
        text.append(string: uuid)
        text.append(",")
        text.append(raw: changedJSON ?? "null")
        text.append(",")
        if let tombstone { text.append(raw: JSONWriter.text(.object(tombstone))) } else { text.append("null") }
        text.append("]]")
        count += 1
    }

    /// Adds a run of updates (`UpdateRun`): into an empty history its text is taken as it is
    /// (a bulk repair's is megabytes), otherwise spliced in before the closing bracket.
    mutating func append(_ run: UpdateRun) {
        guard run.count > 0 else { return }
        if count == 0 {
            text.bytes = run.bytes
        } else {
            text.bytes.removeLast()
            text.append(",")
            text.bytes.append(contentsOf: run.bytes.dropFirst())
        }
        count += run.count
    }

    /// One update per row, in the rows' order, all of one entity with the same changed list, as
    /// a packed array of its own: the entries `append(kind:…)` writes, byte for byte. Made apart from the
    /// transaction's text so a bulk UPDATE's history can be written on the thread that read its
    /// rows (the orphan repair writes a hundred thousand such entries); the text before and
    /// after each row's key and uuid is made once.
    struct UpdateRun: Sendable {
        let count: Int
        fileprivate let bytes: [UInt8]

        init(entity: String, changedJSON: String, rows: UpdatedRows) {
            var head = JSONBytes()
            head.append("[")
            head.append(string: ChangeKind.update.rawValue)
            head.append(",")
            head.append(string: entity)
            head.append(",")
            var tail = JSONBytes()
            tail.append(",")
            tail.append(raw: changedJSON)
            tail.append(",null]")
            var text = JSONBytes()
            text.bytes.reserveCapacity(rows.count * (head.bytes.count + tail.bytes.count + 60) + 2)
            text.append("[")
            for position in 0..<rows.count {
                if position > 0 { text.append(",") }
                text.bytes.append(contentsOf: head.bytes)
                text.append(integer: rows.keys[position])
                text.append(",")
                rows.withUUID(at: position) { text.append(utf8: $0) }
                text.bytes.append(contentsOf: tail.bytes)
            }
            text.append("]")
            count = rows.count
            bytes = text.bytes
        }
    }

    mutating func append(_ entry: Entry) {
        append(kind: entry.kind, entity: entry.entity, primaryKey: entry.primaryKey, uuid: entry.uuid,
               changedJSON: entry.changed.map { JSONWriter.text(strings: $0) }, tombstone: entry.tombstone)
    }

    /// The packed text as a String.
    var packed: String { String(decoding: text.bytes, as: UTF8.self) }

    /// The packed text's bytes, lent to `body` (the history row is written from them in place).
    func withPackedBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try text.bytes.withUnsafeBufferPointer(body)
    }

    /// Reads a packed column back, without a JSON tree (the mirror reads every saved change, a
    /// thousand per bulk save); entries it cannot read are skipped (never written by us), and a
    /// column that is not a JSON array reads as none.
    static func entries(_ packed: String) -> [Entry] {
        var text = packed
        return text.withUTF8 { bytes in
            var reader = MessageReader(bytes)
            var rows = PackedRows()
            do throws(MessageReadError) {
                try reader.array { (reader) throws(MessageReadError) in
                    let row = try reader.valueBytes()
                    if let entry = rows.entry(row) { rows.entries.append(entry) }
                }
                try reader.finish()
            } catch {
                return []
            }
            return rows.entries
        }
    }

    /// `[kind, entity, primaryKey, uuid, changed, tombstone]` rows read one by one.
    private struct PackedRows {
        var entries: [Entry] = []
        /// The last changed-property list read and its text: a bulk save repeats the same list
        /// entry after entry, and equal text shares one array.
        var lastList: (text: [UInt8], names: [String])?

        /// Each member read into its own typed value (an array of `Any` grew and was cast back
        /// member by member: allocations and dynamic casts on every change the mirror queues).
        mutating func entry(_ row: UnsafeBufferPointer<UInt8>) -> Entry? {
            var reader = MessageReader(row)
            var members = 0
            var kind: ChangeKind?, entity: String?, key: Int?, uuid: String?
            var changed: [String]?, tombstone: [String: JSONValue]?
            do throws(MessageReadError) {
                try reader.array { (reader) throws(MessageReadError) in
                    switch members {
                    case 0: kind = try reader.rawValue(ChangeKind.self)
                    case 1: entity = try reader.string()
                    case 2: key = try reader.int()
                    case 3: uuid = try reader.string()
                    case 4: changed = reader.readNull() ? nil : try names(&reader)
                    case 5: tombstone = reader.readNull() ? nil : try reader.value().objectValue
                    default: throw reader.invalid("more than six members")
                    }
                    members += 1
                }
            } catch {
                return nil
            }
            guard members == 6, let kind, let entity, let key, let uuid else { return nil }
            return Entry(kind: kind, entity: entity, primaryKey: Int64(key), uuid: uuid, changed: changed, tombstone: tombstone)
        }

        private mutating func names(_ reader: inout MessageReader) throws(MessageReadError) -> [String] {
            let text = try reader.valueBytes()
            if let lastList, lastList.text.elementsEqual(text) { return lastList.names }
            var list = MessageReader(text)
            var names: [String] = []
            try list.array { (reader) throws(MessageReadError) in names.append(try reader.string()) }
            lastList = (Array(text), names)
            return names
        }
    }

    /// Stores written before history was packed kept a row per change in `z_change`: fold them
    /// into their transactions once, then drop the table.
    static func migrateChangeRows(_ database: Database) throws {
        let columns = Set(try database.query("SELECT name FROM pragma_table_info('z_transaction')").compactMap { $0[0].string })
        if !columns.contains("changes") {
            try database.execute("ALTER TABLE z_transaction ADD COLUMN changes TEXT NOT NULL DEFAULT '[]'")
        }
        guard try database.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'z_change'") != nil else { return }
        var packed: [Int64: HistoryChanges] = [:]
        for row in try database.query("SELECT token, kind, entity, pk, uuid, changed, tombstone FROM z_change ORDER BY id") {
            guard let token = row[0].int64, let kind = row[1].string.flatMap(ChangeKind.init(rawValue:)) else { continue }
            let tombstone = row[6].string.flatMap { try? JSONParser.parse($0).objectValue }
            packed[token, default: HistoryChanges()].append(kind: kind, entity: row[2].string ?? "", primaryKey: row[3].int64 ?? 0,
                                                            uuid: row[4].string ?? "", changedJSON: row[5].string, tombstone: tombstone)
        }
        for (token, changes) in packed {
            try database.execute("UPDATE z_transaction SET changes = ? WHERE token = ?", [changes.packed, token])
        }
        try database.execute("DROP TABLE z_change")
    }
}

/// The keys and uuids of rows one statement changed, the uuids' UTF-8 bytes kept in one buffer:
/// the orphan repair's `UPDATE … RETURNING` hands back a hundred thousand, and making a String of
/// each uuid cost more than writing its history entry.
struct UpdatedRows {
    private(set) var keys: [Int64] = []
    private var uuidBytes: [UInt8] = []
    private var uuidEnds: [Int] = []

    var count: Int { keys.count }
    var isEmpty: Bool { keys.isEmpty }

    mutating func append(key: Int64, uuid: UnsafeBufferPointer<UInt8>) {
        keys.append(key)
        uuidBytes.append(contentsOf: uuid)
        uuidEnds.append(uuidBytes.count)
    }

    /// The key and uuid of a statement's row whose first two columns are `z_pk, z_uuid`.
    mutating func append(row: Statement) {
        let key = row.int64(at: 0)
        if row.withText(at: 1, { append(key: key, uuid: $0) }) == nil { append(key: key, uuid: "") }
    }

    mutating func append(key: Int64, uuid: String) {
        var uuid = uuid
        uuid.withUTF8 { append(key: key, uuid: $0) }
    }

    /// Puts the rows in key order (a statement returns them in the order its scan met them).
    mutating func sortByKey() {
        guard !keys.indices.dropFirst().allSatisfy({ keys[$0 - 1] < keys[$0] }) else { return }
        var sorted = UpdatedRows()
        sorted.keys.reserveCapacity(count)
        sorted.uuidBytes.reserveCapacity(uuidBytes.count)
        sorted.uuidEnds.reserveCapacity(count)
        for position in keys.indices.sorted(by: { keys[$0] < keys[$1] }) {
            withUUID(at: position) { sorted.append(key: keys[position], uuid: $0) }
        }
        self = sorted
    }

    func withUUID<R>(at position: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let start = position == 0 ? 0 : uuidEnds[position - 1]
        return uuidBytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<uuidEnds[position]])) }
    }
}
