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
    var movedRecords: Int
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

    /// share.create: the owner shares an object graph. A share zone is created; the graph moves
    /// there (deleted from its old zone, created in the share zone, in one request together with
    /// the zone-wide share `cloudkit.zoneshare`); locally the objects stay in the private store.
    func createShare(_ params: ShareCreateParams) throws -> ShareCreateResult {
        _ = try sendAll()
        // The graph moves as this device holds it, and the move deletes the old zone's copies:
        // other devices' edits are fetched first (SEMANTICS C11), or the share got this device's
        // older values and the edits were deleted with the copies that had them.
        var fetched = MirrorFetchReport()
        try fetchDatabase(.private, report: &fetched)
        let zone = MirrorZoneID(zoneName: Self.shareZonePrefix + UUID().uuidString)
        let (root, graph) = try withStores { stores -> (String, [(uuid: String, entity: EntityDescription, fields: [String: JSONValue], oldZone: MirrorZoneID?)]) in
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
            var members: [(EntityDescription, Int64)] = [(entity, key)]
            for relationship in entity.relationships where relationship.toMany {
                guard let inverse = relationship.inverse, let destination = stores.model.entity(named: relationship.destination) else { continue }
                for child in try store.referencing(destination.name, relationship: inverse, primaryKey: key) { members.append((destination, child)) }
            }
            var graph: [(uuid: String, entity: EntityDescription, fields: [String: JSONValue], oldZone: MirrorZoneID?)] = []
            for (memberEntity, memberKey) in members {
                guard let memberRow = try store.read(memberEntity, primaryKey: memberKey) else { continue }
                var fields = try MirrorRecordCoding.fields(entity: memberEntity, row: memberRow, state: state, timesText: try state.fieldTimesText(memberRow.uuid))
                let meta = try state.meta(memberRow.uuid)
                // Another device's edit landing in the old zone before the move deletes it is
                // lost there; the tag the move started from lets that device see it (`MovedFrom`).
                if let meta, let tag = meta.changeTag { fields[MovedFrom.field] = MovedFrom(zoneName: meta.zone.zoneName, changeTag: tag).fieldValue }
                graph.append((memberRow.uuid, memberEntity, fields, meta?.zone))
            }
            return (row.uuid, graph)
        }
        try ensureZones([.coreData])
        _ = try call("zones.save", try JSONValue(encoding: ZonesRequest(database: "private", zoneIDs: [zone])))
        var saves = graph.map { MirrorRecord(recordName: $0.uuid, zoneID: zone, recordType: "CD_\($0.entity.name)", fields: $0.fields) }
        saves.append(MirrorRecord(recordName: MirrorRecord.zoneShareName, zoneID: zone, recordType: MirrorRecord.shareType, fields: [:]))
        let deletes: [JSONValue] = try graph.compactMap { member in
            try member.oldZone.map { ["recordName": .string(member.uuid), "zoneID": try JSONValue(encoding: $0)] }
        }
        let reply = try call("records.modify", ["database": "private", "saves": .array(saves.map(\.json)), "deletes": .array(deletes)])
        let saved = (reply["saved"]?.arrayValue ?? []).compactMap(MirrorRecord.init(json:))
        var shareRecord: JSONValue = .null
        try withStores { stores in
            guard let index = Self.storeIndex(.private, in: stores) else { return }
            let state = MirrorState(stores.list[index])
            try stores.list[index].database.transaction {
                for record in saved {
                    if record.isShare { continue }
                    guard let member = graph.first(where: { $0.uuid == record.recordName }) else { continue }
                    try state.setMeta(.init(uuid: record.recordName, entity: member.entity.name, zone: zone, changeTag: record.recordChangeTag,
                                            serverFields: record.fields ?? member.fields))
                    try state.dropPending(record.recordName)
                }
                try state.setShareRoot(zone: zone.zoneName, root: root)
            }
        }
        shareRecord = (reply["saved"]?.arrayValue ?? []).first { $0["recordType"]?.stringValue == MirrorRecord.shareType } ?? .null
        for participant in params.participants ?? [] {
            shareRecord = try call("participants.add", ["zoneID": ["zoneName": .string(zone.zoneName)], "user": .string(participant.user),
                                                        "permission": .string(participant.permission)])["share"] ?? shareRecord
        }
        logger.info("shared", ["zone": .string(zone.zoneName), "root": .string(root), "records": .int(graph.count)])
        return ShareCreateResult(zoneName: zone.zoneName, rootRecordName: root, movedRecords: graph.count, share: Self.withoutKeptTexts(shareRecord))
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
