import CloudWire
import MeowWire
import Testing

@Suite("The fault spec")
struct CloudFaultTests {
    @Test func aFaultTravelsAsTheFieldsItSets() throws {
        let fault = CloudFault(code: "requestRateLimited", op: "records.modify", user: "olivia", retryAfterSeconds: 3, effect: .hold, seed: 7)
        let json = try JSONValue(encoding: fault)
        #expect(json == ["code": "requestRateLimited", "op": "records.modify", "user": "olivia", "retryAfterSeconds": 3, "effect": "hold", "seed": 7])
        #expect(try json.decode(CloudFault.self) == fault)
        #expect(try JSONValue(encoding: CloudFault()) == [:])
    }

    @Test func anUnknownEffectIsInvalidArgumentsNamingTheEffects() {
        do {
            _ = try JSONValueDecoder().decode(CloudFault.self, from: ["effect": "explode"])
            Issue.record("an unknown effect decoded")
        } catch let error as WireError {
            #expect(error.code == .invalidArguments)
            #expect(error.message == "effect must be error, dropBeforeCommit, dropAfterCommit, partialFrame, latency, hold or holdBeforeCommit; got 'explode'.")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
