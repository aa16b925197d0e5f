#!/usr/bin/env bash
# Issue 20 on the real GPU: a soak of the headless exporter at 0.1 s (RSS, RssAnon, threads, open fds and CPU
# every EVERY_S seconds for DURATION_S), then resident memory split by mapping: gpusight's own anonymous memory,
# the driver libraries (libcuda, libnvidia-ml and the rest of libnvidia-*), the gpusight binary, other files.
#
#   DURATION_S=600 EVERY_S=30 scripts/device/soak_memory.sh      # 10 min; results in $OUT (default /tmp/soak_memory)
#   HISTORY_S=120 DURATION_S=570 EVERY_S=30 scripts/device/soak_memory.sh   # rings full at 300 s, flat after
#
# What to look for: after the first ~2 minutes RSS and RssAnon flat (the machine history at 0.1 s fills in 15 min
# but a 1-GPU machine's rings are under 2 MB), threads and fds constant; the split's "anonymous" row is
# gpusight's own share plus what NVML allocates on the heap.
set -euo pipefail
DURATION_S=${DURATION_S:-600}
EVERY_S=${EVERY_S:-30}
INTERVAL=${INTERVAL:-0.1}
OUT=${OUT:-/tmp/soak_memory}
BIN=${GPUSIGHT:-target/release/gpusight}
PORT=${PORT:-19401}
mkdir -p "$OUT"
# HISTORY_S=120: a config with a shorter machine history, so the rings fill within a 10-minute soak (at 0.1 s the
# default 900 s history fills only after 15 minutes; per-process histories fill at 300 s either way).
CONFIG_ARGS=()
if [ -n "${HISTORY_S:-}" ]; then
  printf '[general]\nhistory_s = %s\n' "$HISTORY_S" > "$OUT/config.toml"
  CONFIG_ARGS=(--config "$OUT/config.toml")
fi
"$BIN" export --interval "$INTERVAL" --listen "127.0.0.1:$PORT" "${CONFIG_ARGS[@]}" 2>"$OUT/stderr.txt" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$PID/status"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$PID/stat"; }
{
  echo -e "elapsed_s\tvm_rss_kb\trss_anon_kb\trss_file_kb\tthreads\tfds\tcpu_s"
  start=$(date +%s)
  while :; do
    elapsed=$(($(date +%s) - start))
    kill -0 "$PID" 2>/dev/null || { echo "gpusight exited early" >&2; exit 1; }
    curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$PORT/metrics" || true
    fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
    echo -e "$elapsed\t$(kb VmRSS)\t$(kb RssAnon)\t$(kb RssFile)\t$(kb Threads)\t$fds\t$(cpu_s)"
    [ "$elapsed" -ge "$DURATION_S" ] && break
    sleep "$EVERY_S"
  done
} | tee "$OUT/soak.tsv"
echo "resident memory by mapping (kB), from /proc/$PID/smaps:" | tee "$OUT/split.txt"
bash "$(dirname "$0")/rss_split.sh" "$PID" | tee -a "$OUT/split.txt"
