import FoundationEssentials
import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

extension SaveReport {
    /// The result as this report lists it.
    func shape(_ result: SaveResult, inserted: [SaveResult.Inserted], groups: [SaveResult.InsertedGroup]) -> SaveResult {
        var result = result
        switch self {
        case .objects: result.inserted = inserted
        case .grouped: result.insertedGroups = groups
        case .summary:
            result.updated = nil
            result.deleted = nil
        }
        return result
    }
}

/// The `remoteChange` event: a store changed (by another connection, or later the cloud mirror).
public struct RemoteChangeNotice: Codable, Sendable {
    public var store: String
    public var storeUUID: String
    public var token: Int
    public var author: String
    public var contextName: String?
    public var changedObjectIDs: [String]
}

extension RemoteChangeNotice: JSONTextWritable {
    /// Written by hand, keys sorted as the event hub's encoder writes them: an import's notice
    /// names a page's thousand objects, and `JSONEncoder` was a thirtieth of applying a page.
    public func writeJSON(to out: inout String) -> Bool {
        // Into bytes, appended to `out` once: three string appends an ID were most of the event.
        var text = JSONBytes(capacity: changedObjectIDs.count * 72 + 256)
        text.append(#"{"author":"#)
        text.append(string: author)
        text.append(#","changedObjectIDs":["#)
        for (index, id) in changedObjectIDs.enumerated() {
            if index > 0 { text.append(",") }
            text.append(string: id)
        }
        text.append("]")
        if let contextName {
            text.append(#","contextName":"#)
            text.append(string: contextName)
        }
        text.append(#","store":"#)
        text.append(string: store)
        text.append(#","storeUUID":"#)
        text.append(string: storeUUID)
        text.append(#","token":"#)
        text.append(integer: Int64(token))
        text.append("}")
        text.append(to: &out)
        return true
    }
}

/// One save of one context: validate, route, check stores and permissions, then write every
/// store's part in its own SQLite transaction, all committed only when every part succeeded.
package struct SaveOperation {
    let context: ManagedObjectContext
    let stores: StoreSet
    let router: StoreRouter
    let logger: Logger
    var report: SaveReport = .objects

    package init(context: ManagedObjectContext, stores: StoreSet, router: StoreRouter, logger: Logger, report: SaveReport = .objects) {
        (self.context, self.stores, self.router, self.logger, self.report) = (context, stores, router, logger, report)
    }

    var model: ManagedObjectModel { stores.model }
    /// The author the cloud mirror writes with.
    package static let syncAuthor = "sync"

    package func run() throws -> (SaveResult, [RemoteChangeNotice]) {
        let committed = try write()
        return committed.update(context)
    }

    /// An object as the save leaves it: its values and version, the store a new one was routed
    /// to, and a new one's permanent ID.
    typealias FinalState = (object: ContextObject, values: [SQLValue], version: Int64, store: Int?, id: SaveWriter.NewID?)

    /// What a save committed, for bringing its context up to date (`update`). The update reads
    /// and writes only the context, so a client's save makes it after the store lock is
    /// released: renaming and clearing a thousand objects was a sixth of a bulk save's turn of
    /// the lock, which the device's mirror waited out.
    struct Committed {
        fileprivate var result: SaveResult
        fileprivate(set) var notices: [RemoteChangeNotice]
        fileprivate var finalStates: [FinalState] = []
        fileprivate var forgotten: [String] = []
        /// The context's table of objects under their URIs after the save, when built before the commit.
        fileprivate var table: [String: ContextObject]?

        /// Applies the save to its context (new objects get their permanent IDs and stores,
        /// saved values become snapshots, deleted ones are forgotten). Consuming: each object's
        /// final state is moved out of the list, where iterating it copied every state.
        consuming func update(_ context: ManagedObjectContext) -> (SaveResult, [RemoteChangeNotice]) {
            var renames: [(object: ContextObject, id: ObjectID, uri: String)] = []
            renames.reserveCapacity(finalStates.count)
            while let (object, values, version, store, id) = finalStates.popLast() {
                if object.isInserted { object.store = store }
                if let id { renames.append((object, id.id, id.uri)) }
                object.isInserted = false
                object.routing = nil
                object.snapshotValues = values
                object.clearChanges()
                object.version = version
            }
            if let table { context.rename(renames, table: table) } else { context.rename(renames) }
            for uri in forgotten { context.forget(uri) }
            return (result, notices)
        }
    }

    /// Validates, routes and writes the save, committing every store's part; the context is
    /// not changed (`Committed.update` does that).
    func write() throws -> Committed {
        let pending = context.pending
        let inserted = pending.filter { $0.isInserted && !$0.isDeleted }
        let deleted = pending.filter { !$0.isInserted && $0.isDeleted }
        let updated = pending.filter { !$0.isInserted && !$0.isDeleted && $0.hasPropertyChanges }
        let discarded = pending.filter { $0.isInserted && $0.isDeleted }
        guard !(inserted.isEmpty && deleted.isEmpty && updated.isEmpty) else {
            return Committed(result: report.shape(SaveResult(), inserted: [], groups: []), notices: [], forgotten: discarded.map(\.uri))
        }
        try validate(inserted: inserted, updated: updated)
        let outside = outsideStores(of: inserted + updated)
        let routes = try route(inserted: inserted, updated: updated, outside: outside)
        func storeIndex(of object: ContextObject) -> Int { SaveWriter.storeIndex(of: object, routes: routes) }
        try refuseCrossStoreRelationships(of: inserted + updated, storeIndex: storeIndex, outside: outside)
        let zones = try checkPermissions(inserted: inserted, updated: updated, deleted: deleted, storeIndex: storeIndex)

        let order = routes.stores.union((updated + deleted).map(storeIndex)).sorted()
        var writer = SaveWriter(operation: self, routes: routes, zones: zones)
        var notices: [RemoteChangeNotice] = []
        var table: [String: ContextObject]?
        do {
            for index in order { try stores.list[index].database.beginImmediate() }
            try writer.allocatePermanentIDs(inserted)
            writer.beginInserts(count: inserted.count)
            for (position, object) in inserted.enumerated() { try writer.insert(object, position: position) }
            // The saving thread is ahead of the row stepper here: the context's table under the
            // new URIs is built now, off the save's critical path, and adopted after the commit
            // (when the new objects are most of the context, as `rename` builds it anew then).
            if writer.isPipelined, inserted.count * 2 >= context.objects.count {
                table = context.table(renaming: writer.finalStates.lazy.compactMap { state in state.id.map { (state.object, $0.uri) } })
            }
            try writer.waitForRows()
            writer.endInserts()
            for object in updated { try writer.update(object) }
            if model.hasOneToOnePairs {
                let edits = (inserted + updated).compactMap { object -> PairEdit? in
                    guard let key = writer.newID(of: object)?.primaryKey ?? object.id.primaryKey else { return nil }
                    return PairEdit(object: object, store: writer.storeIndex(of: object), key: key)
                }
                try pairOneToOne(edits, writer: &writer)
            }
            for object in deleted { try writer.delete(object) }
            try writer.checkConflicts()
            try checkRelationshipCounts(changedIDs: writer.changedObjectIDs, context: pending)
            notices = try writer.finish(order: order)
            for index in order { try stores.list[index].database.execute("COMMIT") }
            CrashPoint.reached("store.afterSaveCommit")
        } catch {
            writer.endInserts()
            for index in order where stores.list[index].database.isInTransaction {
                try? stores.list[index].database.execute("ROLLBACK")
            }
            throw error
        }
        let result = report.shape(writer.result, inserted: writer.insertedList, groups: writer.insertedGroups)

        // Committed: what the context update needs, worked out while the save's state is at hand.
        let committed = Committed(result: result, notices: notices, finalStates: writer.finalStates, forgotten: writer.forgotten + discarded.map(\.uri),
                                  table: table)
        if let stray = result.unexportable {
            logger.notice("new shared-store objects have no share zone and cannot be exported",
                          ["count": .int(stray.count), "first": .string(stray[0]),
                           "hint": "assign new objects to the private store, or relate them to an object in a share"])
        }
        return committed
    }
}

struct ChangedPropertyNames {
    private var cache: [String: [[Bool]: String]] = [:]
    /// The last list asked for: a batch asks for the same one object after object.
    private var last: (entity: EntityDescription, set: [Bool], text: String)?

    mutating func json(_ entity: EntityDescription, _ set: [Bool]) -> String {
        // Compared in place: binding `last` copied the tuple (two retains and releases) per object.
        if last?.entity === entity, last?.set == set, let text = last?.text { return text }
        let text = named(entity, set)
        last = (entity, set, text)
        return text
    }

    private mutating func named(_ entity: EntityDescription, _ set: [Bool]) -> String {
        if let text = cache[entity.name]?[set] { return text }
        let names = entity.storedPropertyNames.indices.filter { set[$0] }.map { entity.storedPropertyNames[$0] }
        let text = JSONWriter.text(strings: names)
        cache[entity.name, default: [:]][set] = text
        return text
    }
}
