import MeowCareTesting
import Testing

/// Device clocks (`clock.set`) and the cloud's (`admin.setClock`), moved together.
@Suite struct ClockTests {
    @Test(.disabled("needs clock.set"), .meowCluster(devices: ["A"]))
    func advancingEveryClockLetsADeferredSendGoOut() async throws {
        let cluster = try MeowCluster.current
        let before = try await cluster["A"].setClock(now: 1_800_000_000)
        #expect(before.fixed)
        #expect(try await cluster["A"].advanceClock(by: 60).now == 1_800_000_060)
        try await cluster.cloud.admin.injectFault(CloudFault(code: "requestRateLimited", op: "records.modify", retryAfterSeconds: 3600))
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        await #expect(throws: MeowCareError.self) { try await cluster.settle(maxRounds: 2) }
        try await cluster.advanceClocks(by: 3601)
        try await cluster.settle()
        try await cluster.assertConverged()
    }
}
