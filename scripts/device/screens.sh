#!/usr/bin/env bash
# The monitor's screens on a real GPU at every size the issue names (40x10 .. 200x60), captured with tmux from the
# release binary: live (with a small PyTorch job that starves its GPU on a slow DataLoader, so a finding shows),
# --demo and --synthetic mixed:8. Also: Enter on a finding then T (the dialog names the finding's process), the
# help screen at 80x24 scrolled, and the command column scrolled with Right.
#
# Run from the repository root: OUT=/some/dir scripts/device/screens.sh
# Needs: tmux, python3 with torch, target/release/gpusight. Writes $OUT/<what>_<W>x<H>.txt and $OUT/log.txt.
set -u
B=${GPUSIGHT:-./target/release/gpusight}
O=${OUT:-/tmp/screens}
mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 1; }
[ -x "$B" ] || { echo "no binary at $B (cargo build --release --locked)"; exit 1; }
SOCK=gpusight-screens-$$

# A job that waits on its input: a DataLoader whose workers sleep, so SM utilization stays low.
cat > "$O/starved.py" <<'PY'
import time, torch
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):
    def __len__(self): return 10**9
    def __getitem__(self, i):
        time.sleep(0.05)
        return torch.randn(256, 256)
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
hold = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")  # 4 GiB held, as a real job would
t0 = time.time()
for x in DataLoader(Slow(), batch_size=32, num_workers=1):
    loss = model(x.cuda()).square().mean(); loss.backward(); opt.step(); opt.zero_grad()
    if time.time() - t0 > 240: break
PY
# The flag is ignored; it makes the command line long enough to show the command column scrolling.
python3 "$O/starved.py" --epochs 90 --data /mnt/slow-nfs/shards & JOB=$!
trap 'kill $JOB 2>/dev/null; tmux -L $SOCK kill-server 2>/dev/null' EXIT
sleep 5

# capture NAME W H WAIT "ARGS" [KEYS...]: start the monitor in a W x H tmux pane, wait, send keys, capture.
capture() {
    local name=$1 w=$2 h=$3 wait=$4 args=$5; shift 5
    tmux -L $SOCK new-session -d -s s -x "$w" -y "$h" "TERM=xterm-256color $B $args"
    sleep "$wait"
    for key in "$@"; do tmux -L $SOCK send-keys -t s "$key"; sleep 0.7; done
    tmux -L $SOCK capture-pane -p -t s > "$O/${name}_${w}x${h}.txt"
    tmux -L $SOCK capture-pane -p -e -t s > "$O/${name}_${w}x${h}.ansi"
    tmux -L $SOCK kill-session -t s 2>/dev/null
    echo "== $name ${w}x${h}"; cat "$O/${name}_${w}x${h}.txt"
}

for size in 40x10 60x20 100x15 80x24 160x50 200x60; do
    w=${size%x*}; h=${size#*x}
    capture demo "$w" "$h" 3 "--demo"
    capture mixed8 "$w" "$h" 3 "--synthetic mixed:8 --at 120"
done
# Live last, so the job has run long enough for its finding (the input rule holds for 30 s).
sleep 40
for size in 40x10 60x20 100x15 80x24 160x50 200x60; do
    w=${size%x*}; h=${size#*x}
    capture live "$w" "$h" 4 ""
done
capture live_finding_then_T 100 30 4 "" C-w Enter T
capture live_help_scrolled 80 24 3 "" "?" Down Down Down
capture live_command_right 80 24 3 "" Right Right
echo "done: $(ls "$O" | wc -l) files in $O"
