#!/usr/bin/env bash
# Device run 2: doctor on each workload alone, export beside nvidia-smi, where the CPU goes (per thread), RSS by
# mapping, an unprivileged user trying to kill a root-owned GPU process, and short-lived CUDA processes churning.
set -u
R=$PWD; B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl && export PYTHONPATH=/tmp/site
nvcc -O2 -o /tmp/tiny .device/tiny.cu && echo "tiny built"
cp $B /tmp/gpusight && chmod 755 /tmp/gpusight; ls -la /dev/nvidia* | head -4; which setpriv
printf '[thresholds]\nidle_holder_window_s = 30\n' > /tmp/short.toml; chmod 644 /tmp/short.toml
printf '[general]\npcie_period_s = 0\n' > /tmp/nopcie.toml
t0=$(date +%s); at() { while [ $(( $(date +%s) - t0 )) -lt $1 ]; do sleep 0.2; done; echo "== t=$1 $2"; }
python3 -c "import os; f=open('/tmp/gpu_load_blob.bin','wb'); [f.write(os.urandom(1<<20)) for _ in range(1024)]"
at 2 "compute alone"; python3 $L compute --seconds 60 &
at 10 "doctor compute (and cost/export measured alongside)"
$B doctor --duration 50s --json > $O/doctor_compute.json & D=$!
$B --record /tmp/headless.jsonl --headless --interval 1 2>/dev/null & H=$!
python3 $C --rows 50 --cols 160 30 $B & T1=$!
python3 $C --rows 50 --cols 160 30 $B --config /tmp/nopcie.toml & T2=$!
$B export --listen 127.0.0.1:9400 2>/dev/null & E=$!
at 38 "per-thread CPU and RSS after ~27 s"
for p in $(pgrep -f "^$B" ); do echo "pid $p: $(tr '\0' ' ' < /proc/$p/cmdline)"; grep -E "VmRSS|Threads" /proc/$p/status; bash .device/threads.sh $p; done
p=$(pgrep -f "^$B --record"); echo "largest mappings of the headless recorder:"; awk '/^[0-9a-f]+-/{name=$6} /^Rss:/{r[name]+=$2} END{for(n in r) if(r[n]>300) printf "  %6d kB %s\n", r[n], n}' /proc/$p/smaps | sort -rn | head -12
p=$(pgrep -f "^$B$" | head -1); [ -n "$p" ] && { echo "largest mappings of the monitor:"; awk '/^[0-9a-f]+-/{name=$6} /^Rss:/{r[name]+=$2} END{for(n in r) if(r[n]>300) printf "  %6d kB %s\n", r[n], n}' /proc/$p/smaps | sort -rn | head -12; }
python3 -c "import urllib.request as u; t=u.urlopen('http://127.0.0.1:9400/metrics').read().decode(); print('\n'.join(l for l in t.splitlines() if l.startswith(('DCGM_FI_DEV_GPU_UTIL','DCGM_FI_DEV_FB_USED','DCGM_FI_DEV_POWER_USAGE','DCGM_FI_DEV_GPU_TEMP','DCGM_FI_DEV_SM_CLOCK','DCGM_FI_PROF_SM_ACTIVE','gpusight_throttle_reason_active','gpusight_pcie_link'))))" > $O/export.txt
nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.width.current --format=csv | tee -a $O/export.txt
python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:9400/healthz').read().decode())"
wait $T1 $T2; kill $E; kill -INT $H; wait $D; echo "doctor compute exit=$?"
at 64 "input alone"; python3 $L input --seconds 60 &
at 72 "doctor input"; $B doctor --duration 50s --json > $O/doctor_input.json; echo "doctor input exit=$?"
at 126 "cpu alone"; python3 $L cpu --seconds 60 &
at 134 "doctor cpu"; $B doctor --duration 50s --json > $O/doctor_cpu.json; echo "doctor cpu exit=$?"
at 188 "idle holder alone"; python3 $L idle --seconds 70 &
at 196 "doctor idle (idle window 30 s)"; $B doctor --duration 50s --json --config /tmp/short.toml > $O/doctor_idle.json & D=$!
at 200 "unprivileged kill attempt on the root-owned holder"
V=$(pgrep -f "gpu_load.py idle" | head -1)
keys=$(python3 -c "import sys; v=sys.argv[1]; print(','.join(['/@4']+[f'{d}@{4.2+0.2*i:.1f}' for i,d in enumerate(v)]+['Enter@6','K@7','Enter@8.5']))" $V)
echo "victim $V owner $(stat -c %U /proc/$V) keys $keys"
(cd /tmp && python3 $R/.device/tui_cost.py --rows 40 --cols 120 --screen $O/screen_unpriv.txt --keys "$keys" 12 setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/gpusight 2>&1) || true
echo "victim alive after: $(ps -o pid=,user=,stat= -p $V)"
wait $D; echo "doctor idle exit=$?"
at 262 "short-lived CUDA processes for 60 s"
/tmp/tiny && echo "tiny runs"
$B --record /tmp/churn.jsonl --headless --interval 0.2 2>/dev/null & H=$!
for i in 1 2 3 4; do ( end=$(( $(date +%s) + 60 )); n=0; while [ $(date +%s) -lt $end ]; do /tmp/tiny; n=$((n+1)); done; echo "loop $i: $n runs" ) & done
python3 $C --rows 40 --cols 120 --screen $O/screen_churn.txt --keys 't@30,Escape@33' 62 $B --interval 0.5
wait; kill -INT $H 2>/dev/null; sleep 1
$B --replay /tmp/churn.jsonl --once | head -8
python3 -c "
import json; L=open('/tmp/churn.jsonl').read().splitlines(); pids=set(); n=0
for l in L[1:]:
    t=json.loads(l); n+=1; pids.update(p['pid'] for p in t['gpu_processes'])
print('churn recording:', n, 'samples,', len(pids), 'distinct GPU PIDs')"
ls -la $O
