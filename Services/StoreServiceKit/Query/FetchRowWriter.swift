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
