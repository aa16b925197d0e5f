#!/usr/bin/env bash
# Installs the OpenSSH server and client that tests/ssh/ uses (Debian/Ubuntu packages openssh-server and
# openssh-client): the tests start their own /usr/sbin/sshd on a free loopback port with their own keys, as the
# current user. With CI set those tests fail when sshd is missing. Idempotent.
set -euo pipefail
if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null; then
  ssh -V 2>&1 | head -1
  exit 0
fi
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends openssh-server openssh-client
# The package's service is not needed (the tests start their own server); stop it where systemd started it.
if command -v systemctl >/dev/null && systemctl is-active --quiet ssh 2>/dev/null; then
  $sudo_cmd systemctl stop ssh || true
fi
ssh -V 2>&1 | head -1
