#!/usr/bin/env bash
# gpusight's per-link NVLink readings beside nvidia-smi's on a GPU machine with NVLink (an HGX H100/H200: 18
# links a GPU), and what the per-link field-values call costs. About a minute; run from the repository root after
# `cargo build --release --locked` (and, for traffic on the links, while something moves data between the GPUs,
# e.g. an all-reduce loop):
#
#   GPU=0 bash scripts/device/nvlink_check.sh 2>&1 | tee nvlink_check.txt
#
# It prints, for GPU $GPU:
#   1. gpusight --once --json: each link's up, version, speed_mb_s, rx/tx counters and rates;
#   2. nvidia-smi nvlink -s (speeds, expected 26.562 GB/s a link on NVLink 4) and the data counters of
#      nvidia-smi nvlink -gt d read twice 2 s apart, turned into rates, to compare with (1);
#   3. the CPU and wall time of nvmlDeviceGetFieldValues with 36 scoped entries (RX and TX of 18 links) and with
#      18 (speeds), each asked 200 times, through ctypes: the figure docs/performance.md lacks.
set -euo pipefail
GPU="${GPU:-0}"
BIN="${BIN:-target/release/gpusight}"

echo "== 1. gpusight --once --json, GPU $GPU"
ONCE=$(mktemp); trap 'rm -f "$ONCE"' EXIT
"$BIN" --once --json > "$ONCE"
python3 - "$GPU" "$ONCE" <<'EOF'
import json, sys
gpu = int(sys.argv[1])
doc = json.load(open(sys.argv[2]))
links = next(g for g in doc["tick"]["gpus"] if g["index"] == gpu).get("nvlinks", [])
print(f"{len(links)} links")
for l in links:
    def rate(k):
        return "N/A" if l.get(k) is None else f"{l[k] / 1e9:.3f} GB/s"
    g = l.get
    print(f"L{g('link'):<2} up={g('up')} v{g('version')} speed={g('speed_mb_s')} MB/s rx_kib={g('rx_kib')} "
          f"tx_kib={g('tx_kib')} RX {rate('rx_bytes_s')} TX {rate('tx_bytes_s')} CRC {g('crc_flit_errors')} "
          f"replay {g('replay_errors')} recovery {g('recovery_errors')}")
EOF

echo "== 2. nvidia-smi nvlink -s -i $GPU"
nvidia-smi nvlink -s -i "$GPU"
echo "== nvidia-smi nvlink -gt d -i $GPU, twice 2 s apart (KiB counters; rate = delta / 2 s)"
A=$(nvidia-smi nvlink -gt d -i "$GPU"); sleep 2; B=$(nvidia-smi nvlink -gt d -i "$GPU")
python3 - "$A" "$B" <<'EOF'
import re, sys
def parse(text):
    out = {}
    for link, kind, kib in re.findall(r"Link (\d+): Data (Tx|Rx): (\d+) KiB", text):
        out[(int(link), kind)] = int(kib)
    return out
a, b = parse(sys.argv[1]), parse(sys.argv[2])
for key in sorted(b):
    if key in a:
        print(f"L{key[0]:<2} {key[1]} {(b[key] - a[key]) * 1024 / 2 / 1e9:.3f} GB/s  (counter {b[key]} KiB)")
EOF

echo "== 3. nvmlDeviceGetFieldValues cost, GPU $GPU"
python3 - "$GPU" <<'EOF'
import ctypes, resource, sys, time
class Value(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong), ("ull", ctypes.c_ulonglong),
                ("sll", ctypes.c_longlong), ("si", ctypes.c_int), ("us", ctypes.c_ushort)]
class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", Value)]
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
handle = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(int(sys.argv[1]), ctypes.byref(handle)) == 0
def measure(name, asks, n=200):
    arr = (FieldValue * len(asks))()
    for i, (field, scope) in enumerate(asks):
        arr[i].fieldId, arr[i].scopeId = field, scope
    nvml.nvmlDeviceGetFieldValues(handle, len(asks), arr)  # cold
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(n):
        rc = nvml.nvmlDeviceGetFieldValues(handle, len(asks), arr)
    t1, c1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / n * 1e6
    codes = sorted({arr[i].nvmlReturn for i in range(len(asks))})
    print(f"{name}: rc {rc}, per-entry returns {codes}, {cpu:.0f} us CPU and {(t1 - t0) / n * 1e6:.0f} us wall a call")
measure("RX+TX of 18 links (36 entries, fields 139/138)", [(f, l) for l in range(18) for f in (139, 138)])
measure("speed of 18 links (18 entries, field 164)", [(164, l) for l in range(18)])
nvml.nvmlShutdown()
EOF
