#!/usr/bin/env bash
# The test command: set up, build everything (services, meowctl, benchmarks, tests), run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
swift build --build-tests
swift test --skip-build "$@"
