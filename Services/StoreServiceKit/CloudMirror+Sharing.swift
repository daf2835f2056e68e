import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit

struct ShareCreateParams: Codable, Sendable {
    /// The root object (a saved private-store object, e.g. a CareSession).
    var objectID: String
    var participants: [ShareInviteItem]?
}
struct ShareInviteItem: Codable, Sendable {
    var user: String
    var permission: String
}
struct ShareZoneParams: Codable, Sendable {
    var zoneName: String
    /// The share's owner (participant side); the caller's own zone when absent.
    var ownerName: String?
    var user: String?
    var permission: String?
}
struct ShareCreateResult: Codable, Sendable {
    var zoneName: String
    var rootRecordName: String
    /// The root and the members of its graph that are in the share zone.
    var movedRecords: Int
    /// Members still queued to move (a send error stopped them: they go with the next send).
    var pendingRecords: Int
    /// The cloud error that stopped the members' move, if one did.
    var sendError: WireError?
    var share: JSONValue
}
struct ShareAcceptResult: Codable, Sendable {
    var zoneName: String
    var ownerName: String
    var share: JSONValue
    var fetch: MirrorFetchReport
}

extension CloudMirror {
    static let shareZonePrefix = "com.apple.coredata.cloudkit.share."

    /// share.create: the owner shares an object graph. A share zone is created and the root,
    /// first saved where it is (`touchedRoot`), moves there together with the zone-wide share
    /// `cloudkit.zoneshare` (deleted from its old zone, created in the share zone, one request);
    /// the rest of the graph follows it by the send's own moves (`followRoot`). Locally the
    /// objects stay in the private store.
    func createShare(_ params: ShareCreateParams) throws -> ShareCreateResult {
        _ = try sendAll()
        let zone = MirrorZoneID(zoneName: Self.shareZonePrefix + UUID().uuidString)
        // The zones are made once the root is known to be shareable and before it is saved
        // where it is: nothing but the move itself comes between that save and the move.
        let (root, members) = try touchedRoot(params) {
            try ensureZones([.coreData])
            _ = try call("zones.save", try JSONValue(encoding: ZonesRequest(database: "private", zoneIDs: [zone])))
        }
        // Queued before the root moves, so that a device killed after the move still moves them.
        try queueToFollow(members)
        let saves = [MirrorRecord(recordName: root.uuid, zoneID: zone, recordType: "CD_\(root.entity.name)", fields: root.fields),
                     MirrorRecord(recordName: MirrorRecord.zoneShareName, zoneID: zone, recordType: MirrorRecord.shareType, fields: [:])]
        let deletes: [JSONValue] = try root.oldZone.map { [["recordName": .string(root.uuid), "zoneID": try JSONValue(encoding: $0)]] } ?? []
        let reply = try call("records.modify", ["database": "private", "saves": .array(saves.map(\.json)), "deletes": .array(deletes)])
        let saved = (reply["saved"]?.arrayValue ?? []).compactMap(MirrorRecord.init(json:))
        try withStores { stores in
            guard let index = Self.storeIndex(.private, in: stores) else { return }
            let state = MirrorState(stores.list[index])
            try stores.list[index].database.transaction {
                if let record = saved.first(where: { $0.recordName == root.uuid }) {
                    try state.setMeta(.init(uuid: root.uuid, entity: root.entity.name, zone: zone, changeTag: record.recordChangeTag,
                                            serverFields: record.fields ?? root.fields))
                    try state.dropPending(root.uuid)
                }
                try state.setShareRoot(zone: zone.zoneName, root: root.uuid)
            }
        }
        var shareRecord = (reply["saved"]?.arrayValue ?? []).first { $0["recordType"]?.stringValue == MirrorRecord.shareType } ?? .null
        let (moved, sendError) = try followRoot(members, into: zone)
        for participant in params.participants ?? [] {
            shareRecord = try call("participants.add", ["zoneID": ["zoneName": .string(zone.zoneName)], "user": .string(participant.user),
                                                        "permission": .string(participant.permission)])["share"] ?? shareRecord
        }
        logger.info("shared", ["zone": .string(zone.zoneName), "root": .string(root.uuid), "records": .int(1 + moved),
                               "pending": .int(members.count - moved)])
        return ShareCreateResult(zoneName: zone.zoneName, rootRecordName: root.uuid, movedRecords: 1 + moved,
                                 pendingRecords: members.count - moved, sendError: sendError, share: Self.withoutKeptTexts(shareRecord))
    }

    /// The root of a graph to share, with its fields and the zone and change tag of its copy in the cloud (nil: never sent).
    typealias GraphRoot = (uuid: String, entity: EntityDescription, fields: [String: JSONValue], oldZone: MirrorZoneID?, tag: String?)
    /// Another member of the graph (the objects of the root's to-many relationships).
    typealias GraphMember = (uuid: String, entity: EntityDescription)

    /// How many times share.create fetches and reads the root again when another device
    /// changed or moved it between this device's fetch and its move.
    static let shareAttempts = 3

    /// The root to share as this device holds it, first saved where it is with its tag (as a
    /// send's move does, `buildBatch`), and the graph's other members. The move deletes the old
    /// copy unconditionally (CloudKit's deletes take no tag), so a root read from a stale view
    /// moved a record another device had changed meanwhile, deleting the change. A refused save
    /// (serverRecordChanged, unknownItem) means the view is stale: the store's changes are
    /// fetched and the graph read again. After `shareAttempts` the root moves as it is then
    /// (a copy that is gone with no tombstone left to fetch would otherwise block the share
    /// for good; deleting it is a no-op, and `MovedFrom` still names the copy's tag).
    /// `prepare` runs once, after the graph is first read and before the root's first save.
    private func touchedRoot(_ params: ShareCreateParams, prepare: () throws -> Void) throws -> (root: GraphRoot, members: [GraphMember]) {
        var round = 0
        while true {
            round += 1
            // The graph moves as this device holds it, and the move deletes the old zone's
            // copies: other devices' edits are fetched first (SEMANTICS C11), or the share got
            // this device's older values and the edits were deleted with the copies that had them.
            var fetched = MirrorFetchReport()
            try fetchDatabase(.private, report: &fetched)
            var (root, members) = try readGraph(params)
            if round == 1 { try prepare() }
            var stale = false
            var newTag: String?
            if let zone = root.oldZone, let tag = root.tag {
                var record = MirrorRecord(recordName: root.uuid, zoneID: zone, recordType: "CD_\(root.entity.name)", fields: root.fields)
                record.recordChangeTag = tag
                switch attempt("records.modify", ["database": "private", "saves": [record.json], "atomic": true] as JSONValue) {
                case let .success(reply):
                    newTag = try keepTouched(reply["saved"], root: root)
                case let .failure(error) where error.code == .partialFailure:
                    stale = true
                case let .failure(error):
                    throw error
                }
            }
            if stale, round < Self.shareAttempts { continue }
            // The tag it was moved from lets a device whose edit the move deleted anyway see it.
            if let zone = root.oldZone, let tag = newTag ?? root.tag {
                root.fields[MovedFrom.field] = MovedFrom(zoneName: zone.zoneName, changeTag: tag).fieldValue
            }
            return (root, members)
        }
    }

    /// The root and the other members of its graph (the objects of its to-many relationships)
    /// from the private store.
    private func readGraph(_ params: ShareCreateParams) throws -> (root: GraphRoot, members: [GraphMember]) {
        try withStores { stores in
            guard let id = ObjectID(uri: params.objectID), let storeUUID = id.storeUUID, let key = id.primaryKey,
                  let index = stores.index(uuid: storeUUID), stores.list[index].scope == .private,
                  let entity = stores.model.entity(named: id.entity) else {
                throw StoreError.unknownObject(params.objectID, "share.create needs a saved object of the private store.")
            }
            let store = stores.list[index]
            let state = MirrorState(store)
            guard let row = try store.read(entity, primaryKey: key) else { throw StoreError.unknownObject(params.objectID, "it is not in the private store.") }
            if let existing = try state.shareZone(ofRoot: row.uuid) {
                throw ServiceError(.alreadyShared, "This object is already shared in zone \(existing); invite participants with share.invite.",
                                   details: ["zoneName": .string(existing)])
            }
            var members: [GraphMember] = []
            for relationship in entity.relationships where relationship.toMany {
                guard let inverse = relationship.inverse, let destination = stores.model.entity(named: relationship.destination) else { continue }
                for child in try store.referencing(destination.name, relationship: inverse, primaryKey: key) {
                    guard let uuid = try state.uuid(entity: destination.name, primaryKey: child) else { continue }
                    members.append((uuid, destination))
                }
            }
            let fields = try MirrorRecordCoding.fields(entity: entity, row: row, state: state, timesText: try state.fieldTimesText(row.uuid))
            let meta = try state.meta(row.uuid)
            return ((row.uuid, entity, fields, meta?.zone, meta?.changeTag), members)
        }
    }

    /// Keeps the touched root's new tag (and fields, the next merge's ancestor) as its metadata.
    private func keepTouched(_ saved: JSONValue?, root: GraphRoot) throws -> String? {
        guard let record = (saved?.arrayValue ?? []).compactMap(MirrorRecord.init(json:)).first(where: { $0.recordName == root.uuid }),
              let tag = record.recordChangeTag, let zone = root.oldZone else { return nil }
        try withStores { stores in
            guard let index = Self.storeIndex(.private, in: stores) else { return }
            let state = MirrorState(stores.list[index])
            try stores.list[index].database.transaction(commit: .deferred) {
                try state.setMeta(.init(uuid: root.uuid, entity: root.entity.name, zone: zone, changeTag: tag, serverFields: record.fields ?? root.fields))
            }
        }
        return tag
    }

    /// Queues the graph's other members as unchanged updates: a send builds each one's record in
    /// the zone of the object it belongs to, so once the root is in the share zone the send moves
    /// them there as it moves any record whose parent changed zone: in batches within the
    /// server's limits (one request of a large session's whole graph was `limitExceeded`, and
    /// the session could not be shared), each first saved where it is with its tag.
    private func queueToFollow(_ members: [GraphMember]) throws {
        guard !members.isEmpty else { return }
        try withStores { stores in
            guard let index = Self.storeIndex(.private, in: stores) else { return }
            let state = MirrorState(stores.list[index])
            try stores.list[index].database.transaction {
                for member in members { try state.enqueue(uuid: member.uuid, entity: member.entity.name, kind: .update, zone: nil, changed: []) }
            }
        }
    }

    /// Sends the members queued to follow the root; returns how many are in the share zone now
    /// and the cloud error that stopped the send, if any (the share exists then: what is left
    /// stays queued for the next send, and `pendingRecords` counts it).
    private func followRoot(_ members: [GraphMember], into zone: MirrorZoneID) throws -> (moved: Int, sendError: WireError?) {
        var sendError: WireError?
        do {
            _ = try sendAll()
        } catch {
            guard let wire = (error as? WireError) ?? (error as? ServiceError)?.wire else { throw error }
            sendError = wire
            logger.warning("share.create: the session's records did not all move; the rest stays queued",
                           ["zone": .string(zone.zoneName), "code": .string(wire.code.rawValue)])
        }
        let moved = try withStores { stores -> Int in
            guard let index = Self.storeIndex(.private, in: stores) else { return 0 }
            let state = MirrorState(stores.list[index])
            return try members.filter { try state.meta($0.uuid)?.zone == zone }.count
        }
        return (moved, sendError)
    }

    /// The owner's participant ops, passed to the sync-service for the owner's share zone.
    func ownerShareOp(_ op: String, _ params: ShareZoneParams) throws -> JSONValue {
        var request: [String: JSONValue] = ["zoneID": ["zoneName": .string(params.zoneName)]]
        if let user = params.user { request["user"] = .string(user) }
        if let permission = params.permission { request["permission"] = .string(permission) }
        return Self.withoutKeptTexts(try call(op, .object(request)))
    }

    /// share.stop: the owner ends the share (deletes `cloudkit.zoneshare`); participants lose
    /// the zone. The owner keeps the records, in the share zone.
    func stopShare(_ params: ShareZoneParams) throws -> JSONValue {
        let reply = try call("records.modify", ["database": "private", "deletes": [["recordName": .string(MirrorRecord.zoneShareName),
                                                                                     "zoneID": ["zoneName": .string(params.zoneName)]]]])
        try withStores { stores in
            if let index = Self.storeIndex(.private, in: stores) { try MirrorState(stores.list[index]).dropShare(zone: params.zoneName) }
        }
        return Self.withoutKeptTexts(reply)
    }

    /// share.accept: the participant accepts; the zone's records land in the shared store only.
    func acceptShare(_ params: ShareZoneParams) throws -> ShareAcceptResult {
        guard let owner = params.ownerName else {
            throw ServiceError(.missingField, "share.accept needs ownerName (the user who shared the zone).", details: ["field": "params.ownerName"])
        }
        let reply = try call("shares.accept", ["zoneID": ["zoneName": .string(params.zoneName), "ownerName": .string(owner)]])
        var report = MirrorFetchReport()
        try fetchDatabase(.shared, report: &report)
        return ShareAcceptResult(zoneName: params.zoneName, ownerName: owner, share: Self.withoutKeptTexts(reply["share"] ?? .null), fetch: report)
    }

    /// share.leave: the participant leaves; the zone's data leaves the shared store.
    func leaveShare(_ params: ShareZoneParams) throws -> MirrorFetchReport {
        guard let owner = params.ownerName else {
            throw ServiceError(.missingField, "share.leave needs ownerName.", details: ["field": "params.ownerName"])
        }
        _ = try call("shares.leave", ["zoneID": ["zoneName": .string(params.zoneName), "ownerName": .string(owner)]])
        var report = MirrorFetchReport()
        try removeZone(MirrorZoneID(zoneName: params.zoneName, ownerName: owner), scope: .shared, purged: false, report: &report)
        return report
    }
}
