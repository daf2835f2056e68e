import MeowHistory
import MeowWire

/// Builds a crafted history step by step, so a test reads as the story it tells: each call
/// appends one entry with the next index and logical time, and answers that index.
struct Story {
    private(set) var entries: [HistoryEntry] = []
    private var users: [String: String]

    /// `devices`: each device's name and the user signed in on it.
    init(devices: [String: String]) { users = devices }

    @discardableResult
    mutating func add(_ device: String, _ op: String, _ params: JSONValue = [:], outcome: Outcome = .ok([:])) -> Int {
        let index = entries.count
        entries.append(HistoryEntry(run: 1, index: index, actor: device, user: users[device], op: op, params: params,
                                    invoke: index, complete: outcome.tookEffect == nil ? nil : index, outcome: outcome))
        return index
    }

    @discardableResult
    mutating func insert(_ device: String, _ entity: String, _ uuid: String, _ values: [String: JSONValue], stamp: Int,
                         store: String = "private") -> Int {
        add(device, HistoryOp.insert, ["entity": .string(entity), "uuid": .string(uuid), "values": .object(values),
                                       "stamp": .int(stamp), "store": .string(store)],
            outcome: .ok(["objectID": .string("x-coredata://\(uuid)"), "store": .string(store)]))
    }

    @discardableResult
    mutating func update(_ device: String, _ entity: String, _ uuid: String, _ values: [String: JSONValue], stamp: Int,
                         outcome: Outcome = .ok([:])) -> Int {
        add(device, HistoryOp.update, ["entity": .string(entity), "uuid": .string(uuid), "values": .object(values), "stamp": .int(stamp)],
            outcome: outcome)
    }

    @discardableResult
    mutating func delete(_ device: String, _ entity: String, _ uuid: String, stamp: Int) -> Int {
        add(device, HistoryOp.delete, ["entity": .string(entity), "uuid": .string(uuid), "stamp": .int(stamp)])
    }

    @discardableResult
    mutating func link(_ device: String, _ entity: String, _ uuid: String, _ relationship: String, to: String, stamp: Int) -> Int {
        add(device, HistoryOp.link, ["entity": .string(entity), "uuid": .string(uuid), "relationship": .string(relationship),
                                     "to": .string(to), "stamp": .int(stamp)])
    }

    /// A send that carried the whole queue, unless `left` entries stayed queued or `outcome` says otherwise.
    @discardableResult
    mutating func send(_ device: String, saved: Int = 1, reverted: Int = 0, left: Int = 0, outcome: Outcome? = nil) -> Int {
        let result: JSONValue = ["saved": .int(saved), "deleted": 0, "conflictsResolved": 0, "reverted": .int(reverted),
                                 "dropped": 0, "refused": 0, "deferred": 0, "requests": 1, "pending": .int(left)]
        return add(device, HistoryOp.send, outcome: outcome ?? .ok(result))
    }

    @discardableResult
    mutating func fetch(_ device: String) -> Int {
        add(device, HistoryOp.fetch, outcome: .ok(["changedRecords": 1, "deletedRecords": 0, "merged": 0, "pages": 1,
                                                  "zonesRemoved": [], "zonesReset": [], "tokensExpired": 0]))
    }

    /// What the device shows now: objects as `(entity, uuid, values)`.
    @discardableResult
    mutating func observe(_ device: String, _ objects: [ObservedObject]) -> Int {
        let shown = objects.map { object -> JSONValue in
            ["entity": .string(object.entity), "uuid": .string(object.uuid), "store": .string(object.store), "values": .object(object.values)]
        }
        return add(device, HistoryOp.observe, outcome: .ok(["objects": .array(shown)]))
    }

    @discardableResult
    mutating func share(_ device: String, _ entity: String, root: String, zoneName: String, participants: [(String, String)]) -> Int {
        let list: [JSONValue] = participants.map { ["user": .string($0.0), "permission": .string($0.1)] }
        return add(device, HistoryOp.shareCreate, ["entity": .string(entity), "uuid": .string(root), "participants": .array(list)],
                   outcome: .ok(["zoneName": .string(zoneName)]))
    }

    @discardableResult
    mutating func accept(_ device: String, owner: String, zoneName: String) -> Int {
        add(device, HistoryOp.shareAccept, ["owner": .string(owner), "zoneName": .string(zoneName)])
    }

    @discardableResult
    mutating func leave(_ device: String, owner: String, zoneName: String) -> Int {
        add(device, HistoryOp.shareLeave, ["owner": .string(owner), "zoneName": .string(zoneName)])
    }

    @discardableResult
    mutating func setPermission(_ device: String, zoneName: String, user: String, _ permission: String) -> Int {
        add(device, HistoryOp.sharePermission, ["zoneName": .string(zoneName), "user": .string(user), "permission": .string(permission)])
    }

    func run(cloud: [CloudZoneState], devices: [DeviceState], deletePolicies: [String: String] = [:]) -> RunRecord {
        RunRecord(seed: 42, history: entries, final: FinalState(cloud: cloud, devices: devices), deletePolicies: deletePolicies)
    }
}

/// A cloud record as the mirror writes it: `CD_`-prefixed fields with typed values.
func record(_ uuid: String, _ entity: String, _ values: [String: JSONValue]) -> CloudRecordState {
    var fields: [String: JSONValue] = ["CD_entityName": ["type": "string", "value": .string(entity)]]
    for (name, value) in values where value != .null { fields["CD_" + name] = ["type": "string", "value": value] }
    return CloudRecordState(recordName: uuid, recordType: "CD_" + entity, fields: fields)
}

/// A user's private Core Data zone.
func zone(_ owner: String, _ records: [CloudRecordState]) -> CloudZoneState {
    CloudZoneState(owner: owner, zoneName: ZoneRef.coreDataZoneName, records: records)
}

/// A share's zone.
func zone(_ owner: String, _ zoneName: String, _ records: [CloudRecordState],
          participants: [CloudZoneState.Participant] = []) -> CloudZoneState {
    CloudZoneState(owner: owner, zoneName: zoneName, records: records, participants: participants)
}

func object(_ uuid: String, _ entity: String, _ values: [String: JSONValue], store: String = "private") -> ObservedObject {
    ObservedObject(entity: entity, uuid: uuid, store: store, values: values)
}

func device(_ name: String, _ user: String, _ objects: [ObservedObject], tokens: [String: [Int]] = ["private": [1, 2, 3]],
            doctor: [String] = [], divergence: [String] = []) -> DeviceState {
    DeviceState(name: name, user: user, objects: objects, historyTokens: tokens, doctor: doctor, divergence: divergence)
}

/// Record names the stories use: upper-case UUIDs, as the mirror writes them.
enum ID {
    static let event = "7F3A9C21-0B4D-4E6F-8A1B-2C3D4E5F6A7B"
    static let session = "5E2B8D10-9C4A-4F3E-8B2D-1A0C9E8F7D6C"
    static let other = "1C9E4A77-3D2B-4C1A-9E8F-7B6A5D4C3B2A"
}
