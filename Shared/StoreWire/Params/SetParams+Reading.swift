import MeowWire

/// `object.set`'s params read from the request's bytes (`JSONReadable`), so its values keep the
/// order they were sent in, as an insert's do: with more than one refused value, the error
/// names the first one sent rather than whichever a dictionary happened to yield first.
extension SetParams: JSONReadable {
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var context: String?, objectID: String?, values: AttributeValues?
        try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "context": context = try reader.string()
            case "objectID": objectID = try reader.string()
            case "values": values = try AttributeValues.read(optional: &reader)
            default: try reader.skip()
            }
        }
        guard let context else { throw reader.missing("context") }
        guard let objectID else { throw reader.missing("objectID") }
        guard let values else { throw reader.missing("values") }
        self.init(context: context, objectID: objectID, values: values)
    }
}
