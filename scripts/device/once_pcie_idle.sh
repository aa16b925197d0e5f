#!/usr/bin/env bash
# `--once`'s PCIe RX/TX on an idle card beside nvidia-smi's: four `gpusight --once --json` runs 3.5 s apart while
# `nvidia-smi dmon -s t -d 1` prints the card's PCIe throughput every second. On an idle GPU both should read about
# 0 MB/s; before the PCIe thread's first window waited for the GPU's first read, `--once` read 17-19 MB/s RX there
# (gpusight's own start-up, docs/validation.md).
#
# Needs: cargo build --release --locked --bins; an idle GPU (nothing running on it).
# Run:   GPU=0 bash scripts/device/once_pcie_idle.sh
# Prints: each run's RX and TX in MB/s (gpusight's KB are 1,000 bytes), then dmon's lines (rxpci, txpci in MB/s).
set -u
B=${RELEASE_DIR:-$PWD/target/release}/gpusight
GPU=${GPU:-0}
[ -x "$B" ] || { echo "no $B: cargo build --release --locked --bins"; exit 3; }
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi"; exit 3; }
DMON=$(mktemp)
nvidia-smi dmon -s t -d 1 -c 16 -i "$GPU" > "$DMON" 2>&1 &
DMON_PID=$!
sleep 1
for run in 1 2 3 4; do
    "$B" --once --json --only "$GPU" | RUN=$run python3 -c '
import json, os, sys
g = json.load(sys.stdin)["tick"]["gpus"][0]
def mb(key):
    return "N/A" if g.get(key) is None else "%.1f" % (g[key] / 1000)
print("gpusight --once run %s: GPU %s PCIe RX %s MB/s, TX %s MB/s"
      % (os.environ["RUN"], g["index"], mb("pcie_rx_kbps"), mb("pcie_tx_kbps")))
'
    sleep 3.5
done
wait "$DMON_PID"
echo "nvidia-smi dmon -s t -d 1 -i $GPU:"
cat "$DMON"
rm -f "$DMON"
