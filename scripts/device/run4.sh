#!/usr/bin/env bash
# Device run 4: steady-state CPU (between 15 s and 75 s after start, so start-up is left out) of gpusight at 1 s and
# 0.1 s, nvitop and nvidia-smi dmon side by side; and the unprivileged kill attempt again.
set -u
R=$PWD; B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl && export PYTHONPATH=/tmp/site
cp $B /tmp/gpusight && chmod 755 /tmp/gpusight; hz=$(getconf CLK_TCK)
python3 $L idle --seconds 130 & python3 $L compute --seconds 95 &
sleep 8
python3 $C --rows 50 --cols 160 80 $B & python3 $C --rows 50 --cols 160 80 $B --interval 0.1 &
python3 $C --rows 50 --cols 160 80 python3 -m nvitop & python3 $C --rows 50 --cols 160 80 nvidia-smi dmon &
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
sleep 15
declare -A P A; P[g1]=$(pgrep -f "^$B$"); P[g01]=$(pgrep -f "^$B --interval 0.1"); P[nvitop]=$(pgrep -f "^python3 -m nvitop$"); P[dmon]=$(pgrep -f "^nvidia-smi dmon$")
for k in "${!P[@]}"; do A[$k]=$(cpu ${P[$k]}); done; t1=$(date +%s.%N)
sleep 60
t2=$(date +%s.%N)
for k in g1 g01 nvitop dmon; do b=$(cpu ${P[$k]}); python3 -c "import sys; a,b,dt,hz=map(float,sys.argv[2:]); print(f'{sys.argv[1]:8} pid {sys.argv[6]}: steady CPU {(b-a)/hz/dt*100:.2f} % of one core over {dt:.0f} s; RSS', open('/proc/'+sys.argv[6]+'/status').read().split('VmRSS:')[1].split()[0], 'kB')" $k ${A[$k]} $b $(python3 -c "print($t2-$t1)") $hz ${P[$k]}; done
bash .device/threads.sh ${P[g1]}
wait
V=$(pgrep -f "gpu_load.py idle" | head -1)
keys=$(python3 -c "import sys; v=sys.argv[1]; print(','.join(['/@4']+[f'{d}@{4.2+0.2*i:.1f}' for i,d in enumerate(v)]+['Enter@6','K@7','Enter@8.5']))" $V)
echo "victim $V owner $(stat -c %U /proc/$V) keys $keys"
(cd /tmp && python3 $R/.device/tui_cost.py --rows 40 --cols 120 --screen $O/screen_unpriv.txt --keys "$keys" 11 setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/gpusight 2>&1) || true
echo "victim alive after: $(ps -o pid=,user=,stat= -p $V)"
