#!/usr/bin/env python3
"""GPU-side jobs for scripts/device/newfindings.sh (issue 17): launch-bound and host-to-device-copy-bound work and
their controls, each with torch.profiler's step breakdown (CPU step time, GPU kernel time, H2D copy time) as the
ground truth.

Workloads (--work):
  tiny      thousands of tiny elementwise ops on a 1024-element tensor, then a small MLP step at batch 8,
            launched eagerly: the CPU's launch rate sets the pace                     expect: launch-bound
  graph     the same tiny ops and MLP forward captured once in a CUDA graph and replayed  expect: no launch-bound
  b4096     the same op count on 4096x4096 tensors and the MLP at batch 4096              expect: no warning
  pageable  a 1 GiB pageable host tensor copied to the GPU each step, a tiny reduction     expect: h2d-copy-bound
  pinned    a 1 GiB pinned host tensor copied to the GPU each step, a tiny reduction       expect: h2d-copy-bound
  overlap   pinned 1 GiB copies on a side stream (non_blocking) while bf16 matmuls run     expect: no warning

Each step is record_function("gs_step"); copies are record_function("gs_h2d"). The profiler (CPU + CUDA) runs on a
schedule of 3 active steps of every 10 once the job is warm; kernel and memcpy device time are summed from its
events. On exit it writes --truth (JSON): PID, steps, step ms, GPU kernel share and H2D copy share of step wall
time (GPU busy shares; the rest is the GPU waiting on the CPU).
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

TINY_OPS = 2000


def mlp(width, dev):
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10)).to(dev)


def make_step(work, dev):
    """Returns (step function, bytes copied per step)."""
    if work in ("tiny", "graph", "b4096"):
        n = 4096 * 4096 if work == "b4096" else 1024
        batch = 4096 if work == "b4096" else 8
        x = torch.randn(n, device=dev)
        net = mlp(1024, dev)
        opt = torch.optim.SGD(net.parameters(), lr=1e-3)
        inp = torch.randn(batch, 1024, device=dev)
        tgt = torch.randint(0, 10, (batch,), device=dev)
        loss_fn = nn.CrossEntropyLoss()

        def ops(v):
            for _ in range(TINY_OPS // 2):
                v = v * 1.0001
                v = v + 0.0001
            return v

        if work == "graph":
            static_x = x.clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    ops(static_x)
                    net(inp)
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(graph):
                out_x = ops(static_x)
                out_y = net(inp)

            def step():
                graph.replay()
                return float(out_x[0].item() + out_y[0, 0].item())

            return step, 0

        def step():
            v = ops(x)
            loss = loss_fn(net(inp), tgt)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return float(v[0].item() + loss.item())

        return step, 0

    gib = 1 << 30
    host = torch.empty(gib // 4, dtype=torch.float32)
    host.uniform_()
    if work in ("pinned", "overlap"):
        host = host.pin_memory()
    dst = torch.empty(gib // 4, dtype=torch.float32, device=dev)
    if work in ("pageable", "pinned"):
        def step():
            with record_function("gs_h2d"):
                dst.copy_(host, non_blocking=work == "pinned")
            return float(dst[:1024].sum().item())

        return step, gib

    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    side = torch.cuda.Stream()

    def step():
        with torch.cuda.stream(side):
            with record_function("gs_h2d"):
                dst.copy_(host, non_blocking=True)
        c = a
        for _ in range(12):
            c = torch.mm(a, b)
        torch.cuda.current_stream().wait_stream(side)
        return float(c[0, 0].item() + dst[0].item())

    return step, gib


def device_times(prof):
    """Sums (kernel µs, H2D memcpy µs) over the CUDA-side events of one profiler cycle."""
    kernel = memcpy = 0.0
    for ev in prof.key_averages():
        dev_type = getattr(ev, "device_type", None)
        if dev_type is None or "CUDA" not in str(dev_type):
            continue
        t = getattr(ev, "self_device_time_total", None)
        if t is None:
            t = getattr(ev, "self_cuda_time_total", 0.0)
        if "Memcpy HtoD" in ev.key:
            memcpy += t
        elif "Memcpy" in ev.key or "Memset" in ev.key:
            continue
        else:
            kernel += t
    return kernel, memcpy


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, choices=["tiny", "graph", "b4096", "pageable", "pinned", "overlap"])
    ap.add_argument("--warm-seconds", type=float, default=8, help="seconds of work before the job counts as warm")
    ap.add_argument("--seconds", type=float, default=85, help="how long to run once warm")
    ap.add_argument("--profile-tail", type=float, default=8,
                    help="profile only the last this many seconds (after the watch window)")
    ap.add_argument("--ready", required=True, help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    a = ap.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    dev = torch.device("cuda")
    step, copied = make_step(a.work, dev)
    totals = {"step_cpu_s": 0.0, "kernel_s": 0.0, "h2d_s": 0.0, "cycles": 0}

    def on_trace(p):
        kernel, memcpy = device_times(p)
        totals["kernel_s"] += kernel / 1e6
        totals["h2d_s"] += memcpy / 1e6
        for ev in p.key_averages():
            if ev.key == "gs_step":
                totals["step_cpu_s"] += ev.cpu_time_total / 1e6
        totals["cycles"] += 1

    started = time.perf_counter()
    warm_at = None
    prof = None
    steps = 0
    wall_steps = 0.0
    while not stop.is_set():
        now = time.perf_counter()
        if warm_at is None and now - started >= a.warm_seconds:
            warm_at = now
            open(a.ready, "w").close()
        # The profiler only in the last --profile-tail seconds, after doctor's window: its per-cycle trace callback
        # runs in this thread and starved the GPU when it ran throughout (docs/validation.md §12).
        if prof is None and warm_at is not None and now - warm_at >= a.seconds - a.profile_tail:
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                           schedule=schedule(wait=6, warmup=1, active=3, repeat=0), on_trace_ready=on_trace)
            prof.start()
        if warm_at is not None and now - warm_at >= a.seconds:
            break
        t0 = time.perf_counter()
        with record_function("gs_step"):
            step()
        if warm_at is not None:
            wall_steps += time.perf_counter() - t0
            steps += 1
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    share = lambda part, whole: round(part / whole, 3) if whole > 0 else None  # noqa: E731
    truth = {
        "work": a.work,
        "main_pid": os.getpid(),
        "steps": steps,
        "timed_share_of_wall": round(wall_steps / (time.perf_counter() - warm_at), 3) if warm_at else None,
        "warm_seconds": round(time.perf_counter() - warm_at, 1) if warm_at else 0,
        "step_ms": round(1000 * wall_steps / max(1, steps), 2) if warm_at else None,
        "profiled_cycles": totals["cycles"],
        "gpu_kernel_share": share(totals["kernel_s"], totals["step_cpu_s"]),
        "h2d_copy_share": share(totals["h2d_s"], totals["step_cpu_s"]),
        "h2d_gb_per_s": round(copied * steps / wall_steps / 1e9, 2) if copied and wall_steps > 0 else None,
        "note": "never got warm" if warm_at is None else None,
    }
    with open(a.truth, "w") as f:
        json.dump(truth, f)
    print("truth:", json.dumps(truth), file=sys.stderr)


if __name__ == "__main__":
    main()
