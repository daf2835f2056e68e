import Foundation
import MeowExplore
import MeowWire
import Testing

@Suite struct FlowCodingTests {
    @Test func aFlowFileRoundTrips() throws {
        let text = #"{"name":"f","actors":[{"device":"A","user":"olivia","steps":[{"op":"insert","object":"s1","entity":"CareSession","fields":["title"]},{"op":"custom","name":"resolve","params":{}}]}],"shares":[]}"#
        let flow = try JSONDecoder().decode(Flow.self, from: Data(text.utf8))
        #expect(flow.actors[0].steps.count == 2)
        #expect(flow.unboundSteps == ["resolve"])
        let again = try JSONDecoder().decode(Flow.self, from: JSONEncoder().encode(flow))
        #expect(again.actors[0].steps.map(\.kind) == flow.actors[0].steps.map(\.kind))
    }

    @Test func choicesReadBackFromTheirText() {
        let choices: [Choice] = [.step(actor: "A"), .send(device: "B"), .push(device: "P", delivered: false), .release(device: "A"),
                                 .fault(.transient(device: "A", code: "zoneBusy", retryAfterSeconds: 30)), .fault(.tokenExpiry),
                                 .fault(.clockJump(device: "B", seconds: -30)), .fault(.crash(device: "A", point: "mirror.midImport"))]
        #expect(choices.map { Choice($0.description) } == choices)
    }
}
