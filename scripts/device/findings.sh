#!/usr/bin/env bash
# Device check for issue 13 (findings a practitioner trusts), on one H200 with 16 CPUs, in under 8 minutes.
#
# Real PyTorch jobs (torchvision ResNet-50 on files written to local disk, a real DataLoader), each watched by
# `target/release/gpusight doctor --duration 45s --json` while torch.profiler measures the DataLoader share of
# step time (the ground truth):
#   healthy     JPEG ImageFolder, num_workers = CPUs - 2, warm cache   expect: no warning (exit 0)
#   one-worker  the same job with num_workers = 1                       expect: cpu-bound-input naming the worker PID
#   small-files 48 KiB raw files, 2 workers, page cache dropped, and (IO_MAX, default on) the job in a cgroup v2
#               whose io.max caps reads on every disk (a slow store: an HDD array, a busy network volume)
#                                                                       expect: input-bound
#   writer      the healthy job saving a ~3 GiB checkpoint every 2 s    expect: not input-bound
# Run from the repository root with the release binary built; results (doctor JSON, ground truth, log, table)
# go to $OUT (default /tmp/findings-out). Needs root for drop_caches (without it the cache is only advised away).
set -u
cd "$(dirname "$0")/../.." || exit 3
B=$PWD/target/release/gpusight
S=$PWD/scripts/device
O=${OUT:-/tmp/findings-out}
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
[ -x "$B" ] || { echo "no $B: build it with cargo build --release"; exit 3; }

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
python3 "$S/findings_data.py" --jpeg "$W/jpeg" 8000 --raw "$W/raw" 24000 || exit 3
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
        GS_SLOW_CGROUP=$CG python3 "$S/findings_train.py" --ready "$ready" --truth "$truth" --seconds 50 "$@" &
    else
        python3 "$S/findings_train.py" --ready "$ready" --truth "$truth" --seconds 50 "$@" &
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
