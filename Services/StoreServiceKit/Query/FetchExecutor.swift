import MeowWire
import ServiceRuntime
import SQLiteKit
import StoreWire

/// A fetch's rows in the `rows` format: `[objectID, store, version, uuid, zone, <attributes…>,
/// <to-one relationships…>]` per object, values written straight from SQLite's: either the
/// fetched hits, or the rows' JSON text already written from the statements while the fetch
/// stepped them (`FetchRowWriter`).
struct FetchRows: Encodable, Sendable {
    enum Content {
        case hits([FetchExecutor.Hit], FetchRowWriter)
        /// The rows' array as JSON text.
        case text(String)
    }
    let content: Content

    init(hits: [FetchExecutor.Hit], entity: EntityDescription, stores: StoreSet) {
        content = .hits(hits, FetchRowWriter(entity: entity, stores: stores))
    }

    /// Rows already written: the bytes become the reply's text once here, so the reply
    /// appends them without another copy on the way.
    init(text: [UInt8]) { content = .text(String(decoding: text, as: UTF8.self)) }

    static func columns(_ entity: EntityDescription) -> [String] {
        ["objectID", "store", "version", "uuid", "zone"] + entity.storedPropertyNames
    }

    func encode(to encoder: any Encoder) throws {
        switch content {
        case let .text(text):
            try JSONParser.parse(text).encode(to: encoder)
        case let .hits(hits, writer):
            var outer = encoder.unkeyedContainer()
            for hit in hits {
                var row = outer.nestedUnkeyedContainer()
                try writer.cells(of: hit) { cell in
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
    }

    /// The rows as JSON text, as `encode(to:)` would write them; false (with `out` as it was)
    /// when a value JSON cannot hold (a non-finite double) leaves the encoder to report it.
    func writeJSON(to out: inout String) -> Bool {
        switch content {
        case let .text(text):
            out += text
            return true
        case let .hits(hits, writer):
            var rows = FetchRowWriter.Output(capacity: hits.count)
            for hit in hits {
                guard rows.row({ text in writer.write(hit, to: &text) }) else { return false }
            }
            out += String(decoding: rows.finish(), as: UTF8.self)
            return true
        }
    }
}

/// Writes fetched rows as JSON text (UTF-8 bytes, appended once: appending each cell to a
/// String was most of the time of writing 10,000 rows), from materialised hits or straight
/// from a statement on its row. Both ways read a cell through the same conversions, so the
/// two forms cannot disagree.
struct FetchRowWriter: Sendable {
    let entity: EntityDescription
    let storeNames: [String]
    let storeUUIDs: [String]
    /// The to-one relationships' destination entities, in column order.
    let destinations: [String]
    /// The attributes' types, in column order (read per cell; an attribute is a large value to copy).
    let types: [AttributeType]
    /// Per attribute: whether its stored text is its wire text as is (no base64, no big-integer text).
    let plainText: [Bool]
    /// Per store: the JSON text of its name, and the opening of its object IDs of this entity
    /// (`"x-coredata://<store>/<Entity>/p`) and of each to-one destination, written once here
    /// rather than piece by piece in every row.
    let storeNameJSON: [[UInt8]]
    let objectIDOpening: [[UInt8]]
    let destinationOpenings: [[[UInt8]]]

    init(entity: EntityDescription, stores: StoreSet) {
        self.entity = entity
        destinations = entity.toOneRelationships.map(\.destination)
        types = entity.attributes.map(\.type)
        plainText = types.map { !($0.isData || $0.integerRange != nil) }
        storeNames = stores.list.map(\.name)
        storeUUIDs = stores.list.map(\.uuid)
        func opening(_ store: String, _ entity: String) -> [UInt8] { Array("\"x-coredata://\(store)/\(entity)/p".utf8) }
        storeNameJSON = storeNames.map { name in
            var text = JSONBytes()
            text.append(string: name)
            return text.bytes
        }
        objectIDOpening = storeUUIDs.map { opening($0, entity.name) }
        destinationOpenings = storeUUIDs.map { store in entity.toOneRelationships.map { opening(store, $0.destination) } }
    }

    /// One cell of a row as JSON holds it.
    enum Cell {
        case null, bool(Bool), integer(Int64), double(Double), text(String)
        /// An object ID in `store` (a store's UUID): its URI.
        case objectID(store: String, entity: String, primaryKey: Int64)
    }

    /// The array of rows being written.
    struct Output {
        var text = JSONBytes()
        private var count = 0
        private let expected: Int

        /// `capacity`: the rows expected; room is made for them once the first row shows their size.
        init(capacity: Int) {
            expected = max(capacity, 16)
            text.bytes.reserveCapacity(expected * 256)
            text.append("[")
        }

        /// Writes one row with `cells`; false (a value JSON cannot hold) stops the writing.
        mutating func row(_ cells: (inout JSONBytes) -> Bool) -> Bool {
            text.append(count == 0 ? "[" : ",[")
            count += 1
            guard cells(&text) else { return false }
            text.append("]")
            // Room for the rest at the first row's size and a quarter: growing a page's
            // megabytes by doubling held both copies at once.
            if count == 1, text.bytes.count * expected * 5 / 4 > text.bytes.capacity {
                text.bytes.reserveCapacity(text.bytes.count * expected * 5 / 4)
            }
            return true
        }

        mutating func finish() -> [UInt8] {
            text.append("]")
            return text.bytes
        }
    }

    /// The cells of one hit, in column order.
    func cells(of hit: FetchExecutor.Hit, _ body: (Cell) throws -> Void) rethrows {
        let attributeCount = types.count
        let uuid = storeUUIDs[hit.store]
        try body(.objectID(store: uuid, entity: entity.name, primaryKey: hit.row.primaryKey))
        try body(.text(storeNames[hit.store]))
        try body(.integer(hit.row.version))
        try body(.text(hit.row.uuid))
        try body(Self.zoneCell(hit.row.zone))
        for (index, value) in hit.row.values.enumerated() {
            if index >= attributeCount {
                try body(relationshipCell(value, index - attributeCount, store: uuid))
            } else {
                try body(Self.attributeCell(value, type: types[index]))
            }
        }
    }

    private static func zoneCell(_ zone: String?) -> Cell {
        ManagedObject.zoneParts(zone).name.map { .text($0) } ?? .null
    }

    private func relationshipCell(_ value: SQLValue, _ number: Int, store: String) -> Cell {
        value.int64.map { .objectID(store: store, entity: destinations[number], primaryKey: $0) } ?? .null
    }

    static func attributeCell(_ value: SQLValue, type: AttributeType) -> Cell {
        if type.isData || type.integerRange != nil, let special = AttributeTypeCoding.jsonValue(value, type: type), !special.isNull {
            // Bytes as base64, and integers past 2^53 as text.
            if let text = special.stringValue { return .text(text) }
            return .integer(value.int64 ?? 0)
        }
        switch (type, value) {
        case (_, .null): return .null
        case let (.boolean, .integer(flag)): return .bool(flag != 0)
        case let (.double, .integer(number)), let (.float, .integer(number)): return .double(Double(number))
        case let (_, .integer(number)): return .integer(number)
        case let (_, .real(number)): return .double(number)
        case let (_, .text(text)): return .text(text)
        case let (_, .blob(bytes)): return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Writes one hit's cells; false for a value JSON cannot hold.
    func write(_ hit: FetchExecutor.Hit, to text: inout JSONBytes) -> Bool {
        var first = true
        var finite = true
        cells(of: hit) { cell in
            if !first { text.append(",") }
            first = false
            finite = Self.write(cell, to: &text) && finite
        }
        return finite
    }

    /// Writes the row `statement` is on (`PersistentStore.selectList`'s columns) as `write(_:to:)`
    /// writes its hit: text columns go from SQLite's bytes into the reply, with no String made.
    func write(row statement: Statement, store: Int, to text: inout JSONBytes) -> Bool {
        var finite = true
        text.bytes.append(contentsOf: objectIDOpening[store])
        text.append(integer: statement.int64(at: 0))
        text.append("\",")
        text.bytes.append(contentsOf: storeNameJSON[store])
        text.append(",")
        text.append(integer: statement.int64(at: 1))
        text.append(",")
        if statement.withText(at: 2, { text.append(utf8: $0) }) == nil { text.append(string: "") }
        text.append(",")
        _ = Self.write(Self.zoneCell(statement.string(at: 3)), to: &text)
        let attributeCount = types.count
        for index in 0..<(attributeCount + destinations.count) {
            text.append(",")
            let column = 4 + index
            if index >= attributeCount {
                if let key = statement.value(at: column).int64 {
                    text.bytes.append(contentsOf: destinationOpenings[store][index - attributeCount])
                    text.append(integer: key)
                    text.append("\"")
                } else {
                    text.append("null")
                }
            } else if plainText[index], statement.isText(at: column) {
                _ = statement.withText(at: column) { text.append(utf8: $0) }
            } else {
                finite = Self.write(Self.attributeCell(statement.value(at: column), type: types[index]), to: &text) && finite
            }
        }
        return finite
    }

    /// Writes one cell; false for a non-finite double (written as nothing).
    private static func write(_ cell: Cell, to text: inout JSONBytes) -> Bool {
        switch cell {
        case .null: text.append("null")
        case let .bool(flag): text.append(flag ? "true" : "false")
        case let .integer(number): text.append(integer: number)
        case let .double(number):
            guard number.isFinite else { return false }
            text.append(number: number)
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
        return true
    }
}

/// JSON text built as UTF-8 bytes, in `JSONWriter`'s forms (its escaping, its numbers).
struct JSONBytes {
    var bytes: [UInt8] = []

    mutating func append(_ literal: StaticString) {
        // Most literals are one byte (a comma, a bracket): appended as that byte.
        if literal.utf8CodeUnitCount == 1 { return bytes.append(literal.utf8Start.pointee) }
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

    /// A string literal of text as SQLite holds it: copied as is when it is plain ASCII with
    /// nothing JSON escapes; otherwise read as a String first (invalid UTF-8 repaired, as
    /// reading the column as a String does) and written as `append(string:)` writes it.
    mutating func append(utf8: UnsafeBufferPointer<UInt8>) {
        if !utf8.contains(where: { $0 >= 0x80 || $0 == 0x22 || $0 == 0x5C || $0 < 0x20 }) {
            bytes.append(0x22)
            bytes.append(contentsOf: utf8)
            bytes.append(0x22)
            return
        }
        append(string: String(decoding: utf8, as: UTF8.self))
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
