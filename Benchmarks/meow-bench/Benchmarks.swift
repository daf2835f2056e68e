/// The benchmark suites, in the order they run.
struct BenchmarkSuite: Sendable {
    let name: String
    let run: @Sendable (_ quick: Bool) throws -> Void
}

enum Benchmarks {
    static let all: [BenchmarkSuite] = [
        BenchmarkSuite(name: "ping", run: PingBenchmark.run),
        BenchmarkSuite(name: "store", run: StoreBenchmark.run),
        BenchmarkSuite(name: "triplog", run: TripLogBenchmark.run),
        BenchmarkSuite(name: "cloud", run: CloudBenchmark.run),
        BenchmarkSuite(name: "mirror", run: MirrorBenchmark.run),
        BenchmarkSuite(name: "load", run: LoadBenchmark.run),
        BenchmarkSuite(name: "fixture", run: FixtureBenchmark.run),
        BenchmarkSuite(name: "explore", run: ExploreBenchmark.run),
    ]
}
