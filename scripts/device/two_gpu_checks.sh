#!/usr/bin/env bash
# The two-GPU checks of issue 11 that are not the soak: while a balanced two-rank DDP job runs, each rank's process
# on its own GPU with the right host PID; --only 1 in --once, doctor, export and the monitor; /metrics for gpu="0"
# and gpu="1" against nvidia-smi; report with both GPUs and the topology beside `nvidia-smi topo -m`; the monitor's
# screens at 80x24, 120x40, 160x50 and 200x60. Writes the screens and documents to $OUT.
set -u
BIN=${BIN:-./target/release/gpusight}
OUT=${OUT:-/tmp/two_gpu}
TUI=${TUI:-.device/tui_cost.py}
mkdir -p "$OUT"
here=$(dirname "$0")
note() { echo "[$(date +%T)] $*"; }

torchrun --standalone --nproc_per_node=2 "$here/ddp_train.py" --seconds 120 --workers 6 > "$OUT/ddp.log" 2>&1 &
train=$!
sleep 30
grep -E "^rank .* pid" "$OUT/ddp.log"
note "--once --json: GPU processes"
"$BIN" --once --json > "$OUT/once.json"
python3 - "$OUT/once.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["tick"]["gpu_processes"]:
    print(f"  gpu {p['gpu_index']} pid {p['pid']} mem {p.get('used_gpu_memory_bytes', 0) / 2**30:.1f} GiB sm {p.get('sm_util_pct')}")
for g in d["machine"]["gpus"]:
    print(f"  GPU {g['index']} nvlinks {g.get('nvlinks_active')} peers {[(x['index'], x.get('nvlinks'), x.get('pcie')) for x in g.get('peers', [])]}")
PY
note "--once --only 1"
"$BIN" --once --only 1 | head -8
note "/metrics vs nvidia-smi"
"$BIN" export --listen 127.0.0.1:9401 2> /dev/null & exp=$!
"$BIN" export --only 1 --listen 127.0.0.1:9402 2> /dev/null & exp1=$!
sleep 6
python3 - <<'PY'
import subprocess, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:9401/metrics", timeout=5).read().decode()
smi = subprocess.run(["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm,pcie.link.gen.current,pcie.link.width.current",
                      "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
want = {"DCGM_FI_DEV_GPU_UTIL": 1, "DCGM_FI_DEV_FB_USED": 2, "DCGM_FI_DEV_POWER_USAGE": 3, "DCGM_FI_DEV_GPU_TEMP": 4, "DCGM_FI_DEV_SM_CLOCK": 5,
        "gpusight_pcie_link_gen": 6, "gpusight_pcie_link_width": 7}
rows = {r.split(",")[0].strip(): [x.strip() for x in r.split(",")] for r in smi.strip().splitlines()}
for name, col in want.items():
    for gpu in ("0", "1"):
        ours = [l.rsplit(" ", 1)[1] for l in body.splitlines() if l.startswith(name + "{") and f'gpu="{gpu}"' in l]
        print(f"  {name:28} gpu={gpu}: gpusight {ours[0] if ours else 'absent':>10}  nvidia-smi {rows[gpu][col]:>10}")
PY
curl_body=$(python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9402/metrics", timeout=5).read().decode())')
echo "  export --only 1: gpu labels seen: $(echo "$curl_body" | grep -o 'gpu="[0-9]*"' | sort -u | tr '\n' ' ')"
kill $exp $exp1; wait $exp $exp1 2>/dev/null
note "doctor --only 1 --duration 20s"
"$BIN" doctor --only 1 --duration 20s; echo "  exit $?"
note "screens"
for size in 24x80 40x120 50x160 60x200; do
  rows=${size%x*}; cols=${size#*x}
  python3 "$TUI" --rows "$rows" --cols "$cols" --screen "$OUT/screen_${cols}x${rows}.txt" 6 "$BIN" | head -1
done
python3 "$TUI" --rows 40 --cols 120 --screen "$OUT/screen_only1_120x40.txt" 6 "$BIN" --only 1 | head -1
wait $train
note "report --duration 20s (idle) and nvidia-smi topo -m"
"$BIN" report --duration 20s > "$OUT/report.md"; echo "  exit $?"
sed -n '/## Topology/,/## GPU 0/p' "$OUT/report.md"
nvidia-smi topo -m
