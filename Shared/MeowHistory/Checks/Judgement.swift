import MeowWire

/// One place a record can be seen at the end of a run: the cloud, or a device.
struct Place {
    /// "the cloud" or "device B".
    var name: String
    /// nil for the cloud.
    var device: String?
    /// Each copy of a record there, by UUID, as field lookups.
    var copies: [String: [Copy]]

    struct Copy {
        var zone: ZoneRef?
        var store: String?
        var values: [String: JSONValue]

        /// A field's value; absent reads as null (nil is an edit like any other).
        func value(_ field: String) -> JSONValue {
            if let value = values["CD_" + field] ?? values[field] { return Copy.unwrapped(value) }
            return .null
        }

        /// Cloud fields may come typed, `{"type": "string", "value": …}`: the value is compared.
        static func unwrapped(_ value: JSONValue) -> JSONValue {
            if case let .object(object) = value, object["type"] != nil, let inner = object["value"] { return inner }
            return value
        }
    }
}

/// A check that compares the run with the reference model: the Checker replays the model once
/// and hands the same judgement to each.
protocol ModelCheck: HistoryCheck {
    func check(_ judgement: Judgement) -> [CheckFailure]
}

/// The model's verdict on a run, and the run's final state arranged by place: what the checks
/// that compare them share.
struct Judgement {
    let run: RunRecord
    let expected: ExpectedState
    let cloud: Place
    let devices: [Place]
    let deviceUsers: [String: String]

    init(_ run: RunRecord) {
        self.run = run
        expected = ReferenceModel(run).replay(run)
        var cloudCopies: [String: [Place.Copy]] = [:]
        for zone in run.final.cloud {
            for record in zone.records {
                cloudCopies[record.recordName, default: []].append(
                    Place.Copy(zone: ZoneRef(owner: zone.owner, zoneName: zone.zoneName), values: record.fields))
            }
        }
        cloud = Place(name: "the cloud", device: nil, copies: cloudCopies)
        devices = run.final.devices.map { device in
            var copies: [String: [Place.Copy]] = [:]
            for object in device.objects {
                copies[object.uuid, default: []].append(Place.Copy(store: object.store, values: object.values))
            }
            return Place(name: "device \(device.name)", device: device.name, copies: copies)
        }
        deviceUsers = Dictionary(run.final.devices.map { ($0.name, $0.user) }, uniquingKeysWith: { first, _ in first })
    }

    /// The cloud and every device whose user may read `zone` at the end.
    func readingPlaces(_ zone: ZoneRef) -> [Place] {
        [cloud] + devices.filter { place in
            guard let device = place.device, let user = deviceUsers[device] else { return false }
            return expected.reads(user, zone)
        }
    }

    /// The devices whose user may not read `zone` at the end, with the user.
    func nonReadingDevices(_ zone: ZoneRef) -> [(place: Place, user: String)] {
        devices.compactMap { place in
            guard let device = place.device, let user = deviceUsers[device], !expected.reads(user, zone) else { return nil }
            return (place, user)
        }
    }

    /// The history entry at `index` (histories are indexed from 0 in order, but a crafted one
    /// may skip).
    func entry(_ index: Int) -> HistoryEntry? {
        if run.history.indices.contains(index), run.history[index].index == index { return run.history[index] }
        return run.history.first { $0.index == index }
    }

    /// Whether the write at `index` was acknowledged: its client saw ok.
    func acknowledged(_ index: Int) -> Bool {
        if case .ok = entry(index)?.outcome { return true }
        return false
    }

    /// Values a principal without write permission wrote, by record and field (nulls aside:
    /// they are not unique to a write). A value some permitted write also set is left out.
    func forbidden(_ uuid: String, _ field: String, _ value: JSONValue) -> WriteRequest? {
        guard value != .null else { return nil }
        let writers = expected.writers(of: value, uuid: uuid, field: field)
        guard writers.allSatisfy({ expected.refusals[$0.entry] != nil }) else { return nil }
        return writers.first
    }

    /// The edits of `record` that lost to its delete and that `copy` still shows.
    func deleteLosersShown(_ record: ExpectedRecord, in copy: Place.Copy) -> [WriteRequest] {
        record.deleteLosers.sorted().compactMap { expected.writes[$0] }.filter { write in
            !write.fields.isEmpty && write.fields.allSatisfy { copy.value($0.key).same(as: $0.value) }
        }
    }

    /// A value in words: the write that set it when the history has one, else the value itself.
    func describe(_ value: JSONValue, uuid: String, field: String) -> (words: String, entries: [Int]) {
        if value == .null { return ("no value", []) }
        let writers = expected.writers(of: value, uuid: uuid, field: field)
        guard let writer = writers.first else { return ("\(Self.text(value)), which no write in the history set", []) }
        return ("\(Self.text(value)) from \(writer.described(field: field))", writers.map(\.entry))
    }

    static func text(_ value: JSONValue) -> String {
        if case let .string(string) = value { return "\"\(string)\"" }
        return (try? JSONTextEncoder().text(value)) ?? "\(value)"
    }
}

extension HistoryEntry {
    /// "A's sync.send #7": how explanations name a request.
    var described: String {
        if let write = WriteRequest(self) { return write.described }
        return "\(actor)'s \(op) #\(index)"
    }
}

extension Array where Element == Int {
    /// The indexes once each, in their first order.
    func uniqued() -> [Int] {
        var seen = Set<Int>()
        return filter { seen.insert($0).inserted }
    }
}
