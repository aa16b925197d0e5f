#!/usr/bin/env bash
# gpusight validated end to end on a GPU machine: its readings beside nvidia-smi, its verdicts on real PyTorch jobs
# beside each job's own ground truth, and its cost beside `nvidia-smi dmon` and nvitop. One group per run (each fits
# in ten minutes unless said otherwise):
#
#   GROUP=readings bash scripts/device/cluster_cases.sh   # ~5 min: --once --json, export and report beside
#                                                          # nvidia-smi, doctor under load, the monitor in tmux,
#                                                          # a torchrun job's identity, jobs view and whole-job
#                                                          # SIGTERM (JOB_ARGS="" on two GPUs: NCCL, a rank a GPU)
#   GROUP=findings bash scripts/device/cluster_cases.sh   # ~7 min: healthy, one-worker, small files behind a slow
#                                                          # store (cgroup io.max), a checkpoint writer
#   GROUP=waits ONLY_CASES="launch-tiny launch-graph launch-b4096" bash scripts/device/cluster_cases.sh
#   GROUP=waits ONLY_CASES="h2d-pageable h2d-pinned h2d-overlap" bash scripts/device/cluster_cases.sh
#   GROUP=waits ONLY_CASES="cpu-quota cpu-quota-free remote-http remote-local" bash scripts/device/cluster_cases.sh
#                                                          # ~5.5-7 min each: why a GPU waits (launches, copies,
#                                                          # a CPU quota, a remote dataset), with their controls
#   GROUP=ranks ONLY_CASES="balanced loader compute" bash scripts/device/cluster_cases.sh   # two GPUs, ~6 min
#   GROUP=ranks ONLY_CASES="hang" bash scripts/device/cluster_cases.sh                      # two GPUs, ~4 min
#   GROUP=cost bash scripts/device/cluster_cases.sh       # ~2.5 min: CPU and memory of gpusight at 1 s and 0.1 s,
#                                                          # `nvidia-smi dmon -d 1` and nvitop (when importable),
#                                                          # side by side while a training step runs
#   GROUP=nvml-threads bash scripts/device/cluster_cases.sh   # two GPUs, ~2 min: which NVML call families
#                                                              # survive concurrent calls
#   GROUP=memory bash scripts/device/cluster_cases.sh        # ~8.5 min: the memory rules on real PyTorch programs,
#                                                            # one after another: a training loop that leaks (each
#                                                            # validation loss kept with its graph) and its
#                                                            # leak-free control (vram-growing), a notebook idle
#                                                            # after 20 s of training (idle-holder, judged over 40 s
#                                                            # through a thresholds file), a bursty server pausing
#                                                            # 50 s (serving, no idle-holder)
#   GROUP=serve-ranks bash scripts/device/cluster_cases.sh   # ~9.5 min: bursty inference server (6 min 15 s),
#                                                            # 2 ranks over gloo with rank 0 in a 135 s CPU phase
#   GROUP=host bash scripts/device/cluster_cases.sh          # ~6.5 min: CPU-offloaded optimizer, torch.compile
#                                                            # warm-up then steady, 8 workers under taskset -c 0,1,
#                                                            # a healthy job whose stdout, logs and checkpoints go
#                                                            # to a FUSE mount, the exporter over TLS + basic auth
#                                                            # scraped by a real Prometheus
#   GROUP=epilog bash scripts/device/cluster_cases.sh        # ~1 min, as root: the Slurm epilog beside a job and
#                                                            # after it (also the last case of host)
#   GROUP=long bash scripts/device/cluster_cases.sh          # ~11 min: a healthy ResNet-50, doctor 10 min (LONG_S); start it with setsid in the background (one call is 10 min at most)
#   GROUP=pane bash scripts/device/cluster_cases.sh          # ~2 min: a starved ResNet-50, the monitor in tmux at
#                                                            # 5 s and 35 s (80x24, 200x60), --status, --once at 80
#   GROUP=ssh bash scripts/device/cluster_cases.sh           # ~2.5 min, as root: `gpusight ssh localhost` beside a
#                                                            # training job through a throwaway sshd on 127.0.0.1
#                                                            # (--once, --doctor beside the local doctor, the view in
#                                                            # tmux, no remote recorder left after q, stream bytes and
#                                                            # the CPU of both sides); needs /usr/sbin/sshd (or
#                                                            # SSH_DEBS=DIR with openssh-server/-client .debs)
#   GROUP=account PART=cpu bash scripts/device/cluster_cases.sh   # 7.5-8.5 min a part (PART=cpu, life, gpu, io,
#                                                            # jobs; or ONLY_CASES="..."): 18 jobs of account.py,
#                                                            # each in one situation that makes its GPU wait for
#                                                            # one known cause (another user's CPU load, over-
#                                                            # subscribed worker threads, a restart loop, a slower
#                                                            # rank, rare requests, a start-up load, a full card,
#                                                            # synchronous checkpoints, decoding in the main
#                                                            # process, a spinning kernel, slow storage, host
#                                                            # memory pressure, a server beside training, a CPU-
#                                                            # pinned Slurm job), each with its own ground truth;
#                                                            # run by scripts/device/account_cases.sh, whose header
#                                                            # says more (GROUP=account alone lists the parts;
#                                                            # SMOKE=1 runs every program on the CPU, no GPU)
#   SKIP="serve offload" ...                                 # leaves out the named cases of serve-ranks and host
#   GROUP=tls WEB=DIR bash scripts/device/cluster_cases.sh   # on any machine with openssl and Python's bcrypt:
#                                                            # writes what GROUP=host's exporter case needs
#
# Needs: target/release/gpusight (cargo build --release --locked; GPUSIGHT=path for another); PyTorch with CUDA and
# torchvision (the programs are scripts/device/workloads.py); torchrun for the jobs of ranks and readings; tmux for
# readings; util-linux `script` for cost; target/release/examples/nvml_concurrency for nvml-threads (cargo build
# --release --example nvml_concurrency). For GROUP=host's FUSE mount, libfuse2 (the Debian packages `libfuse2` and
# `fuse` unpacked from DEBS=DIR/*.deb if the system has none) and fusepy's fuse.py in FUSEPY=DIR; for its exporter
# check, Prometheus (PROM_DEB=the Debian package, unpacked, if none is installed) and WEB=DIR holding web.yml,
# cert.pem, key.pem, prometheus.yml (GROUP=tls). Without any of them the case that needs it says so and is skipped,
# never faked.
# Results: GROUP=serve-ranks and host: $OUT/cluster-GROUP.tgz (NAME.doctor.json, NAME.jsonl.gz, NAME.truth.json,
# NAME.out, log.txt). GROUP=memory: only ${OUT:-/tmp/gpusight-validate}/memory.tgz (memory/: table.md, log.txt,
# thresholds.toml, and each case's doctor and replay JSON, recording, ground truth and output). The other groups: ${OUT:-/tmp/gpusight-validate}/GROUP/ (log.txt, table.md, each case's
# doctor JSON, recording and ground truth) and GROUP.tgz beside it.
#
# Safe on a shared box: never changes clocks, power limits, persistence or MIG, never resets the GPU, and kills
# every process it started on exit.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=${GPUSIGHT:-$PWD/target/release/gpusight}
S=$PWD/scripts/device
BASE=${OUT:-/tmp/gpusight-validate}

case "${1:-${GROUP:-}}" in
    -h|--help|help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

# ---- readings: what gpusight reads, beside nvidia-smi; the monitor; a torchrun job's identity ------------------------
group_readings() (
O=$BASE/readings
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
[ -x "$B" ] || { echo "no binary at $B"; exit 1; }
SOCK=gpusight-house-$$
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; pkill -f "workloads.py ddp" 2>/dev/null; tmux -L $SOCK kill-server 2>/dev/null' EXIT
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
# 30 s: a watch shorter than every rule's window (30 s) is "unknown" (exit 3), too short to judge.
echo "== 2a. doctor --duration 30s --json under the load"
$B doctor --duration 30s --json > "$O/doctor.json"; echo "doctor exit=$?"
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
torchrun --standalone --nproc_per_node=2 "$S/workloads.py" ddp ${JOB_ARGS---backend gloo --same-gpu} \
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
echo "ranks left after the whole-job SIGTERM: $(pgrep -fc 'workloads.py ddp' || true)"; pgrep -fa 'workloads.py ddp' | cut -c1-120
wait "$TR"; echo "torchrun exit=$?"; tail -5 "$O/torchrun.log"
echo "== done"
)

# ---- findings: real training jobs on files, beside torch.profiler's DataLoader share --------------------------------
group_findings() (
O=$BASE/findings
# The data must live on a block device (tmpfs has no storage to wait for): /var/tmp unless WORKDIR says otherwise.
W=${WORKDIR:-/var/tmp/gs_findings}
# io.max for the small-files case ("" turns the throttle off): 600 reads/s and 64 MiB/s per disk.
IO_MAX=${IO_MAX-riops=600 rbps=67108864}
CG=/sys/fs/cgroup/gs_slow_store
mkdir -p "$O" "$W"
exec > >(tee "$O/log.txt") 2>&1
echo "work dir $W on $(findmnt -no SOURCE,FSTYPE,MAJ:MIN -T "$W" | tr -s ' ')"

# slow_store: a cgroup v2 whose io.max caps reads on every disk; prints why when it cannot be made.
slow_store() {
    [ -n "$IO_MAX" ] || return 1
    [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] || { echo "note: no cgroup v2 at /sys/fs/cgroup"; return 1; }
    grep -qw io /sys/fs/cgroup/cgroup.controllers || { echo "note: no io controller"; return 1; }
    grep -qw io /sys/fs/cgroup/cgroup.subtree_control || echo +io > /sys/fs/cgroup/cgroup.subtree_control || return 1
    mkdir -p "$CG" || return 1
    local dev n=0
    for dev in /sys/block/*/dev; do
        case $dev in */loop*|*/ram*|*/zram*) continue ;; esac
        echo "$(cat "$dev") $IO_MAX" > "$CG/io.max" && n=$((n + 1))
    done
    echo "slow store: io.max on $n disk(s):"; sed 's/^/  /' "$CG/io.max"
    [ $n -gt 0 ]
}
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$W"
    [ -d "$CG" ] && { cat "$CG/cgroup.procs" 2>/dev/null | while read -r p; do echo "$p" > /sys/fs/cgroup/cgroup.procs; done; rmdir "$CG"; } 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
NCPU=$(nproc)
WORKERS=$(( NCPU > 4 ? NCPU - 2 : 2 ))
echo "== $(date -u +%FT%TZ) gpusight $($B --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $NCPU CPUs"
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" || exit 3

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; }
if drop_caches; then CAN_DROP=1; else CAN_DROP=0; echo "note: not root, drop_caches unavailable"; fi

echo "== datasets (t=$(( $(date +%s) - t0 )) s)"
python3 "$S/workloads.py" data --jpeg "$W/jpeg" 8000 --raw "$W/raw" 24000 || exit 3
du -sh "$W/jpeg" "$W/raw"
# Warm the JPEGs into the page cache for the healthy and one-worker cases.
cat "$W"/jpeg/*/*.jpg > /dev/null

# run_case NAME -- TRAIN_ARGS...: starts the job, waits until it is warm, watches it with doctor for
# 45 s while the job profiles itself, then waits for the job's ground truth.
# ONLY_CASES="writer healthy" runs just those cases (the table still lists all four).
wanted() { [ -z "${ONLY_CASES:-}" ] || [[ " $ONLY_CASES " == *" $1 "* ]]; }
run_case() {
    wanted "$1" || return 0
    local name=$1; shift; shift
    local ready="$W/$name.ready" truth="$O/${name}_truth.json"
    rm -f "$ready" "$truth"
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): $*"
    if [ "$name" = small-files ] && slow_store; then
        # The DataLoader workers move themselves into the slow store's cgroup as they start (worker_init_fn); the
        # main process, its CUDA libraries and the GPU work stay outside it.
        GS_SLOW_CGROUP=$CG python3 "$S/workloads.py" train-files --ready "$ready" --truth "$truth" --seconds 50 "$@" &
    else
        python3 "$S/workloads.py" train-files --ready "$ready" --truth "$truth" --seconds 50 "$@" &
    fi
    local job=$!
    PIDS+=("$job")
    local waited=0
    while [ ! -e "$ready" ] && kill -0 "$job" 2>/dev/null && [ $waited -lt 900 ]; do sleep 0.1; waited=$((waited + 1)); done
    if [ ! -e "$ready" ]; then echo "case $name: the job did not get warm"; kill "$job" 2>/dev/null; wait "$job"; return; fi
    local dropper=""
    if [ "$name" = small-files ] && [ $CAN_DROP = 1 ]; then
        ( while true; do drop_caches; sleep 1; done ) &
        dropper=$!
        PIDS+=("$dropper")
    fi
    # A recording beside doctor, so the case can be replayed through `doctor --replay` off the GPU.
    "$B" --record "$O/${name}.jsonl.gz" --headless --overwrite 2> "$O/${name}_record.err" &
    local recorder=$!
    "$B" doctor --duration 45s --json > "$O/${name}_doctor.json" 2> "$O/${name}_doctor.err"
    echo "doctor exit=$?"
    kill -INT "$recorder" 2>/dev/null; wait "$recorder" 2>/dev/null
    [ "$name" = small-files ] && [ -f "$CG/io.stat" ] && echo "slow store io.stat: $(cat "$CG/io.stat")"
    [ -n "$dropper" ] && kill "$dropper" 2>/dev/null
    # The job runs 50 s once warm; give it 30 s more to write its truth, then stop it.
    local left=300
    while kill -0 "$job" 2>/dev/null && [ $left -gt 0 ]; do sleep 0.1; left=$((left - 1)); done
    kill "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
}

run_case healthy -- --data "$W/jpeg" --workers "$WORKERS" --batch 128
run_case one-worker -- --data "$W/jpeg" --workers 1 --batch 128
run_case small-files -- --data "$W/raw" --kind raw --fadvise --workers 2 --batch 256
run_case writer -- --data "$W/jpeg" --workers "$WORKERS" --batch 128 --ckpt-every 2 --ckpt-gib 3

echo "== results (t=$(( $(date +%s) - t0 )) s)"
python3 - "$O" <<'EOF' | tee "$O/table.md"
import json, sys, os
out = sys.argv[1]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

cases = [
    ("healthy", "no warning or critical (exit 0)"),
    ("one-worker", "cpu-bound-input naming the worker's PID"),
    ("small-files", "input-bound"),
    ("writer", "not input-bound"),
]
print("| case | DataLoader share (profiler / wall) | checkpoint share | expected | found (doctor exit, rules) | result |")
print("|---|---|---|---|---|---|")
for name, expected in cases:
    doc = load(os.path.join(out, f"{name}_doctor.json"))
    truth = load(os.path.join(out, f"{name}_truth.json")) or {}
    if doc is None:
        print(f"| {name} | | | {expected} | doctor gave no JSON | FAIL |")
        continue
    findings = doc.get("findings", [])
    rules = [(f["rule"], f["severity"], f.get("pid")) for f in findings]
    found = f"exit {doc.get('exit_code')}: " + (", ".join(f"{r} ({s}, PID {p})" if p else f"{r} ({s})" for r, s, p in rules) or "none")
    workers = truth.get("workers", [])
    if name == "healthy":
        ok = doc.get("exit_code") == 0
    elif name == "one-worker":
        hits = [f for f in findings if f["rule"] == "cpu-bound-input"]
        ok = any(f"worker PID {w}" in f["evidence"] for f in hits for w in workers)
        found += f"; worker PIDs {workers}"
    elif name == "small-files":
        ok = any(f["rule"] == "input-bound" for f in findings)
    else:
        ok = not any(f["rule"] == "input-bound" for f in findings + doc.get("cleared", []))
    dl = f"{truth.get('dataloader_share')} / {truth.get('wall_dataloader_share')}"
    ck = f"{truth.get('checkpoint_share')} / {truth.get('wall_checkpoint_share')}" if name == "writer" else ""
    print(f"| {name} | {dl} | {ck} | {expected} | {found} | {'PASS' if ok else 'FAIL'} |")
EOF
for c in healthy one-worker small-files writer; do
    echo "-- $c evidence:"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print('  ', f['rule'], f['severity'], '|', f['evidence']) for f in d['findings']]; [print('   not judged:', n) for n in d.get('not_judged', [])]" "$O/${c}_doctor.json" 2>/dev/null
done
echo "== done in $(( $(date +%s) - t0 )) s; files in $O"
)

# ---- waits: why a GPU waits: launches, host-to-device copies, a CPU quota, a remote dataset -------------------------
group_waits() (
O=$BASE/waits
W=/tmp/gs_newfind
CG=/sys/fs/cgroup/gs_newfind_quota
DOCTOR_S=${DOCTOR_S:-75}
# The job runs on after doctor: its last 8 s are profiled (the ground truth), outside the watch window.
JOB_S=$((DOCTOR_S + 12))
mkdir -p "$O" "$W"
exec > >(tee -a "$O/log.txt") 2>&1
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 1
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    if [ -d "$CG" ]; then
        # Anything left inside (workers that outlived their parent) goes, then the cgroup.
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        sleep 0.5
        rmdir "$CG" 2>/dev/null || echo "note: could not remove $CG"
    fi
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
wanted() { [ -z "${ONLY_CASES:-}" ] || [[ " $ONLY_CASES " == *" $1 "* ]]; }
echo "== $(date -u +%FT%TZ) gpusight $($B --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) CPUs"
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" || exit 3

need_jpeg=0
for c in cpu-quota cpu-quota-free remote-http remote-local; do wanted "$c" && need_jpeg=1; done
if [ $need_jpeg = 1 ]; then
    echo "== dataset (t=$(( $(date +%s) - t0 )) s)"
    python3 "$S/workloads.py" data --jpeg "$W/jpeg" 6000 || exit 3
    du -sh "$W/jpeg"
    cat "$W"/jpeg/*/*.jpg > /dev/null
fi

# cgroup_ready: makes $CG with cpu.max of 2 CPUs, or says why it cannot and returns 1.
cgroup_ready() {
    local root=/sys/fs/cgroup
    if [ "$(stat -fc %T "$root" 2>/dev/null)" != cgroup2fs ]; then
        echo "SKIP cpu-quota: $root is not a cgroup2 mount ($(stat -fc %T "$root" 2>&1)); not faking it"; return 1
    fi
    if ! grep -qw cpu "$root/cgroup.controllers" 2>/dev/null; then
        echo "SKIP cpu-quota: the cpu controller is not available in $root/cgroup.controllers ($(cat "$root/cgroup.controllers" 2>&1))"; return 1
    fi
    if ! grep -qw cpu "$root/cgroup.subtree_control" 2>/dev/null; then
        if ! echo +cpu > "$root/cgroup.subtree_control" 2>/dev/null; then
            echo "SKIP cpu-quota: cannot enable +cpu in $root/cgroup.subtree_control (read-only, or processes in a non-root cgroup)"; return 1
        fi
    fi
    mkdir -p "$CG" 2>/dev/null || { echo "SKIP cpu-quota: cannot create $CG (not writable)"; return 1; }
    if ! echo "200000 100000" > "$CG/cpu.max" 2>/dev/null; then
        echo "SKIP cpu-quota: cannot write $CG/cpu.max"; rmdir "$CG" 2>/dev/null; return 1
    fi
    echo "cgroup $CG: cpu.max $(cat "$CG/cpu.max"), cpuset $(cat "$CG/cpuset.cpus.effective" 2>/dev/null || echo n/a)"
    return 0
}

# run_case NAME PROGRAM ARGS...: starts the job, waits until it is warm, watches it with doctor for DOCTOR_S
# seconds (one --once --json halfway), then waits for the job's ground truth. PREFIX (an env var) wraps the job.
run_case() {
    local name=$1 program=$2; shift 2
    wanted "$name" || return 0
    local ready="$W/$name.ready" truth="$O/${name}_truth.json"
    rm -f "$ready" "$truth"
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): $program $*"
    if [ -n "${IN_CGROUP:-}" ]; then
        bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$CG" \
            python3 "$S/workloads.py" "$program" --ready "$ready" --truth "$truth" --seconds "$JOB_S" "$@" &
    else
        python3 "$S/workloads.py" "$program" --ready "$ready" --truth "$truth" --seconds "$JOB_S" "$@" &
    fi
    local job=$!
    PIDS+=("$job")
    local waited=0
    while [ ! -e "$ready" ] && kill -0 "$job" 2>/dev/null && [ $waited -lt 1200 ]; do sleep 0.1; waited=$((waited + 1)); done
    if [ ! -e "$ready" ]; then echo "case $name: the job did not get warm"; kill "$job" 2>/dev/null; wait "$job"; return; fi
    [ -n "${IN_CGROUP:-}" ] && cat "$CG/cpu.stat" > "$O/${name}_cpu.stat.before" 2>/dev/null
    ( sleep $((DOCTOR_S / 2)); "$B" --once --json > "$O/${name}_once.json" 2> "$O/${name}_once.err" ) &
    PIDS+=("$!")
    # A recording beside doctor, so the case can be replayed through `doctor --replay` off the GPU.
    "$B" --record "$O/${name}.jsonl.gz" --headless --overwrite 2> "$O/${name}_record.err" &
    local recorder=$!
    "$B" doctor --duration "${DOCTOR_S}s" --json > "$O/${name}_doctor.json" 2> "$O/${name}_doctor.err"
    echo "doctor exit=$?"
    kill -INT "$recorder" 2>/dev/null; wait "$recorder" 2>/dev/null
    [ -n "${IN_CGROUP:-}" ] && cat "$CG/cpu.stat" > "$O/${name}_cpu.stat.after" 2>/dev/null
    local left=400
    while kill -0 "$job" 2>/dev/null && [ $left -gt 0 ]; do sleep 0.1; left=$((left - 1)); done
    kill "$job" 2>/dev/null
    wait "$job" 2>/dev/null
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
}

run_case launch-tiny gpu-step --work tiny
run_case launch-graph gpu-step --work graph
run_case launch-b4096 gpu-step --work b4096
run_case h2d-pageable gpu-step --work pageable
run_case h2d-pinned gpu-step --work pinned
run_case h2d-overlap gpu-step --work overlap

LOADER=(--data "$W/jpeg" --workers 8 --batch 128 --model resnet152)
if wanted cpu-quota; then
    if cgroup_ready; then
        IN_CGROUP=1 run_case cpu-quota train-loader "${LOADER[@]}"
    else
        echo "cpu-quota: skipped (see above)" > "$O/cpu-quota_skipped.txt"
    fi
fi
run_case cpu-quota-free train-loader "${LOADER[@]}"

if wanted remote-http; then
    python3 "$S/workloads.py" slow-http --root "$W/jpeg" --port 8765 --delay-ms 20 &
    PIDS+=("$!")
    sleep 1
    run_case remote-http train-loader "${LOADER[@]}" --source http --url http://127.0.0.1:8765
fi
run_case remote-local train-loader "${LOADER[@]}"

echo "== results (t=$(( $(date +%s) - t0 )) s)"
python3 - "$O" <<'EOF' | tee "$O/table.md"
import json, os, sys
out = sys.argv[1]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

# (case, expected rule or None for "no warning", rules that must not appear)
cases = [
    ("launch-tiny", "launch-bound", None),
    ("launch-graph", None, "launch-bound"),
    ("launch-b4096", None, None),
    ("h2d-pageable", "h2d-copy-bound", None),
    ("h2d-pinned", "h2d-copy-bound", None),
    ("h2d-overlap", None, None),
    ("cpu-quota", "cpu-quota-throttled", None),
    ("cpu-quota-free", None, None),
    ("remote-http", "remote-dataset-stall", None),
    ("remote-local", None, None),
]

def gpu0(once):
    try:
        g = once["tick"]["gpus"][0]
    except (TypeError, KeyError, IndexError):
        return ""
    def pick(*names):
        for n in names:
            for src in (g, g.get("gpm") or {}):
                if isinstance(src, dict) and src.get(n) is not None:
                    return src[n]
        return None
    return (f"util {pick('util_pct')} %, SM act {pick('sm_active_pct')} %, DRAM {pick('dram_active_pct')} %, "
            f"{pick('power_mw')} mW, RX {pick('pcie_rx_kbps')} KB/s, SM {pick('sm_clock_mhz')} MHz")

def truth_text(t):
    if not t:
        return "no truth"
    keys = ["step_ms", "gpu_kernel_share", "h2d_copy_share", "h2d_gb_per_s", "images_per_s", "dataloader_share",
            "wall_dataloader_share"]
    return ", ".join(f"{k} {t[k]}" for k in keys if t.get(k) is not None)

print("| case | expected | found (doctor exit, rules) | seen mid-case (--once) | ground truth (torch.profiler) | result |")
print("|---|---|---|---|---|---|")
for name, expect, forbid in cases:
    if os.path.exists(os.path.join(out, f"{name}_skipped.txt")):
        print(f"| {name} | {expect or 'no warning'} | skipped: no writable cgroup2 with cpu | | | SKIP |")
        continue
    doc = load(os.path.join(out, f"{name}_doctor.json"))
    if doc is None:
        continue
    findings = doc.get("findings", [])
    found = f"exit {doc.get('exit_code')}: " + (", ".join(f"{f['rule']} ({f['severity']})" for f in findings) or "none")
    warn = {f["rule"] for f in findings if f["severity"] in ("warning", "critical")}
    if expect:
        # The expected rule, and nothing else at warning or worse except the umbrella that names it.
        ok = expect in {f["rule"] for f in findings} and warn <= {expect, "gpu-underfed"}
    elif forbid:
        ok = forbid not in {f["rule"] for f in findings}
    else:
        ok = not warn
    truth = load(os.path.join(out, f"{name}_truth.json"))
    print(f"| {name} | {expect or ('no ' + forbid if forbid else 'no warning')} | {found} | "
          f"{gpu0(load(os.path.join(out, f'{name}_once.json')))} | {truth_text(truth)} | {'PASS' if ok else 'FAIL'} |")
EOF
for f in "$O"/*_doctor.json; do
    [ -e "$f" ] || continue
    echo "-- $(basename "$f" _doctor.json) evidence:"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print('  ', f['rule'], f['severity'], '|', f['evidence']) for f in d['findings']]; [print('   not judged:', n) for n in d.get('not_judged', [])]" "$f" 2>/dev/null
done
echo "== done in $(( $(date +%s) - t0 )) s; files in $O"
)

# ---- ranks: a two-rank torchrun job in four shapes, on two GPUs -----------------------------------------------------
group_ranks() (
O=$BASE/ranks
DOCTOR_S=${DOCTOR_S:-75}
HANG_DOCTOR_S=${HANG_DOCTOR_S:-170}
mkdir -p "$O"
exec > >(tee -a "$O/log.txt") 2>&1
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "needs two GPUs: $(nvidia-smi -L)"; exit 3; }
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    pkill -f "workloads.py ddp" 2>/dev/null
    sleep 1
    pkill -9 -f "workloads.py ddp" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
wanted() { [ -z "${ONLY_CASES:-}" ] || [[ " $ONLY_CASES " == *" $1 "* ]]; }
t0=$(date +%s)
echo "== $(date -u +%FT%TZ) gpusight $($B --version); $(nvidia-smi -L | tr '\n' ' ')"

# run_case NAME WATCH_S ARGS...: starts the job, waits until both ranks stepped for a while, watches it.
run_case() {
    local name=$1 watch=$2; shift 2
    wanted "$name" || return 0
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): workloads.py ddp $*"
    local log="$O/${name}_job.log"
    torchrun --standalone --nproc_per_node=2 "$S/workloads.py" ddp --seconds $((watch + 60)) "$@" > "$log" 2>&1 &
    local job=$!
    PIDS+=("$job")
    local waited=0
    while [ "$(grep -c '^rank . pid' "$log")" -lt 2 ] && kill -0 "$job" 2>/dev/null && [ $waited -lt 120 ]; do
        sleep 1; waited=$((waited + 1))
    done
    grep '^rank . pid' "$log"
    sleep 20 # warm: cudnn benchmark, the loaders' first batches
    ( sleep $((watch / 2)); "$B" --once --json > "$O/${name}_once.json" 2> /dev/null ) &
    PIDS+=("$!")
    "$B" --record "$O/${name}.jsonl.gz" --headless --overwrite 2> "$O/${name}_record.err" &
    local recorder=$!
    "$B" doctor --duration "${watch}s" --json > "$O/${name}_doctor.json" 2> "$O/${name}_doctor.err"
    echo "doctor exit=$?"
    kill -INT "$recorder" 2>/dev/null; wait "$recorder" 2>/dev/null
    kill "$job" 2>/dev/null; pkill -f "workloads.py ddp" 2>/dev/null
    wait "$job" 2>/dev/null
    grep -E "^rank .*img/s|stops taking part|Watchdog|timeout" "$log" | tail -6
    sleep 3
}

run_case balanced "$DOCTOR_S" --workers 8
run_case loader "$DOCTOR_S" --workers 8 --workers-rank 1:1
run_case compute "$DOCTOR_S" --workers 8 --compute-rank 1:2
run_case hang "$HANG_DOCTOR_S" --workers 8 --skip-allreduce-rank 1 --pg-timeout 300

echo "== results (t=$(( $(date +%s) - t0 )) s)"
python3 - "$O" <<'EOF' | tee "$O/table.md"
import json, os, re, sys
out = sys.argv[1]
cases = [
    ("balanced", None, ("rank-straggler", "collective-hang")),
    ("loader", ("rank-straggler", 1, ("cpu-bound-input", "input-bound")), ()),
    ("compute", ("rank-straggler", 1, ("compute",)), ()),
    ("hang", ("collective-hang", None, ()), ()),
]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def seen(name):
    """Each GPU's means over the recording: NVML utilization, GPM SM activity, power, PCIe and NVLink."""
    import gzip
    sums = {}
    try:
        with gzip.open(os.path.join(out, f"{name}.jsonl.gz"), "rt") as f:
            for line in f:
                tick = json.loads(line)
                for g in tick.get("gpus", []) if "at_ms" in tick else []:
                    gpm = g.get("gpm") or {}
                    vals = {"util": g.get("util_pct"), "sm": gpm.get("sm_active_pct"), "w": (g.get("power_mw") or 0) / 1000,
                            "rx": (g.get("pcie_rx_kbps") or 0) / 1e6, "nvl": g.get("nvlink_rx_mib_s")}
                    acc = sums.setdefault(g["index"], {})
                    for k, v in vals.items():
                        if v is not None:
                            s, n = acc.get(k, (0.0, 0))
                            acc[k] = (s + v, n + 1)
    except (OSError, ValueError, EOFError):
        return "no recording"
    def m(acc, k, fmt):
        s, n = acc.get(k, (0.0, 0))
        return format(s / n, fmt) if n else "N/A"
    return "; ".join(f"GPU {i}: util {m(a, 'util', '.0f')} %, SM act {m(a, 'sm', '.1f')} %, {m(a, 'w', '.0f')} W, "
                     f"PCIe RX {m(a, 'rx', '.2f')} GB/s, NVLink RX {m(a, 'nvl', '.0f')} MiB/s"
                     for i, a in sorted(sums.items()))

def truth(name):
    try:
        lines = open(os.path.join(out, f"{name}_job.log")).read().splitlines()
    except OSError:
        return ""
    last = {}
    for line in lines:
        m = re.match(r"rank (\d): (\d+) img/s, step (\d+) ms, loader wait (\d+) %", line)
        if m:
            last[m.group(1)] = f"rank {m.group(1)} {m.group(2)} img/s, step {m.group(3)} ms, loader wait {m.group(4)} %"
    return "; ".join(last[k] for k in sorted(last))

print("| case | expected | found (doctor exit: rules) | per GPU, mean over the recording | the job's own log (last 10 s) | result |")
print("|---|---|---|---|---|---|")
for name, expect, forbid in cases:
    doc = load(os.path.join(out, f"{name}_doctor.json"))
    if doc is None:
        continue
    fs = doc.get("findings", [])
    found = f"exit {doc.get('exit_code')}: " + (", ".join(f"{f['rule']} ({f['severity']}, GPU {f.get('gpu_index')})" for f in fs) or "none")
    if expect:
        rule, gpu, causes = expect
        hit = [f for f in fs if f["rule"] == rule and (gpu is None or f.get("gpu_index") == gpu)]
        ok = bool(hit) and (not causes or any(c in hit[0]["evidence"] for c in causes))
        want = f"{rule}" + (f" on GPU {gpu}" if gpu is not None else "") + (f" naming {' or '.join(causes)}" if causes else "")
    else:
        ok = not any(f["rule"] in forbid for f in fs)
        want = "no " + " / ".join(forbid)
    print(f"| {name} | {want} | {found} | {seen(name)} | {truth(name)} | {'PASS' if ok else 'FAIL'} |")
EOF
for f in "$O"/*_doctor.json; do
    [ -e "$f" ] || continue
    echo "-- $(basename "$f" _doctor.json):"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [print('  ', f['rule'], f['severity'], '|', f['title'], '|', f['evidence']) for f in d['findings']]" "$f" 2>/dev/null
done
echo "== done in $(( $(date +%s) - t0 )) s"
)

# ---- cost: CPU and memory side by side with nvidia-smi dmon and nvitop while a training step runs ------------------
# The monitor at 1 s and at 0.1 s and nvitop at 1 s each in a 160x50 pseudo-terminal (util-linux `script`), and
# `nvidia-smi dmon -d 1`, started together while scripts/device/job_impact.py's trainer runs; CPU over WINDOW seconds
# (default 90) from 20 s after the start, from the sum of every thread's run time (/proc/PID/task/*/schedstat) and
# from utime+stime; the 1 s monitor's CPU by thread; resident memory by mapping. BATCH=256 SIZE=224 makes the GPU
# pace the step (default: 128 at 160 px, paced by the host's CPU). BASELINE=PATH runs another gpusight binary (an
# earlier build) at 1 s and 0.1 s beside it in the same window, for a cost compared on the same job (BASELINE_FIRST=1
# starts it first).
group_cost() (
O=$BASE/cost
WINDOW=${WINDOW:-90}
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }
command -v script > /dev/null || { echo "needs util-linux script (a pseudo-terminal for the monitors)"; exit 3; }
python3 -c "import torch; assert torch.cuda.is_available()" || { echo "needs PyTorch with CUDA"; exit 3; }
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; touch "$O/stop"' EXIT
trap 'exit 130' INT TERM
echo "== $(date -u +%FT%TZ) gpusight $("$B" --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) CPUs"
rm -f "$O/stop"
python3 scripts/device/job_impact.py train --log "$O/steps.txt" --stop "$O/stop" --warmup 5 \
    --batch "${BATCH:-128}" --size "${SIZE:-160}" &
PIDS+=($!)
sleep 15
total=$((WINDOW + 30))
# in_pty CMD...: CMD in a 160x50 pseudo-terminal for $total seconds; its output is drained and dropped.
in_pty() {
    sleep "$total" | TERM=xterm-256color script -qfec "stty rows 50 cols 160; exec $*" /dev/null > /dev/null 2>&1 &
    PIDS+=($!)
}
BASELINE=${BASELINE:-}
if [ -n "$BASELINE" ]; then
    [ -x "$BASELINE" ] || { echo "BASELINE=$BASELINE is not an executable"; exit 3; }
    echo "baseline: $("$BASELINE" --version), side by side${BASELINE_FIRST:+, started first}"
fi
# BASELINE_FIRST=1 starts the baseline before the current build, so an order effect shows up as a swapped difference.
[ -n "$BASELINE" ] && [ -n "${BASELINE_FIRST:-}" ] && { in_pty "$BASELINE"; in_pty "$BASELINE" --interval 0.1; }
in_pty "$B"
in_pty "$B" --interval 0.1
[ -n "$BASELINE" ] && [ -z "${BASELINE_FIRST:-}" ] && { in_pty "$BASELINE"; in_pty "$BASELINE" --interval 0.1; }
NVITOP=""
if python3 -c "import nvitop" 2> /dev/null; then
    in_pty python3 -m nvitop --interval 1
    NVITOP=1
else
    echo "nvitop is not importable (pip install nvitop, or its wheels on PYTHONPATH): left out"
fi
nvidia-smi dmon -d 1 > "$O/dmon.txt" &
DMON=$!
PIDS+=($DMON)
sleep 3
PAIRS=("gpusight 1 s:$(pgrep -xf "$B")" "gpusight 0.1 s:$(pgrep -xf "$B --interval 0.1")")
[ -n "$BASELINE" ] && PAIRS+=("baseline 1 s:$(pgrep -xf "$BASELINE")" "baseline 0.1 s:$(pgrep -xf "$BASELINE --interval 0.1")")
[ -n "$NVITOP" ] && PAIRS+=("nvitop 1 s:$(pgrep -xf "python3 -m nvitop --interval 1")")
PAIRS+=("nvidia-smi dmon -d 1:$DMON")
echo "pids: ${PAIRS[*]}"
G1=${PAIRS[0]##*:}
run_ns() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{s += $1} END {print s + 0}'; }
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/"$1"/stat; }
threads() {  # each thread name's run time in seconds (schedstat, ns resolution), most first
    local t
    for t in /proc/"$1"/task/*; do
        awk -v name="$(cat "$t/comm")" '{print name, $1}' "$t/schedstat" 2> /dev/null
    done | awk '{a[$1] += $2} END {for (k in a) printf "  %-22s %.4f s\n", k, a[k] / 1e9}' | sort -k2 -rn
}
sleep 17
declare -A a_ns a_t
for pair in "${PAIRS[@]}"; do p=${pair##*:}; a_ns[$p]=$(run_ns "$p"); a_t[$p]=$(ticks "$p"); done
threads "$G1" > "$O/threads_start.txt"
BL1=""
[ -n "$BASELINE" ] && BL1=${PAIRS[2]##*:} && threads "$BL1" > "$O/threads_start_baseline.txt"
sleep "$WINDOW"
threads "$G1" > "$O/threads_end.txt"
[ -n "$BL1" ] && threads "$BL1" > "$O/threads_end_baseline.txt"
hz=$(getconf CLK_TCK)
{
    echo "| program | CPU % of one core (schedstat) | CPU % (utime+stime) | VmRSS kB | VmHWM kB | RssAnon kB | RssFile kB | threads |"
    echo "|---|---|---|---|---|---|---|---|"
    for pair in "${PAIRS[@]}"; do
        name=${pair%%:*}; p=${pair##*:}
        st() { awk -v f="$1:" '$1 == f {print $2}' /proc/"$p"/status; }
        awk -v n="$name" -v ns="$(( $(run_ns "$p") - ${a_ns[$p]} ))" -v t="$(( $(ticks "$p") - ${a_t[$p]} ))" \
            -v hz="$hz" -v w="$WINDOW" -v rest="$(st VmRSS) | $(st VmHWM) | $(st RssAnon) | $(st RssFile) | $(st Threads)" \
            'BEGIN {printf "| %s | %.3f | %.3f | %s |\n", n, ns / 1e9 / w * 100, t / hz / w * 100, rest}'
    done
} | tee "$O/side_by_side.md"
# by_thread START END: each thread's CPU over the window, in ms a second, most first.
by_thread() {
    awk -v w="$WINDOW" 'NR == FNR {a[$1] = $2; next} {printf "  %-22s %6.3f ms/s\n", $1, ($2 - a[$1]) * 1000 / w}' \
        "$1" "$2" | sort -k2 -rn
}
echo "1 s monitor, CPU by thread over the window:"
by_thread "$O/threads_start.txt" "$O/threads_end.txt" | tee "$O/threads.txt"
if [ -n "$BL1" ]; then
    echo "baseline 1 s monitor, CPU by thread over the window:"
    by_thread "$O/threads_start_baseline.txt" "$O/threads_end_baseline.txt" | tee "$O/threads_baseline.txt"
fi
n=0
for pair in "${PAIRS[@]}"; do
    name=${pair%%:*}; p=${pair##*:}; n=$((n + 1))
    echo "resident memory by mapping, $name (kB):"
    awk '
      /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6) ? $6 : "[anonymous]"; next }
      /^Rss:/ {
        n = name
        if (n ~ /libcuda/) k = "libcuda"
        else if (n ~ /libnvidia-ml/) k = "libnvidia-ml"
        else if (n ~ /libnvidia/) k = "other libnvidia-*"
        else if (n ~ /gpusight|nvidia-smi|python/) k = "the program binary"
        else if (n == "[anonymous]" || n == "[heap]") k = "anonymous + heap"
        else if (n ~ /^\[/) k = "other " n
        else k = "other files"
        rss[k] += $2
      }
      END { for (k in rss) printf "%8d  %s\n", rss[k], k }
    ' "/proc/$p/smaps" | sort -rn | tee "$O/split_$n.txt"
done
touch "$O/stop"
sleep 2
echo "training steps logged: $(grep -c . "$O/steps.txt")"
)

# ---- nvml-threads: which NVML call families survive concurrent calls on two or more GPUs -------------------------
# Each family is hammered from 2 threads per GPU for SECONDS_EACH (4), TRIES (2) times, by the nvml_concurrency
# probe (tools/nvml_concurrency.rs). A crash (SIGSEGV) counts against the family. `all` is every family at once with
# GPM serialised, as gpusight reads; `gpm` calls GPM from every thread.
group_nvml_threads() (
O=$BASE/nvml-threads
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
PROBE=${PROBE:-$PWD/target/release/examples/nvml_concurrency}
[ -x "$PROBE" ] || { echo "no $PROBE: cargo build --release --locked --example nvml_concurrency"; exit 3; }
nvidia-smi -L
for family in fast processes fields health pcie events gpm-serialized all gpm; do
    crashed=0
    for try in $(seq 1 "${TRIES:-2}"); do
        "$PROBE" "$family" "${SECONDS_EACH:-4}" 2 > "$O/probe.out" 2>&1
        rc=$?
        line=$(tail -1 "$O/probe.out")
        if [ "$rc" -ne 0 ]; then crashed=$((crashed + 1)); line="exit $rc"; fi
        echo "  $family try $try: $line"
    done
    echo "$family: $crashed of ${TRIES:-2} runs crashed"
done
)

# ---- memory: the memory rules on real PyTorch programs: a leak and its control, an idle holder, a bursty server -----
# Four cases one after another (ONLY_CASES="leak idle-holder" runs some): each program (workloads.py memory, or
# serve) writes its own ground truth (memory_allocated/memory_reserved about once a second, its phases, the
# server's bursts); doctor watches it live, a recording beside it, and the recording is replayed through
# `doctor --replay` after. Every doctor, recorder and replay reads the thresholds file the group writes:
# idle_holder_window_s = IDLE_WINDOW_S (40, from 300) so an idle holder is named within two minutes; the server's
# pauses (SERVE_PAUSE_S, 50 s, no spread) are longer than that window and shorter than TCP's 60 s TIME_WAIT, so
# in each pause the server is idle for a whole window and only the serving rule keeps idle-holder off it.
# Work files in MEM_WORK (/tmp/gs_memory); the tarball $BASE/memory.tgz is rewritten after every case.
group_memory() (
W=${MEM_WORK:-/tmp/gs_memory}
O=$W/memory
CFG=$O/thresholds.toml
IDLE_WINDOW_S=${IDLE_WINDOW_S:-40}
LEAK_S=${LEAK_S:-100}
CONTROL_S=${CONTROL_S:-90}
IDLE_S=${IDLE_S:-95}
IDLE_TRAIN_S=${IDLE_TRAIN_S:-20}
SERVE_S=${SERVE_S:-115}
SERVE_PAUSE_S=${SERVE_PAUSE_S:-50}
rm -rf "$O"
mkdir -p "$O" "$BASE"
exec > >(tee -a "$O/log.txt") 2>&1
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }
PIDS=()
pack() { tar czf "$BASE/memory.tgz" -C "$W" memory 2> /dev/null; }
# stop PID: SIGTERM to its children (serve's client) and to it; SIGKILL to what is left after 10 s.
stop() {
    pkill -TERM -P "$1" 2> /dev/null
    kill -TERM "$1" 2> /dev/null
    for _ in $(seq 20); do kill -0 "$1" 2> /dev/null || break; sleep 0.5; done
    pkill -KILL -P "$1" 2> /dev/null
    kill -KILL "$1" 2> /dev/null
    wait "$1" 2> /dev/null
}
cleanup() {
    for p in "${PIDS[@]}"; do kill -0 "$p" 2> /dev/null && stop "$p"; done
    pack
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)
wanted() { [ -z "${ONLY_CASES:-}" ] || [[ " $ONLY_CASES " == *" $1 "* ]]; }
echo "== $(date -u +%FT%TZ) gpusight $("$B" --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) CPUs"
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" || exit 3
printf '# GROUP=memory: idle-holder judged over %s s instead of 300 s; every other threshold at its default.\n[thresholds]\nidle_holder_window_s = %s\n' \
    "$IDLE_WINDOW_S" "$IDLE_WINDOW_S" > "$CFG"
"$B" config check "$CFG" || exit 3
others=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader)
[ -n "$others" ] && echo "note: other compute processes on the GPU (they may change the verdicts): $others"

# run_case NAME WATCH_S PROGRAM ARGS...: starts the program (its --ready and --truth added), waits until it is warm,
# watches it with doctor for WATCH_S seconds beside a recording (nvidia-smi's view halfway), lets the program end on
# its own (its --seconds outlast the watch by a few seconds) or stops it, then replays the recording.
run_case() {
    local name=$1 watch=$2 program=$3; shift 3
    wanted "$name" || return 0
    local ready="$O/$name.ready"
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): workloads.py $program $*"
    python3 "$S/workloads.py" "$program" --ready "$ready" --truth "$O/$name.truth.json" "$@" > "$O/$name.out" 2>&1 < /dev/null &
    local job=$!
    PIDS+=("$job")
    local waited=0
    while [ ! -e "$ready" ] && kill -0 "$job" 2> /dev/null && [ $waited -lt 900 ]; do sleep 0.1; waited=$((waited + 1)); done
    if [ ! -e "$ready" ]; then echo "case $name: the program did not get warm:"; tail -5 "$O/$name.out"; stop "$job"; return; fi
    echo "warm after $((waited / 10)) s: PID $job"
    ( sleep $((watch / 2)); { nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; } > "$O/$name.smi.txt" 2>&1 ) &
    PIDS+=("$!")
    "$B" --config "$CFG" --record "$O/$name.jsonl.gz" --headless --overwrite 2> "$O/$name.record.err" < /dev/null &
    local recorder=$!
    PIDS+=("$recorder")
    local start; start=$(date +%s.%N)
    "$B" --config "$CFG" doctor --duration "${watch}s" --json > "$O/$name.doctor.json" 2> "$O/$name.doctor.err" < /dev/null
    echo "doctor exit=$?"
    echo "$start $(date +%s.%N)" > "$O/$name.window"
    kill -INT "$recorder" 2> /dev/null; wait "$recorder" 2> /dev/null
    local left=300
    while kill -0 "$job" 2> /dev/null && [ $left -gt 0 ]; do sleep 0.1; left=$((left - 1)); done
    kill -0 "$job" 2> /dev/null && echo "case $name: the program outlived its --seconds: stopped"
    stop "$job"
    cat "$O/$name.smi.txt" 2> /dev/null
    "$B" --config "$CFG" doctor --replay "$O/$name.jsonl.gz" --json > "$O/$name.replay.json" 2> "$O/$name.replay.err"
    echo "replay exit=$?"
    pack
}

run_case leak "$LEAK_S" memory --shape leak --seconds $((LEAK_S + 4))
run_case leak-free "$CONTROL_S" memory --shape leak-free --seconds $((CONTROL_S + 4))
run_case idle-holder "$IDLE_S" memory --shape idle --train-seconds "$IDLE_TRAIN_S" --seconds $((IDLE_S - IDLE_TRAIN_S + 5))
run_case serve "$SERVE_S" serve --seconds $((SERVE_S + 6)) --burst-s 6 --pause-s "$SERVE_PAUSE_S" --pause-spread 0 --hold-gib 2

echo "== results (t=$(( $(date +%s) - t0 )) s)"
python3 - "$O" "$IDLE_WINDOW_S" <<'EOF' > "$O/results.txt"
import json, os, sys
out, idle_window = sys.argv[1], float(sys.argv[2])

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def window(case):
    try:
        start, end = (float(x) for x in open(os.path.join(out, f"{case}.window")).read().split())
        return start, end
    except (OSError, ValueError):
        return None

def fit(points):
    """(MiB/min, R², rise MiB) of a least-squares line through (unix s, MiB)."""
    n = len(points)
    if n < 3:
        return None
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    syy = sum((p[1] - my) ** 2 for p in points)
    if sxx <= 0:
        return None
    return sxy / sxx * 60, (sxy * sxy / (sxx * syy) if syy > 0 else 0.0), points[-1][1] - points[0][1]

def rules(doc, key="findings"):
    return [(f["rule"], f["severity"], f.get("pid")) for f in (doc or {}).get(key, [])]

def has(doc, rule, pid=None, cleared=False):
    found = rules(doc) + (rules(doc, "cleared") if cleared else [])
    return any(r == rule and (pid is None or p == pid) for r, _, p in found)

# (case, expected, check(doc, truth) -> bool)
def leak(doc, t):
    return has(doc, "vram-growing", t.get("pid"))

def leak_free(doc, t):
    return not has(doc, "vram-growing", cleared=True)

def idle(doc, t):
    return has(doc, "idle-holder", t.get("pid"))

def serve(doc, t):
    return not has(doc, "idle-holder", cleared=True) and has(doc, "serving", t.get("pid"))

CASES = [
    ("leak", "vram-growing naming its PID", leak),
    ("leak-free", "no vram-growing (active or cleared)", leak_free),
    ("idle-holder", "idle-holder naming its PID", idle),
    ("serve", "no idle-holder (active or cleared); serving naming its PID", serve),
]

def truth_text(case, t, w):
    if not t:
        return "no truth"
    timeline = [p for p in t.get("timeline", []) if w is None or w[0] <= p[0] <= w[1]]
    if case in ("leak", "leak-free"):
        f = fit([(p[0], p[3]) for p in timeline])
        grow = f"reserved {f[2]:+.0f} MiB over the watch ({round(f[0])} MiB/min, R² {f[1]:.2f})" if f else "no timeline"
        return (f"PID {t.get('pid')}: {grow}; {t.get('kept_graphs')} graphs kept (val batch {t.get('val_batch')}, "
                f"~{t.get('kept_estimate_mib')} MiB); step {t.get('step_ms')} ms, {t.get('steps')} steps")
    if case == "idle-holder":
        idle_phase = next((p for p in t.get("phases", []) if p["name"] == "idle"), None)
        if not idle_phase or w is None:
            return f"PID {t.get('pid')}: no idle phase"
        res = [p[3] for p in timeline if p[0] >= idle_phase["start"]]
        return (f"PID {t.get('pid')}: trained {idle_phase['start'] - t['phases'][0]['start']:.0f} s ({t.get('steps')} "
                f"steps, {t.get('step_ms')} ms), idle from +{idle_phase['start'] - w[0]:.0f} s of the watch, "
                f"{w[1] - idle_phase['start']:.0f} s idle in it; reserved {max(res, default=0) / 1024:.1f} GiB "
                f"(dataset {t.get('dataset_gib')} GiB)")
    bursts = [b for b in t.get("bursts", []) if w is None or (b[1] >= w[0] and b[0] <= w[1])]
    gaps = [b[0] - a[1] for a, b in zip(bursts, bursts[1:])]
    longest = max(gaps, default=0)
    note = "" if longest > idle_window else f" (shorter than the {idle_window:.0f} s window: the serving rule was not needed)"
    return (f"PID {t.get('pid')}: {t.get('requests')} requests, {len(bursts)} bursts in the watch; longest pause "
            f"{longest:.0f} s{note}; inference {t.get('gpu_busy_share')} of wall time")

def found_text(doc):
    if doc is None:
        return "no doctor JSON"
    act = ", ".join(f"{r} ({s}{', PID ' + str(p) if p else ''})" for r, s, p in rules(doc)) or "none"
    gone = rules(doc, "cleared")
    gone = "; cleared: " + ", ".join(f"{r} (PID {p})" if p else r for r, _, p in gone) if gone else ""
    return f"exit {doc.get('exit_code')}: {act}{gone}"

rows, short = [], []
for case, expected, check in CASES:
    doc, t = load(f"{case}.doctor.json"), load(f"{case}.truth.json") or {}
    if doc is None and not t:
        continue
    replay = load(f"{case}.replay.json")
    live_ok = doc is not None and check(doc, t)
    replay_ok = replay is not None and check(replay, t)
    result = "PASS" if live_ok and replay_ok else ("FAIL" if not live_ok else "PASS live, FAIL replay")
    rows.append(f"| {case} | {expected} | {found_text(doc)} | {found_text(replay) if replay else 'no replay'} | "
                f"{truth_text(case, t, window(case))} | {result} |")
    short.append(f"{result:22} {case:12} expected {expected}; doctor said {found_text(doc)}")
    for d, where in ((doc, "live"), (replay, "replay")):
        for f in (d or {}).get("findings", []) + (d or {}).get("cleared", []):
            if f["rule"] in ("vram-growing", "idle-holder", "serving"):
                print(f"-- {case} ({where}): {f['rule']} PID {f.get('pid')} | {f['evidence']}")

table = ["| case | expected | doctor live (exit: rules) | doctor --replay of the recording | the program's own truth | result |",
         "|---|---|---|---|---|---|"] + rows
open(os.path.join(out, "table.md"), "w").write("\n".join(table) + "\n")
print()
print(f"thresholds: idle_holder_window_s = {idle_window:.0f} (config file), the rest at defaults")
print("\n".join(table))
print()
print("\n".join(short))
EOF
cat "$O/results.txt"
echo "== done in $(( $(date +%s) - t0 )) s; files in $O, tarball $BASE/memory.tgz"
)

# ---- tls: what GROUP=host's exporter case needs (certificate, web config, Prometheus config) ------------------------
group_tls() (
set -e
d=${WEB:?GROUP=tls needs WEB=DIR, where cert.pem, key.pem, web.yml and prometheus.yml go}
mkdir -p "$d"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/key.pem" -out "$d/cert.pem" -days 30 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2> /dev/null
hash=$(python3 -c 'import bcrypt; print(bcrypt.hashpw(b"h200-secret", bcrypt.gensalt(rounds=10)).decode())')
cat > "$d/web.yml" <<YML
tls_server_config:
  cert_file: /tmp/gs_cluster/prom/cert.pem
  key_file: /tmp/gs_cluster/prom/key.pem
basic_auth_users:
  prom: $hash
YML
cat > "$d/prometheus.yml" <<YML
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: gpusight
    scheme: https
    tls_config:
      ca_file: /tmp/gs_cluster/prom/cert.pem
      server_name: localhost
    basic_auth:
      username: prom
      password: h200-secret
    static_configs:
      - targets: ["127.0.0.1:9400"]
YML
echo "wrote $d/cert.pem key.pem web.yml prometheus.yml"
)

case "${GROUP:-}" in
    account)
        # Its own file: the cases, their stated times and expected verdicts are in one table there.
        exec bash "$S/account_cases.sh"
        ;;
    readings|findings|waits|ranks|cost|nvml-threads|tls)
        mkdir -p "$BASE"
        "group_${GROUP//-/_}"
        rc=$?
        [ -d "$BASE/$GROUP" ] && tar czf "$BASE/$GROUP.tgz" -C "$BASE" "$GROUP" 2> /dev/null
        exit $rc
        ;;
    memory)
        # Its work files stay outside $BASE: what comes back is the one tarball, $BASE/memory.tgz.
        mkdir -p "$BASE"
        group_memory
        exit $?
        ;;
esac

# ---- serve-ranks and host: findings where training really runs ---------------------------------------------------
PY=${PYTHON:-python3}
W=/tmp/gs_cluster
R=$W/results
mkdir -p "$W" "$R"
exec > >(tee -a "$R/log.txt") 2>&1
t0=$(date +%s)
# skipped NAME: whether NAME is in $SKIP (space-separated case names), for a run with less time.
skipped() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
ts() { echo "[t=$(($(date +%s) - t0))s] $*"; }
[ -x "$B" ] || { echo "no $B: cargo build --release --locked"; exit 3; }

PIDS=()
FUSE_PID=""
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    pkill -f "workloads.py (serve|offload|compile|evalrank|logger)" 2>/dev/null
    pkill -f "workloads.py train-files" 2>/dev/null
    sleep 1
    [ -n "$FUSE_PID" ] && { umount "$W/mnt" 2>/dev/null; kill "$FUSE_PID" 2>/dev/null; }
    if [ -n "${OUT:-}" ]; then
        tar czf "$OUT/cluster-${GROUP:-all}.tgz" -C "$W" results 2>/dev/null
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# watch NAME SECONDS: the live doctor over the next SECONDS, JSON to NAME.doctor.json (in the background).
watch() {
    "$B" doctor --duration "$2s" --json > "$R/$1.doctor.json" 2> "$R/$1.doctor.err" < /dev/null &
    PIDS+=($!)
}
# record NAME: a recording of everything until stop_record.
record() {
    "$B" --record "$R/$1.jsonl.gz" --headless --interval 1 > /dev/null 2> "$R/$1.record.err" < /dev/null &
    REC=$!
    PIDS+=($REC)
}
# settle: wait for this case's doctor and recorder (a bare `wait` would also wait for the log's tee).
# After each case the results so far go to $OUT, so a run cut short still brings back what it finished.
settle() {
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    PIDS=()
    [ -n "${OUT:-}" ] && tar czf "$OUT/cluster-${GROUP:-all}.tgz" -C "$W" results 2>/dev/null
}
stop_record() { kill -INT "$REC" 2>/dev/null; wait "$REC" 2>/dev/null; }
# job NAME CMD...: start a workload in the background, output to NAME.out.
job() {
    local name=$1
    shift
    "$@" > "$R/$name.out" 2>&1 < /dev/null &
    JOB=$!
    PIDS+=($JOB)
}
end_job() {
    kill "$JOB" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$JOB" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$JOB" 2>/dev/null
    wait "$JOB" 2>/dev/null
}
# The workload's own PIDs are in its truth file; nvidia-smi's view at the middle of each case goes beside it.
smi() { nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,power.limit,power.default_limit,temperature.gpu,clocks.sm --format=csv,noheader >> "$R/$1.smi.txt"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$R/$1.smi.txt"; }

ts "gpusight $("$B" --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) CPUs"
$PY -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)" || exit 3

mount_fuse() {
    local root=/tmp/gs_cluster_fuse
    if [ -n "${DEBS:-}" ] && ! ldconfig -p | grep -q 'libfuse.so.2 '; then
        mkdir -p "$root"
        for f in "$DEBS"/*.deb; do dpkg -x "$f" "$root"; done
        export FUSE_LIBRARY_PATH="$root/lib/x86_64-linux-gnu/libfuse.so.2" PATH="$PATH:$root/bin"
    fi
    mkdir -p "$W/back" "$W/mnt"
    PYTHONPATH=${FUSEPY:-} $PY "$S/workloads.py" fuse "$W/back" "$W/mnt" > "$R/fuse.log" 2>&1 < /dev/null &
    FUSE_PID=$!
    for _ in 1 2 3 4 5 6; do grep -q " $W/mnt " /proc/self/mountinfo && return 0; sleep 0.5; done
    echo "FUSE mount failed:"
    cat "$R/fuse.log"
    FUSE_PID=""
    return 1
}

group_serve_ranks() {
    if skipped serve; then echo "serve: skipped (SKIP)"; else
    ts "case serve: ResNet-50 behind HTTP, bursts of 4 clients, 375 s; doctor watches 365 s"
    job serve $PY "$S/workloads.py" serve --seconds 375 --burst-s 6 --pause-s 20 --hold-gib 1 --truth "$R/serve.truth.json"
    sleep 5
    record serve
    watch serve 365
    sleep 180
    smi serve
    sleep 186
    stop_record
    end_job
    settle
    fi
    if skipped evalrank; then echo "evalrank: skipped (SKIP)"; return; fi
    ts "case evalrank: 2 ranks over gloo, rank 0 in a 135 s CPU phase; doctor watches 150 s"
    job evalrank $PY "$S/workloads.py" evalrank --seconds 150 --train-s 12 --eval-s 135 --truth "$R/evalrank.truth.json"
    sleep 8
    record evalrank
    watch evalrank 150
    sleep 80
    smi evalrank
    sleep 72
    stop_record
    end_job
    settle
}

group_host() {
    if skipped offload; then echo "offload: skipped (SKIP)"; else
    ts "case offload: AdamW on the CPU by the main thread, grad accumulation 8; doctor 62 s"
    job offload $PY "$S/workloads.py" offload --seconds 82 --truth "$R/offload.truth.json"
    sleep 8
    record offload
    watch offload 62
    sleep 35
    smi offload
    sleep 29
    stop_record
    end_job
    settle
    fi

    if skipped compile; then echo "compile: skipped (SKIP)"; else
    ts "case compile: torch.compile warm-up (doctor 30 s from the start), then steady (doctor 35 s)"
    job compile $PY "$S/workloads.py" compile --seconds 85 --truth "$R/compile.truth.json"
    sleep 3
    record compile
    "$B" doctor --duration 30s --json > "$R/compile_warmup.doctor.json" 2> "$R/compile_warmup.doctor.err" < /dev/null
    smi compile
    for _ in $(seq 1 40); do grep -q compiled "$R/compile.out" && break; sleep 1; done
    ts "compile: $(grep compiled "$R/compile.out")"
    "$B" doctor --duration 35s --json > "$R/compile_steady.doctor.json" 2> "$R/compile_steady.doctor.err" < /dev/null
    stop_record
    end_job
    settle
    fi

    if skipped pinned; then echo "pinned: skipped (SKIP)"; else
    jpegs
    ts "case pinned: ResNet-50, 8 DataLoader workers, taskset -c 0,1; doctor 62 s once warm"
    job pinned taskset -c 0,1 $PY "$S/workloads.py" train-files --data "$W/jpeg" --workers 8 --batch 128 --seconds 85 --warm-steps 4 --ready "$W/pinned.ready" --truth "$R/pinned.truth.json"
    for _ in $(seq 1 40); do [ -e "$W/pinned.ready" ] && break; sleep 1; done
    record pinned
    watch pinned 62
    sleep 35
    smi pinned
    sleep 29
    stop_record
    end_job
    settle
    fi

    if skipped fuse-writes; then echo "fuse-writes: skipped (SKIP)"; elif mount_fuse; then
        ts "case fuse-writes: healthy bf16 step; stdout, train.log, event file and checkpoints on FUSE; doctor 45 s"
        mkdir -p "$W/mnt/job"
        job fuse-writes sh -c "exec $PY $S/workloads.py logger --seconds 75 --log-dir $W/mnt/job --ckpt-every 10 --truth $R/fuse-writes.truth.json > $W/mnt/job/slurm-4242.out 2>&1"
        sleep 8
        record fuse-writes
        watch fuse-writes 45
        sleep 25
        smi fuse-writes
        python3 - "$JOB" > "$R/fuse-writes.fds.txt" 2>&1 <<'EOF'
import os, sys
pid = sys.argv[1]
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        print(fd, os.readlink(f"/proc/{pid}/fd/{fd}"), open(f"/proc/{pid}/fdinfo/{fd}").read().split("\n")[1])
    except OSError:
        pass
EOF
        sleep 22
        stop_record
        end_job
        settle
    fi
    skipped export-tls || export_tls
    skipped epilog || epilog
}

# jpegs: the 6000-JPEG ImageFolder the training cases read, written once and warmed into the page cache.
jpegs() {
    [ -d "$W/jpeg/cls9" ] && return
    ts "dataset: 6000 JPEGs"
    $PY "$S/workloads.py" data --jpeg "$W/jpeg" 6000 > /dev/null && cat "$W"/jpeg/*/*.jpg > /dev/null
}

# The Slurm epilog (deploy/slurm/epilog.sh) as slurmd runs it, as root, for a job of user nobody: while the job's
# process still holds the GPU, then after it ended; its verdict must land in the job's StdOut (written as nobody,
# via setpriv), and in the fallback file when scontrol knows no StdOut or the job's file is not the user's to write.
epilog() {
    local E=$W/epilog uid=65534
    mkdir -p "$E/fallback" && chmod 755 "$W" "$E"
    : > "$E/slurm-77.out"
    [ "$(id -u)" -eq 0 ] && chown "$uid:$uid" "$E/slurm-77.out"
    printf '#!/bin/sh\necho "JobId=77 JobName=train UserId=nobody(%s) WorkDir=%s StdErr=%s/slurm-77.out StdOut=%s/slurm-77.out"\n' \
        "$uid" "$E" "$E" "$E" > "$E/scontrol"
    chmod +x "$E/scontrol"
    run_epilog() {
        local t=$(date +%s%N)
        SLURM_JOB_ID=77 SLURM_JOB_UID=$uid SLURM_JOB_GID=$uid SLURM_JOB_GPUS=0 GPUSIGHT=$B GPUSIGHT_SCONTROL=$1 \
            GPUSIGHT_EPILOG_DIR=$E/fallback bash deploy/slurm/epilog.sh
        echo "epilog ($2): exit $? in $(( ($(date +%s%N) - t) / 1000000 )) ms"
    }
    ts "case epilog: a healthy job on GPU 0, the epilog while its process lingers, then after it ended"
    job epilog-job $PY "$S/workloads.py" logger --seconds 40 --log-dir "$E/logs" --truth "$R/epilog.truth.json"
    sleep 15
    run_epilog "$E/scontrol" "job still on the GPU"
    end_job
    sleep 2
    run_epilog "$E/scontrol" "after the job"
    run_epilog /bin/false "scontrol knows no StdOut"
    chown 0:0 "$E/slurm-77.out" 2>/dev/null
    chmod 644 "$E/slurm-77.out"
    run_epilog "$E/scontrol" "StdOut not writable by the job's user"
    echo "--- $E/slurm-77.out ($(stat -c '%U %a' "$E/slurm-77.out"))"
    cat "$E/slurm-77.out"
    for f in "$E"/fallback/*; do echo "--- $f ($(stat -c '%U %a' "$f"))"; cat "$f"; done
    cp "$E/slurm-77.out" "$R/epilog.slurm-77.out"
    cp "$E"/fallback/* "$R/" 2>/dev/null
}

# long: a healthy ResNet-50 (12 DataLoader workers, no profiler in the job); doctor watches LONG_S seconds of it
# (default 540: 9 min; no warning expected) with nvidia-smi read every 30 s beside it; a recording comes back.
group_long() {
    local watch_s=${LONG_S:-600}
    jpegs
    ts "case long-healthy: ResNet-50, 12 workers, local JPEGs, no profiler; doctor ${watch_s} s once warm"
    job long-healthy $PY "$S/workloads.py" train-files --data "$W/jpeg" --workers 12 --batch 128 --seconds $((watch_s + 20)) --warm-steps 4 --no-profiler --ready "$W/long.ready" --truth "$R/long-healthy.truth.json"
    for _ in $(seq 1 60); do [ -e "$W/long.ready" ] && break; sleep 1; done
    record long-healthy
    watch long-healthy "$watch_s"
    for _ in $(seq 1 $((watch_s / 30))); do sleep 30; smi long-healthy; done
    sleep $((watch_s % 30 + 1))
    stop_record
    end_job
    settle
}

# pane: a starved ResNet-50 (one DataLoader worker) with the monitor in two tmux panes (80x24 and 200x60) started
# once the job is warm; both screens at 5 s and at 35 s, `--status` beside them (the monitor is its watcher), the
# doctor over the same 40 s, and `--once` on an 80-column terminal.
group_pane() {
    command -v tmux > /dev/null || { echo "pane: tmux is not installed: skipped"; return; }
    jpegs
    local sock=gpusight-pane-$$ wait_s
    ts "case pane-starved: ResNet-50, one DataLoader worker, local JPEGs; the monitor in tmux from warm"
    job pane-starved $PY "$S/workloads.py" train-files --data "$W/jpeg" --workers 1 --batch 128 --seconds 70 --warm-steps 2 --no-profiler --ready "$W/pane.ready" --truth "$R/pane-starved.truth.json"
    for _ in $(seq 1 90); do [ -e "$W/pane.ready" ] && break; sleep 1; done
    for size in 80x24 200x60; do
        tmux -L "$sock" new-session -d -s "s$size" -x "${size%x*}" -y "${size#*x}" "TERM=xterm-256color $B; echo EXIT=\$?; sleep 60"
    done
    watch pane-starved 40
    local start=$(date +%s)
    for at in 5 35; do
        wait_s=$((start + at - $(date +%s)))
        [ "$wait_s" -gt 0 ] && sleep "$wait_s"
        for size in 80x24 200x60; do
            tmux -L "$sock" capture-pane -p -t "s$size" > "$R/pane-starved.${at}s_$size.txt"
        done
        "$B" --status > "$R/pane-starved.${at}s.status.txt" 2>&1
        ts "pane at ${at} s: status: $(cat "$R/pane-starved.${at}s.status.txt")"
        cat "$R/pane-starved.${at}s_80x24.txt"
    done
    script -qec "stty cols 80 rows 24; $B --once" /dev/null > "$R/pane-starved.once80.txt" 2>&1
    for size in 80x24 200x60; do tmux -L "$sock" send-keys -t "s$size" q; done
    sleep 1
    tmux -L "$sock" kill-server 2> /dev/null
    # The doctor's 40 s end before the job does (it runs 70 s from warm): its verdict is over a live job.
    settle
    end_job
    settle
}

# The exporter over TLS with basic auth, scraped by a real Prometheus; its series against nvidia-smi.
export_tls() {
    [ -n "${WEB:-}" ] && [ -f "$WEB/web.yml" ] || { echo "export-tls: no WEB dir with web.yml: skipped"; return; }
    local prom=prometheus
    if ! command -v prometheus > /dev/null; then
        [ -n "${PROM_DEB:-}" ] || { echo "export-tls: no prometheus: skipped"; return; }
        mkdir -p /tmp/gs_prom_root && dpkg -x "$PROM_DEB" /tmp/gs_prom_root
        prom=/tmp/gs_prom_root/usr/bin/prometheus
    fi
    ts "case export-tls: gpusight export --web.config.file, Prometheus scrapes it over TLS with basic auth"
    mkdir -p "$W/prom" && cp "$WEB"/* "$W/prom/"
    "$B" export --listen 127.0.0.1:9400 --web.config.file "$W/prom/web.yml" > "$R/export.out" 2>&1 < /dev/null &
    PIDS+=($!)
    "$prom" --config.file "$W/prom/prometheus.yml" --storage.tsdb.path "$W/prom/data" --web.listen-address 127.0.0.1:9090 > "$R/prometheus.out" 2>&1 < /dev/null &
    PIDS+=($!)
    sleep 4
    curl -sk -o /dev/null -w 'no credentials: %{http_code}\n' https://127.0.0.1:9400/metrics
    curl -sk -o /dev/null -w 'wrong password: %{http_code}\n' -u prom:wrong https://127.0.0.1:9400/metrics
    curl -s --cacert "$W/prom/cert.pem" -o "$R/metrics.txt" -w 'with credentials, CA-verified: %{http_code}\n' -u prom:h200-secret https://localhost:9400/metrics
    curl -s -o /dev/null -w 'plain http to the TLS port: %{http_code}\n' http://127.0.0.1:9400/metrics
    sleep 14
    for q in 'up{job="gpusight"}' DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_POWER_USAGE DCGM_FI_DEV_FB_USED DCGM_FI_DEV_SM_CLOCK DCGM_FI_DEV_MEMORY_TEMP gpusight_power_limit_watts gpusight_power_limit_default_watts; do
        echo "prometheus: $q = $(curl -s "http://127.0.0.1:9090/api/v1/query" --data-urlencode "query=$q" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print([(x["metric"].get("hostname"), x["value"][1]) for x in r])')"
    done
    echo "nvidia-smi: $(nvidia-smi --query-gpu=temperature.gpu,temperature.memory,power.draw,memory.used,clocks.sm,power.limit,power.default_limit --format=csv,noheader)"
}

# `gpusight ssh localhost` beside a training job, through a throwaway sshd on 127.0.0.1 with its own keys (as the
# end-to-end tests in tests/ssh/ set it up): the stream's bytes, --once, --doctor beside the local doctor over the
# same window, the live view in tmux, the CPU of the local and the remote side, and no `gpusight --record` left
# after quitting.
group_ssh() {
    local sshd=/usr/sbin/sshd ssh=ssh D=$W/ssh port=${SSH_PORT:-2222}
    if [ ! -x "$sshd" ] && [ -n "${SSH_DEBS:-}" ]; then
        mkdir -p /tmp/gs_ssh_root && for d in "$SSH_DEBS"/*.deb; do dpkg -x "$d" /tmp/gs_ssh_root; done
        sshd=/tmp/gs_ssh_root/usr/sbin/sshd ssh=/tmp/gs_ssh_root/usr/bin/ssh
        export PATH=/tmp/gs_ssh_root/usr/bin:$PATH
        # The libraries the packages need that the image may lack (libwrap, Kerberos), from the same .debs.
        export LD_LIBRARY_PATH=/tmp/gs_ssh_root/usr/lib/x86_64-linux-gnu:/tmp/gs_ssh_root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
    # sshd's privilege separation needs its user, which an image without openssh-server lacks.
    id sshd > /dev/null 2>&1 || useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd 2> /dev/null
    [ -x "$sshd" ] || { echo "ssh: no sshd (openssh-server; or SSH_DEBS=DIR of .debs): skipped"; return; }
    command -v "$ssh" > /dev/null || { echo "ssh: no ssh client (openssh-client): skipped"; return; }
    rm -rf "$D" && mkdir -p "$D" /run/sshd
    ssh-keygen -q -t ed25519 -N "" -f "$D/host_key" && ssh-keygen -q -t ed25519 -N "" -f "$D/id"
    cp "$D/id.pub" "$D/authorized_keys"
    printf 'Port %s\nListenAddress 127.0.0.1\nHostKey %s/host_key\nPidFile %s/sshd.pid\nAuthorizedKeysFile %s/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n' \
        "$port" "$D" "$D" "$D" > "$D/sshd_config"
    printf 'Host *\n  HostName 127.0.0.1\n  Port %s\n  User %s\n  IdentityFile %s/id\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
        "$port" "$(id -un)" "$D" > "$D/ssh_config"
    "$sshd" -D -e -f "$D/sshd_config" > "$R/sshd.out" 2>&1 < /dev/null &
    local sshd_pid=$!
    PIDS+=($sshd_pid)
    sleep 1
    local F=(--ssh-config "$D/ssh_config" --remote-gpusight "$B")
    "$ssh" -F "$D/ssh_config" -o BatchMode=yes localhost true || { echo "ssh: sshd does not accept the key: skipped"; return; }
    jpegs
    ts "case ssh: ResNet-50, 8 workers, local JPEGs; gpusight ssh localhost beside it"
    job ssh-train $PY "$S/workloads.py" train-files --data "$W/jpeg" --workers 8 --batch 128 --seconds 120 --warm-steps 2 --no-profiler --ready "$W/ssh.ready" --truth "$R/ssh-train.truth.json"
    for _ in $(seq 1 90); do [ -e "$W/ssh.ready" ] && break; sleep 1; done
    local bytes
    bytes=$(timeout 20 "$B" --record - --headless --interval 1 2> /dev/null < /dev/null | wc -c)
    ts "stream: $bytes bytes in 20 s at 1 s for $(nvidia-smi -L | wc -l) GPUs (header included)"
    "$B" ssh "${F[@]}" --once localhost > "$R/ssh.once.txt" 2>&1; ts "ssh --once: exit $?"
    cat "$R/ssh.once.txt"
    "$B" ssh "${F[@]}" --doctor --duration 40s --json localhost > "$R/ssh.doctor.json" 2> "$R/ssh.doctor.err" < /dev/null &
    local remote_doctor=$!
    "$B" doctor --duration 40s --json > "$R/ssh.local-doctor.json" 2> /dev/null < /dev/null
    wait "$remote_doctor"; ts "ssh --doctor: exit $? (local doctor: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$R/ssh.local-doctor.json" 2>&1))"
    command -v tmux > /dev/null || { echo "ssh: no tmux: the view is skipped"; end_job; settle; return; }
    local sock=gpusight-ssh-$$
    tmux -L "$sock" new-session -d -s ssh -x 160 -y 40 "TERM=xterm-256color $B ssh ${F[*]} localhost localhost-2; echo EXIT=\$?; sleep 30"
    sleep 20
    tmux -L "$sock" capture-pane -p -t ssh > "$R/ssh.view.txt"; cat "$R/ssh.view.txt"
    local view_pid; view_pid=$(pgrep -f "^$B ssh --ssh-config" | head -1)
    [ -n "$view_pid" ] && ts "local side: $(ps -o pid=,pcpu=,rss= -p "$view_pid") (pid %CPU RSS KiB)"
    ts "remote side: $(pgrep -af -- "^$B --record - --headless --exit-on-stdin-eof" | head -2)"
    for p in $(pgrep -f -- "^$B --record - --headless --exit-on-stdin-eof"); do ps -o pid=,pcpu=,rss= -p "$p"; done
    tmux -L "$sock" send-keys -t ssh q
    sleep 3
    tmux -L "$sock" capture-pane -p -t ssh | grep EXIT
    if pgrep -f -- "^$B --record - --headless --exit-on-stdin-eof" > /dev/null; then
        ts "ssh: FAIL: a remote gpusight --record is left after q"
    else
        ts "ssh: no remote gpusight --record left after q"
    fi
    tmux -L "$sock" kill-server 2> /dev/null
    end_job
    kill "$sshd_pid" 2> /dev/null
    settle
}

case "${GROUP:-}" in
    serve-ranks) group_serve_ranks ;;
    host) group_host ;;
    epilog) epilog; settle ;;
    long) group_long ;;
    pane) group_pane ;;
    ssh) group_ssh ;;
    *) echo "GROUP=readings, findings, waits, ranks, cost, nvml-threads, memory, serve-ranks, host, epilog, long, pane, ssh, account or tls (GROUP=help)"; exit 2 ;;
esac
ts "done"
