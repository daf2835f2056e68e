import Foundation
import MeowWire
@testable import ServiceRuntime
import Testing

/// `hello`'s params read from their bytes and its result written as text (Hello+Text.swift),
/// and `health`'s result written as text, must answer what the Codable forms they replace
/// answer: the same values and text, and for bad params the same first problem in the same words.
@Suite("hello and health read and written without Codable")
struct HelloTextTests {
    private struct Wrapped: Decodable { var params: HelloParams }

    /// What the registry's tree route answers for `params` (absent or null: none).
    private func decoded(_ params: String?) -> Result<HelloParams, WireError> {
        let tree: JSONValue = params.flatMap { try? JSONParser.parse(Array($0.utf8)) } ?? .object([:])
        do {
            return .success(try JSONValueDecoder().decode(HelloParams.self, from: tree == .null ? .object([:]) : tree))
        } catch {
            // Decoded again under `params` to name the field, as the registry does.
            do {
                return .success(try JSONValueDecoder().decode(Wrapped.self, from: ["params": tree == .null ? .object([:]) : tree]).params)
            } catch {
                return .failure(IncomingRequest.paramsError(error, op: "hello"))
            }
        }
    }

    /// What the bytes reader answers.
    private func read(_ params: String) -> Result<HelloParams, WireError> {
        do throws(MessageReadError) {
            return .success(try HelloParams.read(params))
        } catch {
            return .failure(error.wireError(op: "hello"))
        }
    }

    private func same(_ left: Result<HelloParams, WireError>, _ right: Result<HelloParams, WireError>) -> Bool {
        switch (left, right) {
        case let (.success(a), .success(b)):
            return a.minVersion == b.minVersion && a.maxVersion == b.maxVersion && a.client == b.client
                && a.credential == b.credential && a.environment == b.environment
        case let (.failure(a), .failure(b)):
            return a.code == b.code && a.message == b.message && a.details == b.details
        default:
            return false
        }
    }

    @Test("params read from bytes give the Decodable form's values and its first error, word for word",
          arguments: [
              #"{"minVersion":1,"maxVersion":1,"client":"x"}"#,
              #"{"client":"x\u00e9\"/y","maxVersion":2,"minVersion":1.0,"credential":"c","environment":"production","extra":[1,{"a":null}]}"#,
              #"{"minVersion":1,"maxVersion":1,"client":"x","credential":null,"environment":null}"#,
              #"{"minVersion":1,"maxVersion":1,"client":"a","client":"b"}"#,
              "{}", "null", "[]", "7",
              #"{"minVersion":"1","maxVersion":1,"client":"x"}"#,
              #"{"minVersion":null,"maxVersion":1,"client":"x"}"#,
              #"{"minVersion":1,"maxVersion":1}"#,
              #"{"minVersion":1.5,"maxVersion":1,"client":"x"}"#,
              #"{"minVersion":99999999999999999999,"maxVersion":1,"client":"x"}"#,
              #"{"client":3,"minVersion":"q"}"#,
              #"{"client":3,"maxVersion":"q"}"#,
              #"{"minVersion":1,"maxVersion":true,"client":"x"}"#,
              #"{"minVersion":1,"maxVersion":1,"client":null}"#,
              #"{"minVersion":1,"maxVersion":1,"client":"x","credential":5}"#,
              #"{"minVersion":1,"maxVersion":1,"client":"x","environment":[]}"#,
              #"{"minVersion":1,"maxVersion":1,"client":"x","credential":5,"environment":5}"#,
          ])
    func paramsReadAsDecoded(params: String) {
        let byReader = read(params), byDecoder = decoded(params)
        #expect(same(byReader, byDecoder), "\(params): read \(byReader), decoded \(byDecoder)")
    }

    @Test("the result's own text is the text JSONTextEncoder writes for it")
    func resultTextAsEncoded() throws {
        let limits = HelloResult.Limits(maxFrameBytes: 16_777_216, maxConnections: 256, maxEventQueueBytes: 8_388_608,
                                        sendTimeoutMilliseconds: 10_000, frameTimeoutMilliseconds: 30_000)
        let results = [
            HelloResult(service: "store-service", version: "0.1.0", protocolVersion: 1, connectionID: 3, limits: limits,
                        features: ["contexts", "routing.deterministic"], topics: ["service", "progress"], user: nil),
            HelloResult(service: "sync-service", version: "0.1.0", protocolVersion: 1, connectionID: 12, limits: limits,
                        features: [], topics: [], user: "ol\"ivia/é\n", environment: "production"),
            HelloResult(service: "s", version: "v", protocolVersion: 1, connectionID: 0, limits: limits,
                        features: ["a"], topics: ["b", "c"], user: nil, environment: "development"),
        ]
        for result in results {
            var text = ""
            #expect(result.writeJSON(to: &text))
            #expect(text == (try JSONTextEncoder().text(result)))
        }
    }

    @Test("health's own text is the text JSONTextEncoder writes for it")
    func healthTextAsEncoded() throws {
        let results = [
            HealthResult(status: "ready", ready: true, checks: [HealthCheck(name: "listener", ok: true, detail: "accepting connections on /tmp/a.sock")]),
            HealthResult(status: "notReady", ready: false, checks: [
                HealthCheck(name: "listener", ok: true, detail: "ok"), HealthCheck(name: "st\"ore", ok: false, detail: "é/\n\u{1}"),
            ]),
            HealthResult(status: "ready", ready: true, checks: []),
        ]
        for result in results {
            var text = ""
            #expect(result.writeJSON(to: &text))
            #expect(text == (try JSONTextEncoder().text(result)))
        }
    }

    @Test("a service reads hello's params and writes its result through them")
    func registeredThroughTheTextForms() async throws {
        let served = try ServedConnection()
        #expect(served.server.registry.entry("hello")?.readParams != nil)
        let refused = try served.client.call(#"{"id":1,"op":"hello","params":null}"#)
        #expect(refused["error"]?["message"] == "'hello' needs params.minVersion.")
        let hello = try served.client.call(#"{"id":2,"op":"hello","params":{"minVersion":1,"maxVersion":1,"client":"t"}}"#)
        #expect(hello["result"]?["protocol"] == "meowcare-wire")
        #expect(hello["result"]?["user"] == nil)
        let health = try served.client.call(#"{"id":4,"op":"health","params":{}}"#)
        #expect(health["result"]?["ready"] == true)
        let firstCheck: JSONValue? = if case let .array(checks)? = health["result"]?["checks"] { checks.first } else { nil }
        #expect(firstCheck?["name"] == "listener")
        _ = await served.end()
    }
}
