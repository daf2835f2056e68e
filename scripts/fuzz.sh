#!/usr/bin/env bash
# Runs each libFuzzer target (Tests/Fuzz/<name>: the frame decoder; envelope and JSON value
# decoding) for SECONDS (default 60) from a corpus seeded with valid frames and bodies, and prints
# one line per target: execs, crashes, corpus size. Exits non-zero if a target crashed; a crash
# input is kept as .build-fuzz/artifacts/<name>-crash-* (replay: .build-fuzz/debug/<name> FILE).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
seconds="${1:-60}"
scratch=.build-fuzz
targets=(fuzz-frame fuzz-envelope)
for target in "${targets[@]}"; do
  swift build --product "$target" --sanitize=fuzzer --scratch-path "$scratch" >&2
done
mkdir -p "$scratch/artifacts" "$scratch/logs"

# Seeds: what the services really exchange. fuzz-frame's inputs are a chunk-size byte, then a
# stream of frames; fuzz-envelope's are one frame body.
python3 - "$scratch/corpus" <<'PY'
import json, os, struct, sys
root = sys.argv[1]
bodies = [
    {"id": 1, "op": "hello", "params": {"minVersion": 1, "maxVersion": 1, "client": "fuzz", "credential": "u-secret"}},
    {"id": 2, "op": "ping", "params": {}},
    {"id": "c", "op": "object.insert", "params": {"context": "c1", "objects": [{"entity": "CareEvent", "values": {
        "id": "e1", "eventTypeRaw": "bloodGlucose", "value": 112.5, "occurredAt": "2026-11-30T08:00:00Z"}}]}},
    {"id": 4, "op": "records.modify", "params": {"database": "private", "saves": [{"recordName": "r1", "recordType": "CD_CareEvent",
        "zoneID": {"zoneName": "com.apple.coredata.cloudkit.zone", "ownerName": "__defaultOwner__"}, "fields": {"CD_value": 1e3}}]}},
    {"id": 5, "ok": True, "result": {"objects": [], "moreComing": False, "token": None}},
    {"id": 6, "ok": False, "error": {"code": "serverRecordChanged", "message": "tag \u00e9", "details": {"ckErrorCode": 14}}},
    {"event": "remoteChange", "seq": 7, "data": {"store": "Private", "token": 12}},
]
texts = [json.dumps(b, ensure_ascii=False).encode() for b in bodies]
# A change page as the sync-service writes it: fields in stored form (kept as text alone by the
# device's parse), and one record whose fields are not (a reference: kept beside a tree).
texts.append(b'{"id":8,"ok":true,"result":{"records":[{"recordName":"r1","fields":{"CD_at":{"type":"date","value":"2026-11-30T08:00:00.000Z"},'
             b'"CD_n":{"type":"int64","value":-12},"CD_note":{"type":"string","value":"a\\"b\\u0000\u00e9"},"CD_v":{"type":"double","value":1.5e-7}}},'
             b'{"recordName":"r2","fields":{"CD_session":{"type":"reference","value":{"recordName":"s1","action":"none"}}}}],"moreComing":false}}')
for name in ("fuzz-frame", "fuzz-envelope"):
    os.makedirs(os.path.join(root, name), exist_ok=True)
for i, text in enumerate(texts):
    frame = struct.pack(">I", len(text)) + text
    open(os.path.join(root, "fuzz-envelope", f"seed-{i}"), "wb").write(text)
    open(os.path.join(root, "fuzz-frame", f"seed-{i}"), "wb").write(bytes([i]) + frame)
stream = b"".join(struct.pack(">I", len(t)) + t for t in texts)
open(os.path.join(root, "fuzz-frame", "seed-stream"), "wb").write(b"\x03" + stream + b"\x00\x00")
PY

# Swift's own backtracer would take a crash's signal first and libFuzzer would save no input.
export SWIFT_BACKTRACE=enable=no
status=0
for target in "${targets[@]}"; do
  log="$scratch/logs/$target.log"
  rm -f "$scratch/artifacts/$target-"*
  set +e
  "$scratch/debug/$target" -max_total_time="$seconds" -timeout=10 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$scratch/artifacts/$target-" "$scratch/corpus/$target" >"$log" 2>&1
  code=$?
  set -e
  execs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo 0)
  crashes=$(find "$scratch/artifacts" -name "$target-*" | wc -l)
  [ "$code" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
  corpus=$(find "$scratch/corpus/$target" -type f | wc -l)
  echo "fuzz: target=$target seconds=$seconds execs=$execs crashes=$crashes corpus=$corpus"
  if [ "$crashes" -ne 0 ]; then
    status=1
    grep -E "Fatal error|Precondition|ERROR: libFuzzer|SUMMARY" "$log" | head -5 >&2 || true
  fi
done
exit $status
