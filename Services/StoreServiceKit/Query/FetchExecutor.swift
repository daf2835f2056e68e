import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// A fetch's rows in the `rows` format: `[objectID, store, version, uuid, zone, <attributes…>,
/// <to-one relationships…>]` per object, values written straight from SQLite's.
struct FetchRows: Encodable, Sendable {
    let hits: [FetchExecutor.Hit]
    let entity: EntityDescription
    let storeNames: [String]
    let storeUUIDs: [String]
    /// The to-one relationships' destination entities, in column order.
    let destinations: [String]
    /// The attributes' types, in column order (read per cell; an attribute is a large value to copy).
    let types: [AttributeType]

    init(hits: [FetchExecutor.Hit], entity: EntityDescription, stores: StoreSet) {
        self.hits = hits
        self.entity = entity
        destinations = entity.toOneRelationships.map(\.destination)
        types = entity.attributes.map(\.type)
        storeNames = stores.list.map(\.name)
        storeUUIDs = stores.list.map(\.uuid)
    }

    static func columns(_ entity: EntityDescription) -> [String] {
        ["objectID", "store", "version", "uuid", "zone"] + entity.storedPropertyNames
    }

    /// One cell of a row as JSON holds it.
    enum Cell {
        case null, bool(Bool), integer(Int64), double(Double), text(String)
        /// An object ID in `store` (a store's UUID): its URI.
        case objectID(store: String, entity: String, primaryKey: Int64)
    }

    /// The cells of one row, in column order. The encoder and the text writer both read rows
    /// through this, so the two forms cannot disagree.
    func cells(of hit: FetchExecutor.Hit, _ body: (Cell) throws -> Void) rethrows {
        let attributeCount = types.count
        let uuid = storeUUIDs[hit.store]
        try body(.objectID(store: uuid, entity: entity.name, primaryKey: hit.row.primaryKey))
        try body(.text(storeNames[hit.store]))
        try body(.integer(hit.row.version))
        try body(.text(hit.row.uuid))
        if let zone = ManagedObject.zoneParts(hit.row.zone).name { try body(.text(zone)) } else { try body(.null) }
        for (index, value) in hit.row.values.enumerated() {
            if index >= attributeCount {
                if let key = value.int64 {
                    try body(.objectID(store: uuid, entity: destinations[index - attributeCount], primaryKey: key))
                } else {
                    try body(.null)
                }
                continue
            }
            let type = types[index]
            if type.isData || type.integerRange != nil, let special = AttributeTypeCoding.jsonValue(value, type: type), !special.isNull {
                // Bytes as base64, and integers past 2^53 as text.
                if let text = special.stringValue { try body(.text(text)) } else { try body(.integer(value.int64 ?? 0)) }
                continue
            }
            switch (type, value) {
            case (_, .null): try body(.null)
            case let (.boolean, .integer(flag)): try body(.bool(flag != 0))
            case let (.double, .integer(number)), let (.float, .integer(number)): try body(.double(Double(number)))
            case let (_, .integer(number)): try body(.integer(number))
            case let (_, .real(number)): try body(.double(number))
            case let (_, .text(text)): try body(.text(text))
            case let (_, .blob(bytes)): try body(.text(String(decoding: bytes, as: UTF8.self)))
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var outer = encoder.unkeyedContainer()
        for hit in hits {
            var row = outer.nestedUnkeyedContainer()
            try cells(of: hit) { cell in
                switch cell {
                case .null: try row.encodeNil()
                case let .bool(flag): try row.encode(flag)
                case let .integer(number): try row.encode(number)
                case let .double(number): try row.encode(number)
                case let .text(text): try row.encode(text)
                case let .objectID(store, entity, key): try row.encode(ObjectID.permanentURI(store: store, entity: entity, primaryKey: key))
                }
            }
        }
    }

    /// The rows as JSON text, as `encode(to:)` would write them; false (with `out` as it was)
    /// when a value JSON cannot hold (a non-finite double) leaves the encoder to report it.
    /// The text is made as UTF-8 bytes and appended once: appending each cell to a String was
    /// most of the time of writing 10,000 rows.
    func writeJSON(to out: inout String) -> Bool {
        var text = JSONBytes()
        text.bytes.reserveCapacity(hits.count * 256)
        text.append("[")
        for (position, hit) in hits.enumerated() {
            text.append(position == 0 ? "[" : ",[")
            var first = true
            var finite = true
            cells(of: hit) { cell in
                if !first { text.append(",") }
                first = false
                switch cell {
                case .null: text.append("null")
                case let .bool(flag): text.append(flag ? "true" : "false")
                case let .integer(number): text.append(integer: number)
                case let .double(number):
                    if number.isFinite { text.append(number: number) } else { finite = false }
                case let .text(string): text.append(string: string)
                case let .objectID(store, entity, key):
                    text.append("\"x-coredata://")
                    text.append(raw: store)
                    text.append("/")
                    text.append(raw: entity)
                    text.append("/p")
                    text.append(integer: key)
                    text.append("\"")
                }
            }
            guard finite else { return false }
            text.append("]")
        }
        text.append("]")
        out += String(decoding: text.bytes, as: UTF8.self)
        return true
    }
}

/// JSON text built as UTF-8 bytes, in `JSONWriter`'s forms (its escaping, its numbers).
struct JSONBytes {
    var bytes: [UInt8] = []

    mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Text known to need no escaping (store UUIDs, entity names).
    mutating func append(raw text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Decimal digits written in place (a String per number was a tenth of writing a row).
    mutating func append(integer: Int64) {
        if integer < 0 { bytes.append(0x2D) }
        var magnitude = integer.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = 0x30 + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// `JSONWriter.appendNumber`'s form: a whole number below 1e15 is written as its integer
    /// (what dropping Swift's ".0" gives; -0 keeps the slow path's "-0").
    mutating func append(number: Double) {
        if number.rounded() == number, abs(number) < 1e15, !(number == 0 && number.sign == .minus) {
            append(integer: Int64(number))
            return
        }
        var text = ""
        JSONWriter.appendNumber(number, to: &text)
        append(raw: text)
    }

    /// A string literal: copied as is unless it holds a byte JSON escapes, then `JSONWriter`'s escaping.
    mutating func append(string: String) {
        var string = string
        let plain = string.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) else { return false }
            bytes.append(0x22)
            bytes.append(contentsOf: utf8)
            bytes.append(0x22)
            return true
        }
        if plain { return }
        var escaped = ""
        JSONWriter.appendString(string, to: &escaped)
        append(raw: escaped)
    }
}

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
        try checkPaging()
        let entity = try entity
        let predicate = try parsedPredicate
        let candidates = try candidateStores(entity)
        let limit = (request.limit ?? 0) == 0 ? Int.max : request.limit!
        var offset = request.offset ?? 0
        let count = entity.storedPropertyNames.count
        var hits: [Hit] = []
        hits.reserveCapacity(min(limit, 4096))
        let sorted = !(request.sortDescriptors ?? []).isEmpty
        if candidates.count <= 1 || !sorted {
            // Stores in load order, each by primary key. A store is counted only when the page
            // starts beyond its end (to carry the rest of the offset into the next store).
            for index in candidates {
                guard hits.count < limit else { break }
                let store = stores.list[index]
                var q = try query(entity, store: store, predicate: predicate, select: store.selectList(entity))
                let pageSQL = q.sql + " LIMIT ? OFFSET ?"
                let pageValues = q.values + [.integer(limit == Int.max ? -1 : Int64(limit - hits.count)), .integer(Int64(offset))]
                let before = hits.count
                let statement = try store.database.prepare(pageSQL)
                try statement.forEach(pageValues) { hits.append(Hit(store: index, row: PersistentStore.row(from: $0, propertyCount: count))) }
                if hits.count > before || offset == 0 {
                    offset = 0
                    continue
                }
                var builder = StoreQueryBuilder(store: store, model: stores.model, entity: entity, predicateText: request.predicate ?? "")
                let whereClause = try predicate.map { try builder.sql(for: $0) } ?? "1"
                q.sql = "SELECT COUNT(*) FROM \(PersistentStore.table(entity.name)) t0 \(builder.joins.joined(separator: " ")) WHERE \(whereClause)"
                let inStore = try store.database.scalar(q.sql, builder.values)?.int ?? 0
                offset = max(0, offset - inStore)
            }
            return hits
        }
        // Sorted across stores: merge the stores' sorted streams, each limited to offset+limit rows.
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
        var heads: [(row: PersistentStore.StoredRow, keys: [SQLValue])?] = []
        for stream in streams { heads.append(try Self.next(stream.statement, count: count, sortCount: stream.sortCount)) }
        let ascending = (request.sortDescriptors ?? []).map { $0.ascending != false }
        while hits.count < limit {
            var best: Int?
            for (position, head) in heads.enumerated() {
                guard let head else { continue }
                guard let current = best, let other = heads[current] else { best = position; continue }
                if Self.precedes(head.keys, other.keys, ascending: ascending) { best = position }
            }
            guard let chosen = best, let head = heads[chosen] else { break }
            if offset > 0 { offset -= 1 } else { hits.append(Hit(store: streams[chosen].index, row: head.row)) }
            heads[chosen] = try Self.next(streams[chosen].statement, count: count, sortCount: streams[chosen].sortCount)
        }
        return hits
    }

    private static func next(_ statement: Statement, count: Int, sortCount: Int) throws -> (row: PersistentStore.StoredRow, keys: [SQLValue])? {
        guard try statement.step() else { return nil }
        let row = PersistentStore.row(from: statement, propertyCount: count)
        let keys = (0..<sortCount).map { statement.value(at: 4 + count + $0) }
        return (row, keys)
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
