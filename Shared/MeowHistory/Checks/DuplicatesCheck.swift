/// No object twice: a device holds each UUID once across its stores, and the cloud holds each
/// record name once across one owner's zones (record names are the objects' UUIDs, so a resent
/// insert meets itself rather than making a second record).
public struct DuplicatesCheck: HistoryCheck {
    public let name = "duplicates"

    public init() {}

    public func check(_ run: RunRecord) -> [CheckFailure] {
        let writes = Dictionary(grouping: run.history.compactMap(WriteRequest.init), by: \.uuid)
        func about(_ uuid: String) -> (String, [Int]) {
            let inserts = (writes[uuid] ?? []).filter { $0.kind == .insert }
            let entity = writes[uuid]?.first?.entity ?? "object"
            let words = inserts.isEmpty ? "" : " (\(inserts.map { "\($0.device)'s insert #\($0.entry)" }.joined(separator: ", ")))"
            return ("\(entity) \(WriteRequest.short(uuid))\(words)", inserts.map(\.entry))
        }
        var failures: [CheckFailure] = []
        for device in run.final.devices {
            for (uuid, copies) in Dictionary(grouping: device.objects, by: \.uuid).sorted(by: { $0.key < $1.key }) where copies.count > 1 {
                let (words, entries) = about(uuid)
                failures.append(CheckFailure(check: name, explanation:
                    "device \(device.name) holds \(words) \(copies.count) times (stores: \(copies.map(\.store).joined(separator: ", "))).",
                    entries: entries))
            }
        }
        for (owner, zones) in Dictionary(grouping: run.final.cloud, by: \.owner).sorted(by: { $0.key < $1.key }) {
            // Each share zone has its own share record, all named cloudkit.zoneshare: not objects.
            let copies = zones.flatMap { zone in
                zone.records.filter { $0.recordType != "cloudkit.share" }.map { ($0.recordName, zone.zoneName) }
            }
            for (uuid, found) in Dictionary(grouping: copies, by: \.0).sorted(by: { $0.key < $1.key }) where found.count > 1 {
                let (words, entries) = about(uuid)
                failures.append(CheckFailure(check: name, explanation:
                    "the cloud holds \(words) \(found.count) times in \(owner)'s zones (\(found.map(\.1).joined(separator: ", "))).",
                    entries: entries))
            }
        }
        return failures
    }
}
