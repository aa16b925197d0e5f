#!/usr/bin/env python3
"""Writes assets/hot-text.ld: the functions the running monitor executes, laid out together at the start of .text.

Why: the kernel maps a file's cached pages around every page fault (fault-around, 64 KiB), so code that runs
scattered over the binary's 5 MB of text keeps most of it resident: 4.4 MB on the H200 at 1 s, where
`nvidia-smi dmon` keeps 0.8 MB (docs/performance.md). With the functions that run laid out side by side the
resident text falls to about what runs.

How: a release binary built without the layout (without GPUSIGHT_HOT_TEXT: valgrind names the functions of `.text`
alone) runs under valgrind's callgrind on this machine, no GPU needed: the TUI on a synthetic machine and on the
demo recording (with the keys a user presses most), and the exporter scraped every second. Every function of the
binary that executed is kept. A name whose hash-free stem is its own alone in the binary is matched by the stem, so
it survives new hashes (edits elsewhere, dependency updates, compilers); a stem that many instantiations of one
generic function share is matched by its exact name. Both `.text.NAME` and `.text.unlikely.NAME` (LLVM's cold
functions) are matched, by one pattern `.text*.NAME`. The live path that only a GPU machine runs (NVML, GPM, the host sampler on the real /proc,
the live source) comes from assets/hot-text-live.txt: the functions that ran under callgrind on an H200 in the
monitor and the exporter at 1 s while a job trained (`--live-trace` there, then `--extra` here rewrites the file).
A name that matches nothing costs nothing; a function new since the file was written lands in the ordinary .text
(its page is then resident as before).

build.rs hands the script to the linker for release artifacts alone (GPUSIGHT_HOT_TEXT=1, set by
scripts/release.sh; `-T`, an INSERT script: the default layout stays, this adds one output
section in front of .text); GNU ld, lld and zig's linker take it.

  python3 scripts/hot_text.py            # about 3 minutes: builds, traces, writes assets/hot-text.ld
  python3 scripts/hot_text.py --seconds 20
  python3 scripts/hot_text.py --live-trace DIR --binary PLAIN --seconds 200   # on a GPU machine (valgrind there)
  python3 scripts/hot_text.py --extra DIR/live-tui.out DIR/live-export.out     # here: new live names, new layout
"""

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "assets", "hot-text.ld")

# The live path: the functions of the binary that ran on a GPU machine, a line each: `monitor NAME` (the TUI) or
# `exporter NAME` (in the exporter alone), mangled; `#` starts a comment.
LIVE_NAMES = os.path.join(ROOT, "assets", "hot-text-live.txt")


def write_live_names(outputs):
    """Rewrites LIVE_NAMES from the callgrind outputs of a `--live-trace` run (live-tui.out, live-export.out)."""
    monitor, exporter = set(), set()
    for path in outputs:
        names = [name for name in executed_functions(path, "gpusight") if stem(name)]
        (exporter if "export" in os.path.basename(path) else monitor).update(names)
    exporter -= monitor
    if len(monitor) < 200:
        sys.exit(f"hot_text.py: only {len(monitor)} functions ran in the monitor in {outputs}: did it run?")
    with open(LIVE_NAMES, "w") as f:
        f.write("# Written by scripts/hot_text.py --extra (do not edit): the functions of gpusight that ran under\n"
                "# callgrind on a GPU machine (hot_text.py --live-trace) in the monitor, and those that ran in the\n"
                "# exporter alone, both at 1 s while a job trained.\n")
        f.writelines(f"monitor {name}\n" for name in sorted(monitor))
        f.writelines(f"exporter {name}\n" for name in sorted(exporter))


def read_live_names():
    """The live path's names: the monitor's first, then the exporter's."""
    with open(LIVE_NAMES) as f:
        rows = [line.rstrip("\n").split(" ", 1) for line in f if line.strip() and not line.startswith("#")]
    return [name for role in ("monitor", "exporter") for kind, name in rows if kind == role]


def run_in_pty(argv, seconds, keys=b"", rows=50, cols=160):
    """Runs argv on a pseudo-terminal of rows x cols for `seconds`, typing `keys` one per second, then 'q'; returns
    the last 8 KiB it wrote (where a program that stopped early says why)."""
    tail = bytearray()

    def pump(fd, timeout):
        """Keeps what the program wrote within `timeout`; False once the terminal is gone."""
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            try:
                tail.extend(os.read(fd, 65536))
                del tail[:-8192]
            except OSError:
                return False
        return True

    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    start, typed = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        if time.monotonic() - start > 10 + typed and typed < len(keys):
            os.write(fd, keys[typed:typed + 1])
            typed += 1
        if not pump(fd, 0.1):
            break
    # Esc closes whatever is open, then q quits; callgrind writes its output only when the program exits.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        os.write(fd, b"\x1b")
        time.sleep(0.5)
        os.write(fd, b"q")
        end = time.monotonic() + 2
        while time.monotonic() < end:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return bytes(tail)
            pump(fd, 0.2)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return bytes(tail)


def run_exporter(argv, seconds, port):
    """Runs the exporter for `seconds`, scraping /metrics every second, then SIGTERM."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        time.sleep(1)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        except OSError:
            pass
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def executed_functions(callgrind_out, binary_name):
    """Names of the functions of the binary that executed, from a callgrind output (mangled)."""
    names, objects, functions, current = [], {}, {}, None
    with open(callgrind_out, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, key, name = m.groups()
                if name:
                    objects[key] = name
                if kind == "ob":
                    current = objects.get(key)
                continue
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, key, name = m.groups()
                if name:
                    functions[key] = name
                if kind == "fn" and current and os.path.basename(current).startswith(binary_name):
                    names.append(functions[key])
    return names


def stem(name):
    """A symbol name without the compiler's hashes (a glob), or None for names that are not symbols."""
    if name.startswith("0x") or name.startswith("(") or not re.match(r"^[A-Za-z0-9_$.]+$", name):
        return None
    name = re.sub(r"17h[0-9a-f]{16}E(\.llvm\.\d+)?$", "17h*", name)  # legacy mangling's hash
    name = re.sub(r"\.llvm\.\d+$", ".llvm.*", name)  # ThinLTO's promoted locals
    return re.sub(r"Cs[0-9A-Za-z]+_(?=\d)", "Cs*_", name)  # v0 mangling's crate disambiguators


def patterns_for(names, symbols):
    """Section patterns for these executed functions. A name whose hash-free stem is its own alone in the binary
    (most of gpusight's and its libraries' functions) is matched by the stem, which survives new hashes; a stem
    shared by many instantiations of one generic function (`Iterator::fold`, `drop_in_place`) would pull in all of
    them, so those are matched by their exact name. LLVM puts functions it knows to be cold (`#[cold]`, like a
    vector's growth) in `.text.unlikely.NAME`: both prefixes are matched."""
    sharing = {}
    for symbol in symbols:
        key = stem(symbol)
        if key:
            sharing[key] = sharing.get(key, 0) + 1
    out, seen = [], set()
    for name in names:
        key = stem(name)
        if key is None:
            continue
        chosen = key if sharing.get(key, 0) <= 1 else name
        if chosen not in seen:
            seen.add(chosen)
            out.append(f".text*.{chosen}")  # .text.NAME and .text.unlikely.NAME in one pattern
    return out


def live_trace(args):
    """The monitor (TUI, 1 s) and the exporter on this machine's GPUs, both under callgrind at once."""
    os.makedirs(args.live_trace, exist_ok=True)
    binary = os.path.abspath(args.binary or os.path.join(ROOT, "target", "release", "gpusight"))

    def valgrind(tag):
        out = os.path.join(args.live_trace, f"live-{tag}.out")
        return [args.valgrind, "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", binary]

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import threading
    exporter = threading.Thread(target=run_exporter, args=(valgrind("export") + [
        "export", "--interval", "1", "--listen", f"127.0.0.1:{port}"], args.seconds, port))
    exporter.start()
    screen = run_in_pty(valgrind("tui") + ["--interval", "1"], args.seconds, b"\t\t>?\x1b\r\x1bJ\x1bx\x1b")
    exporter.join()
    # The end of what the monitor wrote, valgrind's report included: a run that ended early says why here.
    with open(os.path.join(args.live_trace, "live-tui.screen"), "wb") as f:
        f.write(screen)
    print(f"hot_text.py: live traces in {args.live_trace}: {sorted(os.listdir(args.live_trace))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40, help="how long each traced run lasts (valgrind time)")
    parser.add_argument("--no-build", action="store_true",
                        help="trace target/release/gpusight as it is (built without GPUSIGHT_HOT_TEXT)")
    parser.add_argument("--live-trace", metavar="DIR",
                        help="on a GPU machine: trace the monitor and the exporter on the live GPUs into DIR and stop "
                             "(with --binary, a build made without GPUSIGHT_HOT_TEXT); the outputs are then given "
                             "to --extra where the file is written")
    parser.add_argument("--binary", help="with --live-trace: the gpusight binary to trace")
    parser.add_argument("--valgrind", default="valgrind", help="the valgrind to run")
    parser.add_argument("--extra", nargs="*", default=[],
                        help="callgrind outputs of a --live-trace run: they replace assets/hot-text-live.txt")
    args = parser.parse_args()
    if args.live_trace:
        live_trace(args)
        return
    if not shutil.which(args.valgrind):
        sys.exit("hot_text.py: valgrind is needed (apt-get install valgrind)")
    # Traced without the layout: valgrind names the functions of `.text` alone, not those of `.text.hot`. The
    # symbols' names do not depend on the layout, so the patterns fit the ordinary build too.
    env = {k: v for k, v in os.environ.items() if k != "GPUSIGHT_HOT_TEXT"}
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, env=env, check=True)
    sections = subprocess.run(["readelf", "-SW", os.path.join(ROOT, "target", "release", "gpusight")],
                              capture_output=True, text=True, check=True).stdout
    if ".text.hot" in sections:
        sys.exit("hot_text.py: target/release/gpusight has a .text.hot, which valgrind cannot name: "
                 "build it without GPUSIGHT_HOT_TEXT or leave out --no-build")
    work = tempfile.mkdtemp(prefix="hot-text-")
    binary = os.path.join(work, "gpusight")
    shutil.copy(os.path.join(ROOT, "target", "release", "gpusight"), binary)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def valgrind(tag):
        return [args.valgrind, "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={work}/{tag}.out", binary]

    # The keys a user presses most: move the selection, sort, help, details, the jobs view, explain.
    keys = b"\t\t>?\x1b\r\x1bJ\x1bx\x1b"
    print("hot_text.py: tracing the TUI on a synthetic machine, the demo and the exporter", flush=True)
    run_in_pty(valgrind("tui") + ["--synthetic", "mixed:2", "--interval", "1"], args.seconds, keys)
    run_in_pty(valgrind("demo") + ["--demo"], args.seconds, keys)
    run_exporter(valgrind("export") + ["export", "--synthetic", "mixed:2", "--interval", "1",
                                       "--listen", f"127.0.0.1:{port}"], args.seconds, port)
    # The live monitor's functions first, then the live exporter's, then what only the dev traces ran (the synthetic
    # source, the demo): the linker lays them out in this order, so the pages the live monitor touches lie together.
    if args.extra:
        write_live_names(args.extra)
    names = read_live_names()
    for tag in ("tui", "demo", "export"):
        path = os.path.join(work, f"{tag}.out")
        if not os.path.exists(path):
            sys.exit(f"hot_text.py: callgrind wrote no {path}")
        names += executed_functions(path, "gpusight")
    nm = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    symbols = {line.split()[-1] for line in nm.splitlines() if len(line.split()) == 3 and line.split()[1] in "tTwW"}
    patterns = patterns_for(names, symbols)
    if len(patterns) < 200:
        sys.exit(f"hot_text.py: only {len(patterns)} functions traced: is valgrind working?")
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    with open(OUT, "w") as f:
        f.write("/* Written by scripts/hot_text.py (do not edit): the functions the monitor runs, side by side at the\n"
                f"   start of .text, so that fewer of the binary's pages are resident. {len(patterns)} traced functions\n"
                f"   ({rustc}), the live path's from assets/hot-text-live.txt. build.rs passes it to the linker. */\n")
        f.write("SECTIONS\n{\n  .text.hot :\n  {\n")
        for p in patterns:
            f.write(f"    *({p})\n")
        f.write("  }\n}\nINSERT BEFORE .text;\n")
    shutil.rmtree(work)
    print(f"hot_text.py: wrote {OUT}: {len(patterns)} functions, the live path's among them; "
          "scripts/release.sh links the artifacts with it")


if __name__ == "__main__":
    main()
