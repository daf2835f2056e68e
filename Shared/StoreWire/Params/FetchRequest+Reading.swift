import MeowWire

/// `fetch`'s and `fetch.count`'s params read from the request's bytes (`JSONReadable`), without
/// `Codable`: a fixture's device answers one `fetch.count` in its first minutes, where the
/// synthesized Decodable form's first use (its containers' metadata looked up by mangled name,
/// every conformance record scanned) was most of the request's cost.
extension FetchRequest: JSONReadable {
    /// Members are taken in any order (the last of a repeated key stands, others are skipped),
    /// then read in the order the synthesized Decodable form reads them, so the first problem
    /// reported is the one decoding the same params from a tree reports, in the same words.
    /// Null params are no params, as for a request parsed whole.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var members = [UnsafeBufferPointer<UInt8>?](repeating: nil, count: Member.allCases.count)
        if !reader.readNull() { try reader.object { (key, reader) throws(MessageReadError) in
            if let member = Member(key: key) { members[member.rawValue] = try reader.valueBytes() } else { try reader.skip() }
        } }
        let path = reader.path
        /// A reader of `member`'s value, nil when absent.
        func field(_ member: Member) -> MessageReader? {
            members[member.rawValue].map { MessageReader($0, path: path + [.key(member.key)]) }
        }
        guard var entityField = field(.entity) else { throw MessageReadError(path: path + [.key("entity")], problem: .missing) }
        let entity = try entityField.string()
        var predicate: String?, arguments: [JSONValue]?, sortDescriptors: [SortDescriptor]?, limit: Int?, offset: Int?
        var stores: [String]?, context: String?, resultFormat: FetchResultFormat?
        if var reader = field(.predicate) { predicate = try reader.optionalString() }
        if var reader = field(.arguments) { arguments = try reader.optionalArray { (element) throws(MessageReadError) in try element.value() } }
        if var reader = field(.sortDescriptors) { sortDescriptors = try reader.optionalArray { (element) throws(MessageReadError) in try SortDescriptor(reading: &element) } }
        if var reader = field(.limit) { limit = try reader.optionalIntegerAsDecoded() }
        if var reader = field(.offset) { offset = try reader.optionalIntegerAsDecoded() }
        if var reader = field(.stores) { stores = try reader.optionalArray { (element) throws(MessageReadError) in try element.string() } }
        if var reader = field(.context) { context = try reader.optionalString() }
        if var reader = field(.resultFormat) { resultFormat = try reader.optionalRawValue(FetchResultFormat.self) }
        self.init(entity: entity, predicate: predicate, arguments: arguments, sortDescriptors: sortDescriptors, limit: limit, offset: offset,
                  stores: stores, context: context, resultFormat: resultFormat)
    }

    /// The members the Decodable form reads, in its order.
    private enum Member: Int, CaseIterable {
        case entity, predicate, arguments, sortDescriptors, limit, offset, stores, context, resultFormat

        init?(key: String) {
            switch key {
            case "entity": self = .entity
            case "predicate": self = .predicate
            case "arguments": self = .arguments
            case "sortDescriptors": self = .sortDescriptors
            case "limit": self = .limit
            case "offset": self = .offset
            case "stores": self = .stores
            case "context": self = .context
            case "resultFormat": self = .resultFormat
            default: return nil
            }
        }

        var key: String {
            switch self {
            case .entity: "entity"
            case .predicate: "predicate"
            case .arguments: "arguments"
            case .sortDescriptors: "sortDescriptors"
            case .limit: "limit"
            case .offset: "offset"
            case .stores: "stores"
            case .context: "context"
            case .resultFormat: "resultFormat"
            }
        }
    }
}

extension FetchRequest.SortDescriptor: JSONReadable {
    /// `key`, then `ascending`, as the synthesized Decodable form reads them.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var key: UnsafeBufferPointer<UInt8>?, ascending: UnsafeBufferPointer<UInt8>?
        try reader.object { (name, reader) throws(MessageReadError) in
            switch name {
            case "key": key = try reader.valueBytes()
            case "ascending": ascending = try reader.valueBytes()
            default: try reader.skip()
            }
        }
        let path = reader.path
        guard let key else { throw MessageReadError(path: path + [.key("key")], problem: .missing) }
        var field = MessageReader(key, path: path + [.key("key")])
        let name = try field.string()
        var order: Bool?
        if let ascending {
            field = MessageReader(ascending, path: path + [.key("ascending")])
            order = try field.optionalBool()
        }
        self.init(key: name, ascending: order)
    }
}
