#!/usr/bin/env python3
"""A real PyTorch training loop for scripts/device/findings.sh: torchvision ResNet on files read from local disk
through a real DataLoader, with torch.profiler's step breakdown as the ground truth.

Each step is wrapped in record_function("gs_step") and its data fetch (next() on the DataLoader iterator) in
record_function("gs_data"); a checkpoint save in record_function("gs_ckpt"). The profiler runs on a schedule
(5 active steps of every 10) from the moment the job is warm until it stops, and the DataLoader share of step
time is sum(gs_data) / sum(gs_step) over the profiled steps. A plain wall-clock split is printed beside it.

On exit it writes --truth (JSON): main PID, DataLoader worker PIDs, steps, images/s, shares.
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
import torchvision
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

WORKER_PIDS = "/tmp/gs_findings_workers"


SLOW_CGROUP = os.environ.get("GS_SLOW_CGROUP", "")


def note_worker(_worker_id):
    """worker_init_fn: records the worker's PID so the script can check the finding names it, and with
    GS_SLOW_CGROUP set moves the worker into that cgroup (its io.max makes the worker's storage slow, while the main
    process, its libraries and the GPU work stay outside)."""
    with open(WORKER_PIDS, "a") as f:
        f.write(f"{os.getpid()}\n")
    if SLOW_CGROUP:
        with open(os.path.join(SLOW_CGROUP, "cgroup.procs"), "w") as f:
            f.write(f"{os.getpid()}\n")


class RawFiles(Dataset):
    """Many small raw files (3x128x128 uint8), read with open().read() (optionally dropped from the page cache
    after each read, as a dataset larger than RAM would be)."""

    def __init__(self, root, fadvise):
        self.paths = sorted(os.path.join(root, n) for n in os.listdir(root))
        self.fadvise = fadvise

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
            if self.fadvise:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        x = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(3, 128, 128)
        return x, i % 10


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--kind", choices=["jpeg", "raw"], default="jpeg")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warm-steps", type=int, default=15, help="steps before the job counts as warm")
    ap.add_argument("--seconds", type=float, default=55, help="how long to run once warm")
    ap.add_argument("--ckpt-every", type=float, default=0, help="seconds between checkpoint saves (0: none)")
    ap.add_argument("--ckpt-gib", type=float, default=2.0, help="extra GiB written with each checkpoint")
    ap.add_argument("--ckpt-path", default="/tmp/gs_findings/ckpt.pt")
    ap.add_argument("--fadvise", action="store_true", help="drop each raw file from the page cache after reading")
    ap.add_argument("--ready", required=True, help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    a = ap.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if os.path.exists(WORKER_PIDS):
        os.remove(WORKER_PIDS)
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")

    if a.kind == "jpeg":
        import torchvision.transforms as T

        tf = T.Compose([
            T.RandomResizedCrop(224),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ])
        ds = torchvision.datasets.ImageFolder(a.data, transform=tf)
    else:
        ds = RawFiles(a.data, a.fadvise)
    loader = DataLoader(
        ds,
        batch_size=a.batch,
        shuffle=True,
        num_workers=a.workers,
        pin_memory=True,
        drop_last=True,
        persistent_workers=a.workers > 0,
        prefetch_factor=2 if a.workers > 0 else None,
        worker_init_fn=note_worker if a.workers > 0 else None,
    )
    model = getattr(torchvision.models, a.model)(num_classes=10).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    ballast = torch.empty(int(a.ckpt_gib * (1 << 30)) // 4, dtype=torch.float32) if a.ckpt_every > 0 else None
    if ballast is not None:
        ballast.uniform_()
        os.makedirs(os.path.dirname(a.ckpt_path), exist_ok=True)

    totals = {"gs_data": 0.0, "gs_step": 0.0, "gs_ckpt": 0.0, "cycles": 0}

    def on_trace(prof):
        for ev in prof.key_averages():
            if ev.key in ("gs_data", "gs_step", "gs_ckpt"):
                totals[ev.key] += ev.cpu_time_total / 1e6
        totals["cycles"] += 1

    wall = {"data": 0.0, "step": 0.0, "ckpt": 0.0}
    steps = images = 0
    warm_at = None
    last_ckpt = time.perf_counter()
    prof = None

    def batches():
        while True:
            for batch in loader:
                yield batch

    it = batches()
    while not stop.is_set():
        now = time.perf_counter()
        if warm_at is not None and now - warm_at >= a.seconds:
            break
        if warm_at is None and steps >= a.warm_steps:
            warm_at = now
            open(a.ready, "w").close()
            prof = profile(
                activities=[ProfilerActivity.CPU],
                schedule=schedule(wait=4, warmup=1, active=5, repeat=0),
                on_trace_ready=on_trace,
            )
            prof.start()
        t0 = time.perf_counter()
        with record_function("gs_step"):
            with record_function("gs_data"):
                x, y = next(it)
            t1 = time.perf_counter()
            x = x.to(dev, non_blocking=True)
            if x.dtype == torch.uint8:
                x = x.float().div_(255)
            x = x.contiguous(memory_format=torch.channels_last)
            y = y.to(dev, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            t2 = time.perf_counter()
            if ballast is not None and t2 - last_ckpt >= a.ckpt_every:
                with record_function("gs_ckpt"):
                    with open(a.ckpt_path, "wb") as f:
                        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "extra": ballast}, f)
                        f.flush()
                        os.fsync(f.fileno())
                last_ckpt = time.perf_counter()
                if warm_at is not None:
                    wall["ckpt"] += last_ckpt - t2
        t3 = time.perf_counter()
        if warm_at is not None:
            wall["data"] += t1 - t0
            wall["step"] += t3 - t0
            images += x.shape[0]
        steps += 1
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    workers = []
    if os.path.exists(WORKER_PIDS):
        with open(WORKER_PIDS) as f:
            workers = sorted({int(line) for line in f if line.strip()})
    share = lambda part, whole: round(part / whole, 3) if whole > 0 else None  # noqa: E731
    truth = {
        "main_pid": os.getpid(),
        "workers": workers,
        "num_workers": a.workers,
        "steps": steps,
        "warm_seconds": round(time.perf_counter() - warm_at, 1) if warm_at else 0,
        "images_per_s": round(images / wall["step"], 1) if wall["step"] > 0 else None,
        "profiled_cycles": totals["cycles"],
        "dataloader_share": share(totals["gs_data"], totals["gs_step"]),
        "checkpoint_share": share(totals["gs_ckpt"], totals["gs_step"]),
        "wall_dataloader_share": share(wall["data"], wall["step"]),
        "wall_checkpoint_share": share(wall["ckpt"], wall["step"]),
    }
    with open(a.truth, "w") as f:
        json.dump(truth, f)
    print("truth:", json.dumps(truth), file=sys.stderr)
    if ballast is not None and os.path.exists(a.ckpt_path):
        os.remove(a.ckpt_path)


if __name__ == "__main__":
    main()
