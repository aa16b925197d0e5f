#!/usr/bin/env bash
# Device run 3: what each NVML call costs (nvml_probe), gpusight beside nvitop and nvidia-smi dmon at 1 s and 0.1 s
# with the CPU split by thread, report over a minute of compute, the new layout's screens, and an unprivileged
# user's kill attempt on a root-owned GPU process.
set -u
R=$PWD; B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl && export PYTHONPATH=/tmp/site
cp $B /tmp/gpusight && chmod 755 /tmp/gpusight
t0=$(date +%s); at() { while [ $(( $(date +%s) - t0 )) -lt $1 ]; do sleep 0.2; done; echo "== t=$1 $2"; }
python3 $L idle --seconds 110 & python3 $L compute --seconds 110 &
at 8 "nvml_probe"; ./.device/nvml_probe
at 16 "report over 60 s; cost at 1 s beside nvitop and nvidia-smi dmon"
$B report --duration 60s > $O/report.md 2>&1 & RP=$!
python3 $C --rows 50 --cols 160 --screen $O/screen_160x50.txt --keys '?@20,Escape@22' 30 $B & G=$!
python3 $C --rows 50 --cols 160 30 python3 -m nvitop & N=$!
python3 $C --rows 50 --cols 160 30 nvidia-smi dmon & D=$!
at 44 "threads of the monitor"
p=$(pgrep -f "^$B$" | head -1); grep -E "VmRSS|Threads" /proc/$p/status; bash .device/threads.sh $p
grep -c libcuda /proc/$p/maps
wait $G $N $D
at 48 "cost at 0.1 s beside nvitop"
python3 $C --rows 50 --cols 160 30 $B --interval 0.1 & G=$!
python3 $C --rows 50 --cols 160 30 python3 -m nvitop; wait $G
at 80 "unprivileged kill attempt on the root-owned holder"
V=$(pgrep -f "gpu_load.py idle" | head -1)
keys=$(python3 -c "import sys; v=sys.argv[1]; print(','.join(['/@4']+[f'{d}@{4.2+0.2*i:.1f}' for i,d in enumerate(v)]+['Enter@6','K@7','Enter@8.5']))" $V)
echo "victim $V owner $(stat -c %U /proc/$V) keys $keys"
(cd /tmp && python3 $R/.device/tui_cost.py --rows 40 --cols 120 --screen $O/screen_unpriv.txt --keys "$keys" 11 setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/gpusight 2>&1) || true
echo "victim alive after: $(ps -o pid=,user=,stat= -p $V)"
at 93 "80x24"; python3 $C --rows 24 --cols 80 --screen $O/screen_80x24.txt 8 $B
wait $RP; echo "report exit=$?"
ls -la $O
