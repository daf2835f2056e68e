#!/usr/bin/env bash
# The README's main command: builds what it needs, brings up a temporary local deployment on
# embedded SQLite (a sync-service; Olivia's devices A and B; Pablo's device P), tells the
# MeowCare story with checks, tears everything down, and exits 0 only if every check matched
# and nothing was left running.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/setup.sh
echo "Building store-service, sync-service and meowctl…" >&2
swift build --product store-service >&2
swift build --product sync-service >&2
swift build --product meowctl >&2
export MEOWCARE_BIN_DIR="$root/.build/debug"

dir="$(mktemp -d /tmp/meowcare-demo.XXXXXX)"
cleanup() {
  deploy/meowcare-local down --dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

deploy/meowcare-local up --dir "$dir" "$@"
status=0
"$MEOWCARE_BIN_DIR/meowctl" demo --dir "$dir" || status=$?
echo
deploy/meowcare-local down --dir "$dir" || status=1
if pgrep -f "$dir" >/dev/null; then echo "demo: processes were left running" >&2; status=1; fi
exit $status
