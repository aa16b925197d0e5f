#!/usr/bin/env bash
# Device run 6: steady-state CPU of the monitor at 1 s (GPM every 2 s), 15 s to 65 s after start, by thread.
set -u
B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 $L compute --seconds 75 &
sleep 5
python3 $C --rows 50 --cols 160 68 $B & G=$!
sleep 15; p=$(pgrep -f "^$B$"); a=$(awk '{print $14+$15}' /proc/$p/stat); bash .device/threads.sh $p > /tmp/t1
sleep 50; b=$(awk '{print $14+$15}' /proc/$p/stat); bash .device/threads.sh $p > /tmp/t2
echo "steady CPU over 50 s: $(( (b-a) ))/$(getconf CLK_TCK) s = $(python3 -c "print(round(($b-$a)/$(getconf CLK_TCK)/50*100,2))") % of one core; RSS $(grep VmRSS /proc/$p/status)"
paste /tmp/t1 /tmp/t2
wait $G
