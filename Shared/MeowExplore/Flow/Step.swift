import MeowCareCluster
import MeowWire

/// A team's own step: code over the actor's device. It answers what the history records as the
/// step's result (`.null` for nothing); a thrown `MeowCareError` is the step's failure.
public typealias CustomStep = @Sendable (StepContext) async throws -> JSONValue

/// One step of an actor. The built-in steps name objects and shares symbolically; a custom step
/// is the team's own code (a closure, or a name bound with `Flow.bind`).
public struct Step: Sendable, Codable {
    public enum Kind: Sendable, Equatable {
        /// Inserts `object` (`entity`) with a fresh value for each of `fields` and `values` as given;
        /// into `share`'s zone (a participant's or the owner's shared object) when named.
        case insert(object: String, entity: String, fields: [String], values: [String: JSONValue], share: String?)
        /// Sets a fresh value for each of `fields`, and `values` as given.
        case update(object: String, fields: [String], values: [String: JSONValue])
        case delete(object: String)
        /// Sets the to-one `relationship` of `object` to `to` (`nil` clears it).
        case link(object: String, relationship: String, to: String?)
        /// The owner shares the spec's root and invites its participants.
        case shareCreate(share: String)
        case shareAccept(share: String)
        case shareLeave(share: String)
        case shareStop(share: String)
        /// Adds `user` with `permission` (participants.add).
        case addParticipant(share: String, user: String, permission: String)
        /// Changes `user`'s permission ("readOnly" / "readWrite").
        case setPermission(share: String, user: String, permission: String)
        case removeParticipant(share: String, user: String)
        /// Signs the device out and in as `user`.
        case accountSwitch(user: String)
        /// The team's own step, recorded as `custom.NAME` with `params`.
        case custom(name: String, params: JSONValue)
    }

    public var kind: Kind
    /// A custom step's code; nil for built-in steps and for custom steps bound by name.
    public var body: CustomStep?

    public init(_ kind: Kind, body: CustomStep? = nil) {
        self.kind = kind
        self.body = body
    }

    public static func insert(_ object: String, entity: String, fields: [String] = [], values: [String: JSONValue] = [:], share: String? = nil) -> Step {
        Step(.insert(object: object, entity: entity, fields: fields, values: values, share: share))
    }
    public static func update(_ object: String, fields: [String] = [], values: [String: JSONValue] = [:]) -> Step {
        Step(.update(object: object, fields: fields, values: values))
    }
    public static func delete(_ object: String) -> Step { Step(.delete(object: object)) }
    public static func link(_ object: String, _ relationship: String, to: String?) -> Step {
        Step(.link(object: object, relationship: relationship, to: to))
    }
    public static func shareCreate(_ share: String) -> Step { Step(.shareCreate(share: share)) }
    public static func shareAccept(_ share: String) -> Step { Step(.shareAccept(share: share)) }
    public static func shareLeave(_ share: String) -> Step { Step(.shareLeave(share: share)) }
    public static func shareStop(_ share: String) -> Step { Step(.shareStop(share: share)) }
    public static func addParticipant(_ share: String, user: String, permission: String) -> Step {
        Step(.addParticipant(share: share, user: user, permission: permission))
    }
    public static func setPermission(_ share: String, user: String, permission: String) -> Step {
        Step(.setPermission(share: share, user: user, permission: permission))
    }
    public static func removeParticipant(_ share: String, user: String) -> Step { Step(.removeParticipant(share: share, user: user)) }
    public static func accountSwitch(to user: String) -> Step { Step(.accountSwitch(user: user)) }
    /// The team's own step with its code.
    public static func custom(_ name: String, params: JSONValue = .object([:]), _ body: @escaping CustomStep) -> Step {
        Step(.custom(name: name, params: params), body: body)
    }
    /// The team's own step by name, its code bound later with `Flow.bind`.
    public static func custom(_ name: String, params: JSONValue = .object([:])) -> Step {
        Step(.custom(name: name, params: params))
    }

    /// The objects the step names (to drop them all when shrinking records).
    var objects: [String] {
        switch kind {
        case let .insert(object, _, _, _, _), let .update(object, _, _), let .delete(object): [object]
        case let .link(object, _, to): [object] + (to.map { [$0] } ?? [])
        default: []
        }
    }

    /// The share the step names.
    var share: String? {
        switch kind {
        case let .insert(_, _, _, _, share): share
        case let .shareCreate(share), let .shareAccept(share), let .shareLeave(share), let .shareStop(share),
             let .addParticipant(share, _, _), let .setPermission(share, _, _), let .removeParticipant(share, _): share
        default: nil
        }
    }

    /// Whether the step writes to the device's stores (and so leaves something to send).
    var writesLocally: Bool {
        switch kind {
        case .insert, .update, .delete, .link, .custom: true
        default: false
        }
    }

    // MARK: JSON form: {"op": "insert", "object": "s1", "entity": "CareSession", "fields": ["title"]}

    private enum CodingKeys: String, CodingKey { case op, object, entity, fields, values, share, relationship, to, user, permission, name, params }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let op = try c.decode(String.self, forKey: .op)
        func s(_ key: CodingKeys) throws -> String { try c.decode(String.self, forKey: key) }
        body = nil
        switch op {
        case "insert":
            kind = .insert(object: try s(.object), entity: try s(.entity), fields: try c.decodeIfPresent([String].self, forKey: .fields) ?? [],
                           values: try c.decodeIfPresent([String: JSONValue].self, forKey: .values) ?? [:],
                           share: try c.decodeIfPresent(String.self, forKey: .share))
        case "update":
            kind = .update(object: try s(.object), fields: try c.decodeIfPresent([String].self, forKey: .fields) ?? [],
                           values: try c.decodeIfPresent([String: JSONValue].self, forKey: .values) ?? [:])
        case "delete": kind = .delete(object: try s(.object))
        case "link": kind = .link(object: try s(.object), relationship: try s(.relationship), to: try c.decodeIfPresent(String.self, forKey: .to))
        case "shareCreate": kind = .shareCreate(share: try s(.share))
        case "shareAccept": kind = .shareAccept(share: try s(.share))
        case "shareLeave": kind = .shareLeave(share: try s(.share))
        case "shareStop": kind = .shareStop(share: try s(.share))
        case "addParticipant": kind = .addParticipant(share: try s(.share), user: try s(.user), permission: try s(.permission))
        case "setPermission": kind = .setPermission(share: try s(.share), user: try s(.user), permission: try s(.permission))
        case "removeParticipant": kind = .removeParticipant(share: try s(.share), user: try s(.user))
        case "accountSwitch": kind = .accountSwitch(user: try s(.user))
        case "custom": kind = .custom(name: try s(.name), params: try c.decodeIfPresent(JSONValue.self, forKey: .params) ?? .object([:]))
        default:
            throw DecodingError.dataCorruptedError(forKey: .op, in: c, debugDescription: "unknown step op \"\(op)\"; expected insert, update, delete, link, "
                + "shareCreate, shareAccept, shareLeave, shareStop, addParticipant, setPermission, removeParticipant, accountSwitch or custom")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch kind {
        case let .insert(object, entity, fields, values, share):
            try c.encode("insert", forKey: .op)
            try c.encode(object, forKey: .object)
            try c.encode(entity, forKey: .entity)
            if !fields.isEmpty { try c.encode(fields, forKey: .fields) }
            if !values.isEmpty { try c.encode(values, forKey: .values) }
            try c.encodeIfPresent(share, forKey: .share)
        case let .update(object, fields, values):
            try c.encode("update", forKey: .op)
            try c.encode(object, forKey: .object)
            if !fields.isEmpty { try c.encode(fields, forKey: .fields) }
            if !values.isEmpty { try c.encode(values, forKey: .values) }
        case let .delete(object):
            try c.encode("delete", forKey: .op)
            try c.encode(object, forKey: .object)
        case let .link(object, relationship, to):
            try c.encode("link", forKey: .op)
            try c.encode(object, forKey: .object)
            try c.encode(relationship, forKey: .relationship)
            try c.encodeIfPresent(to, forKey: .to)
        case let .shareCreate(share): try c.encode("shareCreate", forKey: .op); try c.encode(share, forKey: .share)
        case let .shareAccept(share): try c.encode("shareAccept", forKey: .op); try c.encode(share, forKey: .share)
        case let .shareLeave(share): try c.encode("shareLeave", forKey: .op); try c.encode(share, forKey: .share)
        case let .shareStop(share): try c.encode("shareStop", forKey: .op); try c.encode(share, forKey: .share)
        case let .addParticipant(share, user, permission):
            try c.encode("addParticipant", forKey: .op); try c.encode(share, forKey: .share)
            try c.encode(user, forKey: .user); try c.encode(permission, forKey: .permission)
        case let .setPermission(share, user, permission):
            try c.encode("setPermission", forKey: .op); try c.encode(share, forKey: .share)
            try c.encode(user, forKey: .user); try c.encode(permission, forKey: .permission)
        case let .removeParticipant(share, user):
            try c.encode("removeParticipant", forKey: .op); try c.encode(share, forKey: .share); try c.encode(user, forKey: .user)
        case let .accountSwitch(user): try c.encode("accountSwitch", forKey: .op); try c.encode(user, forKey: .user)
        case let .custom(name, params):
            try c.encode("custom", forKey: .op); try c.encode(name, forKey: .name); try c.encode(params, forKey: .params)
        }
    }
}

extension Step: CustomStringConvertible {
    /// One line for reports: `update s1 [title]`.
    public var description: String {
        switch kind {
        case let .insert(object, entity, fields, values, share):
            "insert \(object) (\(entity))\(Self.fieldsText(fields, values))\(share.map { " in share \($0)" } ?? "")"
        case let .update(object, fields, values): "update \(object)\(Self.fieldsText(fields, values))"
        case let .delete(object): "delete \(object)"
        case let .link(object, relationship, to): "link \(object).\(relationship) → \(to ?? "nil")"
        case let .shareCreate(share): "share.create \(share)"
        case let .shareAccept(share): "share.accept \(share)"
        case let .shareLeave(share): "share.leave \(share)"
        case let .shareStop(share): "share.stop \(share)"
        case let .addParticipant(share, user, permission): "share \(share): add \(user) as \(permission)"
        case let .setPermission(share, user, permission): "share \(share): \(user) → \(permission)"
        case let .removeParticipant(share, user): "share \(share): remove \(user)"
        case let .accountSwitch(user): "account switch to \(user)"
        case let .custom(name, params): "custom \(name)\(params == .object([:]) ? "" : " \(JSONWriter.text(params))")"
        }
    }

    private static func fieldsText(_ fields: [String], _ values: [String: JSONValue]) -> String {
        let all = fields + values.keys.sorted()
        return all.isEmpty ? "" : " [\(all.joined(separator: ", "))]"
    }
}
