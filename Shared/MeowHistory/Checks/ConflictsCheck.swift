import MeowWire

/// Every record ends as the reference model of the documented merge rules says, in the cloud and
/// on every device allowed to read its zone: it exists or not, in the zone the rules put it in,
/// each field with the value of the write the rules pick. What `durability` reports (an
/// acknowledged write missing without a rule deciding against it) and `permissionSafety`
/// reports (a forbidden value) is not repeated here; a final value from a write that lost a
/// merge, an edit that outlived the delete that beat it, and any other difference are.
public struct ConflictsCheck: ModelCheck {
    public let name = "conflicts"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] { check(Judgement(run)) }

    func check(_ judgement: Judgement) -> [CheckFailure] {
        let expected = judgement.expected
        var failures: [CheckFailure] = []
        let fieldsWritten = Dictionary(grouping: expected.writes.values, by: \.uuid).mapValues { Set($0.flatMap(\.fields.keys)) }
        for record in expected.records.values.sorted(by: { $0.uuid < $1.uuid }) {
            let label = "\(record.entity) \(WriteRequest.short(record.uuid))"
            let places = record.exists ? judgement.readingPlaces(record.zone) : [judgement.cloud] + judgement.devices
            for place in places {
                let copy = place.copies[record.uuid]?.first
                if !record.exists {
                    guard let copy, !hasForbidden(copy, record, judgement), !holdsUnsent(place, record, judgement) else { continue }
                    if let delete = record.deletedBy.flatMap({ judgement.expected.writes[$0] }),
                       let edit = judgement.deleteLosersShown(record, in: copy).first {
                        failures.append(CheckFailure(check: name, explanation:
                            "\(edit.described) met \(delete.described), and the delete wins (\(edit.entity)'s policy is deleteWins), but \(place.name) still has it with the edit's values.",
                            entries: [edit.entry, delete.entry].sorted()))
                        continue
                    }
                    // A lost acknowledged delete is durability's.
                    guard !deleteIsDurabilitys(record, judgement) else { continue }
                    failures.append(CheckFailure(check: name, explanation:
                        "\(label) is in \(place.name) at the end, but the rules say it should not be: \(whyAbsent(record, judgement)).",
                        entries: [record.deletedBy].compactMap { $0 }))
                    continue
                }
                guard let copy else {
                    // A missing record with an acknowledged insert or field holding is durability's.
                    if !record.fields.values.contains(where: { judgement.acknowledged($0.entry) }) && !hasAcknowledgedInsert(record, judgement) {
                        failures.append(CheckFailure(check: name, explanation:
                            "\(label) is missing from \(place.name) at the end, but the rules keep it in \(record.zone).",
                            entries: record.fields.values.map(\.entry).sorted()))
                    }
                    continue
                }
                if place.device == nil, let zone = copy.zone, zone != record.zone {
                    failures.append(CheckFailure(check: name, explanation:
                        "\(label) is in zone \(zone) in the cloud, but the rules put it in \(record.zone).",
                        entries: record.fields.values.map(\.entry).sorted()))
                }
                for field in (fieldsWritten[record.uuid] ?? []).sorted() {
                    if let failure = fieldFailure(record, field, copy, place, judgement) { failures.append(failure) }
                }
            }
            // Rule: a device whose user lost the zone deletes that object graph from its store.
            guard record.exists else { continue }
            for (place, user) in judgement.nonReadingDevices(record.zone)
            where place.copies[record.uuid] != nil && !holdsUnsent(place, record, judgement) {
                failures.append(CheckFailure(check: name, explanation:
                    "\(label) is still on \(place.name) at the end, but \(user) may not read \(record.zone): \(expected.whyNotReading(user, record.zone))."))
            }
        }
        return failures
    }

    func fieldFailure(_ record: ExpectedRecord, _ field: String, _ copy: Place.Copy, _ place: Place,
                      _ judgement: Judgement) -> CheckFailure? {
        let expected = judgement.expected
        let winner = record.fields[field]
        let want = winner?.value ?? .null
        let actual = copy.value(field)
        guard !actual.same(as: want), judgement.forbidden(record.uuid, field, actual) == nil else { return nil }
        let losers = record.mergeLosers[field] ?? []
        let actualWriters = expected.writers(of: actual, uuid: record.uuid, field: field)
        let wrongWinner = actualWriters.first { losers.contains($0.entry) }
        // A missing acknowledged value that no merge decided against is durability's.
        if wrongWinner == nil, let winner, judgement.acknowledged(winner.entry) { return nil }
        let (words, others) = judgement.describe(actual, uuid: record.uuid, field: field)
        guard let winner, let winning = expected.writes[winner.entry] else {
            return CheckFailure(check: name, explanation:
                "\(record.entity) \(WriteRequest.short(record.uuid))'s \(field) is \(words) in \(place.name), but the rules leave it without a value.",
                entries: others)
        }
        if let loser = wrongWinner {
            return CheckFailure(check: name, explanation:
                "\(winning.described(field: field)) and \(loser.described(field: field)) both changed it; \(ruleWords(winner, loser)), so it should be \(Judgement.text(want)), but \(place.name) has \(Judgement.text(actual)).",
                entries: [winner.entry, loser.entry].sorted())
        }
        return CheckFailure(check: name, explanation:
            "\(record.entity) \(WriteRequest.short(record.uuid))'s \(field) should be \(Judgement.text(want)) from \(winning.described(field: field)), but \(place.name) has \(words).",
            entries: ([winner.entry] + others).uniqued().sorted())
    }

    func ruleWords(_ winner: FieldWrite, _ loser: WriteRequest) -> String {
        if winner.stamp != loser.stamp { return "the later stamp wins" }
        return "the stamps tie and the greater device name (\(winner.device)) wins"
    }

    func deleteIsDurabilitys(_ record: ExpectedRecord, _ judgement: Judgement) -> Bool {
        guard let delete = record.deletedBy else { return false }
        return judgement.acknowledged(delete)
    }

    func hasForbidden(_ copy: Place.Copy, _ record: ExpectedRecord, _ judgement: Judgement) -> Bool {
        judgement.expected.writes.values.contains { write in
            write.uuid == record.uuid && write.fields.contains { field, value in
                judgement.forbidden(record.uuid, field, value) != nil && copy.value(field).same(as: value)
            }
        }
    }

    func hasAcknowledgedInsert(_ record: ExpectedRecord, _ judgement: Judgement) -> Bool {
        judgement.expected.writes.values.contains { write in
            write.uuid == record.uuid && write.kind == .insert && judgement.acknowledged(write.entry)
                && judgement.expected.fate(of: write.entry, field: nil) == .holds
        }
    }

    /// A device still holding its own unsent write of the record shows it rightly; the write
    /// never reaching the cloud is durability's.
    func holdsUnsent(_ place: Place, _ record: ExpectedRecord, _ judgement: Judgement) -> Bool {
        judgement.expected.writes.values.contains { write in
            write.uuid == record.uuid && write.device == place.device && judgement.expected.fate(of: write.entry, field: nil) == .unsent
        }
    }

    func whyAbsent(_ record: ExpectedRecord, _ judgement: Judgement) -> String {
        if let delete = record.deletedBy, let write = judgement.expected.writes[delete] { return "\(write.described) deleted it" }
        let writes = judgement.expected.writes.values.filter { $0.uuid == record.uuid }.sorted { $0.entry < $1.entry }
        let fates = writes.map { "\($0.described): \(judgement.expected.fate(of: $0.entry, field: nil).words)" }
        return "no write of it reached the cloud (\(fates.joined(separator: "; ")))"
    }
}
