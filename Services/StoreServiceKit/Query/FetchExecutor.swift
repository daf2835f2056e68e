import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// Runs fetches inside SQLite. Every page is a LIMIT/OFFSET query that streams rows, so memory
/// stays bounded by the page size; across two stores an unsorted fetch takes the stores in load
/// order, and a sorted one merges two sorted streams.
struct FetchExecutor {
    let stores: StoreSet
    let request: FetchRequest
    static let maxSortDescriptors = 64

    struct Hit {
        var store: Int
        var row: PersistentStore.StoredRow
    }

    private var entity: EntityDescription {
        get throws {
            guard let entity = stores.model.entity(named: request.entity) else { throw StoreError.unknownEntity(request.entity, model: stores.model) }
            return entity
        }
    }

    private func candidateStores(_ entity: EntityDescription) throws -> [Int] {
        var indices = Array(stores.list.indices)
        if let names = request.stores { indices = try names.map { try stores.index(named: $0) } }
        return indices.filter { stores.list[$0].holds(entity.name) }
    }

    private func checkPaging() throws {
        if let limit = request.limit, limit < 0 { throw ServiceError(.invalidField, "limit must be 0 or more (0 means no limit).", details: ["field": "params.limit"]) }
        if let offset = request.offset, offset < 0 { throw ServiceError(.invalidField, "offset must be 0 or more.", details: ["field": "params.offset"]) }
        // Each descriptor is a result column and an ORDER BY term: thousands reached SQLite's
        // column limit as internalError.
        if let count = request.sortDescriptors?.count, count > Self.maxSortDescriptors {
            throw ServiceError(.invalidField, "sortDescriptors has \(count) entries; at most \(Self.maxSortDescriptors) are allowed.",
                               details: ["field": "params.sortDescriptors"])
        }
    }

    private struct Query {
        var sql: String
        var values: [SQLValue]
        var sortCount: Int
    }

    private func query(_ entity: EntityDescription, store: PersistentStore, predicate: Predicate?, select: String) throws -> Query {
        var builder = StoreQueryBuilder(store: store, model: stores.model, entity: entity, predicateText: request.predicate ?? "")
        let whereClause = try predicate.map { try builder.sql(for: $0) } ?? "1"
        var orderTerms: [String] = []
        var sortColumns: [String] = []
        for descriptor in request.sortDescriptors ?? [] {
            let keyPath = descriptor.key.split(separator: ".").map(String.init)
            let column = StoreQueryBuilder.column(try builder.resolve(keyPath))
            sortColumns.append(column)
            orderTerms.append("\(column) \(descriptor.ascending == false ? "DESC" : "ASC")")
        }
        orderTerms.append("t0.z_pk ASC")
        let extra = sortColumns.isEmpty ? "" : ", " + sortColumns.joined(separator: ", ")
        let sql = "SELECT \(select)\(extra) FROM \(PersistentStore.table(entity.name)) t0 \(builder.joins.joined(separator: " ")) WHERE \(whereClause) ORDER BY \(orderTerms.joined(separator: ", "))"
        return Query(sql: sql, values: builder.values, sortCount: sortColumns.count)
    }

    private var parsedPredicate: Predicate? {
        get throws {
            guard let text = request.predicate, !text.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
            return try Predicate.parse(text, arguments: request.arguments ?? [])
        }
    }

    func count() throws -> Int {
        try checkPaging()
        let entity = try entity
        let predicate = try parsedPredicate
        var total = 0
        for index in try candidateStores(entity) {
            let store = stores.list[index]
            var builder = StoreQueryBuilder(store: store, model: stores.model, entity: entity, predicateText: request.predicate ?? "")
            let whereClause = try predicate.map { try builder.sql(for: $0) } ?? "1"
            let sql = "SELECT COUNT(*) FROM \(PersistentStore.table(entity.name)) t0 \(builder.joins.joined(separator: " ")) WHERE \(whereClause)"
            total += try store.database.scalar(sql, builder.values)?.int ?? 0
        }
        return total
    }

    /// The matching rows of one page, in order.
    func run() throws -> [Hit] {
        let count = try entity.storedPropertyNames.count
        var hits: [Hit] = []
        hits.reserveCapacity(min(pageLimit, 4096))
        try forEachRow { store, row in hits.append(Hit(store: store, row: PersistentStore.row(from: row, propertyCount: count))) }
        return hits
    }

    /// The page's limit, `Int.max` for none.
    private var pageLimit: Int { (request.limit ?? 0) == 0 ? Int.max : request.limit! }

    /// Walks the matching rows of one page in order: `body` reads each row from its statement
    /// (`PersistentStore.selectList`'s columns) before the next is stepped, so a caller that
    /// writes rows out need not make Swift values of them first.
    func forEachRow(_ body: (_ store: Int, _ row: Statement) throws -> Void) throws {
        try checkPaging()
        let entity = try entity
        let predicate = try parsedPredicate
        let candidates = try candidateStores(entity)
        let limit = pageLimit
        var offset = request.offset ?? 0
        let count = entity.storedPropertyNames.count
        var found = 0
        let sorted = !(request.sortDescriptors ?? []).isEmpty
        if candidates.count <= 1 || !sorted {
            // Stores in load order, each by primary key. A store is counted only when the page
            // starts beyond its end (to carry the rest of the offset into the next store).
            for index in candidates {
                guard found < limit else { break }
                let store = stores.list[index]
                var q = try query(entity, store: store, predicate: predicate, select: store.selectList(entity))
                let pageSQL = q.sql + " LIMIT ? OFFSET ?"
                let pageValues = q.values + [.integer(limit == Int.max ? -1 : Int64(limit - found)), .integer(Int64(offset))]
                let before = found
                let statement = try store.database.prepare(pageSQL)
                try statement.forEach(pageValues) { (row: Statement) throws -> Void in
                    try body(index, row)
                    found += 1
                }
                if found > before || offset == 0 {
                    offset = 0
                    continue
                }
                var builder = StoreQueryBuilder(store: store, model: stores.model, entity: entity, predicateText: request.predicate ?? "")
                let whereClause = try predicate.map { try builder.sql(for: $0) } ?? "1"
                q.sql = "SELECT COUNT(*) FROM \(PersistentStore.table(entity.name)) t0 \(builder.joins.joined(separator: " ")) WHERE \(whereClause)"
                let inStore = try store.database.scalar(q.sql, builder.values)?.int ?? 0
                offset = max(0, offset - inStore)
            }
            return
        }
        // Sorted across stores: merge the stores' sorted streams, each limited to offset+limit
        // rows. Each stream's statement stays on its head row; only the sort keys are read out.
        var streams: [(index: Int, statement: Statement, sortCount: Int)] = []
        for index in candidates {
            let store = stores.list[index]
            var q = try query(entity, store: store, predicate: predicate, select: store.selectList(entity))
            q.sql += " LIMIT ?"
            q.values.append(.integer(limit == Int.max ? -1 : Int64(offset + limit)))
            let statement = try store.database.prepare(q.sql)
            try statement.bind(q.values)
            streams.append((index, statement, q.sortCount))
        }
        var heads: [[SQLValue]?] = []
        for stream in streams { heads.append(try Self.nextKeys(stream.statement, count: count, sortCount: stream.sortCount)) }
        let ascending = (request.sortDescriptors ?? []).map { $0.ascending != false }
        while found < limit {
            var best: Int?
            for (position, head) in heads.enumerated() {
                guard let head else { continue }
                guard let current = best, let other = heads[current] else { best = position; continue }
                if Self.precedes(head, other, ascending: ascending) { best = position }
            }
            guard let chosen = best else { break }
            if offset > 0 {
                offset -= 1
            } else {
                try body(streams[chosen].index, streams[chosen].statement)
                found += 1
            }
            // Once the other streams are done, this one's keys need not be read out.
            let alone = !heads.indices.contains { $0 != chosen && heads[$0] != nil }
            heads[chosen] = try Self.nextKeys(streams[chosen].statement, count: count, sortCount: alone ? 0 : streams[chosen].sortCount)
        }
    }

    /// Steps a stream to its next row; its sort keys, or nil at its end.
    private static func nextKeys(_ statement: Statement, count: Int, sortCount: Int) throws -> [SQLValue]? {
        guard try statement.step() else { return nil }
        return (0..<sortCount).map { statement.value(at: 4 + count + $0) }
    }

    /// SQLite's ordering: NULL < numbers < text (binary) < blob.
    static func precedes(_ a: [SQLValue], _ b: [SQLValue], ascending: [Bool]) -> Bool {
        for (index, (left, right)) in zip(a, b).enumerated() {
            let order = compare(left, right)
            if order == 0 { continue }
            return ascending[index] ? order < 0 : order > 0
        }
        return false
    }

    static func compare(_ a: SQLValue, _ b: SQLValue) -> Int {
        func rank(_ v: SQLValue) -> Int {
            switch v {
            case .null: return 0
            case .integer, .real: return 1
            case .text: return 2
            case .blob: return 3
            }
        }
        if rank(a) != rank(b) { return rank(a) < rank(b) ? -1 : 1 }
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.text(x), .text(y)):
            if x == y { return 0 }
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case let (.blob(x), .blob(y)):
            if x == y { return 0 }
            return x.lexicographicallyPrecedes(y) ? -1 : 1
        default:
            let x = a.double ?? 0, y = b.double ?? 0
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    /// Registers fetched rows in `context` (objects it already holds keep their state).
    static func register(_ hits: [Hit], entity: EntityDescription, in context: ManagedObjectContext, stores: StoreSet) {
        for hit in hits {
            let store = stores.list[hit.store]
            let id = store.objectID(entity.name, hit.row.primaryKey)
            guard context.lookup(id.uri) == nil else { continue }
            context.register(ContextObject(id: id, entity: entity, store: hit.store, isInserted: false, version: hit.row.version,
                                           snapshotValues: ManagedObjectContext.contextValues(hit.row, entity: entity, store: store),
                                           uuid: hit.row.uuid, zone: hit.row.zone, sequence: context.takeSequence()))
        }
    }

    /// The wire form of a fetched row.
    static func record(_ hit: Hit, entity: EntityDescription, stores: StoreSet) throws -> ManagedObject {
        let store = stores.list[hit.store]
        var values: [String: JSONValue] = [:]
        values.reserveCapacity(entity.storedPropertyNames.count)
        for (index, attribute) in entity.attributes.enumerated() {
            values[attribute.name] = AttributeCoding.jsonValue(hit.row.values[index], type: attribute.type)
        }
        for (offset, relationship) in entity.toOneRelationships.enumerated() {
            let value = hit.row.values[entity.attributes.count + offset]
            values[relationship.name] = value.int64.map { .string(store.objectID(relationship.destination, $0).uri) } ?? .null
        }
        for relationship in entity.relationships where relationship.toMany {
            guard let end = stores.model.manyToMany(entity.name, relationship.name), store.holds(end.link) else { continue }
            let others = Set(try store.links(end, primaryKey: hit.row.primaryKey).map(\.other))
            values[relationship.name] = .array(others.map { store.objectID(relationship.destination, $0).uri }.sorted().map { .string($0) })
        }
        return ManagedObject(objectID: store.objectID(entity.name, hit.row.primaryKey).uri, entity: entity.name, store: store.name,
                             version: Int(hit.row.version), uuid: hit.row.uuid, zoneKey: hit.row.zone, values: values,
                             isInserted: nil, isDeleted: nil, hasChanges: nil)
    }
}
