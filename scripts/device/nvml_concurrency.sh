#!/usr/bin/env bash
# Which NVML call families can run at the same time on different GPUs: each family is hammered from 2 threads per
# GPU for SECONDS, TRIES times, by examples/nvml_concurrency (built with `cargo build --release --examples`).
# A crash (SIGSEGV) counts against the family. `all` is every family at once with GPM serialised, as gpusight reads.
set -u
PROBE=${PROBE:-./target/release/examples/nvml_concurrency}
SECONDS_EACH=${SECONDS_EACH:-4}
TRIES=${TRIES:-2}
for family in fast processes fields health pcie events gpm-serialized all gpm; do
  crashed=0
  for try in $(seq 1 "$TRIES"); do
    "$PROBE" "$family" "$SECONDS_EACH" 2 > /tmp/nvml_probe.out 2>&1
    rc=$?
    line=$(tail -1 /tmp/nvml_probe.out)
    if [ "$rc" -ne 0 ]; then crashed=$((crashed + 1)); line="exit $rc"; fi
    echo "  $family try $try: $line"
  done
  echo "$family: $crashed of $TRIES runs crashed"
done
