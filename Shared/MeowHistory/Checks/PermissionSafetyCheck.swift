import MeowWire

/// Nothing written by a principal without write permission is ever visible to anyone else. The
/// reference model names the writes the rules keep out of the cloud for want of permission —
/// refused when their send reached the cloud, or discarded when the participant lost the zone
/// first. Values written by explored steps are unique per write, so such a value seen anywhere
/// can only have come from that write: it must never appear in the cloud at the end, nor on any
/// other device in any observation (between fetches too) or at the end; on the writer's own
/// device it may show until the rules take it back, and must be gone after its next fetch that
/// took effect.
public struct PermissionSafetyCheck: ModelCheck {
    public let name = "permissionSafety"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] { check(Judgement(run)) }

    func check(_ judgement: Judgement) -> [CheckFailure] {
        let expected = judgement.expected
        var failures: [CheckFailure] = []
        let observations = judgement.run.history.filter { $0.op == HistoryOp.observe && $0.outcome.tookEffect == true }
        for (entry, refusal) in expected.refusals.sorted(by: { $0.key < $1.key }) {
            guard let write = expected.writes[entry] else { continue }
            let clearedAt = clearingPoint(refusal, write, expected)
            for (field, value) in write.fields.sorted(by: { $0.key < $1.key }) where judgement.forbidden(write.uuid, field, value) != nil {
                let what = "\(write.described(field: field)) set \(Judgement.text(value)) \(refusalWords(refusal, write))"
                for observation in observations where shows(observation, write.uuid, field, value) {
                    let own = observation.actor == write.device
                    guard !own || (clearedAt.map { observation.index > $0 } ?? false) else { continue }
                    let when = own ? " after its fetch #\(clearedAt ?? 0) took it back" : ""
                    failures.append(CheckFailure(check: name, explanation:
                        "\(what), yet device \(observation.actor) showed it in observe #\(observation.index)\(when).",
                        entries: [write.entry, refusal.at, observation.index] + (own ? [clearedAt ?? 0] : [])))
                }
                if judgement.cloud.copies[write.uuid]?.contains(where: { $0.value(field).same(as: value) }) ?? false {
                    failures.append(CheckFailure(check: name, explanation: "\(what), yet the cloud has it at the end.",
                                                 entries: [write.entry, refusal.at]))
                }
                for place in judgement.devices where place.copies[write.uuid]?.contains(where: { $0.value(field).same(as: value) }) ?? false {
                    let own = place.device == write.device
                    guard !own || clearedAt != nil else { continue }
                    failures.append(CheckFailure(check: name, explanation:
                        "\(what), yet \(place.name) still shows it at the end\(own ? " after its fetch #\(clearedAt ?? 0)" : "").",
                        entries: [write.entry, refusal.at]))
                }
            }
        }
        return failures
    }

    /// From which history index on the writer's own device must no longer show the value: the
    /// first fetch that took effect after the refusing send, or the discarding fetch itself.
    func clearingPoint(_ refusal: Refusal, _ write: WriteRequest, _ expected: ExpectedState) -> Int? {
        switch refusal.kind {
        case .discarded: refusal.at
        case .refused: expected.fetches[write.device]?.first { $0 > refusal.at }
        }
    }

    func refusalWords(_ refusal: Refusal, _ write: WriteRequest) -> String {
        switch refusal.kind {
        case .refused: "without write permission when \(refusal.device)'s sync.send #\(refusal.at) reached the cloud (\(refusal.why)), so the rules refuse it"
        case .discarded: "and \(write.device) lost the zone before sending it (#\(refusal.at): \(refusal.why)), so the rules discard it"
        }
    }

    func shows(_ observation: HistoryEntry, _ uuid: String, _ field: String, _ value: JSONValue) -> Bool {
        let objects = observation.outcome.result?["objects"]?.arrayValue ?? []
        return objects.contains { object in
            object["uuid"]?.stringValue == uuid && Place.Copy(values: object["values"]?.objectValue ?? [:]).value(field).same(as: value)
        }
    }
}
