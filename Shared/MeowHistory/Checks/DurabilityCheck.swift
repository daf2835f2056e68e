import MeowWire

/// Every acknowledged write is in the end state: each field an acknowledged insert, update or
/// link set is, in the cloud and on every device allowed to read its zone, unless the reference
/// model says a later write or delete superseded it, a merge gave the field to another edit, or
/// the rules refused or discarded it; an acknowledged delete's record is gone from all of them.
/// A field whose final value is a merge loser's is left to `conflicts` (a wrong winner, not a
/// lost write), and a forbidden value to `permissionSafety`, so each breach is reported once.
public struct DurabilityCheck: ModelCheck {
    public let name = "durability"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] { check(Judgement(run)) }

    func check(_ judgement: Judgement) -> [CheckFailure] {
        let expected = judgement.expected
        var failures: [CheckFailure] = []
        for write in expected.writes.values.sorted(by: { $0.entry < $1.entry }) where judgement.acknowledged(write.entry) {
            guard let record = expected.records[write.uuid] else { continue }
            if write.kind == .delete {
                for uuid in [write.uuid] + write.cascade {
                    if let removed = expected.records[uuid] { failures += deleteFailures(write, removed, judgement) }
                }
                continue
            }
            let fates = write.fields.keys.sorted().map { ($0, expected.fate(of: write.entry, field: $0)) }
            if expected.fate(of: write.entry, field: nil) == .unsent {
                failures.append(CheckFailure(check: name, explanation:
                    "\(write.described) was acknowledged but no sync.send of \(write.device) that took effect carried it, so it never reached the cloud.",
                    entries: [write.entry]))
                continue
            }
            let holding = fates.filter { $0.1 == .holds }.map(\.0)
            guard record.exists, !holding.isEmpty || (write.kind == .insert && expected.fate(of: write.entry, field: nil) == .holds) else { continue }
            for place in judgement.readingPlaces(record.zone) {
                guard let copy = place.copies[write.uuid]?.first else {
                    failures.append(CheckFailure(check: name, explanation:
                        "\(write.described) was acknowledged but \(place.name) has no such \(write.entity) at the end\(placeNote(place, record)).",
                        entries: [write.entry]))
                    continue
                }
                for field in holding {
                    let value = write.fields[field] ?? .null
                    let actual = copy.value(field)
                    guard !actual.same(as: value), !isExplainedElsewhere(actual, write.uuid, field, judgement) else { continue }
                    let (words, others) = judgement.describe(actual, uuid: write.uuid, field: field)
                    failures.append(CheckFailure(check: name, explanation:
                        "\(write.described(field: field)) was acknowledged and nothing later superseded it, but \(place.name) has \(words) instead of \(Judgement.text(value)).",
                        entries: ([write.entry] + others).uniqued()))
                }
            }
        }
        return failures
    }

    func deleteFailures(_ delete: WriteRequest, _ record: ExpectedRecord, _ judgement: Judgement) -> [CheckFailure] {
        guard judgement.expected.fate(of: delete.entry, field: nil) == .holds, !record.exists, record.deletedBy == delete.entry else { return [] }
        // A copy showing an edit that lost to this delete is a wrong delete-versus-edit outcome: conflicts's.
        let places = ([judgement.cloud] + judgement.devices).filter { place in
            guard let copy = place.copies[record.uuid]?.first else { return false }
            return judgement.deleteLosersShown(record, in: copy).isEmpty
        }
        let what = record.uuid == delete.uuid ? "it" : "\(record.entity) \(WriteRequest.short(record.uuid)), which its delete rules removed,"
        return places.map { place in
            CheckFailure(check: name, explanation:
                "\(delete.described) was acknowledged and nothing later brought it back, but \(place.name) still has \(what) at the end.",
                entries: [delete.entry])
        }
    }

    /// A wrong merge winner is `conflicts`'s to report; a forbidden value `permissionSafety`'s.
    func isExplainedElsewhere(_ actual: JSONValue, _ uuid: String, _ field: String, _ judgement: Judgement) -> Bool {
        let losers = judgement.expected.records[uuid]?.mergeLosers[field] ?? []
        if judgement.expected.writers(of: actual, uuid: uuid, field: field).contains(where: { losers.contains($0.entry) }) { return true }
        return judgement.forbidden(uuid, field, actual) != nil
    }

    func placeNote(_ place: Place, _ record: ExpectedRecord) -> String {
        place.device == nil ? " (the rules put it in \(record.zone))" : ", though its user may read \(record.zone)"
    }
}
