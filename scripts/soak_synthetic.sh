#!/usr/bin/env bash
# Soak of the headless exporter on a synthetic machine (no GPU needed): runs
# `gpusight export --synthetic SPEC --interval INTERVAL` for DURATION_S seconds, scrapes /metrics every
# EVERY_S seconds (so the server and its connections are exercised too) and records, at every step, the
# process's VmRSS, RssAnon, RssFile, threads, open file descriptors and CPU seconds from /proc/PID.
#
#   scripts/soak_synthetic.sh [DURATION_S] [SPEC] [INTERVAL] [EVERY_S]
#   nice -n 10 scripts/soak_synthetic.sh 3900 churn:8x1000 0.1 60 > soak.tsv
#
# The history (15 min at 0.1 s = 9,000 samples) is full after 900 s: from there on RSS, threads and fds must be
# flat. `churn` replaces 48 GPU processes (6 a GPU) with new PIDs every 5 s, so per-process history must forget.
set -euo pipefail
DURATION_S=${1:-3900}
SPEC=${2:-churn:8x1000}
INTERVAL=${3:-0.1}
EVERY_S=${4:-60}
BIN=${GPUSIGHT_BIN:-target/release/gpusight}
PORT=${PORT:-19400}
"$BIN" export --synthetic "$SPEC" --interval "$INTERVAL" --listen "127.0.0.1:$PORT" 2>"${SOAK_STDERR:-/dev/null}" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$PID/status"; }
cpu_s() {
  local ticks
  ticks=$(awk '{ print $14 + $15 }' "/proc/$PID/stat")
  awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }'
}
echo -e "elapsed_s\tvm_rss_kb\trss_anon_kb\trss_file_kb\tthreads\tfds\tcpu_s\tmetrics_bytes"
start=$(date +%s)
while :; do
  now=$(date +%s)
  elapsed=$((now - start))
  kill -0 "$PID" 2>/dev/null || { echo "gpusight exited early" >&2; exit 1; }
  bytes=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | wc -c || echo 0)
  fds=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  echo -e "$elapsed\t$(kb VmRSS)\t$(kb RssAnon)\t$(kb RssFile)\t$(kb Threads)\t$fds\t$(cpu_s)\t$bytes"
  [ "$elapsed" -ge "$DURATION_S" ] && break
  sleep "$EVERY_S"
done
