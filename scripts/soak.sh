#!/usr/bin/env bash
# Soak of the headless exporter: `gpusight export` runs for DURATION_S seconds, /metrics is scraped every EVERY_S
# seconds (so the server and its connections are exercised too), and at every step the process's VmRSS, RssAnon,
# RssFile, threads, open file descriptors and CPU seconds are read from /proc/PID. At the end, resident memory by
# mapping (its own anonymous memory, the NVIDIA driver libraries, the gpusight binary, other files).
#
# Usage: [DURATION_S=600] [EVERY_S=30] [INTERVAL=0.1] [HISTORY_S=N] [OUT=DIR] bash scripts/soak.sh [--synthetic SPEC]
#
#   HISTORY_S=120 DURATION_S=600 EVERY_S=30 bash scripts/soak.sh                 # on a GPU machine, 10 minutes
#   DURATION_S=3900 EVERY_S=60 nice -n 10 bash scripts/soak.sh --synthetic churn:8x1000   # no GPU needed, 65 min
#
# What to look for: RSS and RssAnon flat once the rings are full, threads and fds constant. At 0.1 s the default
# 15-minute machine history fills at 900 s; HISTORY_S=120 writes a config with `history_s = 120`, so the machine
# rings fill at 120 s and the per-process rings (five minutes) at 300 s, within a 10-minute run. `churn` replaces
# 48 GPU processes (6 a GPU) with new PIDs every 5 s, so per-process history must forget.
# Results in $OUT (default /tmp/gpusight-soak): soak.tsv, split.txt, stderr.txt. Needs target/release/gpusight
# (or GPUSIGHT=path) and curl.
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --synthetic) SOURCE=(--synthetic "${2:?--synthetic needs a SPEC, e.g. churn:8x1000}") ;;
  "") SOURCE=() ;;
  *) echo "usage: bash scripts/soak.sh [--synthetic SPEC] (see --help)" >&2; exit 2 ;;
esac
DURATION_S=${DURATION_S:-600}
EVERY_S=${EVERY_S:-30}
INTERVAL=${INTERVAL:-0.1}
OUT=${OUT:-/tmp/gpusight-soak}
BIN=${GPUSIGHT:-target/release/gpusight}
PORT=${PORT:-19401}
[ -x "$BIN" ] || { echo "no gpusight binary at $BIN (cargo build --release --locked, or GPUSIGHT=path)" >&2; exit 2; }
mkdir -p "$OUT"
CONFIG_ARGS=()
if [ -n "${HISTORY_S:-}" ]; then
  printf '[general]\nhistory_s = %s\n' "$HISTORY_S" > "$OUT/config.toml"
  CONFIG_ARGS=(--config "$OUT/config.toml")
fi
"$BIN" export "${SOURCE[@]}" --interval "$INTERVAL" --listen "127.0.0.1:$PORT" "${CONFIG_ARGS[@]}" 2>"$OUT/stderr.txt" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$PID/status"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.1f", ($12 + $13) / hz }' "/proc/$PID/stat"; }
{
  echo -e "elapsed_s\tvm_rss_kb\trss_anon_kb\trss_file_kb\tthreads\tfds\tcpu_s\tmetrics_bytes"
  start=$(date +%s)
  while :; do
    elapsed=$(($(date +%s) - start))
    kill -0 "$PID" 2>/dev/null || { echo "gpusight exited early: $(cat "$OUT/stderr.txt")" >&2; exit 1; }
    bytes=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | wc -c || echo 0)
    fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
    echo -e "$elapsed\t$(kb VmRSS)\t$(kb RssAnon)\t$(kb RssFile)\t$(kb Threads)\t$fds\t$(cpu_s)\t$bytes"
    [ "$elapsed" -ge "$DURATION_S" ] && break
    sleep "$EVERY_S"
  done
} | tee "$OUT/soak.tsv"
echo "resident memory by mapping (kB), from /proc/$PID/smaps:" | tee "$OUT/split.txt"
awk '
  /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6) ? $6 : "[anonymous]"; next }
  /^Rss:/ {
    n = name
    if (n ~ /libcuda/) k = "libcuda"
    else if (n ~ /libnvidia-ml/) k = "libnvidia-ml"
    else if (n ~ /libnvidia/) k = "other libnvidia-*"
    else if (n ~ /gpusight/) k = "the gpusight binary"
    else if (n == "[anonymous]" || n == "[heap]") k = "anonymous + heap"
    else if (n ~ /^\[/) k = "other " n
    else k = "other files"
    rss[k] += $2
  }
  END { for (k in rss) printf "%8d  %s\n", rss[k], k }
' "/proc/$PID/smaps" | sort -rn | tee -a "$OUT/split.txt"
