#!/usr/bin/env bash
# Issue 12 checks on a real GPU box, with the release binary at target/release/gpusight:
#  1. q under load: the monitor on scale:64x100000 at 0.1 s answers q within 100 ms and its RSS stays bounded
#     (before: 3.6 GB in 8 s, q ignored for over 10 s).
#  2. The live once/doctor outputs on the real GPUs carry no control character from outside.
#  3. The exporter under a flood of 1,100 half-sent connections with `ulimit -n 1024` keeps answering real scrapes
#     and says on stderr that it sheds load.
# EXPORT_ARGS adds flags to the exporter (e.g. "--synthetic mixed:8" on a machine without a GPU).
# Results in $OUT (default /tmp/out): log.txt, q_latency.txt, flood.txt, export.err.
set -u
B=${BIN:-target/release/gpusight}; O=${OUT:-/tmp/out}; mkdir -p "$O"
exec > >(tee "$O/log.txt") 2>&1

echo "== 1. q under load (scale:64x100000, interval 0.1)"
python3 - "$B" "$O" <<'PY'
import os, pty, select, struct, fcntl, termios, time, sys
binary, out = sys.argv[1], sys.argv[2]
results = []
for spec in ["scale:64x100000", "scale:8x1000", "mixed:8"]:
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(binary, [binary, "--synthetic", spec, "--interval", "0.1"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    start, rss_max = time.time(), 0
    while time.time() - start < 8:
        if select.select([fd], [], [], 0.05)[0]:
            try: os.read(fd, 1 << 20)
            except OSError: break
        try:
            rss = int(open(f"/proc/{pid}/status").read().split("VmRSS:")[1].split()[0])
            rss_max = max(rss_max, rss)
        except Exception: pass
    sent = time.time(); os.write(fd, b"q")
    while True:
        r = select.select([fd], [], [], 0.01)[0]
        if r:
            try: os.read(fd, 1 << 20)
            except OSError: pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done: break
        if time.time() - sent > 30: os.kill(pid, 9); os.waitpid(pid, 0); break
    line = f"{spec}: q answered in {1000*(time.time()-sent):.0f} ms; max RSS {rss_max/1024:.0f} MiB over 8 s"
    print(line); results.append(line)
open(f"{out}/q_latency.txt", "w").write("\n".join(results) + "\n")
PY

echo "== 2. live outputs carry no control characters"
for args in "--once" "doctor --duration 5s" "report --duration 5s"; do
  $B $args > "$O/out.txt" 2>&1; echo "$args exit=$?"
  python3 -c "import sys; t=open('$O/out.txt',encoding='utf-8',errors='replace').read(); bad=[c for c in t if ord(c)<32 and c not in '\n' and not (c=='\x1b' and 'doctor' in '$args')]; print('  control characters:', len(bad))"
done

echo "== 3. exporter flood under ulimit -n 1024"
( ulimit -n 1024; exec $B export ${EXPORT_ARGS:-} --listen 127.0.0.1:19400 2> "$O/export.err" ) & EXP=$!
sleep 3
python3 - <<'PY' | tee "$O/flood.txt"
import resource, socket, time, urllib.request
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
socks = []
for i in range(1100):
    try:
        s = socket.create_connection(("127.0.0.1", 19400), timeout=2)
        s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        socks.append(s)
    except OSError as e:
        print("client socket", i, e); break
print("slow sockets open:", len(socks))
ok = 0
for i in range(10):
    t = time.time()
    try:
        body = urllib.request.urlopen("http://127.0.0.1:19400/metrics", timeout=10).read()
        ok += b"DCGM_FI_DEV_GPU_UTIL" in body
        print(f"scrape {i}: {len(body)} bytes in {1000*(time.time()-t):.0f} ms")
    except Exception as e:
        print(f"scrape {i}: FAILED after {1000*(time.time()-t):.0f} ms: {e}")
    time.sleep(1)
print(f"{ok}/10 real scrapes answered during the flood")
PY
grep -c "" "$O/export.err"; head -5 "$O/export.err"
echo "RSS of the exporter: $(grep VmRSS /proc/$EXP/status 2>/dev/null)"
kill $EXP; wait $EXP 2>/dev/null
