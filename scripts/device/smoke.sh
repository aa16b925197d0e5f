#!/usr/bin/env bash
set -u
B=./.device/gpusight; L=./.device/gpu_load.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
nvidia-smi; nvidia-smi -q | grep -iE "persistence|product name|driver|cuda|bus id|numa|gen|width" | head -30
cat /proc/driver/nvidia/version; nproc; uname -r; cat /proc/sys/kernel/dmesg_restrict; ls /proc/pressure
for d in /sys/bus/pci/devices/*; do [ -e $d/numa_node ] && grep -q 0x10de $d/vendor 2>/dev/null && echo "$d numa=$(cat $d/numa_node) cpus=$(cat $d/local_cpulist)"; done
echo "== once idle"; time $B --once; echo "exit=$?"
time $B --once --json > $O/idle.json; echo "exit=$?"
python3 -c "import os; f=open('/tmp/gpu_load_blob.bin','wb'); [f.write(os.urandom(1<<20)) for _ in range(1024)]"
python3 $L compute --seconds 40 & python3 $L input --seconds 40 &
$B --record $O/rec.jsonl --headless --interval 0.5 & REC=$!
sleep 22
$B --once --json > $O/both.json; echo "exit=$?"
nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.width.current --format=csv
nvidia-smi --query-compute-apps=pid,used_memory --format=csv
$B --once
for i in $(seq 6); do for p in $(pgrep -f "gpu_load.py"); do printf "%s:%s " $p $(awk '{print $3}' /proc/$p/stat); done; echo; sleep 0.5; done
$B --interval 0.1 --once > /dev/null; echo "fast exit=$?"
kill -INT $REC; wait $REC; echo "rec exit=$?"; wc -l $O/rec.jsonl
$B --replay $O/rec.jsonl --once --at 5 | head -12
