#!/usr/bin/env bash
# Runs the reliability harness — kill -9 at named points and at random moments, injected faults,
# hostile input (with a wider fuzz than CI's), the authorization matrix, the mirror's crash
# scenarios, seeded random histories checked against a model of the sync rules, libFuzzer on
# the frame and JSON decoders, and a load/soak run — and writes
# docs/RELIABILITY.md from what actually ran. Exits non-zero if anything failed.
#   scripts/reliability.sh [ROUNDS] [SEEDS] [KILLS] [FUZZ_SECONDS] [SOAK_SECONDS] [HISTORIES]
#   (defaults: 200 rounds × 4 seeds of hostile input, 1000 kills under the random workload
#   (RandomWorkloadKillTests, 4 a run; the inserts-only RandomKillTests runs 40), 60 s per fuzz target,
#   a 60 s soak, 100 random histories per model-checked variant; MEOW_SCRATCH_PATH picks the
#   build directory, default .build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
rounds="${1:-200}"; seeds="${2:-4}"; kills="${3:-1000}"; fuzz_seconds="${4:-60}"; soak_seconds="${5:-60}"; histories="${6:-100}"
scratch="${MEOW_SCRATCH_PATH:-.build}"
swift build --build-tests --scratch-path "$scratch" >&2
log="$(mktemp)"; fuzz_log="$(mktemp)"; soak_log="$(mktemp)"
trap 'rm -f "$log" "$fuzz_log" "$soak_log"' EXIT
status=0
run() {  # suite filter, environment…
  local filter="$1"; shift
  env "$@" swift test --skip-build --scratch-path "$scratch" --filter "$filter" >>"$log" 2>&1 || status=1
}
run "CrashHarnessTests|FaultEffectTests|FaultTargetTests|AuthorizationMatrixTests|Mirroring|LoadTests|ConnectionLimitTests|FrameMemoryTests|StartupLockTests|CredentialHandlingTests"
for seed in $(seq 1 "$seeds"); do run "HostileInputTests" MEOW_FUZZ_SEED="$seed" MEOW_FUZZ_ROUNDS="$rounds"; done
run "RandomKillTests" MEOW_KILL_ITERATIONS=40 MEOW_KILL_SEED=1
kills_per_run=4
run "RandomWorkloadKillTests" MEOW_KILL_ITERATIONS="$(( (kills + kills_per_run - 1) / kills_per_run ))" MEOW_KILL_ROUNDS="$kills_per_run" MEOW_KILL_SEED=1
history_log="$(mktemp)"
MEOW_CONVERGENCE_SEEDS="$histories" swift test --skip-build --scratch-path "$scratch" --filter "ConvergenceTests|SharingLifecycleTests" >"$history_log" 2>&1 || status=1
cat "$history_log" >>"$log"
bash scripts/fuzz.sh "$fuzz_seconds" >"$fuzz_log" 2>&1 || status=1
"$scratch/debug/meow-bench" load --seconds "$soak_seconds" --clients 8 --json >"$soak_log" 2>&1 || status=1

passed() { grep -E "✔ Test \"$1" "$log" | head -1 | grep -oE "with [0-9]+ test cases" | grep -oE "[0-9]+" || echo 1; }
count_ok() { grep -cE "✔ Test .*$1" "$log" || true; }
failed=$(grep -cE "^✘ Test " "$log" || true)
kill_cases=0
for name in "store-service killed right after a save" "sync-service killed after a batch" "device killed after the server committed" "device killed after applying a fetched page"; do
  kill_cases=$((kill_cases + $(passed "$name")))
done
mirror_crash=$(grep -cE "✔ Test \"(Scenario (27|28|29|30)|Crash safety)" "$log" || true)
faults=$(count_ok "(dropBeforeCommit|dropAfterCommit|partialFrame|probability with a seed|faults armed from a start-up|held pushes|hold: the request waits|a bad fault|recordType rule|zone rule|zoneOwner is the real owner|without zone or record type)")
random_kills=$(grep -c "^random-kill: " "$log" || true)
kill_kinds=$(grep -oE "^random-kill: .* at=[a-zA-Z.]+" "$log" | sed -E 's/.* at=//; s/^sigkill$/SIGKILL on the k-th acknowledgement/' \
  | sort | uniq -c | awk '{n=$1; $1=""; printf "%s%s ×%s", sep, substr($0,2), n; sep=", "}')
sum() { grep -E "^random-kill: " "$log" | grep -oE " $1=[0-9]+" | grep -oE "[0-9]+" | awk '{s += $1} END {print s + 0}'; }
random_acked=$(sum acknowledged); random_events=$(sum events)
# The workload's kills: one `kill-workload:` line each, one `kill-workload-iteration:` line a run.
workload_kills=$(grep -c "^kill-workload: " "$log" || true)
workload_sum() { grep -E "^kill-workload-iteration: " "$log" | grep -oE " $1=[0-9]+" | grep -oE "[0-9]+" | awk '{s += $1} END {print s + 0}'; }
workload_runs=$(grep -c "^kill-workload-iteration: " "$log" || true)
workload_ops=$(workload_sum operations); workload_acked=$(workload_sum acknowledged)
workload_unknown=$(workload_sum unknown); workload_applied=$(workload_sum unknownApplied)
workload_table() {  # the field to group the kill lines by (victim, point, op)
  { grep -E "^kill-workload: " "$log" || true; } | { grep -oE " $1=[^ ]+" || true; } | sed -E "s/^ $1=//" | sort | uniq -c | sort -rn \
    | awk '{printf "| `%s` | %s |\n", $2, $1}'
}
workload_by_point=$(workload_table point); workload_by_op=$(workload_table op); workload_by_victim=$(workload_table victim)
fuzz_rows=$(grep -E "^fuzz: " "$fuzz_log" | sed -E 's/^fuzz: target=([^ ]+) seconds=([0-9]+) execs=([0-9]+) crashes=([0-9]+) corpus=([0-9]+)/| libFuzzer `\1` (\2 s, corpus grew to \5 inputs): executions, crashes | \3, **\4** |/')
[ -n "$fuzz_rows" ] || fuzz_rows="| libFuzzer | did not run: $(tail -3 "$fuzz_log" | tr '\n' ' ') |"
soak_table=$(python3 - "$soak_log" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
line = next((l for l in text.splitlines() if l.startswith("load-json: ")), None)
if line is None:
    print("The soak did not finish:\n\n```\n" + text[-2000:] + "\n```"); sys.exit()
s = json.loads(line[len("load-json: "):])
errors = ", ".join(f"`{k}` {v}" for k, v in sorted(s["errors"].items())) or "none"
print(f"{s['clients']} clients for {s['seconds']:.0f} s: **{s['throughput']:.0f} operations/s** ({s['operations']} operations), "
      f"clients finished **{s['finished']} of {s['clients']}**, errors by code: {errors} "
      f"(undocumented: **{s['unexpectedErrors']}**); afterwards both devices hold exactly the "
      f"{s['acknowledgedEvents']} acknowledged events: A {s['eventsA']}, B {s['eventsB']}, converged: **{str(s['converged']).lower()}**.\n")
print("| operation | count | p50 ms | p99 ms |\n|---|---|---|---|")
for name, l in s["latency"].items():
    if name != "all": print(f"| {name} | {l['count']} | {l['p50Ms']:.2f} | {l['p99Ms']:.2f} |")
l = s["latency"]["all"]; print(f"| **all** | {l['count']} | {l['p50Ms']:.2f} | {l['p99Ms']:.2f} |\n")
print("| service | RSS MiB: start → middle → end (peak) | heap (RssAnon) MiB: start → middle → end | RssAnon, second half |\n|---|---|---|---|")
for name, m in s["rssMiB"].items():
    r, a = m["rss"], m["anon"]
    mid = len(r) // 2
    print(f"| {name} | {r[0]} → {r[mid]} → {r[-1]} ({max(r)}) | {a[0]} → {a[mid]} → {a[-1]} | {a[-1] - a[mid]:+.1f} |")
rising = [f"{name} {m['anon'][-1] - m['anon'][len(m['anon']) // 2]:+.1f} MiB" for name, m in s["rssMiB"].items()
          if m["anon"][-1] - m["anon"][len(m["anon"]) // 2] > 2]
print("\n" + (f"**Memory is not shown flat by this run**: the heap still rose in its second half ({', '.join(rising)}). "
              "A longer soak (the fifth argument) tells cache fill from a leak." if rising else
              "Memory is flat: no service's heap rose more than 2 MiB in the second half of the run."))
PY
)
hostile=$((seeds * rounds * 60 * 2))
history_cases=$(grep -oE "^✔ Test \".*\" with [0-9]+ test cases" "$history_log" | grep -oE "[0-9]+ test cases" | grep -oE "[0-9]+" | awk '{s += $1} END {print s + 0}')
history_variants=$(grep -cE "^✔ Test \".*\" with [0-9]+ test cases" "$history_log" || true)
history_failed=$(grep -cE "^✘ Test \"seeded .* recorded an issue" "$history_log" || true)
rm -f "$history_log"
matrix=$(count_ok "every cell of who")
cat > docs/RELIABILITY.md <<DOC
# Reliability figures

Written by \`scripts/reliability.sh $rounds $seeds $kills $fuzz_seconds $soak_seconds $histories\` on $(date -u +%F) ($(nproc) cores). Every
figure below comes from tests that ran in that command; rerun it to reproduce.

| what | figure |
|---|---|
| named kill points survived (kill -9 at \`store.afterSaveCommit\`, \`sync.afterCommit\`, \`mirror.afterServerReply\`, \`mirror.afterApplyingPage\`; several hits each; restart; no acknowledged write lost, no duplicate, devices converge, \`integrity_check\` ok) | $kill_cases cases |
| kill -9 during sync and recovery scenarios (scenarios 27–30, crashes during a send) | $mirror_crash tests |
| injected-fault tests passed (dropped connection before/after commit, partial frame, seeded probability, start-up file, held and dropped pushes, requests held until released, refused bad faults, rules matched by zone, owner and record type) | $faults |
| hostile frames sent to live services (random, mutated, deeply nested, oversized, invalid UTF-8, hostile params for every op; $seeds seeds × $rounds rounds × 60 frames × 2 services) | $hostile |
| kill -9 under a random workload (\`RandomWorkloadKillTests\`, seed 1: the owner's two devices and a participant's on the TripLog model insert, update and delete trips, days, photos and tags, move photos between days (to-many), tag and untag them (many-to-many), the owner shares trips, changes the participant's permission and stops sharing while she accepts; each kill a random process's — a device's store-service or the sync-service — at a random hit of a named point or by SIGKILL on a random acknowledgement with a call in flight; restart; every device checked against a model of the acknowledged operations before each operation and after settling, an operation whose reply a kill took all or nothing, no id twice, the cloud holding every object once and each trip's graph in one zone, the participant's permission as last acknowledged, \`integrity_check\` ok; by point and by operation below) | **$workload_kills kills** in $workload_runs runs; $workload_ops operations, $workload_acked acknowledged, $workload_unknown with the reply lost to a kill ($workload_applied of them found applied, the rest found not applied) |
| kill -9 at random moments (\`RandomKillTests\`, seed 1: concurrent writers on a device and a sender to the cloud; the device or the sync-service killed at a random hit of a named point — incl. \`store.midSave\` and \`sync.midBatch\`, inside the transaction — or by SIGKILL on a random acknowledgement; restart; same checks) | $random_kills iterations: $kill_kinds; $random_acked acknowledged saves, $random_events events checked |
| seeded random histories checked against a model of the sync rules (\`ConvergenceTests\`: two devices, automatic mode, a participant whose permission flips, kill -9 of devices and cloud at named points; \`SharingLifecycleTests\`: invitations, acceptances, permission changes, removals, leavings, stopping and sharing again, and with the owner's second device writing on stale knowledge of the session's zone; two devices editing and moving events between sessions while one shares the session and stops sharing, again and again), $histories per variant | $history_cases histories in $history_variants variants passed; issues recorded: **$history_failed** |
$fuzz_rows
| authorization matrix (8 principals × 6 actions, against docs/SECURITY.md) | $matrix run |
| failed tests | $failed |
| **losses** (acknowledged writes missing, duplicates, corrupt files) | **$([ "$failed" = 0 ] && [ "$status" = 0 ] && echo 0 || echo "see failures")** |

## Kills under the random workload

\`RandomWorkloadKillTests\` (seed 1, $workload_runs runs of $kills_per_run kills). A kill armed at a named point that the round's
eight operations did not reach is delivered by SIGKILL at rest (point \`atRest\`); \`sigkill\` is the SIGKILL sent on
a random acknowledgement with the next call in flight. The operation is the one running when the kill came
(\`sync\`: the device syncing before its operation; \`send-after-…\`: sending what the operation wrote).

| victim | kills |
|---|---|
$workload_by_victim

| point | kills |
|---|---|
$workload_by_point

| operation | kills |
|---|---|
$workload_by_op

Reproduce one run: \`MEOW_KILL_SEED=1 MEOW_KILL_ITERATION=N MEOW_KILL_TRACE=1 swift test --skip-build --filter RandomWorkloadKillTests\`
(the \`kill-workload:\` lines name seed, run and kill; the trace prints each step and what it changed).

## Arming a kill point

A service started with \`MEOW_CRASH_AT=NAME\` in its environment kills itself with SIGKILL (no
clean-up, no flush, no reply, exactly as \`kill -9\`) the first time it reaches the point \`NAME\`;
\`MEOW_CRASH_AT=NAME:N\` waits for the N-th time. It writes one log line first,
\`{"msg":"crash point reached; dying as kill -9 would","point":"NAME"}\`, so a harness can tell
the planned death from a real crash. Without the variable the points cost one check of a static.
The points:

| point | service | the moment |
|---|---|---|
| \`store.midSave\` | store-service | one inserted object of a save written, the save's transaction not committed |
| \`store.afterSaveCommit\` | store-service | a save committed, its reply not sent |
| \`mirror.afterServerReply\` | store-service | the cloud committed and answered a batch, its verdict not applied |
| \`mirror.midImport\` | store-service | one record of a fetched page written straight into rows, the page's transaction not committed |
| \`mirror.afterApplyingPage\` | store-service | a fetched page applied, its token not saved |
| \`sync.midBatch\` | sync-service | one record of a \`records.modify\` written, its transaction not committed |
| \`sync.afterCommit\` | sync-service | a request's changes committed, its reply not sent |

After the kill, start the service again on the same \`--data-dir\`: the tests named above check
that no acknowledged write is lost or doubled and that devices converge
(\`CrashHarnessTests\`, \`RandomKillTests\`, \`RandomWorkloadKillTests\`, \`ConvergenceTests\`).

## Load and soak

\`meow-bench load --seconds $soak_seconds --clients 8\` (debug build, the one the tests use; two devices
mirroring to one sync-service, all on files): each client runs a seeded mix of saves of new
events, sorted fetches, counts, history reads, edits of one session every client contends for
(the \`error\` merge policy, so \`mergeConflict\` is an expected answer) and sync.send / sync.fetch.

$soak_table

Resident memory includes SQLite's page cache, which fills up to its bound (\`cache_size\` 32 MiB
per store file on a device; 64 MiB for the sync-service's writer and SQLite's default, 2 MiB,
for each of its four readers, which map the file instead) while the files grow, so growth early
in a run is expected; a leak would show as RssAnon still rising in the second half once the
caches are full.

## Half-sent frames

\`scripts/frame-memory.py\` (2026-12-02, debug build, sync-service in memory): N connections each
say hello, announce a 16 MiB frame and send 8 MiB of it, and hold it; then close.

| case | RssAnon at start | while held | after they closed |
|---|---|---|---|
| 1 connection | 2.5 MiB | 11.6 MiB | 3.6 MiB |
| 16 connections, \`--max-buffered-bytes 1073741824\` (all 16 held) | 2.5 MiB | 146.3 MiB | 18.0 MiB |
| 64 connections, default budget 128 MiB (16 held, 48 refused with \`bufferBudgetExceeded\`) | 2.5 MiB | 149.6 MiB | 21.4 MiB |

Before this (as reported with the issue that led to it) each such frame cost about 22 MB of
RSS (the buffer doubled past the bytes received, and every smaller buffer it grew from stayed in
malloc's kept heap), nothing bounded their total, and about 0.95 GB stayed resident after 64 of
them closed. Now a frame's buffer beyond 1 MiB is mapped from the kernel and grown with
\`mremap\`, so it costs the pages received (8 MiB of a 16 MiB frame: about 9 MiB, the rest being
the malloc'd first megabyte it grew from) and goes back to the kernel when the connection
closes; what stays (about 1 MiB per malloc arena) is the heap the services keep on purpose
(\`MemoryTuning\`). All connections' unfinished frames together stay within
\`--max-buffered-bytes\`. \`FrameMemoryTests\` pins the bound and the return with 40 connections
against a 64 MiB budget.

## Findings outside the figures

- The random-kill workload's first 1,000 kills (seed 1, 2026-12-06) failed 9 of its 250 runs on
  two bugs, each fixed with a test that failed before the fix (\`KillWorkloadFindingsTests\`). A
  device killed at \`mirror.afterServerReply\` after sending a new many-to-many link lost that link
  itself, for good, while the cloud and the other devices kept it (runs 29 and 195): sent again
  after the restart, the link's create met the cloud's copy, which the merge read as a raw CDMR
  record, without the link's sides. A CDMR record the cloud returns in a conflict, a revert or
  a lost create's lookup is now read as a fetched one is. And the device that made a share
  another of the owner's devices had stopped refused to share the graph again, \`alreadyShared\`
  for ever (runs 60, 69, 97, 137): it kept the share as live. A fetch now drops it when it lists
  the share's deletion, or lists the zone from nil without a share. The same 1,000 kills after
  the fixes: 0 issues; 1,000 more with seed 2: one failure of the harness itself (its own reading
  of the cloud reached the cloud's armed \`sync.afterCommit\`; such a reading is now reaped and
  made again), then 0 issues.
- The model-checked random histories found six bugs, each fixed with a test that failed before
  the fix: a device's edit back to the ancestor's value counted as no edit and lost to an earlier
  one; the same value set on two devices kept the earlier stamp, so an edit made between them
  won; a delete of a record whose create's answer was lost (or whose device was killed first)
  was dropped as "never sent" and the record came back everywhere; a participant accepted while
  at permission none kept a zone token past every record and never received them, and at none
  kept a copy it could no longer read; the owner's second device deleting an event another
  device had just moved into a share deleted only the old zone's tombstone. The variant with
  the owner's second device writing too then found two more, fixed the same way: an event that
  device saved into the zone its session had left stayed there, unseen by participants; and a
  fetch that applied an old share zone's tombstones before the new zone's records let the
  session's cascade delete an event only that device knew. Longer runs of the kill variants
  (500 histories each) found two more in the recovery of creates whose answer was lost: the
  server's copy was kept without being applied, so another device's edit made meanwhile was
  missing from the row and this device's next edit overwrote it; and a create the server no
  longer had because another device had deleted it was sent again, bringing it back. Such a
  copy is now applied like a fetched change, and the store's changes are fetched before a
  missing create is sent again. The automatic kill variant found one more, once in 500
  histories: a save landing while a conflicting send was at the server was merged without its
  queue entry, so the server's values replaced it on every device. A send now queues such
  saves before it merges; the sync-service's \`hold\` fault makes that interleaving exact in a
  test (\`ConflictTests.saveDuringAConflictedSend\`). The variant in which one device shares the session
  and stops sharing while both edit found one more in its first 60 histories: an edited event
  both devices moved, each into another zone, met the other's copy and lost the edit, because a
  save without a tag that met a record merged only the fields its queue entry named. Every
  field now counts. Letting its devices also move events between sessions found 8 failures in
  60 histories: a move deleted the old copy unconditionally, so a copy another device had moved
  meanwhile stayed beside a second one in another zone. A move now saves the record where it
  is, with its tag, first. A longer run found one more (1 in 500): an event one device deleted,
  moved away and back by the other, came back into the zone of the delete and was taken for a
  record re-created on purpose; a move now says so on the record (\`MC_movedFrom\`) and the
  delete stands. The same on two automatic-mode devices (about 1 history in 40): a fetch held an
  event's tombstone in one pass and saw it moved back into that zone in the next, then applied
  the older tombstone; a later page's live record now drops it. Longer runs of that variant
  (2026-12-01) found two more: share.create moved an event another device had moved to another
  session after share.create's fetch, leaving it in two zones (about 1 in 300; share.create now
  saves the graph where it is, with its tags, before the move, as a send's move does); and an
  update answered unknownItem met the delete policy because the fetch found the event back in
  the zone it was sent to, though at a newer tag (moved away and back; seed 724 failed 1 run in
  11): the event was deleted there and the edit lost. And (seed 878, 1 in 900) two devices
  moving one record into different zones at once, the second saving it where it is right after
  the first did (it learns the tag from its serverRecordChanged answer) and moving it before the
  first's move arrived, left a copy in each zone; that move now waits for a send after the
  first device's move has been fetched. Forcing share.create's root-first path (for sessions
  too large for one request) on this variant lost a whole session in 5 of 400 histories: a
  fetch's third round read the new share zone just before the move and the old one just after,
  and applied the held deletion; held deletions now wait for a fetch whose last round found no
  changes (0 of 500 forced histories after; \`HeldDeletionTests\` now makes that interleaving
  exact, and the variant with 9-item batches, \`--batch-size 9\`, takes the root-first path
  at the default limit). (docs/differences-mirroring.md and
  docs/differences-cloudkit.md name the tests.)

- A faster run shows the sync-service's writer cache filling: the release build at 8 clients for
  60 s (about 1,190 operations/s, 87,000 events) ends with the sync-service's heap still rising
  (+29 MiB in the second half, to 94 MiB), and the same for 150 s (188,301 events, converged)
  levels off at 95 MiB (+1.6 MiB in the second half; the devices +0.2 and +0.5). Binaries from
  before the 2026-11-30 mirroring work behave the same.

- The envelope fuzzer found Foundation's \`JSONDecoder\` trapping ("Illegal instruction" in
  \`JSONError.SourceLocation\`) on a body of 513 \`[\`: the nesting limit reached at the end of
  the input. The services parse requests with \`JSONParser\` and answer \`invalidJSON\` (checked
  against a live store-service); the client library (\`WireClient\` replies), \`meowctl tap\`
  and \`meowctl call\`, which decoded with Foundation, moved to \`JSONParser\` after this finding
  (60d309e, 6d458c4). The fuzzer no longer hands such inputs to Foundation, so it searches past it.
- Foundation's \`Int\` decoding accepts \`26666669666666666.80\` (a fraction no \`Double\` holds), so
  a \`JSONValue\` decoded by Foundation reads it as the integer 26666669666666666; \`JSONParser\`
  keeps the double. Values agree to within one unit in the last place.
- A 300 s soak (release build) found the sync-service dying by SIGSEGV after about 24,000
  commits: the change listener, kept as a closure in a \`Mutex\`, came back wrapped in two more
  reabstraction thunks from every read, until publishing a change overflowed the stack. It is
  boxed now (3cb7516; \`ChangeListenerTests\` commits 4,000 times on a 256 KiB stack, which the
  old code overflowed). The same soak showed the request log keeping every per-record
  permission decision of 10,000 requests in memory; an entry now keeps 20 (and denied ones up
  to 100) and counts the rest (114a0ef; \`RequestLogTests\`).
DOC
cat docs/RELIABILITY.md
exit $status
