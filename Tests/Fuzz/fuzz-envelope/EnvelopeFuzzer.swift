import FoundationEssentials
import MeowWire

/// libFuzzer target for the envelope and JSON value decoding a client and a service run on every
/// frame body (no main: libFuzzer supplies it; built only with MEOW_FUZZ=1 and
/// --sanitize=fuzzer, see scripts/fuzz.sh). Checked on every input:
/// - decoding never crashes, whatever the bytes (JSONValue, IncomingMessage, HelloParams,
///   WireError, a request envelope with JSONValue params);
/// - a decoded JSONValue re-encodes to JSON that decodes to the same value: same keys, same
///   order of elements, same strings and booleans, numbers equal as doubles. (The kind of a
///   number may change: `6.666666666666667e+18` decodes as a double, is written back in that
///   form, and then decodes as the integer 6666666666666667000 — JSONValue takes an integral
///   number as `.int`. Equal as doubles, so not flagged.)
/// Foundation's JSON parser itself is not instrumented (only code built with the flag is), so
/// coverage guides the search through MeowWire's own decoding code.
private struct Request: Decodable {
    var id: RequestID?
    var op: String?
    var params: JSONValue?
}

/// Equal as JSON means the same thing: numbers compared as doubles, whatever their kind.
private func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case let (.object(x), .object(y)):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
    case let (.array(x), .array(y)):
        return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
    default:
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func envelopeFuzzer(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let body = Data(UnsafeBufferPointer(start: data, count: size))
    let decoder = JSONDecoder()
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    _ = try? decoder.decode(IncomingMessage.self, from: body)
    _ = try? decoder.decode(HelloParams.self, from: body)
    _ = try? decoder.decode(WireError.self, from: body)
    if let request = try? decoder.decode(Request.self, from: body) {
        _ = request.id?.description
        _ = request.params?["context"]?.stringValue
    }
    guard let value = try? decoder.decode(JSONValue.self, from: body) else { return 0 }
    guard let once = try? encoder.encode(value) else { preconditionFailure("a decoded value does not encode: \(value)") }
    guard let again = try? decoder.decode(JSONValue.self, from: once) else {
        preconditionFailure("encoded JSON does not decode: \(String(decoding: once, as: UTF8.self))")
    }
    precondition(sameValue(value, again), "a value changed on the way through JSON: \(value) → \(again)")
    return 0
}
