#!/usr/bin/env bash
# GROUP=account of scripts/device/cluster_cases.sh (which runs this file): real PyTorch jobs, each in one situation
# that makes its GPU wait for one known cause (another user's CPU load, oversubscribed threads, a restart loop, a
# slower rank, rare requests, a start-up load, a full card, synchronous checkpoints, decoding in the main process, a
# spinning kernel, slow storage, host memory pressure, a neighbour on the GPU, a CPU-pinned job). Each job is
# scripts/device/account.py and measures its own ground truth (torch.profiler's step breakdown, time in
# next(loader), in torch.save, per-rank step timers, request logs, schedstat and PSI); `gpusight doctor --json`
# watches it beside `gpusight --record --headless --interval 1`, and the recording is replayed through
# `doctor --replay` after. The table holds, per case, what ran, the verdict expected, the live and replayed
# verdicts, the program's own truth and PASS or FAIL.
#
#   GROUP=account PART=cpu  bash scripts/device/cluster_cases.sh   # ~8 min: contention oversub oversub-fix
#                                                                   #   main-decode
#   GROUP=account PART=life bash scripts/device/cluster_cases.sh   # ~8.5 min: crash-loop weight-load full-vram
#   GROUP=account PART=gpu  bash scripts/device/cluster_cases.sh   # ~8 min: rare-serve serve-train spin ckpt-sync
#   GROUP=account PART=io   bash scripts/device/cluster_cases.sh   # ~7.5 min, as root: slow-loop slow-fuse host-mem
#   GROUP=account PART=jobs bash scripts/device/cluster_cases.sh   # ~8.5 min: ddp-slow ddp-even slurm-pinned
#                                                                   #   contention-free
#   GROUP=account ONLY_CASES="spin ckpt-sync" bash scripts/device/cluster_cases.sh   # any cases, in table order;
#                                                                   # refused past 570 s of stated time (FORCE=1)
#   GROUP=account SMOKE=1 bash scripts/device/cluster_cases.sh     # no GPU, no gpusight: every program of
#                                                                   # account.py in --smoke (CPU, toy sizes, a few
#                                                                   # seconds) and the table on made-up verdicts
#
# Each case's time (seconds, start to replay) is stated in the table below, with the verdict expected of it: the
# one place to edit both. Knobs (environment): WATCH_S (60, the doctor's window of most cases), SETTLE_S (6, after
# warm-up before the window), OTHER_USER (gsother: made with useradd when root and missing, removed after),
# BURN_PER_CPU (2), CRASH_WATCH_S (210), CRASH_TRAIN_S (45), CRASH_BACKOFF_S (10), LOAD_GIB (8), LOAD_MIB_S (270),
# RARE_WATCH_S (180), RARE_EVERY_S (45), RARE_IDLE_WINDOW_S (40: idle_holder_window_s for rare-serve only, so a
# whole window passes between two requests), LOOP_IO_MAX ("riops=300 rbps=16777216"), FUSE_DELAY_MS (30),
# HOSTMEM_LEAVE_PCT (6) and HOSTMEM_LEAVE_GIB (8: MemAvailable host-mem leaves at least), HOSTMEM_HEADROOM_GIB (8:
# the job's room under its memory.max beside its cache and pinned buffers), ACCOUNT_WORK (/var/tmp/gs_account: on
# a block device, for the checkpoints and the throttled reads), PYTHON (python3).
#
# Needs: target/release/gpusight (GPUSIGHT=path for another), PyTorch with CUDA and torchvision. Root for the other
# user (else the burners run as this user, and the table says so), for the cgroups (io.max, memory.max), the
# loopback mount and the FUSE mount; slow-fuse also needs libfuse2 and fusepy as GROUP=host does (DEBS=DIR of
# Debian's libfuse2 and fuse packages, FUSEPY=DIR holding fuse.py). A case whose situation cannot be made is
# skipped with its reason, never faked.
# Results: ${OUT:-/tmp/gpusight-validate}/account/ (log.txt, table.md, cases.tsv, and per case NAME.doctor.json,
# NAME.replay.json, NAME.truth.json, NAME.out, account-NAME.jsonl.gz: the recordings, named as the fixtures in
# tests/fixtures/h200/ will be) and account-PART.tgz beside it, rewritten after every case.
#
# Safe on a shared box: never changes clocks, power limits, persistence or MIG, never resets the GPU; host-mem keeps
# MemAvailable above its floor (memory.max on the job's cgroup, and the job's own valve); every process the group
# started is stopped by its process group on exit, its mounts unmounted and its cgroups removed.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=${GPUSIGHT:-$PWD/target/release/gpusight}
S=$PWD/scripts/device
BASE=${OUT:-/tmp/gpusight-validate}
PY=${PYTHON:-python3}
W=${ACCOUNT_WORK:-/var/tmp/gs_account}
O=$BASE/account
WATCH_S=${WATCH_S:-60}
SETTLE_S=${SETTLE_S:-6}
OTHER_USER=${OTHER_USER:-gsother}
BURN_PER_CPU=${BURN_PER_CPU:-2}
CRASH_WATCH_S=${CRASH_WATCH_S:-210}
CRASH_TRAIN_S=${CRASH_TRAIN_S:-45}
CRASH_BACKOFF_S=${CRASH_BACKOFF_S:-10}
LOAD_GIB=${LOAD_GIB:-8}
LOAD_MIB_S=${LOAD_MIB_S:-270}
RARE_WATCH_S=${RARE_WATCH_S:-180}
RARE_EVERY_S=${RARE_EVERY_S:-45}
RARE_IDLE_WINDOW_S=${RARE_IDLE_WINDOW_S:-40}
LOOP_IO_MAX=${LOOP_IO_MAX:-riops=300 rbps=16777216}
FUSE_DELAY_MS=${FUSE_DELAY_MS:-30}
HOSTMEM_LEAVE_PCT=${HOSTMEM_LEAVE_PCT:-6}
HOSTMEM_LEAVE_GIB=${HOSTMEM_LEAVE_GIB:-8}
HOSTMEM_HEADROOM_GIB=${HOSTMEM_HEADROOM_GIB:-8}

# ---- the cases: name, part, seconds (start to replay), expected verdict, what runs ----------------------------------
# EXPECTED is checked on the live doctor and on the replay, over active and cleared findings, word by word:
#   RULE found    !RULE not found    R1|R2 one of them    RULE~TEXT with TEXT in its title, evidence or remedy
#   RULE@KEY on the PID the truth's KEY names    exit0 doctor exits 0          (account.py table --help)
NAMES=() PARTS=() SECS=() EXPECT=() WHAT=()
case_def() { NAMES+=("$1"); PARTS+=("$2"); SECS+=("$3"); EXPECT+=("$4"); WHAT+=("$5"); }
case_def contention cpu 105 "cpu-contention~$OTHER_USER !cpu-oversubscribed" \
    "ResNet-152, 8 DataLoader workers (ColorJitter); user $OTHER_USER runs $BURN_PER_CPU Python burners a CPU"
case_def oversub cpu 110 "cpu-oversubscribed" \
    "ResNet-152, 8 workers each at torch.set_num_threads(35) running a torch-op augmentation"
case_def oversub-fix cpu 100 "!cpu-oversubscribed" "the same augmentation at one thread a worker (the fix)"
case_def main-decode cpu 110 "cpu-bound-input~num_workers" \
    "ResNet-50, num_workers=0: JPEG decode and augmentation in the main process"
case_def crash-loop life 230 "restart-loop" \
    "ResNet-50 loading a 2 GiB checkpoint, training ${CRASH_TRAIN_S} s, failing; restarted after ${CRASH_BACKOFF_S} s"
case_def weight-load life 140 "!vram-growing !idle-holder" \
    "${LOAD_GIB} GiB checkpoint read at ${LOAD_MIB_S} MiB/s (io.max) to the GPU tensor by tensor, then steady training"
case_def full-vram life 85 "!vram-nearly-full !vram-growing" \
    "ResNet-50 with 97 % of the card reserved by the caching allocator, flat"
case_def rare-serve gpu 200 "serving@server_pid !idle-holder" \
    "ResNet-50 HTTP server, one request every ${RARE_EVERY_S} s (idle_holder_window_s = ${RARE_IDLE_WINDOW_S})"
case_def serve-train gpu 90 "serving@server_pid !idle-holder" \
    "ResNet-50 training beside a ResNet-50 server on the same GPU, bursts of 20 requests every 5 s"
case_def spin gpu 60 "util-misleading" "torch.cuda._sleep kernels on one SM, back to back"
case_def ckpt-sync gpu 90 "checkpoint-write" "ResNet-50, torch.save of a 4 GiB state + fsync every ~8 s to local disk"
case_def slow-loop io 125 "input-bound" \
    "ResNet-50, 8 workers reading JPEGs from a loopback ext4 under io.max ($LOOP_IO_MAX), each file dropped after read"
case_def slow-fuse io 115 "remote-dataset-stall|input-bound" \
    "ResNet-50, 8 workers reading JPEGs through a passthrough FUSE mount adding ${FUSE_DELAY_MS} ms a read"
case_def host-mem io 160 "host-memory-pressure" \
    "ResNet-50, 8 workers, a RAM image cache and pinned buffers filling a memory.max cgroup down to MemAvailable ~${HOSTMEM_LEAVE_PCT} %"
case_def ddp-slow jobs 130 "comm-bound|rank-straggler" \
    "2 ranks over gloo/TCP on GPU 0, ResNet-50; rank 1 spends 150 ms a step on extra CPU work"
case_def ddp-even jobs 120 "!rank-straggler" "the same 2 ranks, balanced"
case_def slurm-pinned jobs 100 "cpus-pinned|cpu-oversubscribed" \
    "ResNet-50, 12 workers under taskset -c 0-3 with a Slurm job's environment (SLURM_CPUS_ON_NODE=4)"
case_def contention-free jobs 105 "!cpu-contention" "the contention job without the burners (its control)"

case "${PART:-}" in
    ""|cpu|life|gpu|io|jobs) ;;
    *) echo "PART=$PART: one of cpu, life, gpu, io, jobs"; exit 2 ;;
esac
SELECTED=()
for i in "${!NAMES[@]}"; do
    if [ -n "${ONLY_CASES:-}" ]; then
        [[ " $ONLY_CASES " == *" ${NAMES[$i]} "* ]] && SELECTED+=("$i")
    elif [ -n "${PART:-}" ] && [ "${PARTS[$i]}" = "$PART" ]; then
        SELECTED+=("$i")
    fi
done
if [ -z "${SMOKE:-}" ] && [ ${#SELECTED[@]} -eq 0 ]; then
    echo "GROUP=account needs PART= or ONLY_CASES= (each call must end within 10 minutes):"
    for p in cpu life gpu io jobs; do
        t=0 list=""
        for i in "${!NAMES[@]}"; do [ "${PARTS[$i]}" = "$p" ] && t=$((t + SECS[i])) && list="$list ${NAMES[$i]}"; done
        echo "  PART=$p (~$((t + 40)) s):$list"
    done
    exit 2
fi
TOTAL=40
for i in "${SELECTED[@]}"; do TOTAL=$((TOTAL + SECS[i])); done
if [ -z "${SMOKE:-}" ] && [ "$TOTAL" -gt 570 ] && [ -z "${FORCE:-}" ]; then
    echo "the selected cases take ~$TOTAL s, past one call's 10 minutes: split them (or FORCE=1)"
    exit 2
fi
LABEL=${PART:-cases}
[ -n "${SMOKE:-}" ] && LABEL=smoke && O=$BASE/account-smoke

# ---- helpers ----------------------------------------------------------------------------------------------------------
rm -rf "$O"
mkdir -p "$O" "$W"
exec > >(tee -a "$O/log.txt") 2>&1
t0=$(date +%s)
ts() { echo "[t=$(($(date +%s) - t0))s] $*"; }
JOBS=() CGS=() PREFIX=()
JOB="" BURN="" FUSE_PID="" LOOP_MNT="" MADE_USER=""
pack() { tar czf "$BASE/account-$LABEL.tgz" -C "$(dirname "$O")" "$(basename "$O")" 2> /dev/null; }
# stop_job PID: SIGTERM to the process group the job leads (its workers, ranks, children), SIGKILL after 15 s.
stop_job() {
    local p=$1
    kill -TERM -- "-$p" 2> /dev/null
    for _ in $(seq 30); do kill -0 -- "-$p" 2> /dev/null || break; sleep 0.5; done
    kill -KILL -- "-$p" 2> /dev/null
    wait "$p" 2> /dev/null
}
# cg_release DIR: what is left in a cgroup goes back to the root, then the cgroup.
cg_release() {
    local p
    [ -d "$1" ] || return 0
    while read -r p; do echo "$p" > /sys/fs/cgroup/cgroup.procs; done < "$1/cgroup.procs" 2> /dev/null
    rmdir "$1" 2> /dev/null || echo "note: could not remove $1"
}
cleanup() {
    local p
    for p in "${JOBS[@]}"; do stop_job "$p"; done
    [ -n "$FUSE_PID" ] && { umount "$W/fusemnt" 2> /dev/null || umount -l "$W/fusemnt" 2> /dev/null; stop_job "$FUSE_PID"; }
    [ -n "$LOOP_MNT" ] && { umount "$LOOP_MNT" 2> /dev/null || umount -l "$LOOP_MNT" 2> /dev/null; }
    for p in "${CGS[@]}"; do cg_release "$p"; done
    [ -n "$MADE_USER" ] && userdel "$OTHER_USER" 2> /dev/null
    # The work dir goes only when nothing is mounted under it.
    grep -q " $W/" /proc/self/mountinfo || rm -rf "$W"
    pack
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: the job in a session of its own (so stop_job reaches all it starts), output to NAME.out;
# PREFIX (an array, then emptied) goes in front of CMD.
start() {
    local n=$1
    shift
    rm -f "$W/$n.ready"
    ts "case $n: ${PREFIX[*]+${PREFIX[*]} }$*"
    setsid ${PREFIX[@]+"${PREFIX[@]}"} "$@" > "$O/$n.out" 2>&1 < /dev/null &
    JOB=$!
    JOBS+=("$JOB")
    PREFIX=()
}
# wait_ready NAME SECONDS: until the job creates its ready file; on failure says why in NAME.failed.
wait_ready() {
    local n=$1 limit=$(($2 * 10)) i=0
    while [ ! -e "$W/$n.ready" ] && kill -0 "$JOB" 2> /dev/null && [ $i -lt $limit ]; do sleep 0.1; i=$((i + 1)); done
    if [ -e "$W/$n.ready" ]; then ts "$n: ready after $((i / 10)) s (PID $JOB)"; return 0; fi
    ts "$n: the job did not get ready:"; tail -5 "$O/$n.out"
    echo "the job did not get ready within $2 s (see $n.out)" > "$O/$n.failed"
    stop_job "$JOB"
    return 1
}
# observe NAME SECONDS [CONFIG]: the doctor over SECONDS beside a recording; nvidia-smi halfway.
observe() {
    local n=$1 watch=$2 conf=()
    [ -n "${3:-}" ] && conf=(--config "$3")
    ( sleep $((watch / 2)); { nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,power.draw --format=csv,noheader
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; } > "$O/$n.smi.txt" 2>&1 ) &
    "$B" ${conf[@]+"${conf[@]}"} --record "$O/account-$n.jsonl.gz" --headless --interval 1 --overwrite \
        > /dev/null 2> "$O/$n.record.err" < /dev/null &
    local rec=$! start
    start=$(date +%s.%N)
    "$B" ${conf[@]+"${conf[@]}"} doctor --duration "${watch}s" --json > "$O/$n.doctor.json" 2> "$O/$n.doctor.err" < /dev/null
    ts "$n: doctor exit=$?"
    echo "$start $(date +%s.%N)" > "$O/$n.window"
    # SIGINT ends a recording cleanly; one that has not ended 10 s later is stopped (and says so).
    kill -INT "$rec" 2> /dev/null
    for _ in $(seq 20); do kill -0 "$rec" 2> /dev/null || break; sleep 0.5; done
    kill -0 "$rec" 2> /dev/null && { ts "$n: the recorder ignored SIGINT: SIGTERM"; kill -TERM "$rec"; }
    wait "$rec" 2> /dev/null
}
# finish NAME GRACE: lets the job end on its own (it writes its truth) for up to GRACE s, then stops it.
finish() {
    local n=$1 left=$(($2 * 2))
    while kill -0 "$JOB" 2> /dev/null && [ $left -gt 0 ]; do sleep 0.5; left=$((left - 1)); done
    kill -0 "$JOB" 2> /dev/null && ts "$n: still running $2 s after its window: stopped"
    stop_job "$JOB"
    [ -s "$O/$n.truth.json" ] || { ts "$n: no truth written:"; tail -5 "$O/$n.out"; }
}
replay() {
    local n=$1 conf=()
    [ -n "${2:-}" ] && conf=(--config "$2")
    "$B" ${conf[@]+"${conf[@]}"} doctor --replay "$O/account-$n.jsonl.gz" --json > "$O/$n.replay.json" 2> "$O/$n.replay.err"
    ts "$n: replay exit=$?"
}
skip() { ts "$1: SKIP: $2"; echo "$2" > "$O/$1.skipped"; }
note() { ts "$1: note: $2"; echo "$2" >> "$O/$1.note"; }
# cg_make NAME CONTROLLER: a cgroup v2 under the root with CONTROLLER enabled, in CGPATH; else why in CG_WHY.
cg_make() {
    local root=/sys/fs/cgroup
    CGPATH=$root/$1 CG_WHY=""
    [ "$(id -u)" -eq 0 ] || { CG_WHY="not root"; return 1; }
    [ "$(stat -fc %T $root 2> /dev/null)" = cgroup2fs ] || { CG_WHY="no cgroup v2 at $root"; return 1; }
    grep -qw "$2" $root/cgroup.controllers 2> /dev/null || { CG_WHY="no $2 controller in $root"; return 1; }
    grep -qw "$2" $root/cgroup.subtree_control || echo "+$2" > $root/cgroup.subtree_control 2> /dev/null \
        || { CG_WHY="cannot enable +$2 in $root/cgroup.subtree_control"; return 1; }
    mkdir -p "$CGPATH" 2> /dev/null || { CG_WHY="cannot create $CGPATH"; return 1; }
    CGS+=("$CGPATH")
}
# in_cgroup DIR: a PREFIX that moves the job into DIR before it execs.
# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
in_cgroup() { PREFIX=(bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$1"); }
# jpegs: the 6000-JPEG ImageFolder (256 px, ~15 KB each), written once and warmed into the page cache.
jpegs() {
    [ -d "$W/jpeg/cls9" ] && return 0
    ts "dataset: ${JPEGS:-6000} JPEGs in $W/jpeg ($(findmnt -no SOURCE,FSTYPE -T "$W" | tr -s ' '))"
    "$PY" "$S/workloads.py" data --jpeg "$W/jpeg" "${JPEGS:-6000}" > /dev/null && cat "$W"/jpeg/*/*.jpg > /dev/null
}
# loader_job NAME ARGS...: account.py loader on the JPEGs with the group's settle and window.
loader_job() {
    local n=$1
    shift
    start "$n" "$PY" "$S/account.py" loader --data "${DATA:-$W/jpeg}" --settle-s "$SETTLE_S" --seconds "$WATCH_S" \
        --ready "$W/$n.ready" --truth "$O/$n.truth.json" "$@"
}
# loader_case NAME ARGS...: a loader job from ready to replay, nothing around it.
loader_case() {
    local n=$1
    shift
    loader_job "$n" "$@"
    wait_ready "$n" 240 || return 0
    sleep "$SETTLE_S"
    observe "$n" "$WATCH_S"
    finish "$n" 120
    replay "$n"
}

# ---- the other user's burners -----------------------------------------------------------------------------------
# burners NAME SECONDS: BURN_PER_CPU burners a CPU as OTHER_USER (made when root and missing), with the system's
# Python (no PyTorch needed) from a world-readable copy of account.py; `yes` when that Python cannot run as them.
burners() {
    local n=$1 secs=$2 procs=$(($(nproc) * BURN_PER_CPU)) who=() py=$PY as
    as=$(id -un)
    mkdir -p "$W/other" && cp "$S/account.py" "$W/other/account.py"
    chmod 755 "$W" && chmod 1777 "$W/other" && chmod 644 "$W/other/account.py"
    [ -x /usr/bin/python3 ] && py=/usr/bin/python3
    if [ "$(id -u)" -eq 0 ]; then
        if ! id -u "$OTHER_USER" > /dev/null 2>&1; then
            useradd -M -s /usr/sbin/nologin "$OTHER_USER" 2> /dev/null && MADE_USER=1
        fi
        if id -u "$OTHER_USER" > /dev/null 2>&1; then
            who=(setpriv "--reuid=$OTHER_USER" "--regid=$OTHER_USER" --clear-groups --)
            as=$OTHER_USER
        fi
    fi
    [ "$as" = "$OTHER_USER" ] || note "$n" "not root (or useradd failed): the burners run as $as, the job's own user"
    # From a directory the other user may enter (the runner's may be under /root).
    who+=(env -C "$W/other")
    if "${who[@]}" "$py" -c 'import os' 2> /dev/null; then
        setsid "${who[@]}" "$py" "$W/other/account.py" burn --procs "$procs" --seconds "$secs" \
            --truth "$W/other/$n.burn.json" > "$O/$n.burn.out" 2>&1 < /dev/null &
    else
        note "$n" "$py does not run as $as: the burners are yes > /dev/null"
        setsid "${who[@]}" sh -c "for i in \$(seq $procs); do yes > /dev/null & done; sleep $secs; kill 0" \
            > "$O/$n.burn.out" 2>&1 < /dev/null &
    fi
    BURN=$!
    JOBS+=("$BURN")
    ts "$n: $procs burners as $as (PID $BURN)"
}
stop_burners() {
    local n=$1
    ps -o pid=,user=,pcpu=,time=,comm= -u "$OTHER_USER" > "$O/$n.burners.txt" 2> /dev/null
    for _ in $(seq 20); do [ -s "$W/other/$n.burn.json" ] && break; kill -0 "$BURN" 2> /dev/null || break; sleep 0.5; done
    stop_job "$BURN"
    cp "$W/other/$n.burn.json" "$O/$n.burn.json" 2> /dev/null
    BURN=""
}

# ---- the cases --------------------------------------------------------------------------------------------------
LOADER152=(--model resnet152 --workers 8 --batch 128)

c_contention() {
    loader_job contention "${LOADER152[@]}"
    wait_ready contention 240 || return 0
    burners contention $((SETTLE_S + WATCH_S + 60))
    sleep "$SETTLE_S"
    observe contention "$WATCH_S"
    finish contention 120
    stop_burners contention
    replay contention
}
c_contention_free() { loader_case contention-free "${LOADER152[@]}"; }
c_oversub() { loader_case oversub "${LOADER152[@]}" --aug threaded --worker-threads 35; }
c_oversub_fix() { loader_case oversub-fix "${LOADER152[@]}" --aug threaded --worker-threads 1; }
c_main_decode() { loader_case main-decode --model resnet50 --workers 0 --batch 128 --warm-steps 3 --profile-steps 3; }
c_slurm_pinned() {
    PREFIX=(env SLURM_JOB_ID=4242 SLURM_JOB_NAME=resnet-pinned SLURM_STEP_ID=0 SLURM_CPUS_ON_NODE=4
        SLURM_JOB_CPUS_PER_NODE=4 SLURM_NTASKS=1 SLURM_PROCID=0 SLURM_LOCALID=0 taskset -c 0-3)
    loader_case slurm-pinned --model resnet50 --workers 12 --batch 128
}

c_crash_loop() {
    start crash-loop "$PY" "$S/account.py" crash-loop --seconds $((CRASH_WATCH_S + 5)) --train-s "$CRASH_TRAIN_S" \
        --backoff-s "$CRASH_BACKOFF_S" --ckpt "$W/crash.pt" --ckpt-gib 2 --ready "$W/crash-loop.ready" \
        --truth "$O/crash-loop.truth.json"
    wait_ready crash-loop 30 || return 0
    observe crash-loop "$CRASH_WATCH_S"
    finish crash-loop 60
    replay crash-loop
    rm -f "$W/crash.pt"
}

c_weight_load() {
    ts "weight-load: writing the ${LOAD_GIB} GiB checkpoint"
    "$PY" "$S/account.py" weight-load --make --ckpt "$W/weights.pt" --gib "$LOAD_GIB" --truth "$O/weight-load.make.json" \
        > "$O/weight-load.make.out" 2>&1 || { skip weight-load "could not write the checkpoint (weight-load.make.out)"; return 0; }
    local pace=() dev n=0
    if cg_make gs_account_load io; then
        for dev in /sys/block/*/dev; do
            case $dev in */loop*|*/ram*|*/zram*) continue ;; esac
            echo "$(cat "$dev") rbps=$((LOAD_MIB_S * 1048576))" > "$CGPATH/io.max" 2> /dev/null && n=$((n + 1))
        done
    fi
    if [ $n -gt 0 ]; then
        ts "weight-load: io.max on $n disk(s) for the load: $(tr '\n' ';' < "$CGPATH/io.max")"
        PREFIX=(env "GS_IO_CGROUP=$CGPATH")
    else
        note weight-load "no io.max (${CG_WHY:-no disk took it}): the program paces its own reads at $LOAD_MIB_S MiB/s"
        pace=(--pace-mib-s "$LOAD_MIB_S")
    fi
    # The window starts with the process: its start-up is what the case is about.
    start weight-load "$PY" "$S/account.py" weight-load --ckpt "$W/weights.pt" --seconds $((WATCH_S + 10)) \
        ${pace[@]+"${pace[@]}"} --ready "$W/weight-load.ready" --truth "$O/weight-load.truth.json"
    observe weight-load $((WATCH_S + 40))
    finish weight-load 60
    replay weight-load
    rm -f "$W/weights.pt"
}

c_full_vram() {
    start full-vram "$PY" "$S/account.py" full-vram --seconds $((WATCH_S + 3)) --ready "$W/full-vram.ready" \
        --truth "$O/full-vram.truth.json"
    wait_ready full-vram 120 || return 0
    observe full-vram "$WATCH_S"
    finish full-vram 30
    replay full-vram
}

c_rare_serve() {
    local cfg=$O/rare-serve.thresholds.toml
    printf '# rare-serve: idle-holder judged over %s s (from 300), so a whole window passes between two requests.\n[thresholds]\nidle_holder_window_s = %s\n' \
        "$RARE_IDLE_WINDOW_S" "$RARE_IDLE_WINDOW_S" > "$cfg"
    "$B" config check "$cfg" > /dev/null || { skip rare-serve "the thresholds file does not check"; return 0; }
    start rare-serve "$PY" "$S/account.py" rare-serve --every-s "$RARE_EVERY_S" --seconds $((RARE_WATCH_S + 8)) \
        --ready "$W/rare-serve.ready" --truth "$O/rare-serve.truth.json"
    wait_ready rare-serve 120 || return 0
    observe rare-serve "$RARE_WATCH_S" "$cfg"
    finish rare-serve 40
    replay rare-serve "$cfg"
}

c_serve_train() {
    start serve-train "$PY" "$S/account.py" serve-train --every-s 5 --burst 20 --seconds $((WATCH_S + 3)) \
        --ready "$W/serve-train.ready" --truth "$O/serve-train.truth.json"
    wait_ready serve-train 180 || return 0
    observe serve-train "$WATCH_S"
    finish serve-train 60
    replay serve-train
}

c_spin() {
    start spin "$PY" "$S/account.py" spin --seconds 48 --ready "$W/spin.ready" --truth "$O/spin.truth.json"
    wait_ready spin 60 || return 0
    observe spin 45
    finish spin 20
    replay spin
}

c_ckpt_sync() {
    start ckpt-sync "$PY" "$S/account.py" ckpt-sync --path "$W/ckpt/ckpt.pt" --ckpt-gib 4 --every-s 8 \
        --seconds $((WATCH_S + 3)) --ready "$W/ckpt-sync.ready" --truth "$O/ckpt-sync.truth.json"
    wait_ready ckpt-sync 120 || return 0
    observe ckpt-sync "$WATCH_S"
    finish ckpt-sync 60
    replay ckpt-sync
}

c_slow_loop() {
    local img=$W/loop.img mnt=$W/loopmnt dev majmin
    [ "$(id -u)" -eq 0 ] || { skip slow-loop "needs root (a loopback mount and a cgroup's io.max)"; return 0; }
    if ! { truncate -s 1G "$img" && mkfs.ext4 -q -F "$img" && mkdir -p "$mnt" && mount -o loop "$img" "$mnt"; }; then
        skip slow-loop "could not make and mount a loopback ext4 image"
        return 0
    fi
    LOOP_MNT=$mnt
    cp -r "$W/jpeg" "$mnt/" && sync
    # Remounting drops the file system's page cache: the first epoch reads the (throttled) device too.
    if ! { umount "$mnt" && mount -o loop "$img" "$mnt"; }; then
        skip slow-loop "could not remount the image"
        return 0
    fi
    dev=$(findmnt -no SOURCE "$mnt")
    majmin=$(cat "/sys/class/block/$(basename "$dev")/dev" 2> /dev/null)
    cg_make gs_account_slow io || { skip slow-loop "$CG_WHY"; return 0; }
    echo "$majmin $LOOP_IO_MAX" > "$CGPATH/io.max" 2> /dev/null \
        || { skip slow-loop "io.max on the loop device $dev ($majmin) was refused"; return 0; }
    ts "slow-loop: $dev ($majmin) mounted on $mnt; io.max for the workers: $(cat "$CGPATH/io.max")"
    # The workers move themselves into the cgroup as they start; the main process and the GPU work stay outside.
    PREFIX=(env "GS_SLOW_CGROUP=$CGPATH")
    DATA=$mnt/jpeg loader_case slow-loop --model resnet50 --workers 8 --batch 128 --drop-cache --warm-steps 3
    cat "$CGPATH/io.stat" > "$O/slow-loop.io.stat" 2> /dev/null
    umount "$mnt" && LOOP_MNT=""
    cg_release "$CGPATH"
}

c_slow_fuse() {
    local root=/tmp/gs_account_fuse
    if [ -n "${DEBS:-}" ] && ! ldconfig -p | grep -q 'libfuse.so.2 '; then
        mkdir -p "$root" && for f in "$DEBS"/*.deb; do dpkg -x "$f" "$root"; done
        export FUSE_LIBRARY_PATH="$root/lib/x86_64-linux-gnu/libfuse.so.2" PATH="$PATH:$root/bin"
    fi
    PYTHONPATH=${FUSEPY:-} "$PY" -c 'import fuse' 2> /dev/null \
        || { skip slow-fuse "no fusepy (FUSEPY=DIR holding fuse.py) or no libfuse2 (DEBS=DIR)"; return 0; }
    mkdir -p "$W/fusemnt"
    PYTHONPATH=${FUSEPY:-} setsid "$PY" "$S/workloads.py" fuse "$W/jpeg" "$W/fusemnt" --delay-ms "$FUSE_DELAY_MS" \
        > "$O/slow-fuse.fuse.log" 2>&1 < /dev/null &
    FUSE_PID=$!
    for _ in $(seq 12); do grep -q " $W/fusemnt " /proc/self/mountinfo && break; sleep 0.5; done
    grep -q " $W/fusemnt " /proc/self/mountinfo \
        || { skip slow-fuse "the FUSE mount did not come up (slow-fuse.fuse.log)"; stop_job "$FUSE_PID"; FUSE_PID=""; return 0; }
    ts "slow-fuse: $W/jpeg through FUSE on $W/fusemnt, ${FUSE_DELAY_MS} ms a read"
    DATA=$W/fusemnt loader_case slow-fuse --model resnet50 --workers 8 --batch 128 --warm-steps 3
    umount "$W/fusemnt" 2> /dev/null || umount -l "$W/fusemnt"
    stop_job "$FUSE_PID"
    FUSE_PID=""
}

c_host_mem() {
    local total avail leave take pinned cache floor
    total=$(awk '/^MemTotal:/ {print int($2 / 1048576)}' /proc/meminfo)
    avail=$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' /proc/meminfo)
    leave=$((total * HOSTMEM_LEAVE_PCT / 100))
    [ "$leave" -lt "$HOSTMEM_LEAVE_GIB" ] && leave=$HOSTMEM_LEAVE_GIB
    take=$((avail - leave))
    [ "$take" -ge 16 ] || { skip host-mem "only $take GiB above the floor of $leave GiB MemAvailable (of $total)"; return 0; }
    pinned=$((take / 4))
    cache=$((take - pinned - HOSTMEM_HEADROOM_GIB))
    floor=$((leave > 6 ? leave - 2 : 4))
    ts "host-mem: MemTotal $total GiB, MemAvailable $avail GiB: the job takes $take GiB (cache $cache, pinned $pinned), leaves $leave"
    if cg_make gs_account_mem memory \
        && echo $((take * 1073741824)) > "$CGPATH/memory.max" && echo $(((take - 1) * 1073741824)) > "$CGPATH/memory.high"; then
        echo 0 > "$CGPATH/memory.swap.max" 2> /dev/null
        ts "host-mem: cgroup $CGPATH memory.max $take GiB, memory.high $((take - 1)) GiB"
        in_cgroup "$CGPATH"
    else
        note host-mem "no memory cgroup (${CG_WHY:-memory.max refused}): the program's floor of $floor GiB MemAvailable is the only guard"
    fi
    loader_job host-mem --model resnet50 --workers 8 --batch 128 --cache-gib "$cache" --pinned-gib "$pinned" \
        --mem-floor-gib "$floor" --warm-steps 3
    wait_ready host-mem 300 || { cg_release "$CGPATH"; return 0; }
    sleep "$SETTLE_S"
    observe host-mem "$WATCH_S"
    finish host-mem 120
    cat "$CGPATH/memory.events" > "$O/host-mem.memory.events" 2> /dev/null
    cat "$CGPATH/memory.pressure" > "$O/host-mem.memory.pressure" 2> /dev/null
    replay host-mem
    cg_release "$CGPATH"
}

ddp_case() {
    local n=$1
    shift
    start "$n" "$PY" "$S/account.py" ddp --seconds $((WATCH_S + 5)) --ready "$W/$n.ready" --truth "$O/$n.truth.json" "$@"
    wait_ready "$n" 180 || return 0
    observe "$n" "$WATCH_S"
    finish "$n" 60
    replay "$n"
}
c_ddp_slow() { ddp_case ddp-slow --slow-rank 1 --slow-ms 150 --slow-kind cpu; }
c_ddp_even() { ddp_case ddp-even; }

# ---- smoke: every program on the CPU, then the table on made-up verdicts ---------------------------------------------
smoke() {
    local A="$S/account.py" rc=0
    "$PY" "$S/workloads.py" data --jpeg "$W/jpeg" 120 > /dev/null || return 3
    run() {
        local n=$1 s
        shift
        s=$(date +%s)
        timeout 300 "$@" > "$O/$n.out" 2>&1 < /dev/null
        local code=$?
        ts "smoke $n: exit $code in $(($(date +%s) - s)) s: $(grep '^truth:' "$O/$n.out" | tail -1 | cut -c1-240)"
        [ $code -eq 0 ] || [ "$n" = crash-child ] || rc=1
    }
    local L=(--smoke --data "$W/jpeg" --batch 8 --warm-steps 2 --seconds 4 --profile-steps 2)
    run loader "$PY" "$A" loader "${L[@]}" --workers 2 --truth "$O/loader.truth.json"
    run oversub "$PY" "$A" loader "${L[@]}" --workers 2 --worker-threads 35 --aug threaded --truth "$O/oversub.truth.json"
    run main-decode "$PY" "$A" loader "${L[@]}" --workers 0 --truth "$O/main-decode.truth.json"
    run host-mem "$PY" "$A" loader "${L[@]}" --workers 2 --cache-gib 1 --pinned-gib 1 --mem-floor-gib 1 \
        --drop-cache --truth "$O/host-mem.truth.json"
    run burn "$PY" "$A" burn --procs 2 --seconds 2 --truth "$O/burn.truth.json"
    run crash-loop "$PY" "$A" crash-loop --smoke --seconds 40 --train-s 3 --backoff-s 1 --ckpt "$W/crash.pt" \
        --truth "$O/crash-loop.truth.json"
    run weight-make "$PY" "$A" weight-load --smoke --make --ckpt "$W/w.pt" --truth "$O/weight-make.json"
    run weight-load "$PY" "$A" weight-load --smoke --ckpt "$W/w.pt" --seconds 3 --pace-mib-s 4 --truth "$O/weight-load.truth.json"
    run full-vram "$PY" "$A" full-vram --smoke --seconds 3 --truth "$O/full-vram.truth.json"
    run ckpt-sync "$PY" "$A" ckpt-sync --smoke --seconds 5 --every-steps 2 --path "$W/ckpt/c.pt" --truth "$O/ckpt-sync.truth.json"
    run spin "$PY" "$A" spin --smoke --seconds 2 --truth "$O/spin.truth.json"
    run rare-serve "$PY" "$A" rare-serve --smoke --seconds 9 --every-s 3 --truth "$O/rare-serve.truth.json"
    run serve-train "$PY" "$A" serve-train --smoke --seconds 8 --every-s 3 --burst 2 --truth "$O/serve-train.truth.json"
    run ddp "$PY" "$A" ddp --smoke --seconds 5 --slow-rank 1 --slow-ms 50 --truth "$O/ddp.truth.json"
    # The table on verdicts made up to pass, fail and be skipped, so its checks run.
    "$PY" - "$O" <<'EOF'
import json, os, sys
out = sys.argv[1]
spin = json.load(open(os.path.join(out, "spin.truth.json")))
doc = {"exit_code": 1, "findings": [{"rule": "util-misleading", "severity": "warning", "pid": spin["pid"],
                                     "title": "t", "evidence": "SM activity 0.8 %", "remedy": "r", "also": []}],
       "cleared": [], "account": {"window_s": 60, "causes": [{"cause": "looks busy", "share": 0.99}]}}
for name in ("spin", "loader"):
    for kind in ("doctor", "replay"):
        json.dump(doc, open(os.path.join(out, f"{name}.{kind}.json"), "w"))
open(os.path.join(out, "rare-serve.skipped"), "w").write("made up: skipped on purpose")
with open(os.path.join(out, "cases.tsv"), "w") as f:
    f.write("spin\t60\tutil-misleading@pid !idle-holder\tsmoke: expected to PASS\n")
    f.write("loader\t60\tcpu-bound-input~num_workers\tsmoke: expected to FAIL\n")
    f.write("rare-serve\t60\tserving\tsmoke: expected to SKIP\n")
EOF
    "$PY" "$A" table --out "$O" --cases "$O/cases.tsv" > "$O/table.out" 2>&1
    cat "$O/table.out"
    if ! { grep -q '| spin .*| PASS |' "$O/table.md" && grep -q '| loader .*| FAIL: no cpu-bound-input' "$O/table.md" \
        && grep -q '| rare-serve .*| SKIP |' "$O/table.md"; }; then
        ts "smoke: the table's checks went wrong"
        rc=1
    fi
    ts "smoke: $([ $rc -eq 0 ] && echo "every program ran" || echo "FAILED (see the .out files in $O)")"
    return $rc
}

if [ -n "${SMOKE:-}" ]; then
    ts "GROUP=account SMOKE=1: every program of account.py on the CPU ($("$PY" -c 'import torch; print("torch", torch.__version__)' 2>&1))"
    smoke
    exit $?
fi

[ -x "$B" ] || { echo "no $B: build it with cargo build --release --locked"; exit 3; }
ts "gpusight $("$B" --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(nproc) CPUs; $(id -un)"
"$PY" -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__); assert torch.cuda.is_available()" || exit 3
others=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader)
[ -n "$others" ] && ts "note: other compute processes on the GPU (they may change the verdicts): $others"
ts "cases:$(for i in "${SELECTED[@]}"; do printf ' %s (%s s)' "${NAMES[$i]}" "${SECS[$i]}"; done); ~$TOTAL s in all"
: > "$O/cases.tsv"
for i in "${SELECTED[@]}"; do printf '%s\t%s\t%s\t%s\n' "${NAMES[$i]}" "${SECS[$i]}" "${EXPECT[$i]}" "${WHAT[$i]}" >> "$O/cases.tsv"; done
need_jpeg=0
for i in "${SELECTED[@]}"; do
    case ${NAMES[$i]} in contention*|oversub*|main-decode|slow-*|host-mem|slurm-pinned) need_jpeg=1 ;; esac
done
[ $need_jpeg = 1 ] && { jpegs || exit 3; }
for i in "${SELECTED[@]}"; do
    n=${NAMES[$i]}
    c0=$(date +%s)
    "c_${n//-/_}"
    ts "$n: done in $(($(date +%s) - c0)) s (stated ${SECS[$i]} s)"
    pack
done
ts "results"
"$PY" "$S/account.py" table --out "$O" --cases "$O/cases.tsv"
ts "done in $(($(date +%s) - t0)) s; files in $O, tarball $BASE/account-$LABEL.tgz"
