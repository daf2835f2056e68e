import CloudWire
import Foundation
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreServiceKit
import StoreWire

extension MirrorEngine {

    /// share.create: the owner shares an object graph. A share zone is created and the graph,
    /// first saved where it is (`touchedGraph`), moves there with the zone-wide share
    /// `cloudkit.zoneshare` (deleted from its old zone, created in the share zone). A graph
    /// that fits one request moves in one (`moveAtOnce`): another device fetches it whole, never
    /// a session in one zone and its events in another. A larger one cannot (the server's
    /// per-request limit): its leaders (`MirrorMapping.shareGraph`) move with the share, and the rest follows by the send's own
    /// moves (`followRoot`). Locally the objects stay in the private store.
    func createShare(_ params: ShareCreateParams, progress: ProgressReporter = .silent) throws -> ShareCreation {
        // The invitations are checked before anything is sent, saved or moved: a refused
        // share.create changes nothing, and its corrected retry is a first attempt.
        let invites = params.participants ?? []
        if !invites.isEmpty { _ = try request("participants.validate", ParticipantsValidateParams(participants: invites)) }
        _ = try sendAll()
        let zone = ZoneID(zoneName: CloudKitNames.coreDataShareZonePrefix + UUID().uuidString)
        var zoneMade = false
        let graph: [GraphMember], leaders: Int, movedAtOnce: JSONValue?
        var shareRecord: JSONValue
        do {
            // The zones are made once the graph is known to be shareable and before it is saved
            // where it is: nothing but the move itself comes between that save and the move.
            let touched = try touchedGraph(params) {
                try ensureZones([.coreData])
                _ = try request("zones.save", ZonesParams(database: .private, zoneIDs: [zone]))
                zoneMade = true
            }
            (graph, leaders) = (touched.graph, touched.leaders)
            progress.report(phase: "moving", done: 0, total: graph.count)
            movedAtOnce = touched.atOnce ? try moveAtOnce(graph, into: zone) : nil
            if let movedAtOnce {
                shareRecord = movedAtOnce
            } else {
                // Queued before the leaders move, so that a device killed after the move still moves them.
                try queueToFollow(Array(graph.dropFirst(leaders)))
                shareRecord = try moveAtOnce(Array(graph.prefix(leaders)), into: zone) ?? .null
            }
        } catch {
            if zoneMade { discardIfEmpty(zone) }
            throw error
        }
        let root = graph[0]
        var moved = graph.count
        var sendError: WireError?
        if movedAtOnce == nil {
            let members = Array(graph.dropFirst(leaders))
            progress.report(phase: "moving", done: leaders, total: graph.count)
            let followed = try followRoot(members, into: zone) { saved in
                progress.report(phase: "moving", done: min(graph.count, leaders + saved), total: graph.count)
            }
            moved = leaders + followed.moved
            sendError = followed.sendError
        }
        progress.report(phase: "moving", done: graph.count, total: graph.count)
        for invite in invites {
            do {
                shareRecord = try request("participants.add", CloudWire.ShareParams(zoneID: zone, user: invite.user,
                                                                                  permission: invite.permission))["share"] ?? shareRecord
            } catch {
                // Checked above; only a change of the cloud's users or limits in between gets here.
                throw WireError(error.code, "share.create: the share was created in zone \(zone.zoneName), but inviting \(invite.user) failed (\(error.message)); invite with share.invite.",
                                details: error.details.merging(["zoneName": .string(zone.zoneName)]) { $1 })
            }
        }
        logger.info("shared", ["zone": .string(zone.zoneName), "root": .string(root.uuid), "records": .int(moved),
                               "pending": .int(graph.count - moved)])
        return ShareCreation(zoneName: zone.zoneName, rootRecordName: root.uuid, movedRecords: moved,
                             pendingRecords: graph.count - moved, sendError: sendError,
                             share: shareRecord == .null ? nil : try CloudRecord(tree: shareRecord))
    }

    /// Deletes the share zone a refused share.create made, so that the request leaves no empty
    /// zone behind; kept if anything is in it (a move whose reply was lost may have landed).
    private func discardIfEmpty(_ zone: ZoneID) {
        guard case let .success(page) = attempt("changes.fetchZone", FetchZoneChangesParams(database: .private, zoneID: zone, limit: 1)),
              (page["changed"]?.arrayValue ?? []).isEmpty else { return }
        _ = attempt("zones.delete", ZonesParams(database: .private, zoneIDs: [zone]))
    }

    /// Moves `graph` (its root first) into the share zone in one request with the zone-wide
    /// share, and keeps each moved copy's metadata; returns the share record. Nil: the request
    /// was over the server's limits (`limitExceeded`; nothing was applied, the request is atomic).
    private func moveAtOnce(_ graph: [GraphMember], into zone: ZoneID) throws -> JSONValue? {
        var saves = graph.map {
            mapping.wireRecord(CloudRecord(recordName: $0.uuid, zoneID: zone, recordType: CloudKitNames.coreDataName($0.entity), fields: $0.fields))
        }
        saves.append(CloudRecord(recordName: CloudKitNames.zoneShareName, zoneID: zone, recordType: CloudKitNames.shareRecordType))
        let deletes = graph.compactMap { member in member.oldZone.map { DeleteItem(recordName: member.uuid, zoneID: $0) } }
        let reply: JSONValue
        switch attempt("records.modify", ModifyParams(database: .private, saves: saves, deletes: deletes)) {
        case let .success(value): reply = value
        case let .failure(error) where error.retry == .afterHalvingBatch && graph.count > 1: return nil
        case let .failure(error):
            guard let landed = Self.ownEarlierMove(error, saves: saves) else { throw error }
            reply = landed
        }
        let saved = (reply["saved"]?.arrayValue ?? []).compactMap({ try? CloudRecord(tree: $0) })
        let members = Self.byName(graph)
        try stores.withStore(.private) { store in
            let state = store.bookkeeping
            try store.write {
                for record in saved {
                    if record.isShare { continue }
                    guard let member = members[record.recordName] else { continue }
                    try state.setMeta(.init(uuid: record.recordName, entity: member.entity, zone: zone, changeTag: record.recordChangeTag,
                                            serverFields: record.fields))
                    try state.dropPending(record.recordName)
                }
                try state.setShareRoot(zone: zone.zoneName, root: graph[0].uuid)
            }
        }
        return (reply["saved"]?.arrayValue ?? []).first { $0["recordType"]?.stringValue == CloudKitNames.shareRecordType } ?? .null
    }

    /// The move's answer when the request met the copies it made itself: its first delivery
    /// committed and the reply was lost, and the repeat (`request`) found every record already
    /// there (`serverRejectedRequest`, or `serverRecordChanged` for the share). The zone is the
    /// one this share.create just made, and each copy holds the data fields the move sent, so
    /// they are this move's: taken as saved, or the share existed in the cloud while the device
    /// counted the graph unshared and sent its unsent records into the old zone again.
    static func ownEarlierMove(_ error: WireError, saves: [CloudRecord]) -> JSONValue? {
        guard error.code == .partialFailure, let failed = error.details["partialErrors"]?.objectValue, !failed.isEmpty else { return nil }
        let sent = Dictionary(saves.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        var saved = error.details["saved"]?.arrayValue ?? []
        for item in failed.values {
            guard let code = item["code"]?.stringValue, code == ErrorCode.serverRejectedRequest.rawValue || code == ErrorCode.serverRecordChanged.rawValue,
                  let server = item["details"]?["serverRecord"], let record = try? CloudRecord(tree: server),
                  let mine = sent[record.recordName], mine.zoneID == record.zoneID,
                  record.isShare || MirrorRecordCoding.dataFields(record.fields) == MirrorRecordCoding.dataFields(mine.fields) else { return nil }
            saved.append(server)
        }
        return ["saved": .array(saved)]
    }

    /// How many times share.create fetches and reads the graph again when another device
    /// changed or moved one of its records between this device's fetch and its move.
    static let shareAttempts = 3

    /// The graph to share as this device holds it, the members that move with the share first
    /// saved where they are with their tags (as a send's move does, `buildBatches`): the whole
    /// graph when it fits one request (`atOnce`), else the root (the send that moves the rest
    /// saves each where it is first). The move deletes the old copies unconditionally
    /// (CloudKit's deletes take no tag), so a graph read from a stale view moved records
    /// another device had changed or moved meanwhile: an event moved into another session came
    /// back there as a second copy in the share zone, and a later delete of one copy left the
    /// other. A refused save (serverRecordChanged,
    /// unknownItem) means the view is stale: the store's changes are fetched and the graph read
    /// again. After `shareAttempts` the graph moves as it is then (a copy that is gone with no
    /// tombstone left to fetch would otherwise block the share for good; deleting it is a
    /// no-op, and `MovedFrom` still names each copy's tag).
    /// `prepare` runs once, after the graph is first read and before its first save.
    private func touchedGraph(_ params: ShareCreateParams, prepare: () throws -> Void) throws -> (graph: [GraphMember], leaders: Int, atOnce: Bool) {
        var round = 0
        var prepared = false
        while true {
            round += 1
            // The graph moves as this device holds it, and the move deletes the old zone's
            // copies: other devices' edits are fetched first (docs/RULES.md, mirroring: sharing fetches first), or the share got
            // this device's older values and the edits were deleted with the copies that had them.
            var fetched = SyncFetchResult()
            try fetchDatabase(.private, report: &fetched)
            let sizing = progress.withLock { $0.batchSizing }
            let (graph, leaders, atOnce) = try stores.withEveryStore { list in try mapping.shareGraph(of: params.objectID, sizing: sizing, in: list) }
            if !prepared {
                try prepare()
                prepared = true
            }
            let moving = atOnce ? graph : Array(graph.prefix(leaders))
            let touches: [CloudRecord] = moving.compactMap { member in
                guard let zone = member.oldZone, let tag = member.tag else { return nil }
                var record = CloudRecord(recordName: member.uuid, zoneID: zone, recordType: CloudKitNames.coreDataName(member.entity), fields: member.fields)
                record.recordChangeTag = tag
                return mapping.wireRecord(record)
            }
            var saved: JSONValue?
            var stale = false
            if !touches.isEmpty {
                switch attempt("records.modify", ModifyParams(database: .private, saves: touches, atomic: true)) {
                case let .success(reply):
                    saved = reply["saved"]
                case let .failure(error) where error.code == .partialFailure:
                    saved = error.details["saved"]
                    stale = true
                case let .failure(error) where error.retry == .afterHalvingBatch && moving.count > 1:
                    // The server takes fewer items per request than the device assumed: learnt
                    // as a send learns it (the batch size halves), and the graph read again.
                    _ = progress.withLock { $0.batchSizing.exceeded(items: touches.count) }
                    round -= 1
                    continue
                case let .failure(error):
                    throw error
                }
            }
            // Each saved copy is this device's version at its new tag: kept as the record's
            // metadata (a share that fails later leaves it right) and named by the moved copy.
            let newTags = try keepTouched(saved, graph: graph)
            if stale, round < Self.shareAttempts { continue }
            let names = Set(moving.map(\.uuid))
            return (graph.map { member in
                var member = member
                if names.contains(member.uuid), let zone = member.oldZone, let tag = newTags[member.uuid] ?? member.tag {
                    member.fields[MovedFrom.field] = MovedFrom(zoneName: zone.zoneName, changeTag: tag).fieldValue
                }
                return member
            }, leaders, atOnce)
        }
    }

    /// The graph's members by record name (a session's graph can hold thousands of events:
    /// looking each answer up in the list was quadratic).
    private static func byName(_ graph: [GraphMember]) -> [String: GraphMember] {
        Dictionary(graph.map { ($0.uuid, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Keeps the touched copies' new tags (and fields, the next merge's ancestor) as their metadata.
    private func keepTouched(_ saved: JSONValue?, graph: [GraphMember]) throws -> [String: String] {
        var tags: [String: String] = [:]
        let members = Self.byName(graph)
        try stores.withStore(.private) { store in
            let state = store.bookkeeping
            try store.write(commit: .deferred) {
                for record in (saved?.arrayValue ?? []).compactMap({ try? CloudRecord(tree: $0) }) {
                    guard let tag = record.recordChangeTag, let member = members[record.recordName],
                          let zone = member.oldZone else { continue }
                    try state.setMeta(.init(uuid: record.recordName, entity: member.entity, zone: zone, changeTag: tag,
                                            serverFields: record.fields))
                    tags[record.recordName] = tag
                }
            }
        }
        return tags
    }

    /// Queues the graph's other members as unchanged updates: a send builds each one's record in
    /// the zone of the object it belongs to, so once the root is in the share zone the send moves
    /// them there as it moves any record whose parent changed zone: in batches within the
    /// server's limits (one request of a large session's whole graph was `limitExceeded`, and
    /// the session could not be shared), each first saved where it is with its tag.
    private func queueToFollow(_ members: [GraphMember]) throws {
        guard !members.isEmpty else { return }
        try stores.withStore(.private) { store in
            let state = store.bookkeeping
            try store.write {
                for member in members { try state.enqueue(uuid: member.uuid, entity: member.entity, kind: .update, zone: nil, changed: []) }
            }
        }
    }

    /// Sends the members queued to follow the root; returns how many are in the share zone now
    /// and the cloud error that stopped the send, if any (the share exists then: what is left
    /// stays queued for the next send, and `pendingRecords` counts it).
    private func followRoot(_ members: [GraphMember], into zone: ZoneID,
                            sent: @escaping @Sendable (Int) -> Void) throws -> (moved: Int, sendError: WireError?) {
        var sendError: WireError?
        sendObserver.withLock { $0 = sent }
        defer { sendObserver.withLock { $0 = nil } }
        do {
            _ = try sendAll()
        } catch {
            guard let wire = ServiceError.wire(of: error) else { throw error }
            sendError = wire
            logger.warning("share.create: the session's records did not all move; the rest stays queued",
                           ["zone": .string(zone.zoneName), "code": .string(wire.code.rawValue)])
        }
        let moved = try stores.withStore(.private) { store -> Int in
            let state = store.bookkeeping
            return try members.filter { try state.meta($0.uuid)?.zone == zone }.count
        } ?? 0
        return (moved, sendError)
    }

    /// The owner's participant ops, passed to the sync-service for the owner's share zone.
    func ownerShareOp(_ op: String, _ params: ShareZoneParams) throws -> JSONValue {
        try request(op, CloudWire.ShareParams(zoneID: ZoneID(zoneName: params.zoneName), user: params.user, permission: params.permission))
    }

    /// share.stop: the owner ends the share (deletes `cloudkit.zoneshare`); participants lose
    /// the zone. The owner keeps the records, in the share zone.
    func stopShare(_ params: ShareZoneParams) throws -> JSONValue {
        let reply: JSONValue
        let stop = ModifyParams(database: .private, deletes: [DeleteItem(recordName: CloudKitNames.zoneShareName, zoneID: ZoneID(zoneName: params.zoneName))])
        switch attempt("records.modify", stop) {
        case let .success(value): reply = value
        case let .failure(error):
            // The one item's error says what is wrong (no such zone, no share in it); the
            // request's "1 of 1 items failed" did not.
            guard let item = Self.itemAtFault(error) else { throw error }
            throw WireError(item.code, "share.stop: \(item.message) (zone '\(params.zoneName)'; share.list names this device's shares).",
                            details: item.details)
        }
        try stores.withStore(.private) { store in try store.write { try store.bookkeeping.dropShare(zone: params.zoneName) } }
        return reply
    }

    /// share.accept: the participant accepts; the zone's records land in the shared store only.
    func acceptShare(_ params: ShareZoneParams) throws -> ShareAcceptance {
        guard let owner = params.ownerName else {
            throw ServiceError(.missingField, "share.accept needs ownerName (the user who shared the zone).", details: ["field": "params.ownerName"])
        }
        let accepted = try request("shares.accept", CloudWire.ShareParams(zoneID: ZoneID(zoneName: params.zoneName, ownerName: owner)))
        let reply = try JSONValueDecoder().decode(CloudWire.ShareResult.self, from: accepted)
        var report = SyncFetchResult()
        try fetchDatabase(.shared, report: &report)
        return ShareAcceptance(zoneName: params.zoneName, ownerName: owner, share: reply.share, fetch: report)
    }

    /// share.leave: the participant leaves; the zone's data leaves the shared store.
    func leaveShare(_ params: ShareZoneParams) throws -> SyncFetchResult {
        guard let owner = params.ownerName else {
            throw ServiceError(.missingField, "share.leave needs ownerName.", details: ["field": "params.ownerName"])
        }
        _ = try request("shares.leave", CloudWire.ShareParams(zoneID: ZoneID(zoneName: params.zoneName, ownerName: owner)))
        var report = SyncFetchResult()
        try removeZone(ZoneID(zoneName: params.zoneName, ownerName: owner), scope: .shared, purged: false, report: &report)
        return report
    }
}
