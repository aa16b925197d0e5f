#!/usr/bin/env python3
"""The PyTorch programs the GPU-machine runs start: real training and serving jobs with known shapes, each writing
its own ground truth (what it really spent its time on, measured inside it), so gpusight's verdicts can be checked.

    python3 scripts/device/workloads.py PROGRAM [ARGS]      (PROGRAM --help for its options)

  data          writes the JPEG and raw-file datasets the DataLoader jobs read
  train-files   ResNet on files from local disk through a real DataLoader (healthy, one worker, small files behind
                a slow store, a checkpoint writer)
  gpu-step      launch-bound and host-to-device-copy-bound steps and their controls (--work tiny|graph|b4096|
                pageable|pinned|overlap)
  train-loader  ResNet-152 on JPEGs from local disk or over HTTP (the cpu-quota and remote-dataset cases)
  slow-http     serves a directory over HTTP, sleeping before each answer (a far-away dataset)
  memory        GPU memory shapes: a training loop that leaks (kept graphs), its leak-free control, and a
                notebook that trains and then sits idle holding its memory
  ddp           a torchrun data-parallel job with per-rank knobs (straggler, starved loader, hang)
  serve         a bursty HTTP inference server and its client
  offload       AdamW on the CPU (ZeRO-offload style), grad accumulation 8
  compile       torch.compile: warm-up, then steady state
  evalrank      2 ranks over gloo; rank 0 computes metrics on the CPU while rank 1 waits in a barrier
  logger        a healthy MLP step whose logging thread writes to a directory
  fuse          a passthrough FUSE file system (fusepy over libfuse2), as sshfs, s3fs or gcsfuse

Needs PyTorch with CUDA and torchvision (and Pillow, numpy) for the jobs; `fuse` needs fusepy's fuse.py on
PYTHONPATH. Every job stops on SIGTERM/SIGINT or after --seconds; none changes a GPU setting.
"""
import argparse
import datetime
import functools
import http.server
import io
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from multiprocessing import Pool

# The programs that need no PyTorch start without importing it (the FUSE mount must be up within seconds). A spawned
# child (serve's client, evalrank's ranks) gets its parent's argv, so it imports the same.
LIGHT = ("data", "slow-http", "fuse")
torch = None
Dataset = object
if not (len(sys.argv) > 1 and sys.argv[1] in LIGHT):
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        import torchvision
        import torchvision.transforms as T
        from PIL import Image
        from torch.profiler import ProfilerActivity, profile, record_function, schedule
        from torch.utils.data import DataLoader, Dataset
    except ImportError:  # --help still works; a job says what it needs
        torch = None
        Dataset = object

PROG = "workloads.py"
DOCS = {
 "data": "Writes the image datasets the training cases read to local disk.\n\n  --jpeg DIR N   N smooth 256x256 JPEG images (about 15 KB each) in DIR/cls0 .. DIR/cls9 (an ImageFolder)\n  --raw DIR N    N small raw files of 3x128x128 uint8 (48 KiB each) in DIR, for the many-small-files case\n\nUses a process pool so a few thousand files take seconds.",
 "train-files": "A real PyTorch training loop: torchvision ResNet on files read from local disk\nthrough a real DataLoader, with torch.profiler's step breakdown as the ground truth.\n\nEach step is wrapped in record_function(\"gs_step\") and its data fetch (next() on the DataLoader iterator) in\nrecord_function(\"gs_data\"); a checkpoint save in record_function(\"gs_ckpt\"). The profiler runs on a schedule\n(5 active steps of every 10) from the moment the job is warm until it stops, and the DataLoader share of step\ntime is sum(gs_data) / sum(gs_step) over the profiled steps. A plain wall-clock split is printed beside it.\n\nOn exit it writes --truth (JSON): main PID, DataLoader worker PIDs, steps, images/s, shares.",
 "gpu-step": "GPU-side jobs: launch-bound and host-to-device-copy-bound work and\ntheir controls, each with torch.profiler's step breakdown (CPU step time, GPU kernel time, H2D copy time) as the\nground truth.\n\nWorkloads (--work):\n  tiny      thousands of tiny elementwise ops on a 1024-element tensor, then a small MLP step at batch 8,\n            launched eagerly: the CPU's launch rate sets the pace                     expect: launch-bound\n  graph     the same tiny ops and MLP forward captured once in a CUDA graph and replayed  expect: no launch-bound\n  b4096     the same op count on 4096x4096 tensors and the MLP at batch 4096              expect: no warning\n  pageable  a 1 GiB pageable host tensor copied to the GPU each step, a tiny reduction     expect: h2d-copy-bound\n  pinned    a 1 GiB pinned host tensor copied to the GPU each step, a tiny reduction       expect: h2d-copy-bound\n  overlap   pinned 1 GiB copies on a side stream (non_blocking) while bf16 matmuls run     expect: no warning\n\nEach step is record_function(\"gs_step\"); copies are record_function(\"gs_h2d\"). The profiler (CPU + CUDA) runs on a\nschedule of 3 active steps of every 10 once the job is warm; kernel and memcpy device time are summed from its\nevents. On exit it writes --truth (JSON): PID, steps, step ms, GPU kernel share and H2D copy share of step wall\ntime (GPU busy shares; the rest is the GPU waiting on the CPU).",
 "train-loader": "DataLoader jobs: a torchvision ResNet trained on JPEGs decoded and\naugmented by a real DataLoader, read either from local disk or over HTTP, with torch.profiler's step breakdown as\nthe ground truth (as train-files does).\n\n  --source local   ImageFolder on local disk\n  --source http    the same files fetched one request per image with urllib from --url (slow-http serves\n                   them on 127.0.0.1 and sleeps 20 ms per request)\n\nEach step is record_function(\"gs_step\") and its data fetch record_function(\"gs_data\"); the DataLoader share of step\ntime is sum(gs_data) / sum(gs_step) over the profiled steps (5 active of every 10, in the last --profile-tail\nseconds only, after the watch window), and the same split by wall clock over every step since warm. On exit it writes --truth\n(JSON): main PID, worker PIDs, images/s, the shares, and the cgroup the job ran in.",
 "slow-http": "A slow \"remote\" dataset : serves a directory over HTTP on 127.0.0.1 and sleeps\n--delay-ms before answering each request (a stand-in for object storage or a far-away file server). Threaded, so\nrequests in flight overlap as they would against a real server.\n\n  python3 scripts/device/workloads.py slow-http --root DIR --port 8765 --delay-ms 20",
 "memory": "GPU memory as the memory rules see it, with the program's own view of it as the ground truth.\n\n  --shape leak       an MLP (4 x Linear 4096 + ReLU, AdamW, batch 2048) trained on random tensors; every 10 steps a\n                     validation loss is computed without torch.no_grad() and the loss tensor itself is kept\n                     (history.append(val_loss)): each keeps its graph and saved activations, so reserved memory\n                     rises steadily (about --leak-mib-per-min)                              expect: vram-growing\n  --shape leak-free  the same loop keeping val_loss.item(): flat after warm-up             expect: no vram-growing\n  --shape idle       a notebook: --hold-gib of images put on the GPU, ResNet-18 trained on them for\n                     --train-seconds, then idle (sleeping) with everything still held       expect: idle-holder\n\nAbout once a second it notes (unix time, steps, torch.cuda.memory_allocated, memory_reserved) in MiB; with its\nphases (warm-up, train, idle: start and end) and a least-squares fit of reserved memory over the main phase, it\nwrites them to --truth (JSON) on exit. --ready is created once warm (leak shapes: after --warm-seconds; idle: after\nthe third step).",
 "ddp": "A real data-parallel training job for gpusight's multi-GPU checks: torchrun, one rank per GPU, ResNet-50 from\ntorchvision (random weights), SGD, DistributedDataParallel over NCCL, and a real DataLoader whose workers decode\nand augment images on the CPU (random JPEG-sized uint8 images, random crop and flip, normalise), so each rank has\nthe input pipeline a vision job has.\n\n    torchrun --standalone --nproc_per_node=2 scripts/device/workloads.py ddp --seconds 60 --workers 6\n\nPer-rank knobs make the shapes the rank rules are checked on:\n    --workers-rank R:N      rank R gets N DataLoader workers (starve one rank's loader: 1:1)\n    --compute-rank R:K      rank R runs its forward/backward K times per step (a compute straggler: 1:2)\n    --skip-allreduce-rank R rank R leaves the step loop after a few steps and waits: the others hang in all_reduce\n                            until the process group's timeout (--pg-timeout seconds) ends the job\nOn one GPU, --same-gpu --backend gloo runs every rank on GPU 0 over gloo: a real\ntorchrun job with its ranks, for job identity, the jobs view and signalling a whole job (not for per-GPU rank rules).\nPrints one line per rank every 10 s: images/s, step time, and the DataLoader wait share of the step.",
 "cluster": "Real PyTorch programs shaped like the places training runs, for checking gpusight's findings on a GPU machine.\n\n    workloads.py serve      --seconds 400 --truth T.json   a bursty HTTP inference server and its client\n    workloads.py offload --seconds 90  --truth T.json   AdamW on the CPU (ZeRO-offload style), grad accum 8\n    workloads.py compile --seconds 120 --truth T.json   torch.compile: warm-up, then steady state\n    workloads.py evalrank --seconds 200 --truth T.json  2 ranks over gloo; rank 0 computes metrics on the CPU\n                                                                for --eval-s seconds while rank 1 waits in a barrier\n    workloads.py logger     --seconds 90 --log-dir DIR      a healthy MLP step whose logging thread writes to DIR\n\nEach prints its ground truth (what the program really spent its time on, measured inside it) to --truth as JSON.\nEvery program stops on SIGTERM/SIGINT or after --seconds and frees the GPU."
}


# --- data -----------------------------------------------------------------------------------------------------------

def _jpeg(args):
    path, seed = args
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8)
    img = Image.fromarray(small).resize((256, 256), Image.BICUBIC)
    img.save(path, quality=90)


def _raw(args):
    path, seed = args
    data = os.urandom(3 * 128 * 128) if seed % 7 else bytes(3 * 128 * 128)
    with open(path, "wb") as f:
        f.write(data)


def data_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " data", description=DOCS["data"], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jpeg", nargs=2, metavar=("DIR", "N"))
    ap.add_argument("--raw", nargs=2, metavar=("DIR", "N"))
    a = ap.parse_args(argv)
    jobs = []
    if a.jpeg:
        root, n = a.jpeg[0], int(a.jpeg[1])
        for c in range(10):
            os.makedirs(os.path.join(root, f"cls{c}"), exist_ok=True)
        jobs += [(_jpeg, (os.path.join(root, f"cls{i % 10}", f"{i:06d}.jpg"), i)) for i in range(n)]
    if a.raw:
        root, n = a.raw[0], int(a.raw[1])
        os.makedirs(root, exist_ok=True)
        jobs += [(_raw, (os.path.join(root, f"{i:06d}.bin"), i)) for i in range(n)]
    if not jobs:
        ap.error("nothing to write: give --jpeg and/or --raw")
    with Pool(os.cpu_count() or 4) as pool:
        for fn in (_jpeg, _raw):
            args = [j[1] for j in jobs if j[0] is fn]
            if args:
                pool.map(fn, args, chunksize=64)
    print(f"findings_data: wrote {len(jobs)} files", file=sys.stderr)


# --- train-files ----------------------------------------------------------------------------------------------------
FILES_WORKER_PIDS = "/tmp/gs_findings_workers"


SLOW_CGROUP = os.environ.get("GS_SLOW_CGROUP", "")


def files_note_worker(_worker_id):
    """worker_init_fn: records the worker's PID so the script can check the finding names it, and with
    GS_SLOW_CGROUP set moves the worker into that cgroup (its io.max makes the worker's storage slow, while the main
    process, its libraries and the GPU work stay outside)."""
    with open(FILES_WORKER_PIDS, "a") as f:
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


def train_files_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " train-files", description=DOCS["train-files"], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--kind", choices=["jpeg", "raw"], default="jpeg")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warm-steps", type=int, default=15, help="steps before the job counts as warm")
    ap.add_argument("--no-profiler", action="store_true",
                    help="no torch.profiler (its CPU cost in the main thread can set the pace of a long run): the "
                         "ground truth is the wall-clock split alone")
    ap.add_argument("--seconds", type=float, default=55, help="how long to run once warm")
    ap.add_argument("--ckpt-every", type=float, default=0, help="seconds between checkpoint saves (0: none)")
    ap.add_argument("--ckpt-gib", type=float, default=2.0, help="extra GiB written with each checkpoint")
    ap.add_argument("--ckpt-path", default="/tmp/gs_findings/ckpt.pt")
    ap.add_argument("--fadvise", action="store_true", help="drop each raw file from the page cache after reading")
    ap.add_argument("--ready", required=True, help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    a = ap.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if os.path.exists(FILES_WORKER_PIDS):
        os.remove(FILES_WORKER_PIDS)
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
        worker_init_fn=files_note_worker if a.workers > 0 else None,
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
        if prof is None and warm_at == now and not a.no_profiler:
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
    if os.path.exists(FILES_WORKER_PIDS):
        with open(FILES_WORKER_PIDS) as f:
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


# --- gpu-step -------------------------------------------------------------------------------------------------------

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


def gpu_step_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " gpu-step", description=DOCS["gpu-step"], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, choices=["tiny", "graph", "b4096", "pageable", "pinned", "overlap"])
    ap.add_argument("--warm-seconds", type=float, default=8, help="seconds of work before the job counts as warm")
    ap.add_argument("--seconds", type=float, default=85, help="how long to run once warm")
    ap.add_argument("--profile-tail", type=float, default=8,
                    help="profile only the last this many seconds (after the watch window)")
    ap.add_argument("--ready", required=True, help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    a = ap.parse_args(argv)

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
        # runs in this thread and starved the GPU when it ran throughout (docs/validation.md, "Findings on real
        # PyTorch jobs").
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


# --- train-loader ---------------------------------------------------------------------------------------------------
LOADER_WORKER_PIDS = "/tmp/gs_newfind_workers"


def loader_note_worker(_worker_id):
    with open(LOADER_WORKER_PIDS, "a") as f:
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


def train_loader_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " train-loader", description=DOCS["train-loader"], formatter_class=argparse.RawDescriptionHelpFormatter)
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
    a = ap.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if os.path.exists(LOADER_WORKER_PIDS):
        os.remove(LOADER_WORKER_PIDS)
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    tf = transform()
    if a.source == "http":
        ds = HttpImages(a.data, a.url, tf)
    else:
        ds = torchvision.datasets.ImageFolder(a.data, transform=tf)
    loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=True,
                        drop_last=True, persistent_workers=True, prefetch_factor=2, worker_init_fn=loader_note_worker)
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
        # runs in this thread and starved the GPU when it ran throughout (docs/validation.md, "Findings on real
        # PyTorch jobs").
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
    if os.path.exists(LOADER_WORKER_PIDS):
        with open(LOADER_WORKER_PIDS) as f:
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


# --- slow-http ------------------------------------------------------------------------------------------------------
class SlowHandler(http.server.SimpleHTTPRequestHandler):
    delay_s = 0.02

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        time.sleep(self.delay_s)
        super().do_GET()

    def log_message(self, *_args):
        pass


def slow_http_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " slow-http", description=DOCS["slow-http"], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--delay-ms", type=float, default=20)
    a = ap.parse_args(argv)
    SlowHandler.delay_s = a.delay_ms / 1000
    handler = functools.partial(SlowHandler, directory=a.root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), handler)
    server.daemon_threads = True
    server.serve_forever()


# --- memory ---------------------------------------------------------------------------------------------------------
MIB = 1 << 20


class MemoryLog:
    """The program's own view of its GPU memory, about once a second: (unix time, steps so far,
    torch.cuda.memory_allocated MiB, torch.cuda.memory_reserved MiB), and its phases with their start and end."""

    def __init__(self):
        self.timeline = []
        self.phases = []
        self.steps = 0
        self.next_at = 0.0

    def phase(self, name):
        now = time.time()
        if self.phases:
            self.phases[-1]["end"] = round(now, 3)
        self.phases.append({"name": name, "start": round(now, 3), "end": None})

    def tick(self, sync=True, force=False):
        now = time.time()
        if not force and now < self.next_at:
            return
        self.next_at = now + 1.0
        if sync:  # step times and memory as of the work queued so far (launches no kernel)
            torch.cuda.synchronize()
        self.timeline.append([round(time.time(), 3), self.steps, round(torch.cuda.memory_allocated() / MIB, 1),
                              round(torch.cuda.memory_reserved() / MIB, 1)])

    def close(self):
        if self.phases and self.phases[-1]["end"] is None:
            self.phases[-1]["end"] = round(time.time(), 3)

    def fit(self, phase):
        """Least-squares slope (MiB/min) and R² of reserved memory over a phase, and its rise (last minus first)."""
        span = next((p for p in self.phases if p["name"] == phase), None)
        if span is None:
            return None
        pts = [(t, r) for t, _, _, r in self.timeline if span["start"] <= t <= (span["end"] or t)]
        if len(pts) < 3:
            return None
        n = len(pts)
        mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
        syy = sum((p[1] - my) ** 2 for p in pts)
        if sxx <= 0:
            return None
        return {"phase": phase, "reserved_mib_per_min": round(sxy / sxx * 60, 1) + 0.0,
                "r2": round(sxy * sxy / (sxx * syy), 3) if syy > 0 else 0.0,
                "reserved_rise_mib": round(pts[-1][1] - pts[0][1], 1), "samples": n}


def memory_train(a, log, dev):
    """leak / leak-free: an MLP trained on random tensors; every --val-every steps a validation loss on a held-out
    batch goes into `history`. The leak is the classic one: the validation forward runs without torch.no_grad() and
    the loss tensor itself is kept (`history.append(val_loss)`), so each kept loss holds its graph and the
    activations saved for a backward that never comes. The control keeps `val_loss.item()`: the graph is freed at
    once. Until warm both keep `.item()`; the validation batch is then sized from the warm-up's step rate so the kept
    graphs come to about --leak-mib-per-min (the same batch in the control)."""
    import torch.nn.functional as F

    width, depth, classes = a.width, a.depth, 1000
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, classes)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    history = []
    leak = a.shape == "leak"
    # What one validation sample's graph keeps: the input of every Linear (the batch and each ReLU's output) and
    # the log-softmax of the logits.
    per_sample = ((depth + 1) * width + classes) * 4
    val_batch = 8
    step_s = []
    started = time.time()
    log.phase("warm-up")
    warm_at = None
    kept_cap = int(a.max_leak_gib * (1 << 30))
    kept_est = 0
    cap_at = None
    while not STOP.is_set():
        t0 = time.time()
        x = torch.randn(a.batch, width, device=dev)
        y = torch.randint(0, classes, (a.batch,), device=dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        log.steps += 1
        if log.steps % a.val_every == 0:
            vx = torch.randn(val_batch, width, device=dev)
            vy = torch.randint(0, classes, (val_batch,), device=dev)
            val_loss = F.cross_entropy(model(vx), vy)  # no torch.no_grad(): the loss carries its graph
            if leak and warm_at is not None and kept_est < kept_cap:
                history.append(val_loss)  # the bug
                kept_est += val_batch * per_sample
                if kept_est >= kept_cap and cap_at is None:
                    cap_at = round(time.time(), 3)
            else:
                history.append(val_loss.item())
        log.tick()
        step_s.append(time.time() - t0)
        if warm_at is None and time.time() - started >= a.warm_seconds:
            torch.cuda.synchronize()
            rate = log.steps / (time.time() - started)
            vals_per_min = rate * 60 / a.val_every
            val_batch = max(1, min(8192, round(a.leak_mib_per_min * MIB / vals_per_min / per_sample)))
            warm_at = time.time()
            step_s.clear()
            log.phase("train")
            open(a.ready, "w").close()
        if warm_at is not None and time.time() - warm_at >= a.seconds:
            break
    torch.cuda.synchronize()
    log.tick(force=True)
    log.close()
    kept = sum(1 for h in history if not isinstance(h, float))
    return {
        "val_every": a.val_every, "val_batch": val_batch, "width": width, "depth": depth, "batch": a.batch,
        "kept_graphs": kept, "kept_estimate_mib": round(kept * val_batch * per_sample / MIB, 1),
        "leak_cap_reached_at": cap_at,
        "step_ms": round(1000 * sum(step_s) / len(step_s), 2) if step_s else None,
        "train_fit": log.fit("train"),
    }


def memory_idle(a, log, dev):
    """idle: a notebook's session. The dataset is put on the GPU (--hold-gib of images), a ResNet-18 trains on it
    for --train-seconds, then the process sits doing nothing (sleeping, as a kernel waits for its next cell) with
    the dataset, the model, its optimizer state and the allocator's cache all still held."""
    n = max(256, int(a.hold_gib * (1 << 30)) // (3 * 224 * 224 * 4))
    data = torch.randn(n, 3, 224, 224, device=dev)
    labels = torch.randint(0, 1000, (n,), device=dev)
    model = torchvision.models.resnet18(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    log.phase("train")
    started = time.time()
    step_s = []
    last_loss = None
    while not STOP.is_set() and time.time() - started < a.train_seconds:
        t0 = time.time()
        idx = torch.randint(0, n, (a.batch,), device=dev)
        loss = loss_fn(model(data[idx]), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        last_loss = loss.item()
        log.steps += 1
        step_s.append(time.time() - t0)
        if log.steps == 3:
            open(a.ready, "w").close()
        log.tick()
    torch.cuda.synchronize()
    log.tick(force=True)
    log.phase("idle")
    idle_at = time.time()
    while not STOP.is_set() and time.time() - idle_at < a.seconds:
        STOP.wait(1.0)
        log.tick(sync=False, force=True)  # reads the allocator's counters only: no kernel
    log.close()
    return {
        "images_held": n, "dataset_gib": round(data.numel() * 4 / (1 << 30), 2), "batch": a.batch,
        "step_ms": round(1000 * sum(step_s) / len(step_s), 2) if step_s else None, "last_loss": last_loss,
        "idle_fit": log.fit("idle"),
    }


def memory_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " memory", description=DOCS["memory"],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", required=True, choices=["leak", "leak-free", "idle"])
    ap.add_argument("--seconds", type=float, default=100,
                    help="leak, leak-free: how long to train once warm; idle: how long to sit idle")
    ap.add_argument("--warm-seconds", type=float, default=8, help="leak, leak-free: seconds before the job is warm")
    ap.add_argument("--train-seconds", type=float, default=20, help="idle: seconds of training before idling")
    ap.add_argument("--leak-mib-per-min", type=float, default=2048,
                    help="leak, leak-free: what the kept graphs should come to (sizes the validation batch)")
    ap.add_argument("--max-leak-gib", type=float, default=24, help="leak: stop keeping graphs past this much")
    ap.add_argument("--val-every", type=int, default=10)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--batch", type=int, default=0, help="training batch (default: 2048 for the MLP, 128 for idle)")
    ap.add_argument("--hold-gib", type=float, default=4, help="idle: GiB of images kept on the GPU")
    ap.add_argument("--ready", required=True, help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    a = ap.parse_args(argv)
    a.batch = a.batch or (128 if a.shape == "idle" else 2048)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    dev = torch.device("cuda")
    log = MemoryLog()
    truth = {"case": a.shape, "started": round(time.time(), 3)}
    try:
        truth.update((memory_idle if a.shape == "idle" else memory_train)(a, log, dev))
    finally:
        log.close()
        truth.update({"steps": log.steps, "phases": log.phases, "timeline": log.timeline,
                      "timeline_fields": ["unix_s", "steps", "allocated_mib", "reserved_mib"]})
        write_truth(a.truth, truth)


# --- ddp ------------------------------------------------------------------------------------------------------------

class Images(Dataset):
    """Random 256x256 RGB images made on the CPU, cropped and flipped: the CPU work of a decode-and-augment step."""

    def __init__(self, n, size=224, work=1):
        self.n, self.size, self.work = n, size, work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        for _ in range(self.work):
            img = torch.randint(0, 256, (3, 256, 256), dtype=torch.uint8, generator=g)
            x = int(torch.randint(0, 32, (1,), generator=g))
            y = int(torch.randint(0, 32, (1,), generator=g))
            img = img[:, y:y + self.size, x:x + self.size].float().div_(255)
            if i % 2:
                img = img.flip(2)
            img = (img - 0.45) / 0.225
        return img, i % 1000


def per_rank(spec, rank, default):
    for item in spec or []:
        r, _, v = item.partition(":")
        if int(r) == rank:
            return type(default)(v)
    return default


def ddp_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " ddp", description=DOCS["ddp"])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--work", type=int, default=1, help="augmentation passes per image (CPU cost per sample)")
    ap.add_argument("--workers-rank", action="append")
    ap.add_argument("--compute-rank", action="append")
    ap.add_argument("--skip-allreduce-rank", type=int, default=-1)
    ap.add_argument("--pg-timeout", type=float, default=600)
    ap.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    ap.add_argument("--same-gpu", action="store_true", help="every rank on GPU 0 (needs --backend gloo)")
    args = ap.parse_args(argv)

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, local = dist.get_rank(), 0 if args.same_gpu else int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    workers = per_rank(args.workers_rank, rank, args.workers)
    repeat = per_rank(args.compute_rank, rank, 1)
    model = nn.parallel.DistributedDataParallel(torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.utils.data.DataLoader(Images(10_000_000, work=args.work), batch_size=args.batch, num_workers=workers,
                                       pin_memory=True, persistent_workers=workers > 0, prefetch_factor=4 if workers else None,
                                       shuffle=False, drop_last=True)
    print(f"rank {rank} pid {os.getpid()} gpu {local} workers {workers} compute x{repeat}", flush=True)
    end = time.time() + args.seconds
    step = 0
    last, imgs, wait_s, step_s = time.time(), 0, 0.0, 0.0
    it = iter(data)
    while time.time() < end:
        t0 = time.time()
        x, y = next(it)
        t1 = time.time()
        x = x.to(dev, non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        if rank == args.skip_allreduce_rank and step >= 20:
            print(f"rank {rank} stops taking part in all_reduce at step {step}", flush=True)
            time.sleep(args.pg_timeout + 60)
            break
        with torch.autocast("cuda", dtype=torch.bfloat16):
            for k in range(repeat):
                if k + 1 < repeat:
                    with model.no_sync():
                        loss_fn(model(x), y).backward()
                else:
                    loss_fn(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t2 = time.time()
        step += 1
        imgs += x.shape[0]
        wait_s += t1 - t0
        step_s += t2 - t0
        if t2 - last >= 10:
            print(f"rank {rank}: {imgs / (t2 - last):.0f} img/s, step {1000 * step_s / max(1, imgs // x.shape[0]):.0f} ms, "
                  f"loader wait {100 * wait_s / max(step_s, 1e-9):.0f} % of step", flush=True)
            last, imgs, wait_s, step_s = t2, 0, 0.0, 0.0
    dist.destroy_process_group()


# --- cluster --------------------------------------------------------------------------------------------------------
STOP = threading.Event()


def on_signal(*_):
    STOP.set()


def write_truth(path, truth):
    truth["pid"] = os.getpid()
    with open(path, "w") as f:
        json.dump(truth, f, indent=1)
    print(json.dumps(truth), flush=True)


# --- serve -------------------------------------------------------------------------------------------------------


def serve(a):
    """A ResNet-50 behind a threaded HTTP server; a client process sends bursts of requests with pauses between.

    Ground truth: requests served, and the share of wall time the GPU spent on them (CUDA events around each
    batch's forward pass); the bursts as the server saw them (requests closer than 3 s apart make one burst) and
    the longest pause between two requests."""
    import http.server
    import multiprocessing as mp
    import socketserver
    import torchvision

    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev).eval().half()
    # A serving process holds weights plus a preallocated cache, as vLLM-style servers do.
    cache = torch.empty(int(a.hold_gib * (1 << 30)) // 2, dtype=torch.float16, device=dev)
    lock = threading.Lock()
    stats = {"requests": 0, "gpu_s": 0.0, "times": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            batch = max(1, min(64, len(body) // 16))
            with lock, torch.no_grad():
                x = torch.randn(batch, 3, 224, 224, device=dev, dtype=torch.float16)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                y = model(x)
                end.record()
                end.synchronize()
                stats["requests"] += 1
                stats["gpu_s"] += start.elapsed_time(end) / 1000
                stats["times"].append(time.time())
            out = json.dumps({"top1": int(y[0].argmax())}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    if a.ready:
        open(a.ready, "w").close()
    client = mp.get_context("spawn").Process(target=serve_client, args=(port, a.seconds, a.burst_s, a.pause_s, a.pause_spread))
    t0 = time.time()
    client.start()
    while client.is_alive() and not STOP.is_set():
        client.join(0.5)
    if client.is_alive():
        client.terminate()
    wall = time.time() - t0
    srv.shutdown()
    del cache
    bursts = []
    for at in stats["times"]:
        if bursts and at - bursts[-1][1] < 3.0:
            bursts[-1][1] = at
            bursts[-1][2] += 1
        else:
            bursts.append([at, at, 1])
    pauses = [b[0] - p[1] for p, b in zip(bursts, bursts[1:])]
    write_truth(a.truth, {
        "case": "serve", "port": port, "requests": stats["requests"], "wall_s": round(wall, 1),
        "gpu_busy_share": round(stats["gpu_s"] / wall, 3),
        "held_gib": a.hold_gib, "started": round(t0, 3),
        "bursts": [[round(b0, 3), round(b1, 3), n] for b0, b1, n in bursts],
        "longest_pause_s": round(max(pauses), 1) if pauses else None,
    })


def serve_client(port, seconds, burst_s, pause_s, pause_spread=0.5):
    """Bursts of requests (4 concurrent clients for burst_s), then silence for pause_s: a chat-style load. Both vary
    by up to half either way; the pause by pause_spread of itself (0: exactly pause_s)."""
    import http.client
    import random

    random.seed(7)
    end = time.time() + seconds

    def one():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.time() < burst_end[0]:
            body = os.urandom(16 * random.choice((1, 4, 8, 32)))
            c.request("POST", "/infer", body=body, headers={"Content-Type": "application/octet-stream"})
            c.getresponse().read()
            time.sleep(random.uniform(0.02, 0.2))
        c.close()

    burst_end = [0.0]
    while time.time() < end:
        burst_end[0] = min(end, time.time() + burst_s * random.uniform(0.5, 1.5))
        ts = [threading.Thread(target=one) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        time.sleep(min(max(0.0, end - time.time()), pause_s * random.uniform(1 - pause_spread, 1 + pause_spread)))


# --- offload -----------------------------------------------------------------------------------------------------


def offload(a):
    """Forward and backward on the GPU; gradients copied to pinned host memory and AdamW run on the CPU by the main
    thread every --accum micro-steps (ZeRO-offload's shape). No DataLoader: the batches are made on the GPU.

    Ground truth: wall time split into GPU micro-steps (synchronized) and the CPU optimizer step."""
    dev = torch.device("cuda")
    torch.set_num_threads(a.cpu_threads)
    width, depth = 4096, 8
    model = nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(width, width), nn.GELU())]).to(dev)
    params_cpu = [p.detach().to("cpu", copy=True).requires_grad_(False) for p in model.parameters()]
    grads_cpu = [torch.empty_like(p).pin_memory() for p in params_cpu]
    for p, g in zip(params_cpu, grads_cpu):
        p.grad = g
    opt = torch.optim.AdamW(params_cpu, lr=1e-4)
    split = {"gpu": 0.0, "cpu_opt": 0.0, "copy": 0.0}
    steps = 0
    t_end = time.time() + a.seconds
    while time.time() < t_end and not STOP.is_set():
        t0 = time.perf_counter()
        for _ in range(a.accum):
            x = torch.randn(a.batch, width, device=dev)
            model(x).float().pow(2).mean().backward()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        for p, g in zip(model.parameters(), grads_cpu):
            g.copy_(p.grad, non_blocking=True)
            p.grad = None
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        opt.step()
        with torch.no_grad():
            for p, pc in zip(model.parameters(), params_cpu):
                p.copy_(pc, non_blocking=True)
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        split["gpu"] += t1 - t0
        split["copy"] += t2 - t1
        split["cpu_opt"] += t3 - t2
        steps += 1
    total = sum(split.values()) or 1.0
    write_truth(a.truth, {
        "case": "offload", "optimizer_steps": steps, "accum": a.accum,
        "share": {k: round(v / total, 3) for k, v in split.items()}, "cpu_threads": a.cpu_threads,
    })


# --- compile -----------------------------------------------------------------------------------------------------


def compile_case(a):
    """torch.compile of a ResNet-50 training step (inductor, compile workers as subprocesses), then steady steps.

    Ground truth: when the first compiled step finished (warm-up end) and the steady step time after it."""
    import torchvision

    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cmodel = torch.compile(model)
    x = torch.randn(128, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.time()
    warm_at = None
    steps = 0
    times = []
    while time.time() - t0 < a.seconds and not STOP.is_set():
        ts = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(cmodel(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        steps += 1
        if warm_at is None:
            warm_at = time.time() - t0
            print(f"compiled: first step done after {warm_at:.1f} s", flush=True)
        elif steps > 5:
            times.append(time.perf_counter() - ts)
    times.sort()
    write_truth(a.truth, {
        "case": "compile", "warmup_s": round(warm_at or -1, 1), "steps": steps,
        "steady_step_ms": round(1000 * times[len(times) // 2], 1) if times else None,
    })


# --- evalrank ----------------------------------------------------------------------------------------------------


def evalrank(a):
    """Two ranks under torchrun (gloo over TCP on 127.0.0.1, both on GPU 0: one GPU is lent), so each rank's
    environment carries RANK, WORLD_SIZE and MASTER_ADDR from its start, as on a cluster. They train in lockstep
    (all_reduce of the gradients each step, and of a stop flag, so both run the same number of steps); after
    --train-s rank 0 computes evaluation metrics on the CPU in Python for --eval-s while rank 1 waits in
    dist.barrier(); then both train again until --seconds."""
    if "RANK" not in os.environ:
        run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               os.path.abspath(__file__)] + sys.argv[1:]
        os.execv(sys.executable, run)
    evalrank_worker(int(os.environ["RANK"]), a)


def evalrank_worker(rank, a):
    import datetime
    import torch.distributed as dist

    signal.signal(signal.SIGTERM, on_signal)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.eval_s + 300))
    dev = torch.device("cuda", 0)
    model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.time()
    phases = {"train1_steps": 0, "eval_s": 0.0, "barrier_wait_s": 0.0, "train2_steps": 0}

    def train_until(deadline, key):
        while True:
            # Both ranks stop at the same step: a rank past its deadline says so, and the flag is all-reduced.
            stop = torch.tensor([1.0 if time.time() >= deadline or STOP.is_set() else 0.0])
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item() > 0:
                return
            x = torch.randn(256, 2048, device=dev)
            model(x).pow(2).mean().backward()
            for p in model.parameters():
                g = p.grad.cpu()
                dist.all_reduce(g)
                p.grad.copy_(g / 2)
            opt.step()
            opt.zero_grad()
            phases[key] += 1

    train_until(t0 + a.train_s, "train1_steps")
    dist.barrier()
    te = time.time()
    if rank == 0:
        # Metrics in pure Python over the whole "validation set": the shape of a slow evaluation on rank 0.
        import random
        random.seed(1)
        scores = [random.random() for _ in range(200_000)]
        labels = [random.random() > 0.5 for _ in range(200_000)]
        while time.time() - te < a.eval_s and not STOP.is_set():
            order = sorted(range(len(scores)), key=scores.__getitem__)
            tp = sum(labels[i] for i in order[len(order) // 2:])
            _ = tp / max(1, len(order))
        phases["eval_s"] = round(time.time() - te, 1)
    tb = time.time()
    dist.barrier()
    phases["barrier_wait_s"] = round(time.time() - tb, 1)
    train_until(t0 + a.seconds, "train2_steps")
    phases.update(rank=rank, pid=os.getpid())
    with open(f"{a.truth}.rank{rank}", "w") as f:
        json.dump(phases, f)
    print(json.dumps(phases), flush=True)
    dist.destroy_process_group()


# --- logger ------------------------------------------------------------------------------------------------------


def logger(a):
    """A healthy GPU-bound step (bf16 matmuls) whose logging thread appends metrics to DIR/train.log and a
    TensorBoard-style event file every 0.2 s and fsyncs them, and which saves a checkpoint to DIR every
    --ckpt-every seconds: the job's writes go to DIR (a network or FUSE mount), its data does not."""
    dev = torch.device("cuda")
    w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    small = nn.Linear(4096, 4096).to(dev)
    os.makedirs(a.log_dir, exist_ok=True)
    q = []
    qlock = threading.Lock()

    def log_loop():
        with open(os.path.join(a.log_dir, "train.log"), "a") as log, \
                open(os.path.join(a.log_dir, "events.out.tfevents"), "ab") as ev:
            while not STOP.is_set():
                with qlock:
                    items, q[:] = list(q), []
                for item in items:
                    log.write(item + "\n")
                    ev.write(item.encode() * 8)
                log.flush()
                ev.flush()
                os.fsync(log.fileno())
                os.fsync(ev.fileno())
                time.sleep(0.2)

    threading.Thread(target=log_loop, daemon=True, name="logger").start()
    t0 = time.time()
    last_ckpt = t0
    steps = ckpts = 0
    step_s = 0.0
    while time.time() - t0 < a.seconds and not STOP.is_set():
        ts = time.perf_counter()
        for _ in range(20):
            y = w @ w
        torch.cuda.synchronize()
        step_s += time.perf_counter() - ts
        steps += 1
        with qlock:
            q.append(f"step {steps} loss {float(y[0, 0]):.4f}")
        if a.ckpt_every and time.time() - last_ckpt > a.ckpt_every:
            torch.save(small.state_dict(), os.path.join(a.log_dir, f"ckpt_{ckpts}.pt"))
            ckpts += 1
            last_ckpt = time.time()
        print(f"step {steps}", flush=True)
    STOP.set()
    write_truth(a.truth, {
        "case": "logger", "steps": steps, "checkpoints": ckpts,
        "gpu_share": round(step_s / max(1e-9, time.time() - t0), 3), "log_dir": a.log_dir,
    })


def cluster_main(argv):
    ap = argparse.ArgumentParser(prog=PROG, description=DOCS["cluster"], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=["serve", "offload", "compile", "evalrank", "logger"])
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--ready", help="serve: file to create once the model is on the GPU and the server listens")
    ap.add_argument("--hold-gib", type=float, default=1.0, help="serve: extra GPU memory held as a cache")
    ap.add_argument("--burst-s", type=float, default=6.0)
    ap.add_argument("--pause-s", type=float, default=20.0)
    ap.add_argument("--pause-spread", type=float, default=0.5,
                    help="serve: pauses vary by this share of --pause-s either way (0: every pause is --pause-s)")
    ap.add_argument("--accum", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--cpu-threads", type=int, default=4)
    ap.add_argument("--train-s", type=float, default=20)
    ap.add_argument("--eval-s", type=float, default=150)
    ap.add_argument("--log-dir", default="/tmp/gs_logger")
    ap.add_argument("--ckpt-every", type=float, default=30)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    {"serve": serve, "offload": offload, "compile": compile_case, "evalrank": evalrank, "logger": logger}[a.case](a)


# ---- fuse ------------------------------------------------------------------------------------------------------------
def fuse_main(argv):
    ap = argparse.ArgumentParser(prog=PROG + " fuse", description="A passthrough FUSE file system: every read and "
                                 "write under MOUNT goes through this process to ROOT, as on sshfs, s3fs or gcsfuse.")
    ap.add_argument("root")
    ap.add_argument("mount")
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--name", default="gsremote")
    a = ap.parse_args(argv)
    from fuse import FUSE, FuseOSError, Operations

    class Pass(Operations):
        def __init__(self, root, delay):
            self.root, self.delay = root, delay

        def _p(self, path):
            return os.path.join(self.root, path.lstrip("/"))

        def getattr(self, path, fh=None):
            try:
                st = os.lstat(self._p(path))
            except OSError as e:
                raise FuseOSError(e.errno)
            keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
            return {k: getattr(st, k) for k in keys}

        def readdir(self, path, fh):
            return [".", ".."] + os.listdir(self._p(path))

        def open(self, path, flags):
            return os.open(self._p(path), flags)

        def create(self, path, mode, fi=None):
            return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

        def read(self, path, size, offset, fh):
            if self.delay:
                time.sleep(self.delay)
            os.lseek(fh, offset, 0)
            return os.read(fh, size)

        def write(self, path, data, offset, fh):
            os.lseek(fh, offset, 0)
            return os.write(fh, data)

        def truncate(self, path, length, fh=None):
            with open(self._p(path), "r+") as f:
                f.truncate(length)

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            return os.close(fh)

        def fsync(self, path, datasync, fh):
            return os.fsync(fh)

        def mkdir(self, path, mode):
            return os.mkdir(self._p(path), mode)

        def unlink(self, path):
            return os.unlink(self._p(path))

        def rename(self, old, new):
            return os.rename(self._p(old), self._p(new))

        def chmod(self, path, mode):
            return os.chmod(self._p(path), mode)

        def utimens(self, path, times=None):
            return os.utime(self._p(path), times)

        def statfs(self, path):
            s = os.statvfs(self._p(path))
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag",
                    "f_frsize", "f_namemax")
            return {k: getattr(s, k) for k in keys}

    FUSE(Pass(a.root, a.delay_ms / 1000), a.mount, foreground=True, allow_other=True, nothreads=False,
         fsname=a.name, subtype=a.name)


NEEDS_TORCH = {"train-files", "gpu-step", "train-loader", "memory", "ddp", "serve", "offload", "compile", "evalrank", "logger"}
PROGRAMS = {
    "data": data_main,
    "train-files": train_files_main,
    "gpu-step": gpu_step_main,
    "train-loader": train_loader_main,
    "slow-http": slow_http_main,
    "memory": memory_main,
    "ddp": ddp_main,
    "fuse": fuse_main,
}
CLUSTER = ("serve", "offload", "compile", "evalrank", "logger")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help") or sys.argv[1] not in set(PROGRAMS) | set(CLUSTER):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 and sys.argv[1] in ("-h", "--help") else 2
    name, argv = sys.argv[1], sys.argv[2:]
    if name in NEEDS_TORCH and torch is None and not {"-h", "--help"} & set(argv):
        print(f"{PROG} {name}: needs PyTorch with CUDA and torchvision", file=sys.stderr)
        return 3
    if name in CLUSTER:
        return cluster_main([name] + argv)
    return PROGRAMS[name](argv)


if __name__ == "__main__":
    sys.exit(main())
