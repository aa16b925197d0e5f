#!/usr/bin/env bash
# Installs the `prometheus` and `promtool` binaries that tests/fleet/end_to_end.rs and tests/export/server.rs use
# (Debian/Ubuntu package `prometheus`). With CI=true those tests fail when the binaries are missing.
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  prometheus --version 2>&1 | head -1
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update -qq
# The package's service is not needed: the tests start their own server in a tempdir.
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends prometheus
# On hosts with systemd the package starts a system-wide server on :9090; stop it so it holds no port.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  $sudo_cmd systemctl stop prometheus || true
fi
prometheus --version 2>&1 | head -1
