import Foundation
import MeowWire

// meow-bench: performance figures, each printed beside a baseline measured in the same run.
// Build and run in release mode: scripts/bench.sh (or swift run -c release meow-bench).
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--version" {
    print("meow-bench \(MeowVersion.current)")
    exit(0)
}
if arguments.contains("--help") {
    print("""
    meow-bench — MeowCare benchmarks, each beside a same-run baseline

    Usage: meow-bench [--quick] [--json] [SUITE ...] [load options]
      Suites: \(Benchmarks.all.map(\.name).joined(separator: ", ")) (default: all; load options alone: load)
      --quick   fewer iterations (a smoke run; figures are noisier)
      --json    last line: every figure of the suites run, as {"figures": {KEY: {"value", "baseline", "ratio", "unit"}}}
                (docs/BENCHMARKS.md lists the keys); the load suite also prints its "load-json: " summary
      load options: --seconds N | --operations N, --clients K, --seed S, --dir DIR
    """)
    exit(0)
}
let quick = arguments.contains("--quick")
// Suite names are the words that are not options or an option's value (`--seconds 60` once ran
// nothing: "60" was taken for a suite). Load's options name the load suite when none is given.
let loadOptionsWithValues: Set<String> = ["--seconds", "--operations", "--clients", "--seed", "--dir"]
var selected: [String] = []
var impliesLoad = false
var index = 0
while index < arguments.count {
    let argument = arguments[index]
    if loadOptionsWithValues.contains(argument) {
        impliesLoad = true
        index += 2
        continue
    }
    if !argument.hasPrefix("--") { selected.append(argument) }
    index += 1
}
let unknown = selected.filter { name in !Benchmarks.all.contains { $0.name == name } }
guard unknown.isEmpty else {
    print("meow-bench: no suite named \(unknown.joined(separator: ", ")); suites: \(Benchmarks.all.map(\.name).joined(separator: ", ")) (--help)")
    exit(2)
}
if selected.isEmpty && impliesLoad { selected = ["load"] }
var failures = 0
for suite in Benchmarks.all where selected.isEmpty || selected.contains(suite.name) {
    do {
        try suite.run(quick)
    } catch {
        print("\(suite.name): failed: \(error)")
        failures += 1
    }
}
// Last, so a script reads it as the output's last line (the figures of a failed suite are the ones it measured before failing).
if arguments.contains("--json") { print(Figures.run.json()) }
exit(failures == 0 ? 0 : 1)
