#!/usr/bin/env bash
# Builds the services and benchmarks in release mode and runs meow-bench (args pass through,
# e.g. scripts/bench.sh --quick ping; with --json the last line is every figure as one JSON
# object, docs/BENCHMARKS.md). Not part of the test suite: figures are printed beside a
# baseline measured in the same run, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
swift build -c release --product store-service
swift build -c release --product sync-service
swift build -c release --product echo-baseline
swift build -c release --product meow-bench
exec .build/release/meow-bench "$@"
