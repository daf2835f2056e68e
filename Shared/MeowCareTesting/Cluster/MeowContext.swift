/// A managed object context on a device (`context.*`, `object.*`): inserts, edits and deletes
/// wait in it until `save()`. It belongs to the connection that opened it.
///
/// ```swift
/// let context = try await device.openContext(mergePolicy: "mergeByPropertyObjectTrump")
/// let event = try await context.insert("CareEvent", ["id": "e1", "eventTypeRaw": "note", "occurredAt": "2026-07-27T08:00:00Z"])
/// let saved = try await context.save()
/// try await context.close()
/// ```
public struct MeowContext: Sendable {
    /// The context's name on the wire (`c1`).
    public let id: String
    let connection: TracedConnection

    private func call(_ op: String, _ params: [String: JSONValue] = [:]) async throws(MeowCareError) -> JSONValue {
        var params = params
        params["context"] = .string(id)
        return try await connection.call(op, params)
    }

    private func call<R: Decodable>(_ op: String, _ params: [String: JSONValue] = [:], as type: R.Type) async throws(MeowCareError) -> R {
        var params = params
        params["context"] = .string(id)
        return try await connection.call(op, params, as: type)
    }

    /// `object.insert`: the new object's temporary ID. `store` assigns it at once; `uuid`, `zone`
    /// and `zoneOwner` are for imports.
    public func insert(_ entity: String, _ values: [String: JSONValue] = [:], store: String? = nil, uuid: String? = nil,
                       zone: String? = nil, zoneOwner: String? = nil) async throws(MeowCareError) -> String {
        var params: [String: JSONValue] = ["entity": .string(entity), "values": .object(values)]
        if let store { params["store"] = .string(store) }
        if let uuid { params["uuid"] = .string(uuid) }
        if let zone { params["zone"] = .string(zone) }
        if let zoneOwner { params["zoneOwner"] = .string(zoneOwner) }
        let reply = try await call("object.insert", params, as: InsertResult.self)
        guard let objectID = reply.objectID else {
            throw MeowCareError(.internalError, "object.insert answered no objectID: \(reply)", op: "object.insert", service: connection.service)
        }
        return objectID
    }

    /// `object.assign`: Core Data's `assign(_:to:)` (a saved object answers `invalidReassignment`).
    public func assign(_ objectID: String, to store: String) async throws(MeowCareError) {
        _ = try await call("object.assign", ["objectID": .string(objectID), "store": .string(store)])
    }

    /// `object.set`: the object as the context now sees it.
    @discardableResult
    public func set(_ objectID: String, _ values: [String: JSONValue]) async throws(MeowCareError) -> ManagedObject {
        try await call("object.set", ["objectID": .string(objectID), "values": .object(values)], as: ManagedObject.self)
    }

    /// `object.delete`: marks it deleted; the delete and its rules apply at save.
    public func delete(_ objectID: String) async throws(MeowCareError) {
        _ = try await call("object.delete", ["objectID": .string(objectID)])
    }

    /// `object.get` through the context (registering the object).
    public func object(_ objectID: String) async throws(MeowCareError) -> ManagedObject {
        try await call("object.get", ["objectID": .string(objectID)], as: ManagedObject.self)
    }

    /// `object.obtainPermanentIDs`: routes the objects now; their stores are fixed from then on.
    public func obtainPermanentIDs(_ objectIDs: [String]) async throws(MeowCareError) -> [SaveResult.Inserted] {
        try await call("object.obtainPermanentIDs", ["objectIDs": .array(objectIDs.map { .string($0) })], as: ObtainResult.self).objects
    }

    /// `object.moveToStore`: deletes the saved object and inserts a copy (same uuid) into
    /// `store` at the next save; returns the copy's temporary ID.
    public func moveToStore(_ objectID: String, _ store: String, values: [String: JSONValue] = [:]) async throws(MeowCareError) -> String {
        try await call("object.moveToStore", ["objectID": .string(objectID), "store": .string(store), "values": .object(values)], as: MoveResult.self).objectID
    }

    /// `fetch` registering the results in this context (objects it holds are returned as it sees them).
    public func fetch(_ entity: String, where predicate: String? = nil, _ arguments: [JSONValue] = [], sortedBy sort: [FetchSort] = [],
                      limit: Int? = nil, stores: [String]? = nil) async throws(MeowCareError) -> [ManagedObject] {
        let params = MeowDevice.fetchParams(entity, predicate, arguments, sort, limit, nil, stores, context: id)
        return try await connection.call("fetch", params, as: FetchedObjects.self).objects
    }

    /// `context.save`: writes every change of the context, all or nothing.
    @discardableResult
    public func save() async throws(MeowCareError) -> SaveResult {
        try await call("context.save", as: SaveResult.self)
    }

    /// `context.refresh`: re-reads objects from their stores, unsaved edits kept on top.
    public func refresh(_ objectIDs: [String]? = nil) async throws(MeowCareError) {
        _ = try await call("context.refresh", objectIDs.map { ["objectIDs": .array($0.map { .string($0) })] } ?? [:])
    }

    /// `context.rollback`: drops unsaved changes.
    public func rollback() async throws(MeowCareError) { _ = try await call("context.rollback") }

    /// `context.reset`: forgets every registered object.
    public func reset() async throws(MeowCareError) { _ = try await call("context.reset") }

    /// `repair.orphans` in this context (the app's way; the client saves).
    @discardableResult
    public func repairOrphans() async throws(MeowCareError) -> OrphanRepairReport { try await call("repair.orphans", as: OrphanRepairReport.self) }

    /// `context.close`.
    public func close() async throws(MeowCareError) { _ = try await call("context.close") }
}
