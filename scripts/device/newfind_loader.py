#!/usr/bin/env python3
"""DataLoader jobs for scripts/device/newfindings.sh (issue 17): a torchvision ResNet trained on JPEGs decoded and
augmented by a real DataLoader, read either from local disk or over HTTP, with torch.profiler's step breakdown as
the ground truth (as findings_train.py does).

  --source local   ImageFolder on local disk
  --source http    the same files fetched one request per image with urllib from --url (newfind_http.py serves
                   them on 127.0.0.1 and sleeps 20 ms per request)

Each step is record_function("gs_step") and its data fetch record_function("gs_data"); the DataLoader share of step
time is sum(gs_data) / sum(gs_step) over the profiled steps (5 active of every 10, in the last --profile-tail
seconds only, after the watch window), and the same split by wall clock over every step since warm. On exit it writes --truth
(JSON): main PID, worker PIDs, images/s, the shares, and the cgroup the job ran in.
"""
import argparse
import io
import json
import os
import signal
import sys
import threading
import time
import urllib.request

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from PIL import Image
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

WORKER_PIDS = "/tmp/gs_newfind_workers"


def note_worker(_worker_id):
    with open(WORKER_PIDS, "a") as f:
        f.write(f"{os.getpid()}\n")


def transform():
    # A CPU-heavy augmentation, so that CPU (not the GPU) is what a quota takes away.
    return T.Compose([
        T.RandomResizedCrop(224),
        T.RandomHorizontalFlip(),
        T.ColorJitter(0.4, 0.4, 0.4),
        T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])


class HttpImages(Dataset):
    """The ImageFolder's files, fetched over HTTP: one GET per image."""

    def __init__(self, root, url, tf):
        self.items = []
        for c, cls in enumerate(sorted(os.listdir(root))):
            for name in sorted(os.listdir(os.path.join(root, cls))):
                self.items.append((f"{url}/{cls}/{name}", c))
        self.tf = tf

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        url, label = self.items[i]
        with urllib.request.urlopen(url, timeout=30) as r:
            data = r.read()
        img = Image.open(io.BytesIO(data)).convert("RGB")
        return self.tf(img), label


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--source", choices=["local", "http"], default="local")
    ap.add_argument("--url", default="http://127.0.0.1:8765")
    ap.add_argument("--model", default="resnet152")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warm-steps", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=85)
    ap.add_argument("--profile-tail", type=float, default=8,
                    help="profile only the last this many seconds (after the watch window)")
    ap.add_argument("--ready", required=True)
    ap.add_argument("--truth", required=True)
    a = ap.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if os.path.exists(WORKER_PIDS):
        os.remove(WORKER_PIDS)
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    tf = transform()
    if a.source == "http":
        ds = HttpImages(a.data, a.url, tf)
    else:
        ds = torchvision.datasets.ImageFolder(a.data, transform=tf)
    loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=True,
                        drop_last=True, persistent_workers=True, prefetch_factor=2, worker_init_fn=note_worker)
    model = getattr(torchvision.models, a.model)(num_classes=10).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    totals = {"gs_data": 0.0, "gs_step": 0.0, "cycles": 0}

    def on_trace(prof):
        for ev in prof.key_averages():
            if ev.key in ("gs_data", "gs_step"):
                totals[ev.key] += ev.cpu_time_total / 1e6
        totals["cycles"] += 1

    def batches():
        while True:
            for batch in loader:
                yield batch

    wall = {"data": 0.0, "step": 0.0}
    steps = images = 0
    warm_at = None
    prof = None
    it = batches()
    while not stop.is_set():
        now = time.perf_counter()
        if warm_at is not None and now - warm_at >= a.seconds:
            break
        if warm_at is None and steps >= a.warm_steps:
            warm_at = now
            open(a.ready, "w").close()
        # The profiler only in the last --profile-tail seconds, after doctor's window: its per-cycle trace callback
        # runs in this thread and starved the GPU when it ran throughout (docs/validation.md §12).
        if prof is None and warm_at is not None and now - warm_at >= a.seconds - a.profile_tail:
            prof = profile(activities=[ProfilerActivity.CPU],
                           schedule=schedule(wait=4, warmup=1, active=5, repeat=0), on_trace_ready=on_trace)
            prof.start()
        t0 = time.perf_counter()
        with record_function("gs_step"):
            with record_function("gs_data"):
                x, y = next(it)
            t1 = time.perf_counter()
            x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
            y = y.to(dev, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
        t2 = time.perf_counter()
        if warm_at is not None:
            wall["data"] += t1 - t0
            wall["step"] += t2 - t0
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
    try:
        with open("/proc/self/cgroup") as f:
            cgroup = f.read().strip()
    except OSError:
        cgroup = None
    share = lambda part, whole: round(part / whole, 3) if whole > 0 else None  # noqa: E731
    truth = {
        "main_pid": os.getpid(),
        "workers": workers,
        "num_workers": a.workers,
        "source": a.source,
        "cgroup": cgroup,
        "steps": steps,
        # The timed steps' share of the wall time since warm: near 1 unless something between steps (the profiler
        # in its tail) takes the main thread.
        "timed_share_of_wall": round(wall["step"] / (time.perf_counter() - warm_at), 3) if warm_at else None,
        "warm_seconds": round(time.perf_counter() - warm_at, 1) if warm_at else 0,
        "images_per_s": round(images / wall["step"], 1) if wall["step"] > 0 else None,
        "profiled_cycles": totals["cycles"],
        "dataloader_share": share(totals["gs_data"], totals["gs_step"]),
        "wall_dataloader_share": share(wall["data"], wall["step"]),
    }
    with open(a.truth, "w") as f:
        json.dump(truth, f)
    print("truth:", json.dumps(truth), file=sys.stderr)


if __name__ == "__main__":
    main()
