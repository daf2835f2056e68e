import MeowWire

/// The one reader of the store-service's results: a reply's `result` decoded as its type from
/// the parsed tree (`JSONValueDecoder`). A result that does not read is a `WireError` whose
/// `details.field` is the JSON path of the offending field (`result.inserted[0].reason`), so a
/// client's failure says which part of which reply broke, not only that one did.
///
/// ```swift
/// let saved = try StoreReply.read(SaveResult.self, from: result, op: "context.save")
/// ```
public enum StoreReply {
    public static func read<Result: Decodable>(_ type: Result.Type, from result: JSONValue, op: String) throws(WireError) -> Result {
        do {
            return try JSONValueDecoder().decode(Result.self, from: result)
        } catch let error as DecodingError {
            throw malformed(error, op: op, type: Result.self)
        } catch {
            throw WireError(.internalError, "The reply to '\(op)' did not read as \(Result.self): \(error)", details: ["op": .string(op), "field": "result"])
        }
    }

    static func malformed(_ error: DecodingError, op: String, type: Any.Type) -> WireError {
        let field: String, problem: String
        switch error {
        case let .keyNotFound(key, context):
            field = path(context.codingPath + [key])
            problem = "is missing"
        case let .valueNotFound(expected, context):
            field = path(context.codingPath)
            problem = "is null where \(expected) is expected"
        case let .typeMismatch(expected, context):
            field = path(context.codingPath)
            problem = "is not \(expected)"
        case let .dataCorrupted(context):
            field = path(context.codingPath)
            problem = context.debugDescription
        @unknown default:
            field = "result"
            problem = "\(error)"
        }
        return WireError(.internalError, "The reply to '\(op)' did not read as \(type): \(field) \(problem).",
                         details: ["op": .string(op), "field": .string(field)])
    }

    /// `result.a.b[2].c` for a coding path.
    static func path(_ keys: [any CodingKey]) -> String {
        var text = "result"
        for key in keys {
            if let index = key.intValue { text += "[\(index)]" } else { text += ".\(key.stringValue)" }
        }
        return text
    }
}
