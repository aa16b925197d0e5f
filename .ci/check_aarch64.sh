#!/usr/bin/env bash
# Runs the aarch64 release binary (Grace: GH200, GB200) on an x86_64 machine under qemu-user, with Debian's
# aarch64 glibc (.ci/install-qemu.sh installs both): it must be an AArch64 ELF, start, print the embedded demo's
# H200 with `--demo --once`, and let doctor judge the demo (exit 0, 1 or 2 and its JSON document).
#
#   .ci/check_aarch64.sh target/aarch64-unknown-linux-gnu/release/gpusight
set -euo pipefail
binary=${1:?usage: .ci/check_aarch64.sh BINARY}
sysroot=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}

if ! readelf -h "$binary" | grep -q 'Machine:.*AArch64'; then
  echo "check_aarch64.sh: $binary is not an AArch64 binary" >&2
  exit 1
fi
run() { qemu-aarch64 -L "$sysroot" "$binary" "$@"; }

run --version
start=$(date +%s)
once=$(run --demo --once --no-color)
printf '%s\n' "$once" | sed -n '1,4p'
if ! grep -q 'H200' <<< "$once"; then
  echo "check_aarch64.sh: --demo --once under qemu did not show the demo's H200" >&2
  exit 1
fi
status=0
doctor=$(run doctor --demo --json) || status=$?
if [ "$status" -gt 2 ] || ! grep -q '"schema": "gpusight.doctor/2"' <<< "$doctor"; then
  echo "check_aarch64.sh: doctor --demo --json under qemu exited $status:" >&2
  printf '%s\n' "$doctor" >&2
  exit 1
fi
echo "   --demo --once and doctor --demo (exit $status) ran under qemu-aarch64 in $(( $(date +%s) - start )) s"
