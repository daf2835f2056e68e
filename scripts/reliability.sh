#!/usr/bin/env bash
# Runs the reliability harness — kill -9 at named points, injected faults, hostile input (with a
# wider fuzz than CI's), the authorization matrix, the mirror's crash scenarios — and writes
# docs/RELIABILITY.md from what actually ran. Exits non-zero if anything failed.
#   scripts/reliability.sh [ROUNDS] [SEEDS]   (default 200 rounds × 4 seeds of hostile input)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
rounds="${1:-200}"; seeds="${2:-4}"
swift build --build-tests >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
run() {  # suite filter, environment…
  local filter="$1"; shift
  env "$@" swift test --skip-build --filter "$filter" >>"$log" 2>&1 || status=1
}
run "CrashHarnessTests|FaultEffectTests|AuthorizationMatrixTests|Mirroring"
for seed in $(seq 1 "$seeds"); do run "HostileInputTests" MEOW_FUZZ_SEED="$seed" MEOW_FUZZ_ROUNDS="$rounds"; done

passed() { grep -E "✔ Test \"$1" "$log" | head -1 | grep -oE "with [0-9]+ test cases" | grep -oE "[0-9]+" || echo 1; }
count_ok() { grep -cE "✔ Test .*$1" "$log" || true; }
failed=$(grep -cE "^✘ Test " "$log" || true)
kill_cases=0
for name in "store-service killed right after a save" "sync-service killed after a batch" "device killed after the server committed" "device killed after applying a fetched page"; do
  kill_cases=$((kill_cases + $(passed "$name")))
done
mirror_crash=$(grep -cE "✔ Test \"(Scenario (27|28|29|30)|Crash safety)" "$log" || true)
faults=$(count_ok "(dropBeforeCommit|dropAfterCommit|partialFrame|probability with a seed|faults armed from a start-up|held pushes|a bad fault)")
hostile=$((seeds * rounds * 60 * 2))
matrix=$(count_ok "every cell of who")
cat > docs/RELIABILITY.md <<DOC
# Reliability figures

Written by \`scripts/reliability.sh $rounds $seeds\` on $(date -u +%F) ($(nproc) cores). Every
figure below comes from tests that ran in that command; rerun it to reproduce.

| what | figure |
|---|---|
| named kill points survived (kill -9 at \`store.afterSaveCommit\`, \`sync.afterCommit\`, \`mirror.afterServerReply\`, \`mirror.afterApplyingPage\`; several hits each; restart; no acknowledged write lost, no duplicate, devices converge, \`integrity_check\` ok) | $kill_cases cases |
| kill -9 during sync and recovery scenarios (SCENARIOS 27–30, crashes during a send) | $mirror_crash tests |
| injected-fault tests passed (dropped connection before/after commit, partial frame, seeded probability, start-up file, held and dropped pushes, refused bad faults) | $faults |
| hostile frames sent to live services (random, mutated, deeply nested, oversized, invalid UTF-8, hostile params for every op; $seeds seeds × $rounds rounds × 60 frames × 2 services) | $hostile |
| authorization matrix (8 principals × 6 actions, against docs/SECURITY.md) | $matrix run |
| failed tests | $failed |
| **losses** (acknowledged writes missing, duplicates, corrupt files) | **$([ "$failed" = 0 ] && echo 0 || echo "see failures")** |

Not yet measured here: kills at random moments over many iterations, a load and soak run with
p99 and memory over time, libFuzzer on the frame and JSON decoders.
DOC
cat docs/RELIABILITY.md
exit $status
