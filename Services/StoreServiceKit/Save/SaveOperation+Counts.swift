import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit

/// Core Data's Minimum and Maximum Count of to-many relationships, checked at save on the
/// rows as the save wrote them (inside its transactions, so a refusal writes nothing): the
/// objects the save changed, and the objects their to-one relationships pointed at before and
/// after (whose to-many sets the save changed). An optional relationship may be empty.
extension SaveOperation {
    func checkRelationshipCounts(changedIDs: [Int: [String]], context pending: [ContextObject]) throws {
        guard model.entities.contains(where: { $0.relationships.contains(where: \.isCounted) }) else { return }
        var owners: Set<String> = []
        for uris in changedIDs.values { owners.formUnion(uris) }
        // The to-one targets before the save (the snapshot) and after it (the row).
        for object in pending {
            for relationship in object.entity.toOneRelationships where inverseIsCounted(relationship) {
                if let uri = object.snapshotValues[object.entity.position(of: relationship.name)!].string { owners.insert(uri) }
            }
        }
        for (index, uris) in changedIDs {
            let store = stores.list[index]
            for uri in uris {
                guard let id = ObjectID(uri: uri), let key = id.primaryKey, let entity = model.entity(named: id.entity),
                      let row = try store.read(entity, primaryKey: key) else { continue }
                for (number, relationship) in entity.toOneRelationships.enumerated() where inverseIsCounted(relationship) {
                    if let target = row.values[entity.position(ofToOne: number)].int64 {
                        owners.insert(store.objectID(relationship.destination, target).uri)
                    }
                }
            }
        }
        for uri in owners.sorted() { try checkCounts(of: uri) }
    }

    private func inverseIsCounted(_ relationship: RelationshipDescription) -> Bool {
        guard let inverse = relationship.inverse else { return false }
        return model.entity(named: relationship.destination)?.relationship(inverse)?.isCounted == true
    }

    private func checkCounts(of uri: String) throws {
        guard let id = ObjectID(uri: uri), let key = id.primaryKey, let uuid = id.storeUUID, let index = stores.index(uuid: uuid),
              let entity = model.entity(named: id.entity) else { return }
        let store = stores.list[index]
        guard try store.exists(entity.name, primaryKey: key) else { return }
        for relationship in entity.relationships where relationship.isCounted {
            guard let inverse = relationship.inverse, store.holds(relationship.destination) else { continue }
            let count = try store.referencing(relationship.destination, relationship: inverse, primaryKey: key).count
            if count == 0 && relationship.optional { continue }
            let details: [String: JSONValue] = ["objectID": .string(uri), "entity": .string(entity.name), "property": .string(relationship.name),
                                                "count": .int(count)]
            if let minimum = relationship.minCount, count < minimum {
                throw StoreError.coreData(.validationRelationshipLacksMinimumCount, 1580,
                                          "\(entity.name).\(relationship.name) has \(count) object(s); it needs at least \(minimum).",
                                          details.merging(["minCount": .int(minimum)]) { $1 })
            }
            if let maximum = relationship.maxCount, count > maximum {
                throw StoreError.coreData(.validationRelationshipExceedsMaximumCount, 1590,
                                          "\(entity.name).\(relationship.name) has \(count) object(s); it may have at most \(maximum).",
                                          details.merging(["maxCount": .int(maximum)]) { $1 })
            }
        }
    }
}
