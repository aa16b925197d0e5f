#!/usr/bin/env bash
# Issue 16 on two GPUs (nvidia-h200-x2): a real two-rank torchrun job (scripts/device/ddp_train.py: ResNet-50, DDP
# over NCCL, a real DataLoader per rank) in four shapes, each watched by `gpusight doctor --json` with a recording
# beside it and one `--once --json` halfway; the table gives each GPU's NVML utilization, GPM SM activity, power,
# PCIe and NVLink rates averaged over the recording (what a waiting rank really shows). The ground truth is the job's own per-rank log: images/s, step time and the share of the step
# spent waiting for the DataLoader.
#
#   case      job                                                        expect
#   balanced  8 workers per rank                                         no rank-straggler, no collective-hang
#   loader    rank 1 gets 1 DataLoader worker (--workers-rank 1:1)       rank-straggler: rank 1, GPU 1, its loader
#   compute   rank 1 runs forward/backward twice a step (--compute-rank 1:2)  rank-straggler: rank 1, GPU 1, compute
#   hang      rank 1 stops joining all_reduce after 20 steps              collective-hang within 3 minutes
#             (--skip-allreduce-rank 1 --pg-timeout 300)
#
# Every device call has 600 s, so run it in two groups:
#   ONLY_CASES="balanced loader compute" OUT=$OUT/ranks bash scripts/device/ranks.sh   # ~6 min
#   ONLY_CASES="hang" OUT=$OUT/hang bash scripts/device/ranks.sh                       # ~4 min
# Results: $OUT/NAME_doctor.json, NAME_once.json, NAME.jsonl.gz (the recording), NAME_job.log, log.txt, table.md.
# The device returns at most 8 files a call: set TAR_TO=$OUT/ranks.tgz with OUT=/tmp/ranks to get them all in one.
# Kills every process it started on exit. Needs target/release/gpusight, torch with two GPUs, torchrun.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=$PWD/target/release/gpusight
O=${OUT:-/tmp/ranks-out}
DOCTOR_S=${DOCTOR_S:-75}
HANG_DOCTOR_S=${HANG_DOCTOR_S:-170}
mkdir -p "$O"
exec > >(tee -a "$O/log.txt") 2>&1
[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "needs two GPUs: $(nvidia-smi -L)"; exit 3; }
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    pkill -f scripts/device/ddp_train.py 2>/dev/null
    sleep 1
    pkill -9 -f scripts/device/ddp_train.py 2>/dev/null
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
    echo "== case $name (t=$(( $(date +%s) - t0 )) s): ddp_train.py $*"
    local log="$O/${name}_job.log"
    torchrun --standalone --nproc_per_node=2 scripts/device/ddp_train.py --seconds $((watch + 60)) "$@" > "$log" 2>&1 &
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
    kill "$job" 2>/dev/null; pkill -f scripts/device/ddp_train.py 2>/dev/null
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
if [ -n "${TAR_TO:-}" ]; then tar czf "$TAR_TO" -C "$O" . && echo "results in $TAR_TO"; fi
