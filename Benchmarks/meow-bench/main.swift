import Foundation

// meow-bench: performance figures, each printed beside a baseline measured in the same run.
// Build and run in release mode: scripts/bench.sh (or swift run -c release meow-bench).
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") {
    print("""
    meow-bench — MeowCare benchmarks, each beside a same-run baseline

    Usage: meow-bench [--quick] [SUITE ...]
      Suites: \(Benchmarks.all.map(\.name).joined(separator: ", ")) (default: all)
      --quick   fewer iterations (a smoke run; figures are noisier)
    """)
    exit(0)
}
let quick = arguments.contains("--quick")
let selected = arguments.filter { !$0.hasPrefix("--") }
var failures = 0
for suite in Benchmarks.all where selected.isEmpty || selected.contains(suite.name) {
    do {
        try suite.run(quick)
    } catch {
        print("\(suite.name): failed: \(error)")
        failures += 1
    }
}
exit(failures == 0 ? 0 : 1)
