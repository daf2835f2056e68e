/// `hello` read from its bytes and its reply written as text, without `Codable`: every
/// connection's first request, whose generic Codable containers (keyed by the types' coding
/// keys) were looked up by mangled name and checked against every conformance record of the
/// process the first time in each service process — a cost each started service paid once,
/// and a fixture's three services each.
extension HelloParams: JSONReadable {
    /// Members are taken in any order (the last of a repeated key stands, others are skipped),
    /// then read in the order the Decodable form reads them, so the first problem reported —
    /// a missing or ill-typed field — is the one decoding the same params from a tree reports,
    /// in the same words.
    public init(reading reader: inout MessageReader) throws(MessageReadError) {
        var minimum: UnsafeBufferPointer<UInt8>?, maximum: UnsafeBufferPointer<UInt8>?, client: UnsafeBufferPointer<UInt8>?
        var credential: UnsafeBufferPointer<UInt8>?, environment: UnsafeBufferPointer<UInt8>?
        // Null params are no params, as for a request parsed whole (`Connection.readDirectly`
        // hands a reading type its params' bytes as they are).
        if !reader.readNull() { try reader.object { (key, reader) throws(MessageReadError) in
            switch key {
            case "minVersion": minimum = try reader.valueBytes()
            case "maxVersion": maximum = try reader.valueBytes()
            case "client": client = try reader.valueBytes()
            case "credential": credential = try reader.valueBytes()
            case "environment": environment = try reader.valueBytes()
            default: try reader.skip()
            }
        } }
        let path = reader.path
        func member(_ bytes: UnsafeBufferPointer<UInt8>?, _ key: String) throws(MessageReadError) -> MessageReader {
            guard let bytes else { throw MessageReadError(path: path + [.key(key)], problem: .missing) }
            return MessageReader(bytes, path: path + [.key(key)])
        }
        var field = try member(minimum, "minVersion")
        let minVersion = try field.integerAsDecoded()
        field = try member(maximum, "maxVersion")
        let maxVersion = try field.integerAsDecoded()
        field = try member(client, "client")
        let name = try field.string()
        var credentialText: String?, environmentText: String?
        if let credential {
            field = MessageReader(credential, path: path + [.key("credential")])
            credentialText = try field.optionalString()
        }
        if let environment {
            field = MessageReader(environment, path: path + [.key("environment")])
            environmentText = try field.optionalString()
        }
        self.init(minVersion: minVersion, maxVersion: maxVersion, client: name, credential: credentialText, environment: environmentText)
    }
}

extension HelloResult: JSONTextWritable {
    /// The text `JSONTextEncoder` writes for the Encodable form: members in declaration order,
    /// `user` and `environment` left out when nil.
    public func writeJSON(to out: inout String) -> Bool {
        out += #"{"service":"#; JSONWriter.appendString(service, to: &out)
        out += #","version":"#; JSONWriter.appendString(version, to: &out)
        out += #","protocol":"#; JSONWriter.appendString(`protocol`, to: &out)
        out += #","protocolVersion":"#; out += String(protocolVersion)
        out += #","connectionID":"#; out += String(connectionID)
        out += #","limits":{"maxFrameBytes":"#; out += String(limits.maxFrameBytes)
        out += #","maxConnections":"#; out += String(limits.maxConnections)
        out += #","maxEventQueueBytes":"#; out += String(limits.maxEventQueueBytes)
        out += #","sendTimeoutMilliseconds":"#; out += String(limits.sendTimeoutMilliseconds)
        out += #","frameTimeoutMilliseconds":"#; out += String(limits.frameTimeoutMilliseconds)
        out += #"},"features":"#; Self.append(features, to: &out)
        out += #","topics":"#; Self.append(topics, to: &out)
        if let user { out += #","user":"#; JSONWriter.appendString(user, to: &out) }
        if let environment { out += #","environment":"#; JSONWriter.appendString(environment, to: &out) }
        out += "}"
        return true
    }

    private static func append(_ strings: [String], to out: inout String) {
        out += "["
        for (index, text) in strings.enumerated() {
            if index > 0 { out += "," }
            JSONWriter.appendString(text, to: &out)
        }
        out += "]"
    }
}
