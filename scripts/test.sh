#!/usr/bin/env bash
# The test command: set up, check the docs' test references, build everything (services, meowctl,
# benchmarks, tests), run the suite, then the Python package: the README's first Python test in
# a fresh virtual environment and the package's tests (scripts/first-test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# The differences pages name the tests that pin each line: a renamed or missing test fails here.
python3 scripts/docs-check.py
swift build --build-tests
swift test --skip-build "$@"
bash scripts/first-test-python.sh
