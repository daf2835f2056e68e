import MeowWire
import ServiceRuntime
import SQLiteKit

/// Builds one SELECT for one store: the joins a predicate's and sort's key paths need, the WHERE
/// clause and its bound values.
struct StoreQueryBuilder {
    let store: PersistentStore
    let model: ManagedObjectModel
    let entity: EntityDescription
    let predicateText: String
    private(set) var joins: [String] = []
    /// Table aliases start with this (subqueries over to-many relationships have their own).
    private let aliasPrefix: String
    private var aliases: [String: String]
    private(set) var values: [SQLValue] = []
    /// Subqueries made so far (each gets an alias prefix of its own).
    private var subqueries = 0

    init(store: PersistentStore, model: ManagedObjectModel, entity: EntityDescription, predicateText: String, aliasPrefix: String = "") {
        self.store = store
        self.model = model
        self.entity = entity
        self.predicateText = predicateText
        self.aliasPrefix = aliasPrefix
        self.aliases = ["": aliasPrefix + "t0"]
    }

    /// The entity's own table alias (`t0` at the top).
    var baseAlias: String { aliasPrefix + "t0" }

    enum Resolved {
        case attribute(column: String, AttributeDescription)
        case relationship(column: String, RelationshipDescription)
    }

    /// Resolves `a.b.c`: every step but the last must be a to-one relationship.
    mutating func resolve(_ keyPath: [String]) throws -> Resolved {
        guard let key = keyPath.last else { throw predicateError("empty key path.", predicateText) }
        let (alias, owner) = try walkToOne(Array(keyPath.dropLast()), keyPath: keyPath)
        if let attribute = owner.attribute(key) {
            // Decimals are kept as exact text; they compare as numbers (NUMERIC affinity applies
            // to the literal's text too).
            if attribute.type == .decimal { return .attribute(column: "CAST(\(alias).\"a_\(key)\" AS NUMERIC)", attribute) }
            return .attribute(column: "\(alias).\"a_\(key)\"", attribute)
        }
        // The system columns: the stable business id, and the cloud zone and its owner (a row
        // keeps both in `z_zone` as `owner/zoneName`; owner names hold no `/`).
        if key == "uuid" || key == "zone" || key == "zoneOwner", owner.relationship(key) == nil {
            let zone = "\(alias).z_zone"
            let column: String
            switch key {
            case "uuid": column = "\(alias).z_uuid"
            case "zone": column = "substr(\(zone), instr(\(zone), '/') + 1)"
            default: column = "nullif(substr(\(zone), 1, instr(\(zone), '/') - 1), '')"
            }
            return .attribute(column: column, Self.systemAttribute(key))
        }
        let relationship = try self.relationship(key, of: owner, keyPath: keyPath)
        guard !relationship.toMany else { throw toManyError(key, of: owner, keyPath: keyPath) }
        return .relationship(column: "\(alias).\"r_\(key)\"", relationship)
    }

    /// Joins the to-one relationships of `steps`; the alias and entity they lead to.
    private mutating func walkToOne(_ steps: [String], keyPath: [String]) throws -> (alias: String, entity: EntityDescription) {
        var current = entity
        var alias = baseAlias
        var walked: [String] = []
        for key in steps {
            let relationship = try self.relationship(key, of: current, keyPath: keyPath)
            guard !relationship.toMany else { throw toManyError(key, of: current, keyPath: keyPath) }
            walked.append(key)
            let path = walked.joined(separator: ".")
            let destination = model.entity(named: relationship.destination)!
            if let existing = aliases[path] {
                alias = existing
            } else {
                let next = "\(aliasPrefix)t\(aliases.count)"
                joins.append("LEFT JOIN \(PersistentStore.table(destination.name)) \(next) ON \(next).z_pk = \(alias).\"r_\(key)\"")
                aliases[path] = next
                alias = next
            }
            current = destination
        }
        return (alias, current)
    }

    private func relationship(_ key: String, of owner: EntityDescription, keyPath: [String]) throws -> RelationshipDescription {
        guard let relationship = owner.relationship(key) else {
            throw ServiceError(.unknownAttribute, "\(owner.name) has no attribute or relationship '\(key)' (in key path '\(keyPath.joined(separator: "."))').",
                               details: ["entity": .string(owner.name), "property": .string(key), "predicate": .string(predicateText)])
        }
        return relationship
    }

    private func toManyError(_ key: String, of owner: EntityDescription, keyPath: [String]) -> ServiceError {
        predicateError("'\(keyPath.joined(separator: "."))' goes through the to-many relationship \(owner.name).\(key): "
                       + "say which of its objects with ANY, ALL or NONE (ANY \(keyPath.joined(separator: ".")) …), or count them with \(key).@count.",
                       predicateText)
    }

    /// A to-many relationship reached by `keyPath` (through to-one steps): the alias of the
    /// object it belongs to, its destination, its inverse (the destination's column naming
    /// the owner) and the rest of the key path (from the destination).
    private mutating func collection(_ keyPath: [String]) throws
        -> (ownerAlias: String, destination: EntityDescription, inverse: String, rest: [String]) {
        var owner = entity
        for (index, key) in keyPath.enumerated() {
            // An attribute on the way: no to-many relationship comes before it.
            if owner.attribute(key) != nil { break }
            let relationship = try self.relationship(key, of: owner, keyPath: keyPath)
            if relationship.toMany {
                let (alias, _) = try walkToOne(Array(keyPath[..<index]), keyPath: keyPath)
                // Many-to-many: the relationship's objects are its links, each naming the
                // object at the other end (`ANY tags == %@` compares the link's other side).
                if let end = model.manyToMany(owner.name, key), let link = model.entity(named: end.link) {
                    return (alias, link, end.own, [end.other] + keyPath[(index + 1)...])
                }
                guard let inverse = relationship.inverse, let destination = model.entity(named: relationship.destination) else {
                    throw predicateError("\(owner.name).\(key) has no inverse to query by.", predicateText)
                }
                return (alias, destination, inverse, Array(keyPath[(index + 1)...]))
            }
            guard let next = model.entity(named: relationship.destination) else { break }
            owner = next
        }
        throw predicateError("'\(keyPath.joined(separator: "."))' goes through no to-many relationship: ANY, ALL, NONE and @count need one.", predicateText)
    }

    /// `quantified`: EXISTS over the to-many relationship's objects (ANY), NOT EXISTS of one
    /// failing the term (ALL: true for none at all, as NSPredicate's), or NOT EXISTS (NONE).
    private mutating func quantifiedSQL(_ quantifier: Predicate.Quantifier, _ term: Predicate) throws -> String {
        guard let keyPath = Self.keyPath(of: term) else { throw predicateError("\(quantifier.rawValue) takes one comparison.", predicateText) }
        let (ownerAlias, destination, inverse, rest) = try collection(keyPath)
        guard !rest.isEmpty else {
            throw predicateError("'\(keyPath.joined(separator: "."))': \(quantifier.rawValue) compares a property of the relationship's objects (\(keyPath.joined(separator: ".")).<property>).", predicateText)
        }
        let inner = Self.rebased(term, to: rest)
        subqueries += 1
        var nested = StoreQueryBuilder(store: store, model: model, entity: destination, predicateText: predicateText,
                                       aliasPrefix: "\(aliasPrefix)q\(subqueries)_")
        let condition = try nested.sql(for: inner)
        values += nested.values
        let from = "SELECT 1 FROM \(PersistentStore.table(destination.name)) \(nested.baseAlias) \(nested.joins.joined(separator: " ")) "
            + "WHERE \(nested.baseAlias).\"r_\(inverse)\" = \(ownerAlias).z_pk"
        switch quantifier {
        case .any: return "EXISTS (\(from) AND \(condition))"
        case .all: return "NOT EXISTS (\(from) AND NOT coalesce(\(condition), 0))"
        case .none: return "NOT EXISTS (\(from) AND coalesce(\(condition), 0))"
        }
    }

    /// The one key path a quantifier's term compares: a comparison's, an IN's, or BETWEEN's (two
    /// comparisons of one key path).
    static func keyPath(of term: Predicate) -> [String]? {
        switch term {
        case let .compare(path, _, _, _), let .within(path, _): return path
        case let .and(terms):
            let paths = terms.map(keyPath(of:))
            guard let first = paths.first ?? nil, paths.allSatisfy({ $0 == first }) else { return nil }
            return first
        default: return nil
        }
    }

    /// `term` comparing `keyPath` instead (the rest of the quantified key path).
    static func rebased(_ term: Predicate, to keyPath: [String]) -> Predicate {
        switch term {
        case let .compare(_, op, value, options): return .compare(keyPath: keyPath, op: op, value: value, options: options)
        case let .within(_, list): return .within(keyPath: keyPath, values: list)
        case let .and(terms): return .and(terms.map { rebased($0, to: keyPath) })
        default: return term
        }
    }

    /// `count`: the number of the relationship's objects, compared with a number.
    private mutating func countSQL(_ keyPath: [String], _ op: Predicate.ComparisonOperator, _ value: JSONValue) throws -> String {
        let (ownerAlias, destination, inverse, rest) = try collection(keyPath)
        let linked = model.isLinkEntity(destination.name) && rest.count == 1
        guard rest.isEmpty || linked else { throw predicateError("@count counts a to-many relationship's objects: '\(keyPath.joined(separator: ".")).@count'.", predicateText) }
        let number: SQLValue
        switch value {
        case let .int(count): number = .integer(Int64(count))
        case let .double(count): number = .real(count)
        default: throw predicateError("'\(keyPath.joined(separator: ".")).@count' compares with a number, not \(JSONWriter.text(value)).", predicateText)
        }
        values.append(number)
        let alias = "\(aliasPrefix)c\(values.count)"
        return "(SELECT count(*) FROM \(PersistentStore.table(destination.name)) \(alias) WHERE \(alias).\"r_\(inverse)\" = \(ownerAlias).z_pk) \(op.rawValue == "==" ? "=" : op.rawValue) ?"
    }

    static func systemAttribute(_ name: String) -> AttributeDescription {
        AttributeDescription(name: name, type: .string)
    }

    /// The storage value a literal compares as; nil when it can never match in this store.
    private func literal(_ value: JSONValue, for resolved: Resolved, keyPath: [String]) throws -> SQLValue? {
        switch resolved {
        case let .attribute(_, attribute):
            var relaxed = attribute
            relaxed.allowedValues = nil
            do {
                return try AttributeCoding.convert(value, for: relaxed, entity: entity.name)
            } catch let error as ServiceError {
                throw predicateError("\(keyPath.joined(separator: ".")): \(error.wire.message)", predicateText)
            }
        case let .relationship(_, relationship):
            if value == .null { return .null }
            guard let text = value.stringValue, let id = ObjectID(uri: text) else {
                throw predicateError("\(keyPath.joined(separator: ".")) is a relationship; compare it with an object ID string or nil.", predicateText)
            }
            guard id.storeUUID == store.uuid, id.entity == relationship.destination, let key = id.primaryKey else { return nil }
            return .integer(key)
        }
    }

    mutating func sql(for predicate: Predicate) throws -> String {
        switch predicate {
        case let .constant(flag): return flag ? "1" : "0"
        case let .and(terms): return Self.balanced(try terms.map { try sql(for: $0) }, " AND ")
        case let .or(terms): return Self.balanced(try terms.map { try sql(for: $0) }, " OR ")
        // A comparison with NULL is unknown in SQL, and NOT unknown is unknown: `NOT (note ==
        // 'x')` would miss a nil note. NSPredicate compares nil as false, so a term's unknown
        // is false before it is negated (outside NOT, unknown already filters as false).
        case let .not(term): return "(NOT coalesce(\(try sql(for: term)), 0))"
        case let .quantified(quantifier, term): return try quantifiedSQL(quantifier, term)
        case let .count(keyPath, op, value): return try countSQL(keyPath, op, value)
        case let .within(keyPath, list):
            let resolved = try resolve(keyPath)
            let column = Self.column(resolved)
            var marks: [String] = []
            for item in list {
                guard let value = try literal(item, for: resolved, keyPath: keyPath), value != .null else { continue }
                values.append(value)
                marks.append("?")
            }
            return marks.isEmpty ? "0" : "\(column) IN (\(marks.joined(separator: ", ")))"
        case let .compare(keyPath, op, value, options):
            let resolved = try resolve(keyPath)
            var column = Self.column(resolved)
            guard let bound = try literal(value, for: resolved, keyPath: keyPath) else {
                return op == .notEqual ? "1" : "0"
            }
            if bound == .null {
                switch op {
                case .equal: return "\(column) IS NULL"
                case .notEqual: return "\(column) IS NOT NULL"
                default: throw predicateError("\(keyPath.joined(separator: ".")) \(op.rawValue) nil: only == and != compare with nil.", predicateText)
                }
            }
            // An empty operand never begins, ends or is contained in anything (NSString's
            // hasPrefix:, hasSuffix: and rangeOfString: with @"" find nothing).
            if [.beginsWith, .endsWith, .contains].contains(op), bound == .text("") { return "0" }
            if op == .like || op == .matches {
                guard case let .text(pattern) = bound else {
                    throw predicateError("\(keyPath.joined(separator: ".")) \(op.rawValue): \(op.rawValue) compares strings, with a string pattern.", predicateText)
                }
                if op == .matches {
                    // Checked here, so that a bad pattern is the predicate's error, not the query's.
                    do {
                        _ = try RegexMatching.compile(pattern, caseInsensitive: options.contains(.caseInsensitive))
                    } catch {
                        throw predicateError("'\(pattern)' is not a valid regular expression (ICU syntax, as NSPredicate's MATCHES).", predicateText)
                    }
                    values.append(bound)
                    return "meow_matches(\(column), ?, \(options.rawValue)) = 1"
                }
                // LIKE's wildcards are GLOB's (`*` any run, `?` one character); GLOB's own
                // character classes are not LIKE's, so a `[` is matched as itself.
                values.append(.text(pattern.replacingOccurrences(of: "[", with: "[[]")))
                if options.isEmpty { return "\(column) GLOB ?" }
                return "meow_fold(\(column), \(options.rawValue)) GLOB meow_fold(?, \(options.rawValue))"
            }
            var mark = "?"
            if !options.isEmpty {
                column = "meow_fold(\(column), \(options.rawValue))"
                mark = "meow_fold(?, \(options.rawValue))"
            }
            values.append(bound)
            switch op {
            case .equal: return "\(column) = \(mark)"
            case .notEqual: return "(\(column) IS NULL OR \(column) != \(mark))"
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return "\(column) \(op.rawValue) \(mark)"
            case .beginsWith: values.append(bound); return "substr(\(column), 1, length(\(mark))) = \(mark)"
            case .endsWith: values.append(bound); return "substr(\(column), -length(\(mark))) = \(mark)"
            case .contains: return "instr(\(column), \(mark)) > 0"
            case .like, .matches: return "0"  // handled above
            }
        }
    }

    /// Terms joined by `separator`, parenthesised as a balanced tree: SQLite parses `a AND b AND
    /// c …` as a chain as deep as it is long and refuses one deeper than 1,000 ("Expression tree
    /// is too large"), which a long list of terms within the predicate length limit reaches.
    static func balanced(_ terms: [String], _ separator: String) -> String {
        guard terms.count > 8 else { return "(" + terms.joined(separator: separator) + ")" }
        let middle = terms.count / 2
        return "(" + balanced(Array(terms[..<middle]), separator) + separator + balanced(Array(terms[middle...]), separator) + ")"
    }

    static func column(_ resolved: Resolved) -> String {
        switch resolved {
        case let .attribute(column, _), let .relationship(column, _): return column
        }
    }
}
