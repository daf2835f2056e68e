import CloudWire
/// The bytes a reply of records may hold: a page stops before the record that would take it
/// over `bytes` (a lone record over it still travels, alone), so a reply stays well under the
/// 16 MiB frame limit however large the records are (a record may hold `maxRecordBytes`).
///
/// A record is counted without writing it: its stored fields text (sent as it is) plus six
/// bytes per UTF-8 byte of its other strings (six is the most JSON escaping makes of one byte)
/// plus `recordOverhead` for keys, dates and punctuation. The count is never below what is
/// written, so it costs a few length reads per record, not a second writing.
struct PageBudget {
    static let bytes = 8 * 1024 * 1024
    static let recordOverhead = 320
    static let deletionOverhead = 64
    static let zoneOverhead = 64
    static let participantOverhead = 128
    static let escapeFactor = 6

    let limit: Int
    private(set) var used = 0
    private(set) var count = 0

    init(limit: Int = PageBudget.bytes) { self.limit = limit }

    /// Counts an item of `cost` bytes if it fits, or if nothing is counted yet (a lone item over
    /// the budget still goes); false when it does not fit and the page must end before it.
    mutating func take(_ cost: Int) -> Bool {
        guard count == 0 || used + cost <= limit else { return false }
        used += cost
        count += 1
        return true
    }

    var isFull: Bool { used >= limit }

    static func escaped(_ text: String?) -> Int { (text?.utf8.count ?? 0) * escapeFactor }

    /// A stored record as a page writes it; `zoneBytes`: its zone ID's `zoneCost`.
    static func cost(of record: StoredRecord, zoneBytes: Int) -> Int {
        (record.fields?.utf8.count ?? 0) + zoneBytes + recordOverhead
            + escaped(record.name) + escaped(record.type) + escaped(record.tag) + escaped(record.creator)
            + escaped(record.modifier) + escaped(record.parent) + escaped(record.share)
    }

    /// A deletion entry (`{"recordName", "recordType"}`).
    static func deletionCost(of record: StoredRecord) -> Int {
        escaped(record.name) + escaped(record.type) + deletionOverhead
    }

    /// A zone ID as a page writes it.
    static func zoneCost(_ zoneID: ZoneID) -> Int {
        escaped(zoneID.zoneName) + escaped(zoneID.ownerName) + zoneOverhead
    }

    /// What a share record's `shareInfo` adds (its participants and their names).
    static func shareInfoCost(_ info: ShareInfo?) -> Int {
        guard let info else { return 0 }
        return escaped(info.owner) + escaped(info.rootRecordName) + participantOverhead
            + info.participants.reduce(0) { $0 + escaped($1.userRecordName) + participantOverhead }
    }
}
