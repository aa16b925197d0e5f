#!/usr/bin/env bash
# Issue 20 on the real GPU, one call (~3.5 min):
#   1. PCIe from GPM against nvmlDeviceGetPcieThroughput while a job copies host to device (the monitor now takes
#      PCIe from GPM where the GPU has it and stops its PCIe thread), `examples/nvml_probe pcie`.
#   2. CPU and memory side by side while a ResNet training step runs (scripts/device/job_impact.py train):
#      the monitor at 1 s and at 0.1 s (each in a pseudo-terminal, 160x50, through .device/tui_cost.py) and
#      `nvidia-smi dmon -d 1`, all started together; CPU counted over a steady window of WINDOW s that starts 20 s
#      after them, from the sum of every thread's run time (/proc/PID/task/*/schedstat, ns) and from utime+stime;
#      the 1 s monitor's CPU by thread; resident memory by mapping for the monitor and for dmon.
#   GPUSIGHT=target/release/gpusight WINDOW=120 OUT=/tmp/perf_side bash scripts/device/perf_side.sh  (SKIP_PCIE=1: part 2 only)
#   Optional beside them, each at 1 s: BEFORE=path (another build, e.g. without the hot-text layout) and ARENA=1 (this
#   build with MALLOC_ARENA_MAX=1: one malloc arena for every thread).
set -u
B=${GPUSIGHT:-$PWD/target/release/gpusight}
P=${PROBE:-$PWD/target/release/examples/nvml_probe}
O=${OUT:-/tmp/perf_side}
WINDOW=${WINDOW:-120}
mkdir -p "$O"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; touch /tmp/perf_side.stop' EXIT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site

if [ -z "${SKIP_PCIE:-}" ]; then
echo "== 1. PCIe: GPM against pcie_throughput under host-to-device copies"
python3 - <<'EOF' &
import time, torch
pinned = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
pageable = torch.empty(1 << 30, dtype=torch.uint8)
dev = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
end = time.time() + 24
n = 0
while time.time() < end:
    # 10 s pinned, then pageable: two rates to compare.
    src = pinned if time.time() < end - 12 else pageable
    dev.copy_(src, non_blocking=True); torch.cuda.synchronize(); n += 1
print(f"copies: {n} GiB in 24 s")
EOF
COPY=$!
sleep 2
"$P" pcie 10 | tee "$O/pcie_compare.txt"
wait $COPY
fi

echo "== 2. CPU and memory side by side (window $WINDOW s)"
rm -f /tmp/perf_side.stop
python3 scripts/device/job_impact.py train --log /tmp/perf_side.log --stop /tmp/perf_side.stop --warmup 5 &
PIDS+=($!)
sleep 15
total=$((WINDOW + 30))
python3 .device/tui_cost.py --rows 50 --cols 160 "$total" "$B" > "$O/tui_1s.txt" &
PIDS+=($!)
python3 .device/tui_cost.py --rows 50 --cols 160 "$total" "$B" --interval 0.1 > "$O/tui_01s.txt" &
PIDS+=($!)
EXTRA=()  # "label:binary copy" of the optional monitors, each a copy so that pgrep tells them apart
if [ -n "${BEFORE:-}" ]; then
  cp "$BEFORE" /tmp/gpusight-before
  python3 .device/tui_cost.py --rows 50 --cols 160 "$total" /tmp/gpusight-before > "$O/tui_before.txt" &
  PIDS+=($!); EXTRA+=("gpusight 1 s, the other build:/tmp/gpusight-before")
fi
if [ -n "${ARENA:-}" ]; then
  cp "$B" /tmp/gpusight-arena1
  MALLOC_ARENA_MAX=1 python3 .device/tui_cost.py --rows 50 --cols 160 "$total" /tmp/gpusight-arena1 > "$O/tui_arena1.txt" &
  PIDS+=($!); EXTRA+=("gpusight 1 s, MALLOC_ARENA_MAX=1:/tmp/gpusight-arena1")
fi
nvidia-smi dmon -d 1 > "$O/dmon.txt" &
DMON=$!
PIDS+=($DMON)
sleep 3
G1=$(pgrep -xf "$B"); G01=$(pgrep -xf "$B --interval 0.1")
PAIRS=("gpusight 1 s:$G1" "gpusight 0.1 s:$G01")
for e in "${EXTRA[@]}"; do PAIRS+=("${e%%:*}:$(pgrep -xf "${e##*:}")"); done
PAIRS+=("nvidia-smi dmon -d 1:$DMON")
echo "pids: ${PAIRS[*]}"
run_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
sleep 17
declare -A a_ns a_t
for pair in "${PAIRS[@]}"; do p=${pair##*:}; a_ns[$p]=$(run_ns "$p"); a_t[$p]=$(ticks "$p"); done
bash scripts/device/threads.sh "$G1" > /tmp/perf_side.t1
sleep "$WINDOW"
bash scripts/device/threads.sh "$G1" > /tmp/perf_side.t2
hz=$(getconf CLK_TCK)
{
    echo "| program | CPU % of one core (schedstat) | CPU % (utime+stime) | VmRSS kB | VmHWM kB | RssAnon kB | RssFile kB | threads |"
    echo "|---|---|---|---|---|---|---|---|"
    for pair in "${PAIRS[@]}"; do
        name=${pair%%:*}; p=${pair##*:}
        b_ns=$(run_ns "$p"); b_t=$(ticks "$p")
        st() { awk -v f="$1:" '$1 == f {print $2}' /proc/"$p"/status; }
        python3 -c "print('| $name | %.3f | %.3f | $(st VmRSS) | $(st VmHWM) | $(st RssAnon) | $(st RssFile) | $(st Threads) |' % (($b_ns - ${a_ns[$p]}) / 1e9 / $WINDOW * 100, ($b_t - ${a_t[$p]}) / $hz / $WINDOW * 100))"
    done
} | tee "$O/side_by_side.md"
echo "1 s monitor, CPU s by thread at the window's start and end:"
paste /tmp/perf_side.t1 /tmp/perf_side.t2 | tee "$O/threads_1s.txt"
n=0
for pair in "${PAIRS[@]}"; do
    name=${pair%%:*}; p=${pair##*:}; n=$((n + 1))
    echo "resident memory by mapping, $name (kB):"
    bash scripts/device/rss_split.sh "$p" | tee "$O/split_$n.txt"
done
touch /tmp/perf_side.stop
wait "${PIDS[@]:1:${#PIDS[@]}-2}"
cat "$O"/tui_*.txt
kill "$DMON" 2>/dev/null
wait "${PIDS[0]}" 2>/dev/null
grep -c . /tmp/perf_side.log | sed 's/^/training steps logged: /'
