import MeowWire

/// What one write transaction does to one store, recorded as the writer makes each change: the
/// persistent-history transaction (begun at the first change), its changes, and the changed
/// objects' IDs. A context's save (`SaveWriter`) and every other write (`StoreEngine.write`:
/// the mirror's imports, the orphan repair) record through one of these, so history rows and
/// remote-change notices are made in one place, the same way for all of them.
package struct StoreChangeRecorder {
    let store: PersistentStore
    let author: String
    let contextName: String?
    /// The history transaction's token, once a change began it.
    package private(set) var token: Int64?
    private var history = HistoryChanges()
    private(set) var changedObjectIDs: [String] = []
    private var changedNames = ChangedPropertyNames()

    init(store: PersistentStore, author: String, contextName: String?) {
        self.store = store
        self.author = author
        self.contextName = contextName
    }

    /// Begins the history transaction inside the writer's SQLite transaction, once.
    @discardableResult
    package mutating func begin() throws -> Int64 {
        if let token { return token }
        let new = try store.beginHistoryTransaction(author: author, contextName: contextName)
        token = new
        return new
    }

    /// A new row; `setProperties[i]` says whether the entity's i-th stored property has a value.
    /// `uri`: its object ID's URI when the caller has made it already.
    package mutating func inserted(_ entity: EntityDescription, primaryKey: Int64, uuid: String, uri: String? = nil, setProperties: [Bool]) throws {
        try begin()
        history.append(kind: .insert, entity: entity.name, primaryKey: primaryKey, uuid: uuid,
                       changedJSON: changedNames.json(entity, setProperties))
        changedObjectIDs.append(uri ?? store.objectID(entity.name, primaryKey).uri)
    }

    /// A changed row. `changedJSON`: the changed names already as a JSON array, when a batch
    /// repeats one list (`JSONWriter.text(strings:)`). `announced: false` keeps it out of the
    /// notice's IDs (a bulk repair names the first few it reports; history has them all).
    mutating func updated(entity: String, primaryKey: Int64, uuid: String, changed: [String]? = nil, changedJSON: String? = nil,
                          announced: Bool = true) throws {
        try begin()
        if let changedJSON {
            history.append(kind: .update, entity: entity, primaryKey: primaryKey, uuid: uuid, changedJSON: changedJSON)
        } else {
            history.append(.init(kind: .update, entity: entity, primaryKey: primaryKey, uuid: uuid, changed: changed, tombstone: nil))
        }
        if announced { changedObjectIDs.append(store.objectID(entity, primaryKey).uri) }
    }

    /// A run of updates already as history text, none named in the notice (a bulk repair names
    /// the first few it reports through `announce`).
    mutating func updated(_ run: HistoryChanges.UpdateRun) throws {
        guard run.count > 0 else { return }
        try begin()
        history.append(run)
    }

    /// A deleted row, with the tombstone history keeps of it.
    mutating func deleted(entity: String, primaryKey: Int64, uuid: String, tombstone: [String: JSONValue]) throws {
        try begin()
        history.append(.init(kind: .delete, entity: entity, primaryKey: primaryKey, uuid: uuid, changed: nil, tombstone: tombstone))
        changedObjectIDs.append(store.objectID(entity, primaryKey).uri)
    }

    /// Names objects in the notice that were recorded with `announced: false`.
    mutating func announce(_ objectIDs: [String]) {
        changedObjectIDs += objectIDs
    }

    /// Writes the history row; call before the COMMIT. Returns the notice to publish once the
    /// transaction has committed, or nil when nothing changed.
    func finish() throws -> RemoteChangeNotice? {
        guard let token else { return nil }
        try store.writeHistory(token: token, history)
        return RemoteChangeNotice(store: store.name, storeUUID: store.uuid, token: Int(token), author: author,
                                  contextName: contextName, changedObjectIDs: changedObjectIDs)
    }
}
