#!/usr/bin/env python3
"""Does a monitor slow a training job? A fixed PyTorch training step, timed while monitors come and go.

One trainer process runs the same step (a ResNet-18-like network, bf16 autocast, SGD, batch of random data made
once on the GPU: no DataLoader, no host I/O) for the whole run and logs when each step ended. Meanwhile the driver
runs ROUNDS rounds; each round visits every condition once, in a fresh random order:

  none          no monitor
  gpusight-1s   target/release/gpusight --interval 1    (the TUI, in a 160x50 pseudo-terminal)
  gpusight-0.1s target/release/gpusight --interval 0.1
  nvitop-1s     python3 -m nvitop --interval 1           (in a 160x50 pseudo-terminal)
  dmon-1s       nvidia-smi dmon -d 1                     (output to /dev/null)

A condition's phase starts the monitor, waits SETTLE_S (start-up: NVML init, first reads), measures for MEASURE_S,
then stops the monitor. With --resident every monitor is started once at the beginning and frozen (SIGSTOP); a
phase thaws its monitor (SIGCONT), waits SETTLE_S, measures, and freezes it again: no start-up in any phase, so
phases can be short and rounds many (a frozen monitor makes no call and takes no CPU: the `none` condition). Steps that ended inside the measured part belong to the condition. For each round the
median step time of each condition is compared with that round's `none` (a paired ratio, so slow drifts in clocks
or temperature cancel); the estimate is the mean of the per-round differences and its 95 % interval comes from a
bootstrap over rounds (10,000 resamples). The monitor's own CPU (utime + stime of its process over the measured
part) is printed beside it.

Usage (from the repository root, with target/release/gpusight built, PyTorch with CUDA, nvidia-smi and nvitop
importable; `--conditions` leaves a monitor out, e.g. where nvitop is not installed):

  python3 scripts/device/job_impact.py drive [--rounds 8] [--settle 3] [--measure 8] [--warmup 20] [--batch 128]
                                             [--size 160] [--resident] [--interleave] [--conditions LIST] [--out DIR]
  python3 scripts/device/job_impact.py analyze DIR [DIR ...]   (several runs pooled)

The measurement in docs/performance.md (a step the GPU paces, 20 ms; about 9.5 minutes on one H200):

  python3 scripts/device/job_impact.py drive --resident --interleave --rounds 10 --settle 1 --measure 3 \
      --warmup 15 --batch 256 --size 224 --out /tmp/job_impact

With --interleave a no-monitor phase runs before every monitor phase (and one at the end), and each monitor phase
is compared with the mean of the two beside it, so a drift that is linear over those phases cancels. At the default
batch of 128 at 160 px the step is paced by Python launching kernels on the host's CPU and wanders by several per
cent from phase to phase; batch 256 at 224 px makes the GPU pace it. Results: DIR/steps.txt, phases.json,
summary.json. The trainer (`train`) is also the background job of `GROUP=cost bash scripts/device/cluster_cases.sh`.
"""

import argparse
import json
import os
import pty
import random
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time

CONDITIONS = ["none", "gpusight-1s", "gpusight-0.1s", "nvitop-1s", "dmon-1s"]


# ---------------------------------------------------------------------------------------------------------- trainer
def train(args):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    dev = torch.device("cuda")

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(c_out)
            self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(c_out)
            self.short = None
            if stride != 1 or c_in != c_out:
                self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.short is None else self.short(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    c = 64
    for c_out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [Block(c, c_out, stride), Block(c_out, c_out, 1)]
        c = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    model = nn.Sequential(*layers).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.size, args.size, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # a sync each step, as a loop that logs its loss has

    end_warmup = time.monotonic() + args.warmup
    while time.monotonic() < end_warmup:
        step()
    with open(args.log, "w") as log:
        log.write("ready\n")
        log.flush()
        last = time.monotonic()
        while not os.path.exists(args.stop):
            step()
            now = time.monotonic()
            log.write(f"{now:.6f} {now - last:.6f}\n")
            last = now
        log.flush()


# ----------------------------------------------------------------------------------------------------------- driver
def spawn_in_pty(argv, rows=50, cols=160):
    """Starts argv on a new pseudo-terminal of rows x cols, in its own session; a thread drains its output."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True, env=env)
    os.close(slave)

    def drain():
        while True:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        os.close(master)

    threading.Thread(target=drain, daemon=True).start()
    return proc


def start_monitor(condition, gpusight):
    if condition == "none":
        return None
    if condition == "gpusight-1s":
        return spawn_in_pty([gpusight, "--interval", "1"])
    if condition == "gpusight-0.1s":
        return spawn_in_pty([gpusight, "--interval", "0.1"])
    if condition == "nvitop-1s":
        return spawn_in_pty([sys.executable, "-m", "nvitop", "--interval", "1"])
    if condition == "dmon-1s":
        return subprocess.Popen(
            ["nvidia-smi", "dmon", "-d", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    raise ValueError(condition)


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def stop_monitor(proc):
    if proc is None:
        return None
    code = proc.poll()
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return code  # not None: the monitor had exited on its own before the end of its phase


def preflight(args):
    """The conditions to run; exits with what is missing (never runs a condition it cannot)."""
    import shutil

    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or "none" not in conditions:
        sys.exit(f"--conditions: {unknown or 'none is missing'}; known: {','.join(CONDITIONS)} (none is required)")
    if not os.access(args.gpusight, os.X_OK):
        sys.exit(f"no gpusight binary at {args.gpusight} (cargo build --release --locked, or --gpusight PATH)")
    if shutil.which("nvidia-smi") is None:
        sys.exit("nvidia-smi not found")
    check = "import torch; assert torch.cuda.is_available()"
    if subprocess.run([sys.executable, "-c", check], capture_output=True).returncode != 0:
        sys.exit("PyTorch with CUDA is needed")
    if "nvitop-1s" in conditions and subprocess.run([sys.executable, "-c", "import nvitop"]).returncode != 0:
        sys.exit("nvitop is not importable (pip install nvitop, or its wheels unpacked on PYTHONPATH); "
                 "--conditions none,gpusight-1s,gpusight-0.1s,dmon-1s runs without it")
    subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,temperature.gpu", "--format=csv"])
    return conditions


def drive(args):
    conditions = preflight(args)
    out = args.out
    os.makedirs(out, exist_ok=True)
    gpusight = os.path.abspath(args.gpusight)
    log_path, stop_path = os.path.join(out, "steps.txt"), os.path.join(out, "stop")
    if os.path.exists(stop_path):
        os.remove(stop_path)
    per_phase = args.settle + args.measure + (0.2 if args.resident else 1.0)
    phases_per_round = 2 * (len(conditions) - 1) if args.interleave else len(conditions)
    total = args.warmup + args.rounds * phases_per_round * per_phase
    print(f"job_impact: {args.rounds} rounds x {phases_per_round} phases x {per_phase:.1f} s "
          f"+ {args.warmup:.0f} s warm-up = about {total / 60:.1f} min", flush=True)
    trainer = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "train", "--log", log_path, "--stop", stop_path,
         "--warmup", str(args.warmup), "--batch", str(args.batch), "--size", str(args.size)],
    )
    phases = []
    resident = {}
    try:
        while not (os.path.exists(log_path) and open(log_path).readline().strip() == "ready"):
            if trainer.poll() is not None:
                sys.exit(f"the trainer exited with {trainer.returncode} before it was ready")
            time.sleep(0.5)
        if args.resident:
            for condition in conditions:
                resident[condition] = start_monitor(condition, gpusight)
            time.sleep(5)
            for proc in resident.values():
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGSTOP)
        rng = random.Random(args.seed)
        schedule = []  # (round, condition)
        for r in range(args.rounds):
            order = conditions[:] if not args.interleave else [c for c in conditions if c != "none"]
            rng.shuffle(order)
            for condition in order:
                if args.interleave:
                    schedule.append((r, "none"))
                schedule.append((r, condition))
        if args.interleave:
            schedule.append((args.rounds - 1, "none"))
        for seq, (r, condition) in enumerate(schedule):
            if args.resident:
                proc = resident[condition]
                if proc is not None:
                    os.killpg(proc.pid, signal.SIGCONT)
            else:
                proc = start_monitor(condition, gpusight)
            time.sleep(args.settle if proc is not None else min(args.settle, 0.3))
            cpu0 = cpu_seconds(proc.pid) if proc else None
            start = time.monotonic()
            time.sleep(args.measure)
            end = time.monotonic()
            cpu1 = cpu_seconds(proc.pid) if proc else None
            if args.resident:
                exited = proc.poll() if proc else None
                if proc is not None and exited is None:
                    os.killpg(proc.pid, signal.SIGSTOP)
            else:
                exited = stop_monitor(proc)
            cpu_pct = None
            if cpu0 is not None and cpu1 is not None:
                cpu_pct = (cpu1 - cpu0) / (end - start) * 100
            phases.append({"seq": seq, "round": r, "condition": condition, "start": start, "end": end,
                           "monitor_cpu_pct": cpu_pct, "monitor_exited_early": exited})
            if exited is not None:
                print(f"  round {r}: {condition} exited early with {exited}", flush=True)
            time.sleep(0.2 if args.resident else 1.0)
            if seq + 1 == len(schedule) or schedule[seq + 1][0] != r:
                print(f"  round {r + 1}/{args.rounds} done", flush=True)
    finally:
        for proc in resident.values():
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                stop_monitor(proc)
        open(stop_path, "w").close()
        try:
            trainer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            trainer.kill()
        with open(os.path.join(out, "phases.json"), "w") as f:
            json.dump(phases, f, indent=1)
    analyze([out])


# --------------------------------------------------------------------------------------------------------- analysis
def bootstrap_mean_ci(values, resamples=10_000, seed=1):
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def measure_dir(out):
    """One run's paired differences: per condition the differences in median step time (%), the medians (s) and the
    monitor's CPU (%), plus the no-monitor medians in the order they were measured."""
    steps = []
    with open(os.path.join(out, "steps.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                steps.append((float(parts[0]), float(parts[1])))
    with open(os.path.join(out, "phases.json")) as f:
        phases = json.load(f)
    for i, p in enumerate(phases):
        p.setdefault("seq", i)
        inside = [dt for t, dt in steps if p["start"] <= t - dt and t <= p["end"]]
        p["median"] = statistics.median(inside) if len(inside) >= 5 else None
    by_seq = {p["seq"]: p for p in phases}
    per = {c: {"diffs": [], "medians": [], "cpu": []} for c in CONDITIONS}
    for p in phases:
        if p["median"] is not None:
            per[p["condition"]]["medians"].append(p["median"])
        if p["monitor_cpu_pct"] is not None:
            per[p["condition"]]["cpu"].append(p["monitor_cpu_pct"])
    monitored = [p for p in phases if p["condition"] != "none"]
    interleaved = all(by_seq.get(p["seq"] - 1, {}).get("condition") == "none" for p in monitored)
    for p in phases:
        if p["condition"] == "none" or p["median"] is None:
            continue
        if interleaved:
            # A no-monitor phase before and after each monitor phase: their mean is the baseline, so a drift that
            # is linear over the three phases cancels.
            before, after = by_seq.get(p["seq"] - 1), by_seq.get(p["seq"] + 1)
            if not (before and after and before["median"] and after["median"]):
                continue
            if before["condition"] != "none" or after["condition"] != "none":
                continue
            base = (before["median"] + after["median"]) / 2
        else:
            # The round's own no-monitor phase.
            same = [q for q in phases if q["round"] == p["round"] and q["condition"] == "none" and q["median"]]
            if not same:
                continue
            base = same[0]["median"]
        per[p["condition"]]["diffs"].append((p["median"] / base - 1) * 100)
    nones = [by_seq[q]["median"] for q in sorted(by_seq) if by_seq[q]["condition"] == "none" and by_seq[q]["median"]]
    return {"steps": len(steps), "per": per, "nones": nones, "interleaved": interleaved}


def analyze(dirs):
    runs = [measure_dir(d) for d in dirs]
    per = {c: {k: sum((r["per"][c][k] for r in runs), []) for k in ("diffs", "medians", "cpu")} for c in CONDITIONS}
    nones = [n for r in runs for n in r["nones"]]
    if not nones:
        sys.exit("no measured phase without a monitor: nothing to compare with")
    changes = [(b / a - 1) * 100 for r in runs for a, b in zip(r["nones"], r["nones"][1:])]
    print(f"\nruns: {len(runs)}; steps logged: {sum(r['steps'] for r in runs)}; median step with no monitor: "
          f"{statistics.median(nones) * 1000:.2f} ms (phases {min(nones) * 1000:.2f}-{max(nones) * 1000:.2f} ms); "
          f"from one no-monitor phase to the next it moved by {statistics.stdev(changes):.2f} % (standard deviation)"
          if len(changes) > 1 else "")
    print("baseline of each monitor phase: " + ("the mean of the no-monitor phases just before and after it"
                                               if all(r["interleaved"] for r in runs) else "its round's no-monitor phase"))
    print(f"{'condition':<15} {'phases':>6} {'median step':>12} {'diff vs none':>13} {'95 % interval':>20} "
          f"{'monitor CPU':>12}")
    rows = []
    for condition in CONDITIONS:
        diffs, meds, cpu = per[condition]["diffs"], per[condition]["medians"], per[condition]["cpu"]
        cpu_text = f"{statistics.mean(cpu):.2f} %" if cpu else "-"
        med_text = f"{statistics.median(meds) * 1000:>9.2f} ms" if meds else f"{'-':>12}"
        if condition == "none" or len(diffs) < 2:
            print(f"{condition:<15} {len(meds):>6} {med_text} {'-':>13} {'-':>20} {cpu_text:>12}")
            continue
        mean = statistics.mean(diffs)
        lo, hi = bootstrap_mean_ci(diffs)
        print(f"{condition:<15} {len(diffs):>6} {med_text} {mean:>+11.2f} % [{lo:>+7.2f} %, {hi:>+7.2f} %] "
              f"{cpu_text:>12}")
        rows.append({"condition": condition, "phases": len(diffs), "diff_pct": mean, "ci95_pct": [lo, hi],
                     "monitor_cpu_pct": statistics.mean(cpu) if cpu else None})
    with open(os.path.join(dirs[0], "summary.json"), "w") as f:
        json.dump({"runs": dirs, "rows": rows}, f, indent=1)
    print("\nA difference is measurable when its interval leaves out 0; the target is an interval of +-1 % or "
          "tighter (more rounds narrow it).")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--log", required=True)
    t.add_argument("--stop", required=True)
    t.add_argument("--warmup", type=float, default=20)
    t.add_argument("--batch", type=int, default=128)
    t.add_argument("--size", type=int, default=160)
    d = sub.add_parser("drive")
    d.add_argument("--rounds", type=int, default=8)
    d.add_argument("--settle", type=float, default=3)
    d.add_argument("--measure", type=float, default=8)
    d.add_argument("--warmup", type=float, default=20)
    d.add_argument("--batch", type=int, default=128)
    d.add_argument("--size", type=int, default=160)
    d.add_argument("--seed", type=int, default=20)
    d.add_argument("--resident", action="store_true", help="start every monitor once and freeze/thaw it per phase")
    d.add_argument("--interleave", action="store_true",
                   help="a no-monitor phase before every monitor phase (and one at the end); each monitor phase is "
                        "compared with the mean of the two no-monitor phases beside it")
    d.add_argument("--conditions", default=",".join(CONDITIONS), help="comma-separated, out of: " + ",".join(CONDITIONS))
    d.add_argument("--gpusight", default="target/release/gpusight")
    d.add_argument("--out", default=os.environ.get("OUT", "/tmp/job_impact"))
    a = sub.add_parser("analyze")
    a.add_argument("dir", nargs="+", help="one or more runs' output folders, pooled")
    args = parser.parse_args()
    if args.cmd == "train":
        train(args)
    elif args.cmd == "drive":
        drive(args)
    else:
        analyze(args.dir)


if __name__ == "__main__":
    main()
