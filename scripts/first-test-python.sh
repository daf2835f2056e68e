#!/usr/bin/env bash
# The first Python test (docs/TESTING.md, "### The first test"), run as an app team would run it:
# a fresh virtual environment in a temporary directory, the package installed from this
# repository with its pytest extra, the ```python block under that heading copied verbatim into a test file outside the
# repository, and pytest on it with MEOWCARE_BIN_DIR pointing at the built services. Then the
# package's own tests (clients/python/tests) in the same environment. Exits non-zero on any
# failure.
#
#   bash scripts/first-test-python.sh        (after swift build; MEOWCARE_BIN_DIR overrides .build/debug)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${MEOWCARE_BIN_DIR:-$root/.build/debug}"
for executable in store-service sync-service; do
  if [ ! -x "$bin/$executable" ]; then
    echo "first-test-python: no $bin/$executable; build it first: swift build --package-path $root" >&2
    exit 1
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root/clients/python[pytest]"

# The first ```python block after the heading, before the next heading: exactly as printed.
mkdir "$work/first-test"
python3 - "$root/docs/TESTING.md" "$work/first-test/test_first.py" <<'EXTRACT'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = re.search(r"^### The first test\n(.*?)(?=^##)", text, re.S | re.M)
block = section and re.search(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
if not block:
    sys.exit("first-test-python: docs/TESTING.md has no ```python block under '### The first test'")
open(sys.argv[2], "w", encoding="utf-8").write(block.group(1))
EXTRACT

export MEOWCARE_BIN_DIR="$bin"
unset MEOWCARE_EXTERNAL
echo "first-test-python: the first test (docs/TESTING.md), from $work/first-test" >&2
(cd "$work/first-test" && "$work/venv/bin/python" -m pytest -p no:cacheprovider -q test_first.py)
echo "first-test-python: the package's tests (clients/python/tests)" >&2
(cd "$work" && "$work/venv/bin/python" -m pytest -p no:cacheprovider -q "$root/clients/python/tests")
