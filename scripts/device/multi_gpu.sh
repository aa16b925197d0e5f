#!/usr/bin/env bash
# Every multi-GPU path of gpusight at once, on a machine with two (or more) GPUs, as issue 11 asks:
#   soak:   a real two-rank torchrun DDP job (ResNet-50, real DataLoader) runs while gpusight's monitor at 0.1 s,
#           `doctor`, `export` (scraped every second) and `--record --headless` all run for SOAK_S seconds
#           (default 480); beside them, gpusight's monitor at 1 s and nvitop at 1 s for 120 s (CPU and peak RSS).
#   repeat: 50 back-to-back `doctor --duration 5s` runs.
# It prints the crashes (must be 0), every exit code, and whether the recording replays to its last line.
#
#   scripts/device/multi_gpu.sh [soak|repeat|all]
#
# Needs: the release binary at $BIN (default target/release/gpusight), python3 with torch and torchvision,
# torchrun; for the cost lines, .device/tui_cost.py (../shared/tools) and nvitop importable (PYTHONPATH).
set -u
BIN=${BIN:-./target/release/gpusight}
OUT=${OUT:-/tmp/multi_gpu}
SOAK_S=${SOAK_S:-480}
TUI=${TUI:-.device/tui_cost.py}
mkdir -p "$OUT"
here=$(dirname "$0")
crashes=0
note() { echo "[$(date +%T)] $*"; }
# A fatal signal shows as 128+N from the shell, or -N from tui_cost.py.
verdict() {
  local name=$1 rc=$2
  case $rc in
    132|134|135|139|-4|-6|-7|-11) crashes=$((crashes + 1)); note "CRASH: $name exit $rc" ;;
    *) note "$name: exit $rc" ;;
  esac
}

soak() {
  note "soak: ${SOAK_S}s, $(nvidia-smi --query-gpu=index,name --format=csv,noheader | tr '\n' ';')"
  torchrun --standalone --nproc_per_node=2 "$here/ddp_train.py" --seconds $((SOAK_S + 40)) --workers 6 \
    > "$OUT/ddp.log" 2>&1 &
  local train=$!
  sleep 25
  "$BIN" --record "$OUT/soak.jsonl" --headless --overwrite 2> "$OUT/record.err" & local rec=$!
  "$BIN" export --listen 127.0.0.1:9400 2> "$OUT/export.err" & local exp=$!
  "$BIN" doctor --duration "${SOAK_S}s" --json > "$OUT/doctor_soak.json" 2> "$OUT/doctor_soak.err" & local doc=$!
  python3 "$TUI" --rows 50 --cols 160 --screen "$OUT/monitor_soak.txt" "$SOAK_S" "$BIN" --interval 0.1 \
    > "$OUT/cost_monitor_0.1s.txt" 2>&1 & local mon=$!
  python3 - "$SOAK_S" > "$OUT/scrapes.txt" 2>&1 <<'PY' &
import sys, time, urllib.request
ok = err = 0
end = time.time() + float(sys.argv[1]) - 5
time.sleep(3)
while time.time() < end:
    try:
        body = urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=5).read().decode()
        ok += 1
    except Exception as e:
        err += 1
        print("scrape error:", e)
    time.sleep(1)
print(f"scrapes ok={ok} errors={err}")
PY
  local scr=$!
  sleep 5
  python3 "$TUI" --rows 50 --cols 160 120 "$BIN" > "$OUT/cost_gpusight_1s.txt" 2>&1 &
  python3 "$TUI" --rows 50 --cols 160 120 python3 -m nvitop > "$OUT/cost_nvitop_1s.txt" 2>&1 &
  wait $mon; cat "$OUT/cost_monitor_0.1s.txt" | head -1
  grep -q "exit=killed" "$OUT/cost_monitor_0.1s.txt" && note "monitor at 0.1 s: ran the whole soak" ||
    verdict "monitor 0.1 s" "$(sed -n 's/.*exit=\(-\?[0-9]*\).*/\1/p' "$OUT/cost_monitor_0.1s.txt" | head -1)"
  wait $doc; verdict "doctor ${SOAK_S}s" $?
  wait $scr; tail -1 "$OUT/scrapes.txt"
  kill -INT $rec; wait $rec; verdict "record --headless (SIGINT)" $?
  kill -TERM $exp; wait $exp; verdict "export (SIGTERM)" $?
  wait $train; note "training exit $?"; grep -E "^rank" "$OUT/ddp.log" | tail -4
  head -1 "$OUT/cost_gpusight_1s.txt"; head -1 "$OUT/cost_nvitop_1s.txt"
  python3 - "$OUT/doctor_soak.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("doctor findings:", [(f.get("rule"), f.get("gpu"), f.get("severity")) for f in d.get("findings", [])])
PY
  # The recording replays to its last line: the last frame --once shows is the last line's sample time.
  local last shown
  last=$(tail -1 "$OUT/soak.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["at_ms"])')
  shown=$("$BIN" --replay "$OUT/soak.jsonl" --once --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tick"]["at_ms"])')
  note "recording: $(wc -l < "$OUT/soak.jsonl") lines; last line at_ms=$last; replay --once shows at_ms=$shown"
  [ "$last" = "$shown" ] && note "the recording replays to its last line" || note "MISMATCH: replay stops early"
  "$BIN" --replay "$OUT/soak.jsonl" doctor > "$OUT/replay_doctor.txt" 2>&1; note "replay doctor exit $? ($(head -1 "$OUT/replay_doctor.txt"))"
  gzip -kf "$OUT/soak.jsonl"
}

repeat() {
  note "repeat: 50 x doctor --duration 5s"
  local codes=""
  for i in $(seq 1 50); do
    "$BIN" doctor --duration 5s > /dev/null 2>> "$OUT/repeat.err"
    local rc=$?
    codes="$codes $rc"
    case $rc in 132|134|135|139) crashes=$((crashes + 1)); note "CRASH: doctor run $i exit $rc" ;; esac
  done
  note "exit codes:$codes"
}

case ${1:-all} in
  soak) soak ;;
  repeat) repeat ;;
  all) soak; repeat ;;
  *) echo "usage: $0 [soak|repeat|all]" >&2; exit 2 ;;
esac
note "crashes: $crashes"
[ "$crashes" -eq 0 ]
