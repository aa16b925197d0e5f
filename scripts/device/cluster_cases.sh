#!/usr/bin/env bash
# gpusight's findings where training really runs, on a GPU machine: real PyTorch programs (cluster_workloads.py,
# findings_train.py) in the conditions users have, each watched live by `gpusight doctor --json` and recorded
# (`--record`, replayable with `gpusight doctor --replay`), beside each program's own ground truth.
#
#   GROUP=serve-ranks bash scripts/device/cluster_cases.sh   # ~9.5 min: bursty inference server (6 min 15 s),
#                                                            # 2 ranks over gloo with rank 0 in a 135 s CPU phase
#   GROUP=host bash scripts/device/cluster_cases.sh          # ~6.5 min: CPU-offloaded optimizer, torch.compile
#                                                            # warm-up then steady, 8 workers under taskset -c 0,1,
#                                                            # a healthy job whose stdout, logs and checkpoints go
#                                                            # to a FUSE mount, the exporter over TLS + basic auth
#                                                            # scraped by a real Prometheus
#
# Needs: target/release/gpusight; PyTorch with CUDA and torchvision; for the FUSE mount, libfuse2 (the Debian
# packages `libfuse2` and `fuse` unpacked from DEBS=DIR/*.deb if the system has none) and fusepy's fuse.py in
# FUSEPY=DIR; for the exporter check, Prometheus (PROM_DEB=the Debian package, unpacked, if none is installed) and
# WEB=DIR holding web.yml, cert.pem, key.pem, prometheus.yml (made by scripts/device/make_tls.sh on the dev
# machine). Without any of them the case that needs it says so and is skipped, never faked.
# Results: $OUT/cluster.tgz (NAME.doctor.json, NAME.jsonl.gz, NAME.truth.json, NAME.out, log.txt).
#
# Safe on a shared box: never changes clocks, power limits, persistence or MIG, never resets the GPU, and kills
# every process it started on exit.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=${GPUSIGHT:-$PWD/target/release/gpusight}
S=$PWD/scripts/device
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
    pkill -f cluster_workloads.py 2>/dev/null
    pkill -f findings_train.py 2>/dev/null
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
    PYTHONPATH=${FUSEPY:-} $PY "$S/fuse_passthrough.py" "$W/back" "$W/mnt" > "$R/fuse.log" 2>&1 < /dev/null &
    FUSE_PID=$!
    for _ in 1 2 3 4 5 6; do grep -q " $W/mnt " /proc/self/mountinfo && return 0; sleep 0.5; done
    echo "FUSE mount failed:"
    cat "$R/fuse.log"
    FUSE_PID=""
    return 1
}

group_serve_ranks() {
    ts "case serve: ResNet-50 behind HTTP, bursts of 4 clients, 375 s; doctor watches 365 s"
    job serve $PY "$S/cluster_workloads.py" serve --seconds 375 --burst-s 6 --pause-s 20 --hold-gib 1 --truth "$R/serve.truth.json"
    sleep 5
    record serve
    watch serve 365
    sleep 180
    smi serve
    sleep 186
    stop_record
    end_job
    settle
    ts "case evalrank: 2 ranks over gloo, rank 0 in a 135 s CPU phase; doctor watches 150 s"
    job evalrank $PY "$S/cluster_workloads.py" evalrank --seconds 165 --train-s 12 --eval-s 135 --truth "$R/evalrank.truth.json"
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
    ts "case offload: AdamW on the CPU by the main thread, grad accumulation 8; doctor 62 s"
    job offload $PY "$S/cluster_workloads.py" offload --seconds 82 --truth "$R/offload.truth.json"
    sleep 8
    record offload
    watch offload 62
    sleep 35
    smi offload
    sleep 29
    stop_record
    end_job
    settle

    if skipped compile; then echo "compile: skipped (SKIP)"; else
    ts "case compile: torch.compile warm-up (doctor 30 s from the start), then steady (doctor 35 s)"
    job compile $PY "$S/cluster_workloads.py" compile --seconds 85 --truth "$R/compile.truth.json"
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

    ts "dataset: 6000 JPEGs"
    $PY "$S/findings_data.py" --jpeg "$W/jpeg" 6000 > /dev/null && cat "$W"/jpeg/*/*.jpg > /dev/null
    ts "case pinned: ResNet-50, 8 DataLoader workers, taskset -c 0,1; doctor 62 s once warm"
    job pinned taskset -c 0,1 $PY "$S/findings_train.py" --data "$W/jpeg" --workers 8 --batch 128 --seconds 85 --warm-steps 4 --ready "$W/pinned.ready" --truth "$R/pinned.truth.json"
    for _ in $(seq 1 40); do [ -e "$W/pinned.ready" ] && break; sleep 1; done
    record pinned
    watch pinned 62
    sleep 35
    smi pinned
    sleep 29
    stop_record
    end_job
    settle

    if mount_fuse; then
        ts "case fuse-writes: healthy bf16 step; stdout, train.log, event file and checkpoints on FUSE; doctor 45 s"
        mkdir -p "$W/mnt/job"
        job fuse-writes sh -c "exec $PY $S/cluster_workloads.py logger --seconds 75 --log-dir $W/mnt/job --ckpt-every 10 --truth $R/fuse-writes.truth.json > $W/mnt/job/slurm-4242.out 2>&1"
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
    export_tls
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

case "${GROUP:-}" in
    serve-ranks) group_serve_ranks ;;
    host) group_host ;;
    *) echo "GROUP=serve-ranks or GROUP=host"; exit 2 ;;
esac
ts "done"
