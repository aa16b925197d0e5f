#!/usr/bin/env bash
# Issue 14 on the real GPU: the refactored live path (run/ with one module per mode, spawn_feed, LiveFeed, the moved
# event loop) in every mode, and issue 16's job identity on a real torchrun job where only one GPU is lent.
#
#   1. `--once --json` idle and under a PyTorch matmul load, field by field beside nvidia-smi's query at the same
#      moment (memory used, temperature, power, SM clock, PCIe link, compute processes and their memory);
#   2. `doctor --duration 20s --json` under that load (a busy GPU: no warning expected), `report --duration 10s` (the CPU model
#      line from sysinfo), `export` scraped with curl beside nvidia-smi;
#   3. the monitor in tmux at 80x24 and 200x60, the help screen, q, and the shell's exit status after it;
#   4. a torchrun job of two ranks, on GPU 0 over gloo by default (scripts/device/ddp_train.py --same-gpu; on two
#      GPUs set JOB_ARGS="" for NCCL with one rank per GPU): `--once` (its Jobs
#      section), `--once --json` (each rank's `job`), the jobs view (J) at 80x24 and 160x50, Enter to expand, T and
#      Enter to send SIGTERM to the whole job, then whether any rank is left.
#
# Run from the repository root: OUT=/some/dir scripts/device/house_smoke.sh. Needs tmux, python3 with torch,
# target/release/gpusight, curl. Kills every process it started.
set -u
B=${GPUSIGHT:-./target/release/gpusight}
O=${OUT:-/tmp/house}
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
[ -x "$B" ] || { echo "no binary at $B"; exit 1; }
SOCK=gpusight-house-$$
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; pkill -f ddp_train.py 2>/dev/null; tmux -L $SOCK kill-server 2>/dev/null' EXIT
$B --version; nvidia-smi -L

SMI_Q=memory.used,temperature.gpu,power.draw,clocks.sm,pcie.link.gen.current,pcie.link.width.current,utilization.gpu
# compare NAME: one --once --json and one nvidia-smi query back to back, then the fields side by side.
compare() {
    local name=$1
    $B --once --json > "$O/${name}.json"; echo "once exit=$?"
    nvidia-smi --query-gpu=$SMI_Q --format=csv,noheader,nounits > "$O/${name}_smi.csv"
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits > "$O/${name}_apps.csv"
    python3 - "$O/${name}.json" "$O/${name}_smi.csv" "$O/${name}_apps.csv" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))["tick"]
gpu = g["gpus"][0]
smi = [x.strip() for x in open(sys.argv[2]).read().splitlines()[0].split(",")]
mem, temp, power, sm, gen, width, util = smi
rows = [
    ("memory used MiB", gpu["mem_used_bytes"] / 2**20, float(mem), 64),
    ("temperature C", gpu["temp_c"], float(temp), 2),
    ("power W", gpu["power_mw"] / 1000, float(power), max(15.0, 0.1 * float(power))),
    ("SM clock MHz", gpu["sm_clock_mhz"], float(sm), 60),
    ("PCIe gen", gpu["pcie_gen"], float(gen), 0),
    ("PCIe width", gpu["pcie_width"], float(width), 0),
    ("utilization %", gpu["util_pct"], float(util), 100),  # moves between the two reads: shown, not judged
]
bad = 0
for what, ours, theirs, tol in rows:
    ok = ours is not None and abs(float(ours) - theirs) <= tol
    bad += not ok
    print(f"  {what:18} gpusight {ours!s:>10}  nvidia-smi {theirs:>10}  {'ok' if ok else 'DIFFERS'}")
apps = {}
for line in open(sys.argv[3]).read().splitlines():
    if line.strip():
        pid, used = (x.strip() for x in line.split(","))
        apps[int(pid)] = float(used)
ours = {p["pid"]: (p.get("used_gpu_memory_bytes") or 0) / 2**20 for p in g["gpu_processes"] if p.get("pid")}
for pid, used in sorted(apps.items()):
    o = ours.get(pid)
    ok = o is not None and abs(o - used) <= 64
    bad += not ok
    print(f"  process {pid:<8} gpusight {o} MiB  nvidia-smi {used} MiB  {'ok' if ok else 'DIFFERS'}")
extra = set(ours) - set(apps)
if extra:
    print(f"  gpusight lists processes nvidia-smi does not: {sorted(extra)}")
print(f"  {len(rows) + len(apps)} fields, {bad} differ")
EOF
}

echo "== 1a. idle"; compare idle
python3 - <<'EOF' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(6 << 30, dtype=torch.uint8, device="cuda")
end = time.time() + 75
while time.time() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
EOF
LOAD=$!; PIDS+=("$LOAD")
sleep 8
echo "== 1b. under a matmul load (PID $LOAD)"; compare load
echo "== 2a. doctor --duration 20s --json under the load"
$B doctor --duration 20s --json > "$O/doctor.json"; echo "doctor exit=$?"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('  schema', d.get('schema'), 'exit', d.get('exit_code')); [print('  ', f['rule'], f['severity'], '|', f['title']) for f in d['findings']]" "$O/doctor.json"
echo "== 2b. report"
$B report --duration 10s > "$O/report.md"; echo "report exit=$?"; grep -iE "cpu|model|driver" "$O/report.md" | head -8
echo "== 2c. export beside nvidia-smi"
$B export --listen 127.0.0.1:19511 2> "$O/export.err" & EXP=$!; PIDS+=("$EXP")
sleep 4
curl -s --max-time 5 http://127.0.0.1:19511/metrics > "$O/metrics.txt"; echo "curl exit=$? $(wc -l < "$O/metrics.txt") lines"
grep -E '^DCGM_FI_DEV_(GPU_UTIL|FB_USED|POWER_USAGE|GPU_TEMP|SM_CLOCK)\{' "$O/metrics.txt" | cut -c1-60,200- | sed 's/{.*}/{..}/'
nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm --format=csv,noheader
echo "  metric families: $(grep -c '^# TYPE' "$O/metrics.txt")"
kill -TERM "$EXP"; wait "$EXP"; echo "export exit after SIGTERM=$?"

# capture NAME W H WAIT "ARGS" [KEYS...]: the monitor in a W x H tmux pane; the pane's shell prints the exit status.
capture() {
    local name=$1 w=$2 h=$3 wait=$4 args=$5; shift 5
    tmux -L $SOCK new-session -d -s s -x "$w" -y "$h" "TERM=xterm-256color $B $args; echo EXIT=\$?; sleep 30"
    sleep "$wait"
    for key in "$@"; do tmux -L $SOCK send-keys -t s "$key"; sleep 0.8; done
    tmux -L $SOCK capture-pane -p -t s > "$O/${name}_${w}x${h}.txt"
    tmux -L $SOCK kill-session -t s 2>/dev/null
    echo "== $name ${w}x${h}"; cat "$O/${name}_${w}x${h}.txt"
}
echo "== 3. monitor"
capture live 80 24 4 ""
capture live 200 60 4 ""
capture live_help 80 24 3 "" "?"
capture live_quit 80 24 3 "" q
wait "$LOAD" 2>/dev/null

echo "== 4. a torchrun job of two ranks (${JOB_ARGS---backend gloo --same-gpu})"
# On two GPUs: JOB_ARGS="" (NCCL, one rank per GPU).
torchrun --standalone --nproc_per_node=2 scripts/device/ddp_train.py ${JOB_ARGS---backend gloo --same-gpu} \
    --seconds 150 --workers 2 --batch 32 > "$O/torchrun.log" 2>&1 & TR=$!; PIDS+=("$TR")
for _ in $(seq 60); do [ "$(grep -c '^rank . pid' "$O/torchrun.log")" -ge 2 ] && break; sleep 1; done
cat "$O/torchrun.log"; sleep 8
$B --once > "$O/jobs_once.txt"; echo "once exit=$?"; sed -n '/[Jj]obs/,$p' "$O/jobs_once.txt" | head -12
$B --once --json > "$O/jobs_once.json"
python3 -c "
import json,sys
t=json.load(open(sys.argv[1]))['tick']
for p in t['processes']:
    if p.get('job'): print('  pid', p['pid'], p['name'], json.dumps(p['job']))
" "$O/jobs_once.json"
capture jobs 80 24 4 "" J
capture jobs 160 50 4 "" J
capture jobs_expanded 160 50 4 "" J Enter
capture jobs_term 160 50 4 "" J T
tmux -L $SOCK new-session -d -s s -x 160 -y 50 "TERM=xterm-256color $B; echo EXIT=\$?; sleep 30"
sleep 4; for k in J T Enter; do tmux -L $SOCK send-keys -t s "$k"; sleep 0.8; done
sleep 3
tmux -L $SOCK capture-pane -p -t s > "$O/jobs_after_term_160x50.txt"; cat "$O/jobs_after_term_160x50.txt" | tail -8
tmux -L $SOCK kill-session -t s 2>/dev/null
sleep 3
echo "ranks left after the whole-job SIGTERM: $(pgrep -fc 'ddp_train.py' || true)"; pgrep -fa ddp_train.py | cut -c1-120
wait "$TR"; echo "torchrun exit=$?"; tail -5 "$O/torchrun.log"
echo "== done"
