import CloudWire
import SQLiteKit
import StoreServiceKit

/// A private-store object's place among its related objects, which decides its cloud zone. An
/// object goes where the end of its chain of to-one relationships is (an event follows its
/// session; a photo its day, and the day its trip), to any depth; a share takes every object
/// reachable from its root through relationships, both ways and to any depth, as
/// NSPersistentCloudKitContainer's share moves the whole graph.
struct ObjectGraph {
    struct Node: Hashable {
        var entity: String
        var key: Int64
    }

    let store: PersistentStore

    /// The existing objects `row`'s to-one relationships point at, in the entity's order.
    func toOneTargets(of entity: EntityDescription, row: PersistentStore.StoredRow) throws -> [(EntityDescription, PersistentStore.StoredRow)] {
        var targets: [(EntityDescription, PersistentStore.StoredRow)] = []
        for (offset, relationship) in entity.toOneRelationships.enumerated() {
            guard let key = row.values[entity.position(ofToOne: offset)].int64,
                  let destination = store.model.entity(named: relationship.destination),
                  let target = try store.read(destination, primaryKey: key) else { continue }
            targets.append((destination, target))
        }
        return targets
    }

    /// The objects that point at `row` through a to-one relationship (the other side of its
    /// to-many relationships).
    func toManyMembers(of entity: EntityDescription, row: PersistentStore.StoredRow) throws -> [(EntityDescription, PersistentStore.StoredRow)] {
        var members: [(EntityDescription, PersistentStore.StoredRow)] = []
        for relationship in entity.relationships where relationship.toMany {
            // Many-to-many: the links are the members (each leads on to the other side's object).
            if let end = store.model.manyToMany(entity.name, relationship.name), store.holds(end.link),
               let link = store.model.entity(named: end.link) {
                for (key, _) in try store.links(end, primaryKey: row.primaryKey) {
                    if let member = try store.read(link, primaryKey: key) { members.append((link, member)) }
                }
                continue
            }
            guard let inverseName = relationship.inverse, let destination = store.model.entity(named: relationship.destination),
                  let inverse = destination.relationship(inverseName), !inverse.toMany else { continue }
            for key in try store.referencing(destination.name, relationship: inverseName, primaryKey: row.primaryKey) {
                if let member = try store.read(destination, primaryKey: key) { members.append((destination, member)) }
            }
        }
        return members
    }

    /// Where a chain went from its start.
    struct Chain {
        var entity: EntityDescription
        var row: PersistentStore.StoredRow
        /// The object the first step reached (nil: no step).
        var firstStep: Node?
        /// Every object the chain reached after its start, its end included.
        var reached: Set<Node>
        /// A step after the first passed over the start (already reached) for a later target, or
        /// stopped with the start among its targets: from the first step alone the chain would
        /// have gone on through the start, so where it ends depends on where it started.
        var turnedAtStart: Bool
    }

    /// The end of `row`'s chain: each step follows the first to-one target not visited yet, so a
    /// one-to-one pair or a loop ends at its last object before it closes.
    func chainEnd(of entity: EntityDescription, row: PersistentStore.StoredRow) throws -> Chain {
        let start = Node(entity: entity.name, key: row.primaryKey)
        var chain = Chain(entity: entity, row: row, firstStep: nil, reached: [], turnedAtStart: false)
        while true {
            let targets = try toOneTargets(of: chain.entity, row: chain.row).map { (node: Node(entity: $0.0.name, key: $0.1.primaryKey), target: $0) }
            let next = targets.firstIndex { $0.node != start && !chain.reached.contains($0.node) }
            if chain.firstStep != nil, targets[..<(next ?? targets.endIndex)].contains(where: { $0.node == start }) { chain.turnedAtStart = true }
            guard let next else { return chain }
            let (node, (nextEntity, nextRow)) = targets[next]
            chain.reached.insert(node)
            if chain.firstStep == nil { chain.firstStep = node }
            chain.entity = nextEntity
            chain.row = nextRow
        }
    }

    /// Every object reachable from `root` through relationships, both ways, `root` first, then
    /// in breadth-first order.
    func reachable(from entity: EntityDescription, row: PersistentStore.StoredRow) throws -> [(EntityDescription, PersistentStore.StoredRow)] {
        var found = [(entity, row)]
        var seen: Set<Node> = [Node(entity: entity.name, key: row.primaryKey)]
        var next = 0
        while next < found.count {
            let (memberEntity, memberRow) = found[next]
            next += 1
            for neighbour in try toOneTargets(of: memberEntity, row: memberRow) + toManyMembers(of: memberEntity, row: memberRow)
            where seen.insert(Node(entity: neighbour.0.name, key: neighbour.1.primaryKey)).inserted {
                found.append(neighbour)
            }
        }
        return found
    }
}

extension CoreDataMapping {
    /// The cloud zone of a record: shared store — the row's share zone; private store — the
    /// zone of the end of its to-one chain (`ObjectGraph`), else Core Data's zone. An object
    /// never sent that ends its own chain (a new top-level object) joins the share zone of an
    /// object that points at it, if one does: an object later related to a shared one lands in
    /// that share wherever it is created. A chain end never sent or in Core Data's zone also
    /// joins the share of an object it is linked to through a many-to-many relationship.
    static func zone(for uuid: String, entity: EntityDescription, state: StoreBookkeeping) throws -> ZoneID? {
        var cache = ZoneCache()
        guard let key = try state.primaryKey(entity: entity.name, uuid: uuid), let row = try state.store.read(entity, primaryKey: key) else {
            return try state.meta(uuid)?.zone
        }
        return try Self.zone(for: uuid, entity: entity, row: row, state: state, cache: &cache)
    }

    /// Zones already worked out from one consistent state of the store (a batch build's
    /// snapshot): a batch of a session's events reads the session's zone once.
    struct ZoneCache {
        /// A chain's zone from its first step on, and the objects it reached from there.
        struct FromFirstStep {
            var zone: ZoneID
            var reached: Set<ObjectGraph.Node>
        }

        /// By the object a chain's first step reaches, kept only for a chain that did not turn at
        /// its start: such a chain runs the same from any other start it never reaches, and ends
        /// at the same object.
        var byFirstStep: [ObjectGraph.Node: FromFirstStep] = [:]
        /// By a chain's end: the zone is the end's alone. A never-sent end reads every member
        /// pointing at it (`joinedShareZone`), which for a new session of thousands of events
        /// was a sixth of a send when done again for the session itself and each batch.
        var byEnd: [ObjectGraph.Node: ZoneID] = [:]
    }

    static func zone(for uuid: String, entity: EntityDescription, row: PersistentStore.StoredRow, state: StoreBookkeeping,
              cache: inout ZoneCache) throws -> ZoneID? {
        let store = state.store
        if store.scope == .shared {
            return try row.zone.flatMap { try state.shareZone(key: $0) }
        }
        let graph = ObjectGraph(store: store)
        let firstKey = entity.toOneRelationships.indices.lazy.compactMap { offset -> ObjectGraph.Node? in
            row.values[entity.position(ofToOne: offset)].int64.map { ObjectGraph.Node(entity: entity.toOneRelationships[offset].destination, key: $0) }
        }.first
        if let firstKey, let known = cache.byFirstStep[firstKey],
           !known.reached.contains(ObjectGraph.Node(entity: entity.name, key: row.primaryKey)) {
            return known.zone
        }
        let chain = try graph.chainEnd(of: entity, row: row)
        let endNode = ObjectGraph.Node(entity: chain.entity.name, key: chain.row.primaryKey)
        let zone: ZoneID
        if let known = cache.byEnd[endNode] {
            zone = known
        } else {
            zone = try Self.zone(ofEnd: chain.entity, row: chain.row, graph: graph, state: state)
            cache.byEnd[endNode] = zone
        }
        if let firstKey, firstKey == chain.firstStep, !chain.turnedAtStart {
            cache.byFirstStep[firstKey] = ZoneCache.FromFirstStep(zone: zone, reached: chain.reached)
        }
        return zone
    }

    /// The zone of a chain's end (`zone(for:)`).
    private static func zone(ofEnd entity: EntityDescription, row: PersistentStore.StoredRow, graph: ObjectGraph,
                             state: StoreBookkeeping) throws -> ZoneID {
        guard let zone = try state.meta(row.uuid)?.zone else {
            return try joinedShareZone(of: entity, row: row, graph: graph, state: state) ?? .coreData
        }
        guard zone.zoneName == ZoneID.coreDataZoneName else { return zone }
        return try linkedShareZone(of: entity, row: row, graph: graph, state: state) ?? zone
    }

    /// The share zone of an object pointing at a never-sent chain end, whose own chain ends
    /// elsewhere (children ending at the object itself say nothing about it). Only members
    /// already mirrored into a share zone are read: a new session with thousands of unsent
    /// events would otherwise read every one of them for each batch that carries it.
    private static func joinedShareZone(of entity: EntityDescription, row: PersistentStore.StoredRow, graph: ObjectGraph,
                                 state: StoreBookkeeping) throws -> ZoneID? {
        let store = state.store
        let prefix = CloudKitNames.coreDataShareZonePrefix
        if let zone = try linkedShareZone(of: entity, row: row, graph: graph, state: state) { return zone }
        for relationship in entity.relationships where relationship.toMany {
            guard let inverseName = relationship.inverse, let destination = store.model.entity(named: relationship.destination),
                  destination.relationship(inverseName)?.toMany == false, store.holds(destination.name) else { continue }
            let shared = try store.database.query("""
                SELECT t.z_pk FROM \(PersistentStore.table(destination.name)) t JOIN mirror_meta m ON m.uuid = t.z_uuid
                WHERE t."r_\(inverseName)" = ? AND substr(m.zone_name, 1, ?) = ?
                """, [row.primaryKey, prefix.utf8.count, prefix])
            for key in shared.compactMap({ $0[0].int64 }) {
                guard let member = try store.read(destination, primaryKey: key) else { continue }
                let end = try graph.chainEnd(of: destination, row: member).row
                guard end.uuid != row.uuid, let zone = try state.meta(end.uuid)?.zone, zone.zoneName.hasPrefix(prefix) else { continue }
                return zone
            }
        }
        return nil
    }

    /// The share zone of an object linked through a many-to-many relationship to `row`, a chain
    /// end in no share: the object joins that share, as sharing the graph would have taken it
    /// (a tag put on a shared photo, new or existing). Many-to-many members never follow the
    /// object by their chains, so only this brings a tag to its photo's participants; an object
    /// already in another share stays there (a relationship across shares is not supported).
    private static func linkedShareZone(of entity: EntityDescription, row: PersistentStore.StoredRow, graph: ObjectGraph,
                                 state: StoreBookkeeping) throws -> ZoneID? {
        let store = state.store
        for relationship in entity.relationships where relationship.toMany {
            guard let end = store.model.manyToMany(entity.name, relationship.name), store.holds(end.link),
                  let other = store.model.entity(named: relationship.destination) else { continue }
            let prefix = CloudKitNames.coreDataShareZonePrefix
            // Only members already mirrored into a share zone are read: a tag on thousands of
            // private photos would otherwise read each one's chain for every send of the tag.
            let shared = try store.database.query("""
                SELECT o.z_pk FROM \(PersistentStore.table(end.link)) l JOIN \(PersistentStore.table(other.name)) o ON o.z_pk = l."r_\(end.other)"
                JOIN mirror_meta m ON m.uuid = o.z_uuid WHERE l."r_\(end.own)" = ? AND substr(m.zone_name, 1, ?) = ?
                """, [row.primaryKey, prefix.utf8.count, prefix])
            for key in shared.compactMap({ $0[0].int64 }) {
                guard let member = try store.read(other, primaryKey: key) else { continue }
                let memberEnd = try graph.chainEnd(of: other, row: member).row
                guard memberEnd.uuid != row.uuid, let zone = try state.meta(memberEnd.uuid)?.zone,
                      zone.zoneName.hasPrefix(CloudKitNames.coreDataShareZonePrefix) else { continue }
                return zone
            }
        }
        return nil
    }
}
