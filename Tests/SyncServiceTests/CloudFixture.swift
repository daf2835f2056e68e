import CloudWire
import MeowWire
import SQLiteKit
@testable import SyncServiceKit

/// An in-process cloud with four users (owner, alice, bob, carol) and helpers to drive the rules.
struct CloudFixture {
    let engine: CloudEngine
    static let users = ["owner", "alice", "bob", "carol"]

    init(path: String? = nil) throws {
        let database = try path.map { try Database(path: $0) } ?? Database.inMemory()
        engine = try CloudEngine(database: database)
        for user in Self.users where engine.accountStatus(of: user) == nil {
            try engine.createUser(user, credential: "\(user)-secret")
        }
    }

    @discardableResult
    func makeZone(_ name: String = "Zone", user: String = "owner") throws -> ZoneID {
        _ = try engine.saveZones(caller: user, ZonesParams(database: .private, zoneIDs: [ZoneID(zoneName: name)]))
        return ZoneID(zoneName: name)
    }

    @discardableResult
    func save(_ records: [CloudRecord], as user: String = "owner", database: DatabaseScope = .private,
              policy: SavePolicy? = nil, atomic: Bool? = nil, deletes: [DeleteItem] = []) throws -> ModifyResult {
        try engine.modifyRecords(caller: user, ModifyParams(database: database, saves: records, deletes: deletes, savePolicy: policy, atomic: atomic))
    }

    @discardableResult
    func delete(_ names: [String], zone: ZoneID = ZoneID(zoneName: "Zone"), as user: String = "owner",
                database: DatabaseScope = .private) throws -> ModifyResult {
        try engine.modifyRecords(caller: user, ModifyParams(database: database, deletes: names.map { DeleteItem(recordName: $0, zoneID: zone) }))
    }

    func fetch(_ name: String, zone: ZoneID = ZoneID(zoneName: "Zone"), as user: String = "owner",
               database: DatabaseScope = .private) throws -> CloudRecord? {
        try engine.fetchRecords(caller: user, FetchRecordsParams(database: database, recordIDs: [RecordID(recordName: name, zoneID: zone)])).records.first
    }

    /// The owner shares `zone` zone-wide with `user` at `permission`; the user accepts unless told not to.
    func shareZone(_ zone: ZoneID = ZoneID(zoneName: "Zone"), with users: [(String, String)], accept: Bool = true) throws {
        try save([CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: zone, recordType: CloudKitNames.shareRecordType)])
        for (user, permission) in users {
            _ = try engine.addParticipant(caller: "owner", ShareParams(zoneID: zone, user: user, permission: permission))
            if accept { _ = try engine.acceptShare(caller: user, ShareParams(zoneID: ZoneID(zoneName: zone.zoneName, ownerName: "owner"))) }
        }
    }
}

func record(_ name: String, zone: ZoneID = ZoneID(zoneName: "Zone"), type: String = "CD_CareEvent",
            title: String = "note", tag: String? = nil, parent: String? = nil, share: String? = nil) -> CloudRecord {
    CloudRecord(recordName: name, zoneID: zone, recordType: type,
                fields: ["CD_title": ["type": "string", "value": .string(title)]],
                recordChangeTag: tag, parent: parent.map { RecordReference(recordName: $0) },
                share: share.map { RecordReference(recordName: $0) })
}

/// The WireError `body` throws, or nil when it succeeds.
func wireError(_ body: () throws -> Void) -> WireError? {
    do {
        try body()
        return nil
    } catch let error as WireError {
        return error
    } catch {
        return WireError(.internalError, "not a WireError: \(error)")
    }
}

/// The per-item errors of a partialFailure, by key.
func partialErrors(_ error: WireError?) -> [String: WireError] {
    guard let error, error.code == .partialFailure, let map = error.details["partialErrors"]?.objectValue else { return [:] }
    return map.compactMapValues { try? $0.decode(WireError.self) }
}

func title(_ record: CloudRecord?) -> String? {
    record?.fields["CD_title"]?["value"]?.stringValue
}

let ownerZone = ZoneID(zoneName: "Zone", ownerName: "owner")
