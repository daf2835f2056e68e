import CloudWire
import MeowWire
import ServiceRuntime
import StoreServiceKit

/// A member of a shared graph (the root first): its entity, its fields, and the zone and change
/// tag of its copy in the cloud (nil: never sent).
typealias GraphMember = (uuid: String, entity: String, fields: [String: JSONValue], oldZone: ZoneID?, tag: String?)

/// What a share takes: the object graph, read from the private store's rows.
extension CoreDataMapping {
    /// The root's graph from the private store: every object reachable from the root through
    /// relationships (`ObjectGraph`), with the zone each is in and its change tag there, and
    /// whether it fits one request of `limit` items (each record saved and its old copy
    /// deleted, and the share). The graph's leaders come first, the root first of all: the root
    /// and the ends of the members' to-one chains. Every other member's zone follows a leader's,
    /// so when the graph cannot move at once the leaders move with the share and the rest
    /// follows. Members' fields are read only for what moves at once: a send builds the rest.
    func shareGraph(of objectID: String, sizing: BatchSizing, in mirrored: [any MirrorStore]) throws -> (graph: [GraphMember], leaders: Int, atOnce: Bool) {
        guard let first = mirrored.first else { throw StoreError.unknownObject(objectID, "share.create needs a saved object of the private store.") }
        let stores = try CoreDataStore.of(first).stores
        guard let id = ObjectID(uri: objectID), let storeUUID = id.storeUUID, let key = id.primaryKey,
              let index = stores.index(uuid: storeUUID), stores.list[index].scope == .private,
              let entity = stores.model.entity(named: id.entity) else {
            throw StoreError.unknownObject(objectID, "share.create needs a saved object of the private store.")
        }
        let store = stores.list[index]
        let state = StoreBookkeeping(store)
        guard let row = try store.read(entity, primaryKey: key) else { throw StoreError.unknownObject(objectID, "it is not in the private store.") }
        let graph = ObjectGraph(store: store)
        let members = try graph.reachable(from: entity, row: row)
        // A member in a live share's zone: sharing again would split that share's graph.
        let live = try state.liveShareZones()
        for (memberEntity, member) in members {
            let zone = try state.shareZone(ofRoot: member.uuid) ?? (state.meta(member.uuid)?.zone.zoneName).flatMap { live.contains($0) ? $0 : nil }
            guard let zone else { continue }
            let which = member.uuid == row.uuid ? "This object is" : "\(memberEntity.name) \(member.uuid), related to this object, is"
            throw ServiceError(.alreadyShared, "\(which) already shared in zone \(zone): a share takes the whole object graph; invite participants to that share with share.invite.",
                               details: ["zoneName": .string(zone), "recordName": .string(member.uuid)])
        }
        var leading: Set<String> = [row.uuid]
        for (memberEntity, member) in members { leading.insert(try graph.chainEnd(of: memberEntity, row: member).row.uuid) }
        let ordered = members.filter { leading.contains($0.1.uuid) } + members.filter { !leading.contains($0.1.uuid) }
        let atOnce = sizing.movesAtOnce(members: ordered.count)
        var result: [GraphMember] = []
        for (index, (memberEntity, member)) in ordered.enumerated() {
            let fields = atOnce || index < leading.count
                ? try MirrorRecordCoding.fields(entity: memberEntity, row: member, state: state, timesText: try state.fieldTimesText(member.uuid))
                : [:]
            let meta = try state.meta(member.uuid)
            result.append((member.uuid, memberEntity.name, fields, meta?.zone, meta?.changeTag))
        }
        return (result, leading.count, atOnce)
    }
}

