import MeowWire
import SQLiteKit

/// One side of a many-to-many relationship as stored: a hidden link entity per pair (Core
/// Data's Z_<n><NAME> join table) whose rows each hold two to-one relationships, `a` and `b`.
/// Being an ordinary entity, a link gets storage, history, routing and zones from the code
/// every entity goes through; only reading and writing the set is its own.
public struct ManyToManyEnd: Sendable, Hashable {
    /// The link entity's name.
    public let link: String
    /// The link's to-one that points at this side's object ("a" or "b").
    public let own: String
    /// The link's to-one that points at the other side's object.
    public let other: String
}

extension ManagedObjectModel {
    /// The first side of a pair (by entity, then relationship name) is the link's `a`.
    package static func linkName(_ entity: String, _ relationship: String) -> String { "_\(entity)_\(relationship)" }

    /// The link behind `entity.relationship` when it is a to-many whose inverse is to-many.
    public func manyToMany(_ entity: String, _ relationship: String) -> ManyToManyEnd? {
        guard let source = self.entity(named: entity), let forward = source.relationship(relationship), forward.toMany,
              let inverseName = forward.inverse, let inverse = self.entity(named: forward.destination)?.relationship(inverseName),
              inverse.toMany else { return nil }
        if (entity, relationship) <= (forward.destination, inverseName) {
            return ManyToManyEnd(link: Self.linkName(entity, relationship), own: "a", other: "b")
        }
        return ManyToManyEnd(link: Self.linkName(forward.destination, inverseName), own: "b", other: "a")
    }

    /// The two sides of link entity `name` (entity and relationship of `a`, then of `b`), nil
    /// when `name` is not a link entity.
    public func linkSides(of name: String) -> (a: (entity: String, relationship: String), b: (entity: String, relationship: String))? {
        guard name.hasPrefix("_"), let link = entity(named: name), let a = link.relationship("a"), let b = link.relationship("b"),
              let forward = entity(named: a.destination)?.relationships.first(where: { manyToMany(a.destination, $0.name) == ManyToManyEnd(link: name, own: "a", other: "b") }),
              let inverse = forward.inverse else { return nil }
        return ((a.destination, forward.name), (b.destination, inverse))
    }

    /// Whether `name` is a hidden link entity (not the app's, never on the wire as an entity).
    public func isLinkEntity(_ name: String) -> Bool { linkSides(of: name) != nil }

    /// The model with a link entity per many-to-many pair, in the store of the pair's first
    /// side (a pair across configurations is refused: a row holds both ends' keys).
    func addingManyToManyLinks() throws(ModelError) -> ManagedObjectModel {
        var model = self
        for entity in entities {
            for relationship in entity.relationships {
                guard let end = manyToMany(entity.name, relationship.name), end.own == "a" else { continue }
                if relationship.inverse == relationship.name && relationship.destination == entity.name {
                    throw ModelError("\(entity.name).\(relationship.name): a many-to-many relationship that is its own inverse is not supported; use two relationships, each the other's inverse.")
                }
                if self.entity(named: end.link) != nil {
                    if isLinkEntity(end.link) { continue }
                    throw ModelError("\(entity.name).\(relationship.name): entity '\(end.link)' has the name of this many-to-many relationship's link table; rename it.")
                }
                let holding = configurations.indices.filter { configurations[$0].entities.contains(entity.name) }
                for index in holding {
                    guard configurations[index].entities.contains(relationship.destination) else {
                        throw ModelError("\(entity.name).\(relationship.name): a many-to-many relationship needs both entities in configuration \(configurations[index].name); \(relationship.destination) is not in it.")
                    }
                    model.configurations[index].entities.append(end.link)
                }
                model.entities.append(EntityDescription(name: end.link, attributes: [], relationships: [
                    RelationshipDescription(name: "a", destination: entity.name),
                    RelationshipDescription(name: "b", destination: relationship.destination),
                ], indexes: [["a"], ["b"]]))
            }
        }
        return model
    }
}

extension PersistentStore {
    /// The links from the object `primaryKey` through `end`: each link row's key and the other
    /// side's key, in link order.
    package func links(_ end: ManyToManyEnd, primaryKey: Int64) throws -> [(link: Int64, other: Int64)] {
        try database.query("SELECT z_pk, \"r_\(end.other)\" FROM \(Self.table(end.link)) WHERE \"r_\(end.own)\" = ? ORDER BY z_pk", [primaryKey])
            .compactMap { row in row[1].int64.flatMap { other in row[0].int64.map { ($0, other) } } }
    }
}
