import MeowWire

/// A record's one reader. Fields in the sync-service's stored form (`StoredFields`: all that a
/// device's mirror sends and every page of changes holds) are kept as their text alone
/// (`fieldsText`), never made a tree: the text goes as it is to the stored row and back out.
/// Other fields are read by the fields' rules (`FieldCoding.normalizedField`).
extension CloudRecord: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        try self.init(reading: &reader, storedFieldsEnd: StoredFields.end)
    }

    /// `storedFieldsEnd`: where the fields object that starts at the given index ends when it is
    /// in stored form, else nil: `StoredFields.end`, or a variant that keeps what its scan read
    /// (`endAndTypeSignature`, `endAndFields`).
    package init(reading reader: inout MessageReader, storedFieldsEnd: (UnsafeBufferPointer<UInt8>, Int) -> Int?) throws(MessageReadError) {
        var name: String?, zone: ZoneID?, type: String?, tree: [String: JSONValue]?, text: String?, tag: String?
        var created: Double?, modified: Double?, creator: String?, modifier: String?
        var parent: RecordReference?, share: RecordReference?, shareInfo: ShareInfo?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "recordName": name = try reader.string()
            case "recordType": type = try reader.string()
            case "zoneID": zone = try ZoneID(reading: &reader)
            case "recordChangeTag": tag = try reader.optionalString()
            case "creatorUserRecordName": creator = try reader.optionalString()
            case "lastModifiedUserRecordName": modifier = try reader.optionalString()
            case "creationDate": created = try reader.optionalDouble()
            case "modificationDate": modified = try reader.optionalDouble()
            case "parent": parent = reader.readNull() ? nil : try RecordReference(reading: &reader)
            case "share": share = reader.readNull() ? nil : try RecordReference(reading: &reader)
            case "shareInfo": shareInfo = reader.readNull() ? nil : try reader.decode(ShareInfo.self)
            case "fields":
                (tree, text) = (nil, nil)
                if reader.readNull() { break }
                if let bytes = reader.text(endingWith: storedFieldsEnd) {
                    text = String(decoding: bytes, as: UTF8.self)
                } else {
                    tree = try Self.readFields(&reader)
                }
            default: try reader.skip()
            }
        }
        guard let name else { throw reader.missing("recordName") }
        guard let zone else { throw reader.missing("zoneID") }
        guard let type else { throw reader.missing("recordType") }
        self.init(recordName: name, zoneID: zone, recordType: type, fields: tree ?? [:], recordChangeTag: tag, parent: parent, share: share)
        if let text { fieldsText = text }
        creationDate = created
        modificationDate = modified
        creatorUserRecordName = creator
        lastModifiedUserRecordName = modifier
        self.shareInfo = shareInfo
    }

    /// Fields not in stored form: an object whose members are null or `{"type": …, "value": …}`
    /// objects, each read by the fields' rules.
    private static func readFields(_ reader: inout MessageReader) throws(MessageReadError) -> [String: JSONValue] {
        guard case var .object(fields) = try reader.value() else { throw reader.error(.expected(.object)) }
        for (name, field) in fields {
            guard let normalized = FieldCoding.normalizedField(field) else {
                throw MessageReadError(path: reader.path + [.key(name)], problem: .expected(.object))
            }
            if normalized != field { fields[name] = normalized }
        }
        return fields
    }
}
