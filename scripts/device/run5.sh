#!/usr/bin/env bash
# Device run 5: GPM metric cost, and the unprivileged kill attempt on a root-owned GPU process.
set -u
R=$PWD; B=./.device/gpusight; L=./.device/gpu_load.py; C=./.device/tui_cost.py; O=${OUT:-/tmp/out}; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .device/whl/*.whl && export PYTHONPATH=/tmp/site
cp $B /tmp/gpusight && chmod 755 /tmp/gpusight
python3 $L idle --seconds 40 & H=$!
./.device/nvml_probe | grep -E "init|gpm|process_util|energy|field"
sleep 6
V=$(pgrep -f "gpu_load.py idle" | head -1)
keys=$(python3 -c "import sys; v=sys.argv[1]; print(','.join(['/@4']+[f'{d}@{4.2+0.2*i:.1f}' for i,d in enumerate(v)]+['Enter@6','K@7','Enter@8.5']))" $V)
echo "victim $V owner $(stat -c %U /proc/$V) keys $keys"
(cd /tmp && python3 $R/.device/tui_cost.py --rows 40 --cols 120 --screen $O/screen_unpriv.txt --keys "$keys" 11 setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/gpusight 2>&1) || true
echo "victim alive after: $(ps -o pid=,user=,stat= -p $V)"
kill $H
