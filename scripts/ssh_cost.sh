#!/usr/bin/env bash
# The cost of `gpusight ssh` on one machine: a throwaway sshd on 127.0.0.1 (its own keys, as tests/ssh/ sets it up),
# N host aliases h01..hN that all reach it, each serving `--synthetic mixed:8` at 1 s; the view drawn in a 160x50
# pty (util-linux `script`) for 40 s. Prints the CPU over the last 30 s of `gpusight ssh` itself and of its N ssh
# clients, its VmRSS and threads, the stream's bytes per GPU, and how many remote recorders are left after Ctrl-C.
#
#   cargo build --release --locked && bash scripts/ssh_cost.sh 16 64
#
# Needs /usr/sbin/sshd, ssh, ssh-keygen (.ci/install-sshd.sh), `script` and `bc`. The remote recorders, sshd and ssh
# run on the same cores as the measured process, so on a small machine the figures include their contention.
set -eu
cd "$(dirname "$0")/.."
B=${GPUSIGHT:-${CARGO_TARGET_DIR:-$PWD/target}/release/gpusight}
[ -x "$B" ] || { echo "no $B: cargo build --release --locked"; exit 2; }
D=$(mktemp -d /tmp/gpusight-ssh-cost.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
trap '[ -f "$D/sshd.pid" ] && kill "$(cat "$D/sshd.pid")" 2>/dev/null; rm -rf "$D"' EXIT
[ "$(id -u)" -eq 0 ] && mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N "" -f "$D/host_key" && ssh-keygen -q -t ed25519 -N "" -f "$D/id"
cp "$D/id.pub" "$D/authorized_keys"
printf 'Port %s\nListenAddress 127.0.0.1\nHostKey %s/host_key\nPidFile %s/sshd.pid\nAuthorizedKeysFile %s/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\nMaxStartups 300\nMaxSessions 300\n' \
    "$port" "$D" "$D" "$D" > "$D/sshd_config"
printf 'Host *\n  HostName 127.0.0.1\n  Port %s\n  User %s\n  IdentityFile %s/id\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
    "$port" "$(id -un)" "$D" > "$D/ssh_config"
printf '#!/bin/sh\nexec %s --synthetic mixed:8 "$@"\n' "$B" > "$D/remote" && chmod +x "$D/remote"
/usr/sbin/sshd -f "$D/sshd_config" -E "$D/sshd.log"
sleep 1
bytes=$(timeout 21 "$B" --synthetic mixed:8 --record - --headless --interval 1 2> /dev/null | tail -n +2 | wc -c)
echo "stream: $bytes bytes of samples in 21 s (22 samples) for 8 GPUs: $((bytes / 22 / 8)) bytes per GPU a second"
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }
for n in "${@:-16}"; do
    script -qfc "stty cols 160 rows 50; $B ssh --ssh-config $D/ssh_config --remote-gpusight $D/remote --interval 1 'h[01-$(printf %02d "$n")]'" /dev/null > /dev/null 2>&1 < <(sleep 60) &
    sleep 10
    pid=$(pgrep -f "^$B ssh --ssh-config $D" | head -1)
    sshs=$(pgrep -P "$pid" ssh | tr '\n' ' ')
    a=$(ticks "$pid"); sa=$(ticks $sshs); sleep 30; b=$(ticks "$pid"); sb=$(ticks $sshs)
    echo "N=$n: gpusight ssh $(echo "scale=2; ($b - $a) / 30" | bc) % of a core (VmRSS $(awk '/VmRSS/{print $2}' "/proc/$pid/status") kB, $(ls "/proc/$pid/task" | wc -l) threads); its $(echo $sshs | wc -w) ssh clients $(echo "scale=2; ($sb - $sa) / 30" | bc) % together; $(pgrep -fc "$B --synthetic mixed:8 --record" || true) remote recorders; load $(cut -d' ' -f1-3 /proc/loadavg)"
    kill -INT "$pid"
    sleep 3
    echo "   after Ctrl-C: $(pgrep -fc "$B --synthetic mixed:8 --record" || true) remote recorders left"
done
