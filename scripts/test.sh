#!/usr/bin/env bash
# The test command: set up, check the docs' test references, build everything (services, meowctl,
# benchmarks, tests), run the suite, then README's first tests from outside the package: the Swift
# one in a package of its own, the Python one in a fresh virtual environment with the package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The differences pages name the tests that pin each line: a renamed or missing test fails here.
python3 scripts/docs-check.py
# VERSION and the copies the executables and the Python package report agree.
python3 scripts/version-check.py >/dev/null
swift build --build-tests
swift test --skip-build "$@"
# README's "Write your first test" blocks, run verbatim from outside this package.
bash scripts/first-test-swift.sh
bash scripts/first-test-python.sh
