#!/usr/bin/env bash
# A capture of this machine's GPUs replayed through the fake NVML, field by field against the real card:
#
#   1. target/release/examples/nvml_capture SAMPLES INTERVAL > capture.toml      (the real libnvidia-ml.so.1)
#   2. target/release/gpusight --once --json > real.json                          (right after)
#   3. GPUSIGHT_NVML_LIB=target/release/libgpusight_fake_nvml.so GPUSIGHT_FAKE_NVML=capture.toml
#      target/release/gpusight --once --json > replay.json
#   4. python3 scripts/device/capture_compare.py: every field of the machine's GPUs, their readings and their
#      processes; readings that move (power, temperature, utilization, energy, counters) within the card's own
#      change over the capture; a line per field that differs and by how much.
#
# Needs: cargo build --release --locked --bins --example nvml_capture && cargo build --release --locked -p gpusight-fake-nvml
# Run:   bash scripts/device/capture_compare.sh            (SAMPLES=10 INTERVAL=1 by default; ~15 s)
# Results: $OUT (or ./capture-compare) gets capture.toml, real.json, replay.json, compare.txt, compare.json.
# Exit: 0 all fields agree (within tolerance), 1 some differ, 3 something could not run.
#
# Without a GPU: FAKE_AS_REAL=SCENARIO plays the "real" card with the fake NVML too (a built-in name such as h200 or
# hgx8-mig, or a file): the capture is then of that scenario, and the compare checks the capture and the replay
# against it (how the script itself is tested).
set -u
R=${RELEASE_DIR:-$PWD/target/release}
B=$R/gpusight
CAP=$R/examples/nvml_capture
FAKE=$R/libgpusight_fake_nvml.so
O=${OUT:-$PWD/capture-compare}
SAMPLES=${SAMPLES:-10}
INTERVAL=${INTERVAL:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
for f in "$B" "$CAP" "$FAKE"; do
    [ -e "$f" ] || { echo "no $f: cargo build --release --locked --bins --example nvml_capture && cargo build --release --locked -p gpusight-fake-nvml"; exit 3; }
done
mkdir -p "$O"

# The "real" card: the driver's library, or the fake playing FAKE_AS_REAL.
real() {
    if [ -n "${FAKE_AS_REAL:-}" ]; then
        GPUSIGHT_NVML_LIB=$FAKE GPUSIGHT_FAKE_NVML=$FAKE_AS_REAL "$@"
    else
        env -u GPUSIGHT_NVML_LIB -u GPUSIGHT_FAKE_NVML "$@"
    fi
}

real "$CAP" "$SAMPLES" "$INTERVAL" > "$O/capture.toml" 2> "$O/capture.stderr" || {
    echo "the capture failed:"; cat "$O/capture.stderr"; exit 3; }
T_CAPTURED=$(date +%s.%N)
real "$B" --once --json > "$O/real.json" 2> "$O/real.stderr" || { echo "gpusight --once failed:"; cat "$O/real.stderr"; exit 3; }
T_REAL=$(date +%s.%N)
GPUSIGHT_NVML_LIB=$FAKE GPUSIGHT_FAKE_NVML=$O/capture.toml "$B" --once --json > "$O/replay.json" 2> "$O/replay.stderr" || {
    echo "gpusight --once on the replay failed:"; cat "$O/replay.stderr"; exit 3; }
if command -v nvidia-smi >/dev/null && [ -z "${FAKE_AS_REAL:-}" ]; then
    nvidia-smi -q > "$O/nvidia-smi-q.txt" 2>&1
fi
# The real reading was taken this long after the capture ended; the replay counts from its own start.
ELAPSED=$(python3 -c "print(round($T_REAL - $T_CAPTURED, 3))")
python3 "$HERE/capture_compare.py" --capture "$O/capture.toml" --real "$O/real.json" --replay "$O/replay.json" \
    --elapsed "$ELAPSED" --json "$O/compare.json" | tee "$O/compare.txt"
exit "${PIPESTATUS[0]}"
