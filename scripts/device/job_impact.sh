#!/usr/bin/env bash
# Job-impact benchmark (issue 20, item 3): does a monitor slow a training job? A fixed PyTorch training step with
# its data on the GPU runs throughout; no monitor, gpusight at 1 s and 0.1 s, nvitop at 1 s and
# `nvidia-smi dmon -d 1` take turns in ROUNDS rounds (random order each round); each condition's median step time
# is compared with the same round's no-monitor phase, and the mean difference is printed with its 95 % bootstrap
# interval. See scripts/device/job_impact.py for the method.
#
#   ROUNDS=8 scripts/device/job_impact.sh          # about 8.5 min on one H200; results in $OUT (default /tmp/job_impact)
#   RESIDENT=1 ROUNDS=40 SETTLE_S=1 MEASURE_S=2.5 scripts/device/job_impact.sh
#                                                   # monitors started once, frozen and thawed per phase: ~8 min
#   RESIDENT=1 INTERLEAVE=1 ROUNDS=12 SETTLE_S=1 MEASURE_S=3 scripts/device/job_impact.sh
#                                                   # a no-monitor phase beside every monitor phase (see the .py)
#
# Needs: target/release/gpusight (or GPUSIGHT=path), python3 with torch and a GPU, nvidia-smi, and the nvitop wheel
# with its dependencies in .device/whl (installed into a private directory, nothing system-wide).
# Knobs: ROUNDS (8), SETTLE_S (3), MEASURE_S (8), WARMUP_S (20), BATCH (128), SIZE (160): each round takes
# 5 x (SETTLE_S + MEASURE_S + 1) s, so the default fits in 9 minutes with the warm-up.
set -euo pipefail
ROUNDS=${ROUNDS:-8}
OUT=${OUT:-/tmp/job_impact}
GPUSIGHT=${GPUSIGHT:-target/release/gpusight}
mkdir -p "$OUT"
[ -x "$GPUSIGHT" ] || { echo "no gpusight binary at $GPUSIGHT (cargo build --release, or set GPUSIGHT)" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found" >&2; exit 2; }
python3 -c "import torch; assert torch.cuda.is_available()" || { echo "PyTorch with CUDA is needed" >&2; exit 2; }
if ! python3 -c "import nvitop" 2>/dev/null; then
  SITE=$(mktemp -d)
  if compgen -G ".device/whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target "$SITE" .device/whl/*.whl
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  fi
  python3 -c "import nvitop" || { echo "nvitop is not importable (put its wheels in .device/whl)" >&2; exit 2; }
fi
exec > >(tee "$OUT/log.txt") 2>&1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,temperature.gpu --format=csv
python3 scripts/device/job_impact.py drive --rounds "$ROUNDS" --settle "${SETTLE_S:-3}" --measure "${MEASURE_S:-8}" \
  --warmup "${WARMUP_S:-20}" --batch "${BATCH:-128}" --size "${SIZE:-160}" --gpusight "$GPUSIGHT" --out "$OUT" \
  ${RESIDENT:+--resident} ${INTERLEAVE:+--interleave}
