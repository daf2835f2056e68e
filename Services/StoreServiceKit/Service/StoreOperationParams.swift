import CloudWire
import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

// Params and results of the store-service's operations (docs/protocol-store-service.md).

struct ContextOpenParams: Codable, Sendable {
    var name: String?
    var author: String?
    var mergePolicy: MergePolicy?
}
struct ContextOpenResult: Codable, Sendable {
    var context: String
    var name: String?
    var author: String
    var mergePolicy: MergePolicy
}
struct ContextParams: Codable, Sendable { var context: String }
struct SaveParams: Codable, Sendable {
    var context: String
    var report: SaveReport?
}
struct ContextStateResult: Codable, Sendable {
    var context: String
    var registeredObjects: Int
}
struct ClosedResult: Codable, Sendable { var closed: Bool }
struct RefreshParams: Codable, Sendable {
    var context: String
    var objectIDs: [String]?
}
struct RefreshResult: Codable, Sendable {
    var refreshed: Int
    var forgotten: Int
}

struct InsertItem: Codable, Sendable {
    var entity: String
    var values: AttributeValues?
    var store: String?
    /// The stable business id (cloud record name) when it already exists, e.g. on import.
    var uuid: String?
    /// The cloud zone (import into the shared store) and its owner (default: `__defaultOwner__`).
    var zone: String?
    var zoneOwner: String?

    /// The zone as a row keeps it (`owner/zoneName`).
    var zoneKey: String? { zone.map { ZoneID(zoneName: $0, ownerName: zoneOwner ?? ZoneID.defaultOwner).key } }
}
struct InsertParams: Codable, Sendable {
    var context: String
    var entity: String?
    var values: AttributeValues?
    var store: String?
    var uuid: String?
    var zone: String?
    var zoneOwner: String?
    var objects: [InsertItem]?
    /// false: answer only the count (bulk inserts whose IDs the client does not need).
    var returnObjectIDs: Bool?
}
struct InsertResult: Codable, Sendable {
    var objectID: String?
    var objectIDs: [String]?
    var insertedCount: Int
}
struct AssignParams: Codable, Sendable {
    var context: String
    var objectID: String
    var store: String
}
struct AssignResult: Codable, Sendable {
    var objectID: String
    var store: String
}
struct SetParams: Codable, Sendable {
    var context: String
    var objectID: String
    var values: AttributeValues
}
struct ObjectParams: Codable, Sendable {
    var context: String?
    var objectID: String
}
struct DeleteResult: Codable, Sendable {
    var objectID: String
    var isDeleted: Bool
}
struct ObtainParams: Codable, Sendable {
    var context: String
    var objectIDs: [String]
}
struct ObtainResult: Codable, Sendable {
    struct Entry: Codable, Sendable {
        var temporaryID: String
        var objectID: String
        var store: String
        var reason: StoreRouter.Reason
    }
    var objects: [Entry]
}
struct MoveParams: Codable, Sendable {
    var context: String
    var objectID: String
    var store: String
    var values: AttributeValues?
}
struct MoveResult: Codable, Sendable {
    var objectID: String
    var deletedObjectID: String
    var store: String
}
struct FetchResult: Encodable, Sendable {
    var objects: [ObjectRecord]?
    var columns: [String]?
    var rows: FetchRows?
}
struct CountResult: Codable, Sendable { var count: Int }
struct HistoryFetchParams: Codable, Sendable {
    var store: String?
    var afterToken: Int?
    var limit: Int?
}
struct HistoryFetchResult: Codable, Sendable {
    var transactions: [HistoryTransaction]
    /// The newest token per store (what to pass as afterToken next time).
    var lastTokens: [String: Int]
}
struct HistoryPurgeParams: Codable, Sendable {
    var store: String
    var beforeToken: Int
}
struct HistoryPurgeResult: Codable, Sendable {
    var store: String
    var purgedTransactions: Int
}
struct RepairParams: Codable, Sendable { var context: String? }
struct ShareParams: Codable, Sendable {
    var zoneName: String
    var ownerName: String?
    var permission: SharePermission
    var objectIDs: [String]?
}
struct ShareResult: Codable, Sendable {
    var zoneName: String
    var permission: SharePermission
    var zonedObjects: Int
}
struct ShareListResult: Codable, Sendable { var shares: [ShareMetadata] }
struct PermissionParams: Codable, Sendable {
    var context: String?
    var objectIDs: [String]?
}
struct PermissionResult: Codable, Sendable {
    struct Entry: Codable, Sendable {
        var objectID: String
        var canUpdateRecord: Bool
        var canDeleteRecord: Bool
    }
    var canModifyManagedObjects: [String: Bool]
    var objects: [Entry]
}
struct StoreListResult: Codable, Sendable {
    var stores: [StoreDescription]
    var routing: RoutingMode
}

/// clock.set: `{}` reads the clock, `{"now": seconds}` sets it (null: the real clock again),
/// `{"advanceSeconds": n}` moves it; one of the two at most.
struct DeviceClockParams: Codable, Sendable {
    var now: Double??
    var advanceSeconds: Double?

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // A present null (`"now": null`) is "back to the real clock", not "no change".
        now = container.contains(.now) ? .some(try container.decodeIfPresent(Double.self, forKey: .now)) : .none
        advanceSeconds = try container.decodeIfPresent(Double.self, forKey: .advanceSeconds)
    }

    func apply(to clock: DeviceClock) throws {
        if now != nil, advanceSeconds != nil {
            throw ServiceError(.invalidField, "clock.set takes 'now' or 'advanceSeconds', not both.", details: ["field": "params.advanceSeconds"])
        }
        for (name, value) in [("now", now ?? nil), ("advanceSeconds", advanceSeconds)] {
            if let value, !value.isFinite {
                throw ServiceError(.invalidField, "clock.set: '\(name)' must be a finite number of seconds.", details: ["field": .string("params.\(name)")])
            }
        }
        if let now { clock.set(now: now) }
        if let advanceSeconds { clock.advance(by: advanceSeconds) }
    }
}

struct DeviceClockResult: Codable, Sendable {
    /// Seconds since 1970, as the device reads its clock now.
    var now: Double
    /// How far it is set from the real clock (0: not set).
    var offsetSeconds: Double
}
