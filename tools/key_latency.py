#!/usr/bin/env python3
"""Key-to-frame latency of the gpusight monitor while its sampler is slow.

Starts the binary in a pseudo-terminal (120x40 by default) on a synthetic machine whose every sample takes
GPUSIGHT_SYNTHETIC_DELAY_MS on the sampler thread (a slow NVML), sends keys at random moments, and times each
from the write of the key to the arrival of the output chunk after which the parsed screen shows its effect:

  ?       the help screen's title appears          Esc   it disappears again
  t       the "[tree]" mark in the process table's title appears or disappears
  Down/Up the selected row (the first reverse-video row under the table header) shows another PID

Output is read by a thread that only timestamps chunks, so parsing the screen (pyte) does not delay the
timestamps. Reports p50/p95/p99/max per delay setting.

Usage:
  python3 tools/key_latency.py [--bin target/release/gpusight] [--delays 80,900] [--keys 200]
                                 [--spec mixed:8] [--interval 0.1] [--seed 1]
  GPUSIGHT_NVML_LIB=target/release/libgpusight_fake_nvml.so \
    python3 tools/key_latency.py --fake scale:72x8 --delays 0 --interval 1   # the live path on the fake NVML

Needs the pyte package (pip install pyte) to parse the screen; everything else is the standard library.
"""

import argparse
import fcntl
import os
import pty
import queue
import random
import select
import signal
import statistics
import struct
import sys
import termios
import threading
import time

try:
    import pyte
except ImportError:  # pragma: no cover - a message for people
    pyte = None  # --help works without it; a run says what it needs

HELP_TITLE = "Keys (any key returns)"
TREE_MARK = "[tree]"
KEYS = {"help": b"?", "escape": b"\x1b", "tree": b"t", "down": b"\x1b[B", "up": b"\x1b[A"}


class Monitor:
    """The binary in a pty, with a reader thread that timestamps every output chunk."""

    def __init__(self, argv, env, cols, rows):
        self.cols, self.rows = cols, rows
        pid, fd = pty.fork()
        if pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.chunks = queue.Queue()
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.alive = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while self.alive:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:
                break
            if not data:
                break
            self.chunks.put((time.monotonic(), data))
        self.chunks.put((time.monotonic(), None))

    def send(self, key):
        sent_at = time.monotonic()
        os.write(self.fd, key)
        return sent_at

    def pump_until(self, predicate, timeout_s):
        """Feeds chunks to the screen until `predicate(screen)` holds; returns the arrival time of that chunk."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                at, data = self.chunks.get(timeout=left)
            except queue.Empty:
                return None
            if data is None:
                raise RuntimeError("the monitor exited")
            self.stream.feed(data)
            if predicate(self):
                return at

    def drain(self, for_s):
        """Keeps the screen current for a while without waiting on anything."""
        end = time.monotonic() + for_s
        while time.monotonic() < end:
            try:
                _, data = self.chunks.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if data is None:
                raise RuntimeError("the monitor exited")
            self.stream.feed(data)

    def text(self):
        return "\n".join(self.screen.display)

    def help_open(self):
        return HELP_TITLE in self.text()

    def tree_on(self):
        return any(line.lstrip().startswith("Processes (") and TREE_MARK in line for line in self.screen.display)

    def selected(self):
        """(row, PID) of the selected process row, or None."""
        header = None
        for y, line in enumerate(self.screen.display):
            if "PID" in line and "USER" in line and "COMMAND" in line:
                header = y
                break
        if header is None:
            return None
        for y in range(header + 1, self.rows):
            cell = self.screen.buffer[y][3]
            line = self.screen.display[y]
            if cell.reverse and line.strip():
                fields = line.split()
                return (y, fields[1] if len(fields) > 1 else "")
        return None

    def stop(self):
        self.alive = False
        try:
            os.write(self.fd, b"q")
            time.sleep(0.3)
            os.kill(self.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def run(args, delay_ms, rng):
    env = dict(os.environ, TERM="xterm-256color", GPUSIGHT_SYNTHETIC_DELAY_MS=str(delay_ms))
    if args.fake:
        # The live NVML path on the fake NVML (docs/fake-nvml.md): GPUSIGHT_NVML_LIB names the fake library.
        env["GPUSIGHT_FAKE_NVML"] = args.fake
        argv = [os.path.abspath(args.bin), "--interval", str(args.interval)]
    else:
        argv = [os.path.abspath(args.bin), "--synthetic", args.spec, "--interval", str(args.interval)]
    mon = Monitor(argv, env, args.cols, args.rows)
    latencies, by_kind, timeouts = [], {}, {}
    try:
        if mon.pump_until(lambda m: " Processes (" in m.text(), 20.0) is None:
            raise RuntimeError("the monitor did not draw its first frame within 20 s")
        # Select a row first so Down/Up have something to move.
        mon.send(KEYS["down"])
        mon.pump_until(lambda m: m.selected() is not None, 5.0)
        for _ in range(args.keys):
            # A random moment: somewhere inside the sampler's slow read, a redraw, or idle time.
            mon.drain(rng.uniform(0.02, 0.5))
            if mon.help_open():
                kind, want = "escape", (lambda m: not m.help_open() and " Processes (" in m.text())
            else:
                kind = rng.choice(["help", "tree", "move", "move"])
                if kind == "help":
                    want = lambda m: m.help_open()  # noqa: E731
                elif kind == "tree":
                    was = mon.tree_on()
                    want = lambda m, was=was: m.tree_on() != was and " Processes (" in m.text()  # noqa: E731
                else:
                    before = mon.selected()
                    # Mostly down, sometimes up (either is a change of PID).
                    kind = "up" if before and rng.random() < 0.3 else "down"
                    want = lambda m, before=before: (s := m.selected()) is not None and s != before  # noqa: E731
            sent = mon.send(KEYS[kind])
            shown = mon.pump_until(want, args.timeout)
            if shown is None and kind in ("down", "up"):
                # At the end of the list the key does not move: try the other way, timed from its own write.
                before = mon.selected()
                kind = "up" if kind == "down" else "down"
                sent = mon.send(KEYS[kind])
                shown = mon.pump_until(lambda m, before=before: (s := m.selected()) is not None and s != before,
                                       args.timeout)
            if shown is None:
                timeouts[kind] = timeouts.get(kind, 0) + 1
                continue
            ms = (shown - sent) * 1000.0
            latencies.append(ms)
            by_kind.setdefault(kind, []).append(ms)
    finally:
        mon.stop()
    return latencies, by_kind, timeouts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="target/release/gpusight")
    parser.add_argument("--delays", default="80,900", help="GPUSIGHT_SYNTHETIC_DELAY_MS values, comma-separated")
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--spec", default="mixed:8")
    parser.add_argument("--fake", default="", help="run live on the fake NVML with this scenario (e.g. scale:72x8); "
                        "GPUSIGHT_NVML_LIB must name the fake library; --delays does not apply")
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--cols", type=int, default=120)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for a key's effect")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if pyte is None:
        sys.exit("key_latency.py needs pyte to parse the screen: pip install pyte")
    sys.setswitchinterval(0.0005)  # let the reader thread timestamp promptly while pyte parses
    rng = random.Random(args.seed)
    source = f"live on the fake NVML {args.fake}" if args.fake else f"--synthetic {args.spec}"
    print(f"gpusight key latency: {args.bin} {source} --interval {args.interval}, "
          f"{args.cols}x{args.rows}, {args.keys} keys per run, seed {args.seed}")
    for delay in [int(d) for d in args.delays.split(",") if d.strip()]:
        lat, by_kind, timeouts = run(args, delay, rng)
        s = sorted(lat)
        print(f"delay {delay} ms: n={len(s)} timeouts={sum(timeouts.values())} {timeouts or ''} "
              f"p50={percentile(s, 50):.1f} ms p95={percentile(s, 95):.1f} ms "
              f"p99={percentile(s, 99):.1f} ms max={max(s) if s else float('nan'):.1f} ms "
              f"mean={statistics.fmean(s) if s else float('nan'):.1f} ms")
        for kind, values in sorted(by_kind.items()):
            v = sorted(values)
            print(f"    {kind:<7} n={len(v):<4} p50={percentile(v, 50):.1f} ms p99={percentile(v, 99):.1f} ms "
                  f"max={v[-1]:.1f} ms")


if __name__ == "__main__":
    main()
