import MeowWire
import ServiceRuntime
import SQLiteKit

/// A many-to-many relationship in a context: its value is the set of link objects (hidden
/// entity, `ManyToManyEnd`) that name the object, so adding and removing a member is inserting
/// and deleting a link, which the save writes and records like any object.
extension ManagedObjectContext {
    /// The links from `object` through `end` as this context sees them: stored links (registered
    /// here as they are read) and links inserted here, without those deleted here.
    func linkObjects(of object: ContextObject, _ end: ManyToManyEnd, stores: StoreSet) throws -> [ContextObject] {
        var found: [ContextObject] = []
        var seen: Set<String> = []
        if case let .permanent(_, _, key) = object.id, let storeIndex = object.store, stores.list[storeIndex].holds(end.link) {
            let store = stores.list[storeIndex]
            for (linkKey, _) in try store.links(end, primaryKey: key) {
                let link = try self.object(store.objectID(end.link, linkKey).uri, stores: stores)
                seen.insert(link.uri)
                if !link.isDeleted, link.value(end.own).string == object.uri { found.append(link) }
            }
        }
        let inserted = objects.values.filter {
            $0.entity.name == end.link && !$0.isDeleted && !seen.contains($0.uri) && $0.value(end.own).string == object.uri
        }
        return found + inserted.sorted { $0.sequence < $1.sequence }
    }

    /// The other side's object IDs of `object`'s many-to-many relationship, sorted, each once
    /// (two devices linking the same pair make two links, as with Core Data's mirror).
    func manyToManyTargets(of object: ContextObject, _ end: ManyToManyEnd, stores: StoreSet) throws -> [String] {
        Set(try linkObjects(of: object, end, stores: stores).compactMap { $0.value(end.other).string }).sorted()
    }

    /// Sets `object`'s many-to-many relationship `name` from its wire value: an array of object
    /// IDs (the whole set; null is the empty set) or `{"add": [...], "remove": [...]}`. Every ID
    /// is checked before a link changes, so a refused value changes nothing.
    func setManyToMany(_ name: String, _ value: JSONValue, on object: ContextObject, end: ManyToManyEnd, stores: StoreSet) throws {
        let entity = object.entity
        guard let relationship = entity.relationship(name), let linkEntity = stores.model.entity(named: end.link) else {
            throw StoreError.unknownProperty(name, entity: entity)
        }
        let links = try linkObjects(of: object, end, stores: stores)
        let current = Set(links.compactMap { $0.value(end.other).string })
        var wanted: Set<String>
        switch value {
        case .null: wanted = []
        case .array: wanted = Set(try manyToManyIDs(value, entity: entity, relationship: relationship, part: nil))
        case let .object(fields):
            if let key = fields.keys.first(where: { $0 != "add" && $0 != "remove" }) {
                throw StoreError.invalidValue(entity: entity.name, property: name, "expected an array of object IDs or {\"add\": [...], \"remove\": [...]}, got a key '\(key)'.")
            }
            let add = try manyToManyIDs(fields["add"] ?? .array([]), entity: entity, relationship: relationship, part: "add")
            let remove = try manyToManyIDs(fields["remove"] ?? .array([]), entity: entity, relationship: relationship, part: "remove")
            wanted = current.union(add).subtracting(remove)
        default:
            throw StoreError.invalidValue(entity: entity.name, property: name, "expected an array of object IDs, got \(AttributeCoding.describe(value)).")
        }
        for link in links where !wanted.contains(link.value(end.other).string ?? "") {
            if link.isInserted { forget(link.uri) } else { link.isDeleted = true }
        }
        for target in wanted.subtracting(current).sorted() {
            // A stored link deleted here for the same pair comes back rather than a second row.
            if let revived = objects.values.first(where: {
                $0.entity.name == end.link && $0.isDeleted && $0.value(end.own).string == object.uri && $0.value(end.other).string == target
            }) {
                revived.isDeleted = false
                continue
            }
            let link = insert(entity: linkEntity)
            link.setChange(.text(object.uri), at: linkEntity.position(of: end.own)!)
            link.setChange(.text(target), at: linkEntity.position(of: end.other)!)
        }
    }

    /// The object IDs of a many-to-many value, each of the destination entity and, if
    /// temporary, inserted in this context.
    private func manyToManyIDs(_ value: JSONValue, entity: EntityDescription, relationship: RelationshipDescription, part: String?) throws -> [String] {
        let place = part.map { "'\($0)'" } ?? "the value"
        guard let items = value.arrayValue else {
            throw StoreError.invalidValue(entity: entity.name, property: relationship.name, "\(place) must be an array of object IDs, got \(AttributeCoding.describe(value)).")
        }
        return try items.map { item in
            guard let text = item.stringValue, let target = ObjectID(uri: text) else {
                throw StoreError.invalidValue(entity: entity.name, property: relationship.name, "expected \(relationship.destination) object IDs in \(place), got \(AttributeCoding.describe(item)).")
            }
            guard target.entity == relationship.destination else {
                throw StoreError.invalidValue(entity: entity.name, property: relationship.name, "expected a \(relationship.destination) object ID, got a \(target.entity).")
            }
            if target.isTemporary, lookup(text) == nil {
                throw StoreError.unknownObject(text, "this temporary ID was not inserted in this context.")
            }
            return text
        }
    }

    /// Drops the links inserted here that name `object`, which is being deleted: a link to an
    /// object that will not exist would fail the save (saved links go with the delete rules).
    func forgetInsertedLinks(of object: ContextObject, model: ManagedObjectModel) {
        for relationship in object.entity.relationships where relationship.toMany {
            guard let end = model.manyToMany(object.entity.name, relationship.name) else { continue }
            for link in objects.values where link.entity.name == end.link && link.isInserted && link.value(end.own).string == object.uri {
                forget(link.uri)
            }
        }
    }
}
