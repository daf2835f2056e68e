#!/usr/bin/env bash
# The test command: set up, check the docs' test references, build everything (services, meowctl,
# benchmarks, tests), run the suite, then README's first test from outside the package.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The differences pages name the tests that pin each line: a renamed or missing test fails here.
python3 scripts/docs-check.py
swift build --build-tests
swift test --skip-build "$@"
# README's "Write your first test" block, run verbatim from a package outside this one.
bash scripts/first-test-swift.sh
