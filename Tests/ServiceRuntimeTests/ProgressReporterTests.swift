#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeowWire
@testable import ServiceRuntime
import TestSupport
import Testing

/// `progress` events: to the requesting connection only, when it subscribed; a phase's first
/// and last always go out.
@Suite("Progress events of a long request")
struct ProgressReporterTests {
    func context(_ wired: EventQueueTests.Wired, id: RequestID = .int(7)) -> RequestContext {
        RequestContext(requestID: id, op: "share.create", connection: wired.handle, logger: Logger(label: "test"))
    }

    @Test("A subscribed connection gets each phase's first and last event with its request's id and op, in order")
    func phasesInOrder() throws {
        let wired = try EventQueueTests.Wired(maxEventQueueBytes: 1 << 20)
        _ = wired.handle.subscribe([ProgressReporter.topic])
        let progress = ProgressReporter(context(wired))
        progress.report(phase: "moving", done: 0, total: 2)
        progress.report(phase: "moving", done: 2, total: 2)
        progress.report(phase: "sending", done: 0, total: nil)
        progress.report(phase: "sending", done: 5, total: 5)
        let expected: [(String, Int, JSONValue)] = [("moving", 0, 2), ("moving", 2, 2), ("sending", 0, .null), ("sending", 5, 5)]
        for (index, (phase, done, total)) in expected.enumerated() {
            let event = try wired.client.next()
            #expect(event["event"] == "progress" && event["seq"] == .int(index + 1))
            #expect(event["data"]?["requestID"] == 7 && event["data"]?["op"] == "share.create")
            #expect(event["data"]?["phase"] == .string(phase) && event["data"]?["done"] == .int(done))
            #expect((event["data"]?["total"] ?? .null) == total)
        }
        wired.finish()
        #expect(wired.client.closesWithoutFrame())
    }

    @Test("A connection that did not subscribe gets nothing, and the silent reporter reports nowhere")
    func unsubscribedGetsNothing() throws {
        let wired = try EventQueueTests.Wired(maxEventQueueBytes: 1 << 20)
        ProgressReporter(context(wired)).report(phase: "moving", done: 1, total: 1)
        ProgressReporter.silent.report(phase: "moving", done: 1, total: 1)
        wired.push("tick", #"{"n":1}"#)
        let event = try wired.client.next()
        #expect(event["event"] == "tick" && event["seq"] == 1)
        wired.finish()
        #expect(wired.client.closesWithoutFrame())
    }
}
