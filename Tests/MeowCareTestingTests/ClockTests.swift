import MeowCareTesting
import Testing

/// Device clocks (`clock.set`) and the cloud's (`admin.setClock`), moved together.
@Suite struct ClockTests {
    @Test(.meowCluster(devices: ["A"]))
    func advancingEveryClockLetsADeferredSendGoOut() async throws {
        let cluster = try MeowCluster.current
        let before = try await cluster["A"].setClock(now: 1_800_000_000)
        #expect(before.offsetSeconds != 0 && before.now >= 1_800_000_000 && before.now < 1_800_000_060)
        // A set clock keeps running: 60 s on, it reads at least 60 s later.
        let later = try await cluster["A"].advanceClock(by: 60)
        #expect(later.now >= 1_800_000_060 && later.now < 1_800_000_120)
        try await cluster.cloud.admin.injectFault(CloudFault(code: "requestRateLimited", op: "records.modify", retryAfterSeconds: 3600))
        try await cluster["A"].insert("CareSession", ["id": "s1"])
        await #expect(throws: MeowCareError.self) { try await cluster.settle(maxRounds: 2) }
        try await cluster.advanceClocks(by: 3601)
        try await cluster.settle()
        try await cluster.assertConverged()
    }
}
