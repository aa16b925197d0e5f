#!/usr/bin/env bash
# Device check for issues 18 and 19, on a GPU box, building nothing:
#  1. installs the wheel from $REPO/target/wheels (carried there) into a fresh venv and checks its binary's glibc;
#  2. runs the wheel's `gpusight --once --json` and the source-built target/release/gpusight's, with a small
#     PyTorch process holding one GPU, and compares them field by field (timestamps and fast-changing readings
#     only for presence, everything else for equality);
#  3. checks the USER column against `ps` (NSS names);
#  4. prints `gpusight --status` beside nvidia-smi's index/utilization/temperature, and as a tmux status bar shows
#     it (captured from an outer tmux; `tmux display -p` shows the configured status-right).
# Results go to $OUT (default /tmp/out). Exit 0 when the two binaries agree.
set -u
REPO=${REPO:-$PWD}
O=${OUT:-/tmp/out}; mkdir -p "$O"
exec > >(tee "$O/glue.log") 2>&1
SRC="$REPO/target/release/gpusight"
arch=$(uname -m)
wheel=$(ls -t "$REPO"/target/wheels/gpusight-*manylinux*_"$arch".whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "no $arch wheel in $REPO/target/wheels"; exit 1; }
[ -x "$SRC" ] || { echo "no $SRC"; exit 1; }
echo "== host: $(uname -r), $(ldd --version | head -1)"; nvidia-smi -L

echo "== 1. the wheel into a fresh venv: $(basename "$wheel")"
venv=$(mktemp -d)/venv
python3 -m venv "$venv" && "$venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel" || exit 1
WHL="$venv/bin/gpusight"
"$WHL" --version; "$SRC" --version
echo "   wheel binary needs at most: $(readelf -W --version-info --dyn-syms "$WHL" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
echo "   source binary needs at most: $(readelf -W --version-info --dyn-syms "$SRC" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
sha256sum "$WHL" "$SRC"

echo "== 2. --once --json from both, with a PyTorch process on GPU 0"
python3 -c "import torch,time; x=torch.ones(1<<28, device='cuda:0'); torch.cuda.synchronize(); time.sleep(40)" &
TORCH=$!
for _ in $(seq 1 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q "$TORCH" && break; sleep 0.5; done
"$WHL" --once --json > "$O/once_wheel.json"; echo "   wheel exit $?"
"$SRC" --once --json > "$O/once_source.json"; echo "   source exit $?"
python3 - "$O/once_wheel.json" "$O/once_source.json" <<'PY' | tee "$O/compare.txt"
import json, re, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
# Readings that move between two samples a second apart: compared for presence (null or not) only.
FAST = re.compile(r"(_ms$|at_ms|util_pct|power_mw|temp_c|clock_mhz|_kbps|energy_mj|throttle_ns|throttle_bits|"
                  r"\.gpm\.|fan_pct|mem_(used|free|reserved)_bytes|^tick\.host\.|cpu_pct|rss|read_bytes|write_bytes|"
                  r"io_|state_share|threads|ctx_switch|utime|stime|\.stat|minflt|majflt|pstate|pcie_(gen|width)$|"
                  r"sm_util|mem_util|enc_|dec_)")
def flat(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items(): flat(x, f"{path}.{k}" if path else k, out)
    elif isinstance(v, list):
        key = lambda x: (x.get("index", x.get("pid", 0)) if isinstance(x, dict) else 0)
        for x in sorted(v, key=key) if all(isinstance(x, dict) for x in v) else v:
            flat(x, f"{path}[{key(x) if isinstance(x, dict) else ''}]", out)
        if not v: out[path] = []
    else: out[path] = v
fa, fb = {}, {}
flat({k: a[k] for k in ("machine", "tick")}, "", fa); flat({k: b[k] for k in ("machine", "tick")}, "", fb)
only_a = sorted(set(fa) - set(fb)); only_b = sorted(set(fb) - set(fa))
differ, presence = [], []
for p in sorted(set(fa) & set(fb)):
    if FAST.search(p):
        if (fa[p] is None) != (fb[p] is None): presence.append(p)
    elif fa[p] != fb[p]: differ.append(p)
print(f"fields: {len(fa)} wheel, {len(fb)} source; compared {len(set(fa) & set(fb))}")
for name, items in [("only in the wheel's", only_a), ("only in the source's", only_b),
                    ("values differ", differ), ("present in one, null in the other", presence)]:
    print(f"{name}: {len(items)}")
    for p in items[:40]: print(f"   {p}: wheel={fa.get(p)!r} source={fb.get(p)!r}")
fr = lambda d: sorted({(f["rule"], f.get("gpu_index")) for f in d["findings"]})
print("findings (timing-dependent, not compared): wheel", fr(a), "source", fr(b))
ok = not (only_a or only_b or differ or presence)
print("VERDICT:", "the wheel's binary gives the same --once --json as the source build" if ok else "THEY DIFFER")
sys.exit(0 if ok else 1)
PY
verdict=$?

echo "== 3. USER column through NSS against ps"
python3 - "$O/once_source.json" <<'PY'
import json, subprocess, sys
doc = json.load(open(sys.argv[1]))
for p in doc["tick"].get("processes", []):
    ps = subprocess.run(["ps", "-o", "user=", "-p", str(p["pid"])], capture_output=True, text=True).stdout.strip()
    print(f"   pid {p['pid']}: gpusight user={p.get('user')!r} ps={ps!r} {'OK' if ps in (p.get('user') or '', '') or (p.get('user') or '').startswith(ps.rstrip('+')) else 'MISMATCH'}")
PY
getent passwd "$(id -u)" | cut -d: -f1 | sed 's/^/   getent for this uid: /'

echo "== 4. --status beside nvidia-smi"
for i in 1 2 3; do
  echo "   gpusight (wheel):  $("$WHL" --status)"
  echo "   gpusight (source): $("$SRC" --status)"
  echo "   nvidia-smi:        $(nvidia-smi --query-gpu=index,utilization.gpu,temperature.gpu --format=csv,noheader | tr '\n' ' ')"
  sleep 1
done
/usr/bin/time -f "   --status took %e s, %M KiB max RSS" "$SRC" --status > /dev/null
echo "   --status --ascii --only 0: $("$SRC" --status --ascii --only 0)"
echo "   --status-format: $("$SRC" --status --status-format '{index}:{util}% {mem}%m {power}W {temp}C {finding}')"
echo "   length of the line: $("$SRC" --status | wc -m) characters"

echo "== tmux status bar"
# `tmux display -p` does not run #() jobs, so the bar itself is captured: an inner tmux with
# status-right '#(gpusight --status)' is attached inside an outer tmux's pane, and the outer pane's last line is
# the inner status bar as drawn.
if command -v tmux >/dev/null; then
  I="tmux -L gpusight-inner"; OT="tmux -L gpusight-outer"
  $I kill-server 2>/dev/null; $OT kill-server 2>/dev/null
  $I -f /dev/null new-session -d -s inner -x 150 -y 8
  $I set -g status-interval 1
  $I set -g status-right-length 150
  $I set -g status-right "#($SRC --status)"
  echo "   status-right is: $($I display -p '#{status-right}')"
  $OT -f /dev/null new-session -d -s outer -x 160 -y 10 "TERM=screen tmux -L gpusight-inner attach -t inner"
  sleep 4
  echo "   the bar as drawn:   $($OT capture-pane -p -t outer | tail -1)"
  echo "   nvidia-smi now:     $(nvidia-smi --query-gpu=index,utilization.gpu,temperature.gpu --format=csv,noheader | tr '\n' ' ')"
  echo "   tmux display -p with the line: $($I display -p "$("$SRC" --status)")"
  $OT capture-pane -p -t outer > "$O/tmux_bar.txt"
  $OT kill-server; $I kill-server
else
  echo "   tmux is not installed (apt-get install -y tmux)"
fi
kill "$TORCH" 2>/dev/null; wait "$TORCH" 2>/dev/null
echo "== done: compare verdict exit $verdict (0 = same)"
exit $verdict
