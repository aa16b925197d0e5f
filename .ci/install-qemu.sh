#!/usr/bin/env bash
# Installs what runs the aarch64 release binary on this x86_64 machine: qemu-user's `qemu-aarch64` (Debian's
# `qemu-user`) and the aarch64 glibc it loads through `-L /usr/aarch64-linux-gnu` (`libc6-arm64-cross`,
# `libgcc-s1-arm64-cross`). Idempotent: nothing is fetched when both are there.
set -euo pipefail
sysroot=/usr/aarch64-linux-gnu
if command -v qemu-aarch64 >/dev/null && [ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] \
  && [ -e "$sysroot/lib/libgcc_s.so.1" ]; then
  qemu-aarch64 --version | head -1
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
  qemu-user libc6-arm64-cross libgcc-s1-arm64-cross
qemu-aarch64 --version | head -1
