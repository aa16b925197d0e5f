#!/usr/bin/env bash
# Device run 1: the demo recording (idle, compute, input, loader, cpu, with an idle holder throughout), the
# monitor's screens at 160x50, 80x24 and 200x60, kill from the monitor, and the cost beside nvitop.
set -u
B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl && export PYTHONPATH=/tmp/site
t0=$(date +%s); at() { while [ $(( $(date +%s) - t0 )) -lt $1 ]; do sleep 0.2; done; echo "== t=$1 $2"; }
python3 -c "import os; f=open('/tmp/gpu_load_blob.bin','wb'); [f.write(os.urandom(1<<20)) for _ in range(1024)]"
$B --record $O/demo.jsonl --headless --interval 1 & REC=$!
at 15 "idle holder starts"; python3 $L idle --seconds 330 &
at 30 "compute"; python3 $L compute --seconds 50 &
at 40 "cost at 1 s: gpusight and nvitop side by side (compute + holder)"
python3 $C --rows 50 --cols 160 --screen $O/screen_160x50.txt --keys '?@8,Escape@10,t@12,Escape@15,Enter@18,Escape@22' 30 $B & G=$!
python3 $C --rows 50 --cols 160 30 python3 -m nvitop; wait $G
at 72 "kill the compute workload from the monitor (K, Enter)"
echo "compute pids: $(pgrep -f 'gpu_load.py compute')"
python3 $C --rows 40 --cols 120 --screen $O/screen_kill.txt --keys '/@3,c@3.2,o@3.4,m@3.6,p@3.8,u@4,t@4.2,e@4.4,Enter@4.8,Down@5.3,K@6,Enter@7.5' 12 $B
echo "compute pids after: $(pgrep -f 'gpu_load.py compute')"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv
at 95 "input"; python3 $L input --seconds 60 &
at 105 "cost at 0.1 s beside nvitop (input + holder)"
python3 $C --rows 50 --cols 160 30 $B --interval 0.1 & G=$!
python3 $C --rows 50 --cols 160 30 python3 -m nvitop; wait $G
at 160 "loader"; python3 $L loader --seconds 60 &
at 175 "80x24 with tree view"
python3 $C --rows 24 --cols 80 --screen $O/screen_80x24.txt --keys 't@10,Escape@14,Enter@16,Escape@19' 22 $B
at 225 "cpu"; python3 $L cpu --seconds 50 &
at 240 "200x60"; python3 $C --rows 60 --cols 200 --screen $O/screen_200x60.txt --keys 'x@12' 20 $B
at 282 "holder alone"; $B --once
at 340 "stop"; kill -INT $REC; wait $REC; echo "rec exit=$?"
$B doctor --replay $O/demo.jsonl; echo "doctor exit=$?"
ls -la $O
