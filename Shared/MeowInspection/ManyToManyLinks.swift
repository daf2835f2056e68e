import CloudWire
import MeowWire

/// Many-to-many links compared as the cloud holds them: a `CDMR` record per link, named by the
/// link row's `uuid`, with `CD_entityNames`, `CD_relationships` and `CD_recordNames` (the two
/// sides joined by ":"). A device keeps a link as a row of a hidden link entity (`_Photo_tags`,
/// to-ones `a` and `b`); both are turned into the same three fields, sides in one order (the
/// side whose entity, then relationship, name sorts first, as the mirror writes them), so a
/// link another client wrote in the other order compares equal.
public enum ManyToManyLinks {
    public static let recordType = "CDMR"
    public static let entityNamesField = "CD_entityNames"
    public static let relationshipsField = "CD_relationships"
    public static let recordNamesField = "CD_recordNames"

    public struct Side: Sendable, Hashable, Comparable {
        public var entity: String
        public var relationship: String
        public static func < (lhs: Side, rhs: Side) -> Bool { (lhs.entity, lhs.relationship) < (rhs.entity, rhs.relationship) }
    }

    /// The hidden link entities of a `model.get` reply's entities, each with its `a` and `b`
    /// sides: `_<Entity>_<relationship>` for each to-many whose inverse is to-many, named after
    /// the side that sorts first.
    public static func linkEntities(_ entities: [JSONValue]) -> [String: (a: Side, b: Side)] {
        let byName = Dictionary(entities.compactMap { entity in entity["name"]?.stringValue.map { ($0, entity) } },
                                uniquingKeysWith: { first, _ in first })
        var links: [String: (a: Side, b: Side)] = [:]
        for (name, entity) in byName {
            for relationship in entity["relationships"]?.arrayValue ?? [] where relationship["toMany"] == true {
                guard let forward = relationship["name"]?.stringValue, let destination = relationship["destination"]?.stringValue,
                      let inverse = relationship["inverse"]?.stringValue,
                      let back = byName[destination]?["relationships"]?.arrayValue?.first(where: { $0["name"]?.stringValue == inverse }),
                      back["toMany"] == true else { continue }
                let own = Side(entity: name, relationship: forward), other = Side(entity: destination, relationship: inverse)
                if own <= other { links["_\(name)_\(forward)"] = (own, other) }
            }
        }
        return links
    }

    /// A device's link row (`a`, `b` object IDs) as the CDMR fields; `recordName` maps an object
    /// ID to its record name.
    public static func fields(row: [String: JSONValue], sides: (a: Side, b: Side), recordName: (String) -> String) -> [String: String] {
        fields([(sides.a, row["a"]?.stringValue.map(recordName) ?? "?"), (sides.b, row["b"]?.stringValue.map(recordName) ?? "?")])
    }

    /// A CDMR record's fields (`{"type", "value"}` each) in the one order; the text as it is
    /// when a field does not name two sides.
    public static func fields(record: [String: JSONValue]) -> [String: String] {
        func parts(_ field: String) -> [String] {
            (record[field]?["value"]?.stringValue ?? "").split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        }
        let (entities, relationships, names) = (parts(entityNamesField), parts(relationshipsField), parts(recordNamesField))
        guard entities.count == 2, relationships.count == 2, names.count == 2 else {
            return [entityNamesField, relationshipsField, recordNamesField].reduce(into: [:]) { out, field in
                out[field] = record[field]?["value"]?.stringValue ?? record[field].cell
            }
        }
        return fields([(Side(entity: entities[0], relationship: relationships[0]), names[0]),
                       (Side(entity: entities[1], relationship: relationships[1]), names[1])])
    }

    /// What a link joins, for people: `Photo:Tag <photo>:<tag>` (nil for an item that is not one).
    public static func summary(_ item: StoreCloudDiff.Item) -> String? {
        guard item.entity == recordType, let entities = item.fields[entityNamesField], let names = item.fields[recordNamesField] else { return nil }
        return "\(entities) \(names)"
    }

    private static func fields(_ sides: [(side: Side, recordName: String)]) -> [String: String] {
        let ordered = sides.sorted { $0.side < $1.side }
        return [entityNamesField: ordered.map(\.side.entity).joined(separator: ":"),
                relationshipsField: ordered.map(\.side.relationship).joined(separator: ":"),
                recordNamesField: ordered.map(\.recordName).joined(separator: ":")]
    }
}
