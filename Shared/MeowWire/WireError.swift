/// The one error shape on the wire: a stable code, a message for people, and details for programs.
///
/// ```swift
/// throw WireError(.unknownOp, "No op named 'pnig'.", details: ["op": "pnig"])
/// ```
public struct WireError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var details: [String: JSONValue]

    public init(_ code: ErrorCode, _ message: String, details: [String: JSONValue] = [:]) {
        self.code = code
        self.message = message
        self.details = details
        if let number = code.cloudKitNumber, self.details["ckErrorCode"] == nil {
            self.details["ckErrorCode"] = .int(number)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decode(ErrorCode.self, forKey: .code)
        message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        details = try container.decodeIfPresent([String: JSONValue].self, forKey: .details) ?? [:]
    }

    public var description: String { "\(code): \(message)" }
}
