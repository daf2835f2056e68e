import Foundation
import MeowWire
import Testing
import class MeowCareCluster.MeowProcess

/// `meow-bench --json SUITE…`: the real benchmark, in its quick mode on two cheap suites, ends
/// its output with one JSON object of every figure it measured. No timing is asserted: the
/// keys are there, each value and baseline is a positive number and each ratio is their quotient.
@Suite("Bench figures")
struct BenchFiguresTests {
    @Test("meow-bench --json prints every figure of the suites run as its last line")
    func lastLineHoldsEveryFigure() async throws {
        let run = try await MeowProcess.run("meow-bench", ["--quick", "--json", "ping", "triplog"], timeout: .seconds(300))
        #expect(run.status == 0, "meow-bench failed:\n\(run.stdout)\n\(run.stderr)")
        let last = try #require(run.stdout.split(separator: "\n").last, "no output")
        let figures = try #require(try JSONParser.parse(String(last))["figures"]?.objectValue, "the last line is not {\"figures\": …}: \(last)")

        let compared = ["ping.oneClient", "ping.oneClient.p50", "ping.oneClient.p99", "ping.eightClients", "ping.eightClients.p50",
                        "ping.eightClients.p99", "ping.pipelined", "triplog.save"]
        #expect(Set(figures.keys) == Set(compared), "figures: \(figures.keys.sorted())")
        for key in compared {
            let figure = try #require(figures[key], "no figure \(key)")
            let value = try #require(figure["value"]?.doubleValue, "\(key) has no value")
            let baseline = try #require(figure["baseline"]?.doubleValue, "\(key) has no baseline")
            let ratio = try #require(figure["ratio"]?.doubleValue, "\(key) has no ratio")
            #expect(value > 0 && baseline > 0, "\(key): \(figure)")
            #expect(abs(ratio - value / baseline) <= 1e-9 * max(1, abs(ratio)), "\(key): ratio \(ratio) is not \(value) / \(baseline)")
            #expect(figure["unit"]?.stringValue?.isEmpty == false, "\(key) has no unit")
        }
        #expect(figures["triplog.save"]?["unit"] == "photos/s" && figures["ping.oneClient.p50"]?["unit"] == "µs")
    }
}
