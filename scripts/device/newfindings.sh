#!/usr/bin/env bash
# Device check for issue 17 (why a GPU waits, beyond storage and CPU preprocessing), on one H200 with 16 CPUs.
#
# Real PyTorch programs of ours, each watched by `target/release/gpusight doctor --duration 75s --json` (gpu-underfed
# judges a minute) with one `gpusight --once --json` captured mid-case (GPM SM activity, utilization, power, PCIe RX),
# and torch.profiler's step breakdown as the ground truth:
#
#   case            program                                                        expect
#   launch-tiny     2000 tiny elementwise ops + an MLP step at batch 8, eager      launch-bound (gpu-underfed names it)
#   launch-graph    the same ops and MLP forward captured in one CUDA graph        no launch-bound
#   launch-b4096    the same op count on 4096x4096 tensors, the MLP at batch 4096  no warning
#   h2d-pageable    1 GiB copied host->device from pageable memory, tiny compute   h2d-copy-bound
#   h2d-pinned      1 GiB copied host->device from pinned memory, tiny compute     h2d-copy-bound
#   h2d-overlap     pinned non_blocking copies on a side stream under bf16 matmuls  no warning
#   cpu-quota       ResNet-152 on JPEGs, 8 DataLoader workers, in a cgroup v2 with  cpu-quota-throttled
#                   cpu.max "200000 100000" (2 CPUs)
#   cpu-quota-free  the same job outside the cgroup                                no warning
#   remote-http     the same job reading each JPEG over HTTP from 127.0.0.1, the    remote-dataset-stall
#                   server sleeping 20 ms per request
#   remote-local    the same job reading the same files from local disk            no warning
#
# Every call on the device machine has 600 s, so run it in groups (each about 5-7 minutes, estimates):
#   ONLY_CASES="launch-tiny launch-graph launch-b4096"      OUT=$OUT/launch bash scripts/device/newfindings.sh  # ~5.5 min
#   ONLY_CASES="h2d-pageable h2d-pinned h2d-overlap"        OUT=$OUT/h2d    bash scripts/device/newfindings.sh  # ~5.5 min
#   ONLY_CASES="cpu-quota cpu-quota-free"                   OUT=$OUT/quota  bash scripts/device/newfindings.sh  # ~4.5 min
#   ONLY_CASES="remote-http remote-local"                   OUT=$OUT/remote bash scripts/device/newfindings.sh  # ~4.5 min
# Without ONLY_CASES it runs all ten (~20 min: too long for one call). Build first: cargo build --release --locked.
# Results go to $OUT (default /tmp/newfind-out): NAME_doctor.json, NAME_once.json, NAME_truth.json, log.txt and
# table.md (cases, expected, found, ground truth).
#
# cpu-quota needs a writable cgroup v2 with the cpu controller (root): it makes /sys/fs/cgroup/gs_newfind_quota,
# enables +cpu in the parent's cgroup.subtree_control if needed, and starts the job with a shell that writes its
# own PID into cgroup.procs before exec'ing python (so the workers are forked inside). If any of that is not
# possible it says so and skips the case: it is never faked.
#
# Safe to run on a shared box: it never changes clocks, power limits, persistence or MIG, never resets the GPU, and
# kills every job it started on exit (and removes its cgroup and files).
set -u
cd "$(dirname "$0")/../.." || exit 3
B=$PWD/target/release/gpusight
S=$PWD/scripts/device
O=${OUT:-/tmp/newfind-out}
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
    python3 "$S/findings_data.py" --jpeg "$W/jpeg" 6000 || exit 3
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

# run_case NAME SCRIPT ARGS...: starts the job, waits until it is warm, watches it with doctor for DOCTOR_S
# seconds (one --once --json halfway), then waits for the job's ground truth. PREFIX (an env var) wraps the job.
run_case() {
    local name=$1 script=$2; shift 2
    wanted "$name" || return 0
    local ready="$W/$name.ready" truth="$O/${name}_truth.json"
    rm -f "$ready" "$truth"
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): $script $*"
    if [ -n "${IN_CGROUP:-}" ]; then
        bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$CG" \
            python3 "$S/$script" --ready "$ready" --truth "$truth" --seconds "$JOB_S" "$@" &
    else
        python3 "$S/$script" --ready "$ready" --truth "$truth" --seconds "$JOB_S" "$@" &
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

run_case launch-tiny newfind_gpu.py --work tiny
run_case launch-graph newfind_gpu.py --work graph
run_case launch-b4096 newfind_gpu.py --work b4096
run_case h2d-pageable newfind_gpu.py --work pageable
run_case h2d-pinned newfind_gpu.py --work pinned
run_case h2d-overlap newfind_gpu.py --work overlap

LOADER=(--data "$W/jpeg" --workers 8 --batch 128 --model resnet152)
if wanted cpu-quota; then
    if cgroup_ready; then
        IN_CGROUP=1 run_case cpu-quota newfind_loader.py "${LOADER[@]}"
    else
        echo "cpu-quota: skipped (see above)" > "$O/cpu-quota_skipped.txt"
    fi
fi
run_case cpu-quota-free newfind_loader.py "${LOADER[@]}"

if wanted remote-http; then
    python3 "$S/newfind_http.py" --root "$W/jpeg" --port 8765 --delay-ms 20 &
    PIDS+=("$!")
    sleep 1
    run_case remote-http newfind_loader.py "${LOADER[@]}" --source http --url http://127.0.0.1:8765
fi
run_case remote-local newfind_loader.py "${LOADER[@]}"

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
