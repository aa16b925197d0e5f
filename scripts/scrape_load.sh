#!/usr/bin/env bash
# Load test of `gpusight export`: 50 concurrent scrapers for 30 s against one exporter serving a synthetic
# 8-GPU machine; prints errors, p50/p99 latency and the exporter's CPU. Not a test; figures go to
# docs/performance.md. Usage: scripts/scrape_load.sh [SECONDS] [CLIENTS] [SCENARIO]
set -euo pipefail
seconds=${1:-30}
clients=${2:-50}
scenario=${3:-mixed:8}
addr=127.0.0.1:${PORT:-19400}
cargo build --release --example scrape_load
bin=${CARGO_TARGET_DIR:-target}/release/examples/scrape_load
"$bin" serve "$addr" "$scenario" &
server=$!
trap 'kill "$server"' EXIT
for _ in $(seq 50); do curl -fs "http://$addr/healthz" >/dev/null && break; sleep 0.1; done
"$bin" load "http://$addr/metrics" "$server" "$seconds" "$clients"
