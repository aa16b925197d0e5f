#!/usr/bin/env python3
"""The PyTorch programs of GROUP=account (scripts/device/account_cases.sh): jobs in situations where the GPU waits
for one known cause, each measuring inside itself what its time went to (its ground truth), so gpusight's account
of a GPU's idle time can be checked against it.

    python3 scripts/device/account.py PROGRAM [ARGS]      (PROGRAM --help for its options)

  loader       a torchvision ResNet trained on JPEGs through a real DataLoader, with the knobs the input-pipeline
               cases need: workers (0: decoding in the main process), threads per worker (oversubscription), a
               torch-op augmentation, a read-and-drop file loader (a slow store), a RAM cache and pinned buffers
               (host memory pressure); truth: time in next(loader) by wall clock and by torch.profiler, the
               workers' run and runnable-waiting time (schedstat), PSI
  burn         CPU burners, no PyTorch: N processes spinning (run as another user for the contention case)
  crash-loop   a wrapper restarting crash-child after each failure, as a pod's restart policy would (no PyTorch)
  crash-child  loads a checkpoint to the GPU, trains a while, then fails with an error
  weight-load  --make writes a multi-GB checkpoint; without it: loads it to the GPU tensor by tensor, then trains
  full-vram    ResNet-50 training with ~97 % of the GPU's memory reserved by the caching allocator, flat
  ckpt-sync    GPU-bound training that saves a large state dict with torch.save + fsync every N steps
  spin         a kernel spinning on one SM (torch.cuda._sleep) back to back: busy by NVML, idle by SM activity
  ddp          two ranks over gloo/TCP (torchrun; both on GPU 0 when only one is there), per-rank step timers,
               one rank made slower by extra CPU work or extra matmuls (--slow-rank)
  rare-serve   a ResNet-50 behind an HTTP server and its client sending one request every --every-s
  rare-client  that client (no PyTorch)
  serve-train  a training process beside rare-serve (bursts of requests) on the same GPU
  table        the group's table of verdicts from the doctor JSON, the replays and the truths (no PyTorch)

Every PyTorch program takes --smoke: it runs on the CPU at toy sizes for a few seconds, to check its code paths on
a machine without a GPU (its numbers mean nothing). Every program stops on SIGTERM/SIGINT or after its --seconds,
writes its truth (JSON, with a one-line "summary") and changes no GPU setting.
"""
import argparse
import contextlib
import functools
import http.client
import http.server
import io
import json
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = "account.py"
# The programs that need no PyTorch start without importing it: the burners run as another user, whose Python may
# not see the job's packages, and the wrapper and the client must start in milliseconds.
LIGHT = ("burn", "crash-loop", "rare-client", "table")
torch = None
Dataset = object
if not (len(sys.argv) > 1 and sys.argv[1] in LIGHT):
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import torchvision
        import torchvision.transforms as T
        from PIL import Image
        from torch.profiler import ProfilerActivity, profile, record_function, schedule
        from torch.utils.data import DataLoader, Dataset

        sys.path.insert(0, HERE)
        import workloads as wl  # noqa: E402 (the shared transform)
    except ImportError:  # --help still works; a program says what it needs
        torch = None
        Dataset = object
IMPORTED_AT = time.time()
GIB = 1 << 30
MIB = 1 << 20
STOP = threading.Event()


def on_signal(*_):
    STOP.set()


def install_signals():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def touch(path):
    if path:
        open(path, "w").close()


def write_truth(path, truth):
    """The truth as JSON (written whole, then renamed), and its summary line on stdout."""
    truth.setdefault("pid", os.getpid())
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(truth, f, indent=1)
    os.replace(tmp, path)
    print(f"truth: {truth.get('summary', '')}", flush=True)


def share(part, whole):
    return round(part / whole, 3) if whole > 0 else None


def pct(x):
    return "N/A" if x is None else f"{100 * x:.0f} %"


def add_common(ap, seconds):
    ap.add_argument("--seconds", type=float, default=seconds, help="how long to run (see the program's text)")
    ap.add_argument("--ready", help="file to create once warm")
    ap.add_argument("--truth", required=True, help="JSON file for the ground truth")
    ap.add_argument("--smoke", action="store_true", help="CPU, toy sizes: checks the code paths only")


def parser(name, doc):
    return argparse.ArgumentParser(prog=f"{PROG} {name}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


# --- what the kernel says about processes and pressure ---------------------------------------------------------------


def sched(pid):
    """Run time and runnable-but-waiting time (schedstat, ns) summed over a process's threads, its thread count and
    its involuntary context switches: a thread that waits for a CPU while runnable adds to wait_ns."""
    out = {"run_ns": 0, "wait_ns": 0, "threads": 0, "nonvoluntary": 0}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait, _ = f.read().split()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("nonvoluntary_ctxt_switches"):
                        out["nonvoluntary"] += int(line.split()[1])
        except (OSError, ValueError):
            continue
        out["run_ns"] += int(run)
        out["wait_ns"] += int(wait)
        out["threads"] += 1
    return out


def sched_delta(before, after, wall):
    """Per process: CPU seconds run, seconds runnable but waiting, the waiting share of (run + wait), threads."""
    run = wait = ctx = 0
    threads = []
    for pid, b in before.items():
        a = after.get(pid)
        if not a or not b:
            continue
        run += max(0, a["run_ns"] - b["run_ns"])
        wait += max(0, a["wait_ns"] - b["wait_ns"])
        ctx += max(0, a["nonvoluntary"] - b["nonvoluntary"])
        threads.append(a["threads"])
    if not threads:
        return None
    return {"processes": len(threads), "threads": sum(threads), "run_s": round(run / 1e9, 2),
            "runnable_wait_s": round(wait / 1e9, 2), "wait_share": share(wait, run + wait),
            "cpus_used": round(run / 1e9 / wall, 2) if wall > 0 else None,
            "nonvoluntary_switches_per_s": round(ctx / wall) if wall > 0 else None}


def own_cgroup():
    """The cgroup v2 directory this process is in, or None."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return "/sys/fs/cgroup" + line[3:].strip().rstrip("/")
    except OSError:
        pass
    return None


def psi():
    """PSI totals (µs) of the host and of this process's cgroup: {"memory_some": N, "cgroup_memory_full": N, ...}."""
    out = {}
    cg = own_cgroup()
    sources = [("", "/proc/pressure/{}")]
    if cg and cg != "/sys/fs/cgroup":
        sources.append(("cgroup_", cg + "/{}.pressure"))
    for prefix, pattern in sources:
        for res in ("cpu", "memory", "io"):
            try:
                with open(pattern.format(res)) as f:
                    for line in f:
                        kind, *kv = line.split()
                        out[f"{prefix}{res}_{kind}"] = int(dict(x.split("=") for x in kv)["total"])
            except (OSError, ValueError, KeyError):
                continue
    return out


def psi_shares(before, after, wall):
    """The share of wall time stalled, per PSI line, between two psi() readings."""
    return {k: round((after[k] - before[k]) / 1e6 / wall, 3) for k in after if k in before and wall > 0}


def meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return out


def proc_start_unix(pid="self"):
    """When a process started (Unix seconds), from its start time in clock ticks after boot."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration):
        return None


# --- the device, and toy sizes for --smoke ---------------------------------------------------------------------------


class Dev:
    """The GPU, or with --smoke the CPU at toy sizes (a smoke run checks code paths; its numbers mean nothing)."""

    def __init__(self, smoke):
        self.smoke = smoke
        if smoke:
            self.t = torch.device("cpu")
        elif torch.cuda.is_available():
            self.t = torch.device("cuda")
        else:
            sys.exit(f"{PROG}: needs a CUDA GPU (--smoke runs on the CPU at toy sizes)")
        self.cuda = self.t.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def autocast(self):
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.cuda else contextlib.nullcontext()

    def reserved(self):
        return torch.cuda.memory_reserved() if self.cuda else 0

    def allocated(self):
        return torch.cuda.memory_allocated() if self.cuda else 0

    def used_total(self):
        """(bytes in use on the GPU by everyone, as NVML counts it; total bytes)."""
        if not self.cuda:
            return 0, 0
        free, total = torch.cuda.mem_get_info()
        return total - free, total

    def side(self, n):
        return 64 if self.smoke else n

    def batch(self, n):
        return min(n, 8) if self.smoke else n

    def model(self, name, classes=10):
        m = getattr(torchvision.models, "resnet18" if self.smoke else name)(num_classes=classes).to(self.t)
        return m.to(memory_format=torch.channels_last) if self.cuda else m

    def to(self, x):
        x = x.to(self.t, non_blocking=True)
        return x.contiguous(memory_format=torch.channels_last) if self.cuda and x.dim() == 4 else x


class SynthStep:
    """A training step on one batch made on the device: no input pipeline, so the GPU waits only for what the case
    adds (a checkpoint, a start-up, a neighbour)."""

    def __init__(self, dev, name, batch, side=224, classes=1000):
        self.dev = dev
        self.model = dev.model(name, classes)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = dev.to(torch.randn(dev.batch(batch), 3, dev.side(side), dev.side(side)))
        self.y = torch.randint(0, classes, (dev.batch(batch),), device=dev.t)

    def __call__(self):
        with self.dev.autocast():
            loss = F.cross_entropy(self.model(self.x), self.y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss


# --- loader ----------------------------------------------------------------------------------------------------------

LOADER_DOC = """A torchvision ResNet trained on an ImageFolder of JPEGs through a real DataLoader: the job of every
input-pipeline case of GROUP=account, the situation set by the runner around it (another user's burners, a taskset,
a throttled store, a memory cgroup) or by these knobs:

  --workers N          DataLoader workers (0: decode and augment in the main process)
  --worker-threads N   torch.set_num_threads(N) in each worker (0: PyTorch's one thread per worker)
  --aug jitter         RandomResizedCrop, flip, ColorJitter (the CPU-heavy transform of workloads.py)
  --aug threaded       RandomResizedCrop and flip, then torch ops that run on every intra-op thread: a Gaussian
                       blur as two matrix products, a 5x5 depthwise box filter, a gamma curve, a colour matrix
                       (--aug-passes times)
  --drop-cache         each file dropped from the page cache after it is read, so every epoch reads the store
  --cache-gib G        G GiB of decoded images kept in RAM (made before the workers fork, shared by them); half the
                       samples come from it
  --pinned-gib G       G GiB of pinned staging buffers (torch.empty(pin_memory=True)); 64 MiB of them copied to the
                       GPU each step
  --mem-floor-gib G    the safety valve: no cache or pinned allocation below G GiB MemAvailable, and if MemAvailable
                       falls below it while running the pinned buffers are freed, then the job stops

Timeline: warm after --warm-steps (the --ready file), --settle-s more (the runner starts the situation), then
--seconds measured (the doctor's window), then torch.profiler over --profile-steps more steps (the profiler's cost
stays out of the window). Each step is record_function("gs_step"), its next(loader) record_function("gs_data").
The main process runs one intra-op thread until its workers are forked, so their OpenMP runtime starts clean (a
worker forked after a parallel region with more than one thread hangs in its own first parallel region).

Truth: the share of the step in next(loader) by wall clock over the measured seconds and by the profiler; images/s;
the workers' and the main process's run time and runnable-but-waiting time (schedstat), threads and involuntary
switches; PSI of the host and of the job's cgroup; MemAvailable about once a second and the cgroup's memory.events;
the CPUs the job may run on."""


def read_image(path, drop=False):
    """ImageFolder's loader: the file's bytes read with one read(), optionally dropped from the page cache after."""
    with open(path, "rb") as f:
        data = f.read()
        if drop:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return Image.open(io.BytesIO(data)).convert("RGB")


class ThreadedAug:
    """An augmentation in torch ops that PyTorch runs on its intra-op threads, so a worker's thread count is what
    it runs on: a separable Gaussian blur as two matrix products (MKL's threads), a 5x5 depthwise box filter
    (oneDNN's), a gamma curve and a colour matrix, --aug-passes times."""

    def __init__(self, side, passes):
        self.crop = T.Compose([T.RandomResizedCrop(side), T.RandomHorizontalFlip(), T.ToTensor()])
        self.passes = passes
        i = torch.arange(float(side))
        k = torch.exp(-((i[:, None] - i[None, :]) ** 2) / (2 * 1.5 ** 2))
        self.blur = k / k.sum(1, keepdim=True)
        self.box = torch.ones(3, 1, 5, 5) / 25
        self.colour = torch.tensor([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)

    def __call__(self, img):
        x = self.crop(img)
        for _ in range(self.passes):
            x = self.blur @ x @ self.blur.T
            x = F.conv2d(x.unsqueeze(0), self.box, padding=2, groups=3).squeeze(0)
            x = torch.einsum("ij,jhw->ihw", self.colour, x.clamp(0, 1).pow(1 / 1.1))
        return (x - self.mean) / self.std


def jitter(side):
    if side == 224:
        return wl.transform()
    return T.Compose([T.RandomResizedCrop(side), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4),
                      T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


CACHE_SIDE = 256
CACHE_IMAGE = 3 * CACHE_SIDE * CACHE_SIDE


class CachedMix(Dataset):
    """Odd samples from the RAM cache (a random crop of a cached 256x256 image, flipped, normalised), even ones from
    the files: a dataset half cached in host memory, as jobs that cache decoded images do."""

    def __init__(self, files, chunks, side):
        self.files, self.chunks, self.side = files, chunks, side
        self.per_chunk = chunks[0].numel() // CACHE_IMAGE if chunks else 0

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if i % 2 == 0 or not self.per_chunk:
            return self.files[i]
        k = (i * 7919) % (len(self.chunks) * self.per_chunk)
        chunk, j = self.chunks[k // self.per_chunk], k % self.per_chunk
        img = chunk[j * CACHE_IMAGE:(j + 1) * CACHE_IMAGE].view(3, CACHE_SIDE, CACHE_SIDE)
        y0, x0 = (i * 31) % (CACHE_SIDE - self.side + 1), (i * 17) % (CACHE_SIDE - self.side + 1)
        x = img[:, y0:y0 + self.side, x0:x0 + self.side].float().div_(255)
        if i % 4 == 1:
            x = x.flip(2)
        return (x - 0.45) / 0.225, i % 10


class HostMem:
    """The job's host memory: the RAM cache and pinned buffers it is asked for, allocated a GiB at a time above a
    floor of MemAvailable; a thread noting MemAvailable (and the cgroup's memory.current) once a second, which frees
    the pinned buffers and then stops the job when MemAvailable falls below the floor."""

    def __init__(self, floor_gib, dev):
        self.floor = floor_gib * GIB
        self.dev = dev
        self.chunks, self.pinned = [], []
        self.pinned_bytes = 0
        self.timeline, self.valve, self.notes = [], [], []
        self.release = threading.Event()
        self.cg = own_cgroup()

    def avail(self):
        return meminfo().get("MemAvailable", 0)

    def make_cache(self, gib):
        for k in range(int(gib)):
            if self.floor and self.avail() < self.floor + GIB:
                self.notes.append(f"cache stopped at {k} GiB: MemAvailable near the floor")
                break
            chunk = torch.empty(GIB if not self.dev.smoke else 64 * MIB, dtype=torch.uint8)
            chunk.fill_(k % 251)
            self.chunks.append(chunk)
        return self.chunks

    def make_pinned(self, gib):
        for k in range(int(gib)):
            if self.floor and self.avail() < self.floor + GIB:
                self.notes.append(f"pinned buffers stopped at {k} GiB: MemAvailable near the floor")
                break
            if self.dev.cuda:
                buf = torch.empty(GIB, dtype=torch.uint8, pin_memory=True)
            else:
                buf = torch.empty(64 * MIB, dtype=torch.uint8)
                if not self.notes or "not pinned" not in self.notes[-1]:
                    self.notes.append("smoke: buffers not pinned (no CUDA)")
            buf.zero_()
            self.pinned.append(buf)
            self.pinned_bytes += buf.numel()

    def run(self):
        low_since = None
        while not STOP.wait(1.0):
            avail = self.avail()
            row = [round(time.time(), 1), round(avail / GIB, 2)]
            if self.cg:
                try:
                    with open(self.cg + "/memory.current") as f:
                        row.append(round(int(f.read()) / GIB, 2))
                except (OSError, ValueError):
                    pass
            self.timeline.append(row)
            if self.floor and avail < self.floor:
                if self.pinned and not self.release.is_set():
                    self.release.set()
                    self.valve.append([row[0], "pinned buffers freed: MemAvailable below the floor"])
                low_since = low_since or time.time()
                if time.time() - low_since > 5:
                    self.valve.append([row[0], "stopped: MemAvailable below the floor for 5 s"])
                    STOP.set()
            else:
                low_since = None

    def free_pinned(self):
        self.pinned.clear()
        if hasattr(torch._C, "_host_emptyCache"):
            torch._C._host_emptyCache()

    def events(self):
        out = {}
        if self.cg:
            for name in ("memory.events", "memory.high", "memory.max"):
                try:
                    with open(f"{self.cg}/{name}") as f:
                        text = f.read().split()
                    out[name] = dict(zip(text[::2], map(int, text[1::2]))) if name == "memory.events" else text[0]
                except (OSError, ValueError):
                    pass
        return out


def worker_init(path, threads, cgroup, _worker_id):
    """Notes the worker's PID; sets its intra-op threads; with a cgroup, moves the worker into it (its io.max makes
    the worker's storage slow while the main process and the GPU work stay outside)."""
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    if threads:
        torch.set_num_threads(threads)
    if cgroup:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(f"{os.getpid()}\n")


def forever(loader):
    while True:
        yield from loader


def loader_main(argv):
    ap = parser("loader", LOADER_DOC)
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", default="resnet152")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--worker-threads", type=int, default=0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--aug", choices=["jitter", "threaded"], default="jitter")
    ap.add_argument("--aug-passes", type=int, default=1)
    ap.add_argument("--drop-cache", action="store_true")
    ap.add_argument("--cache-gib", type=float, default=0)
    ap.add_argument("--pinned-gib", type=float, default=0)
    ap.add_argument("--mem-floor-gib", type=float, default=0)
    ap.add_argument("--warm-steps", type=int, default=8)
    ap.add_argument("--settle-s", type=float, default=0)
    ap.add_argument("--profile-steps", type=int, default=5)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    # One intra-op thread until the workers are forked: a parallel region here would start GNU OpenMP's thread pool,
    # which a forked worker inherits without its threads, so a worker given more than one thread would hang in its
    # first parallel region (libgomp is not fork-safe).
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    dev = Dev(a.smoke)
    torch.backends.cudnn.benchmark = True
    workers_file = f"{a.truth}.workers"
    if os.path.exists(workers_file):
        os.remove(workers_file)
    side = dev.side(224)
    tf = ThreadedAug(side, a.aug_passes) if a.aug == "threaded" else jitter(side)
    files = torchvision.datasets.ImageFolder(a.data, transform=tf,
                                             loader=functools.partial(read_image, drop=a.drop_cache))
    mem = HostMem(a.mem_floor_gib, dev)
    threading.Thread(target=mem.run, daemon=True, name="hostmem").start()
    chunks = mem.make_cache(a.cache_gib) if a.cache_gib else []
    ds = CachedMix(files, chunks, side) if chunks else files
    init = functools.partial(worker_init, workers_file, a.worker_threads, os.environ.get("GS_SLOW_CGROUP", ""))
    loader = DataLoader(ds, batch_size=dev.batch(a.batch), shuffle=True, num_workers=a.workers, pin_memory=dev.cuda,
                        drop_last=True, persistent_workers=a.workers > 0, prefetch_factor=2 if a.workers else None,
                        worker_init_fn=init if a.workers else None)
    it = forever(loader)
    next(it)  # forks the workers
    torch.set_num_threads(prev_threads)
    if a.pinned_gib:
        mem.make_pinned(a.pinned_gib)
    staging = torch.empty(64 * MIB if dev.cuda else MIB, dtype=torch.uint8, device=dev.t) if mem.pinned else None
    model = dev.model(a.model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    totals = {"gs_data": 0.0, "gs_step": 0.0, "cycles": 0}

    def on_trace(prof):
        for ev in prof.key_averages():
            if ev.key in ("gs_data", "gs_step"):
                totals[ev.key] += ev.cpu_time_total / 1e6
        totals["cycles"] += 1

    wall = {"data": 0.0, "step": 0.0}
    steps = images = prof_steps = 0
    warm_at = measure_at = end_at = None
    prof = None
    before = after = None
    pids = [os.getpid()]
    while not STOP.is_set():
        now = time.perf_counter()
        if warm_at is None and steps >= a.warm_steps:
            warm_at = now
            touch(a.ready)
        if warm_at is not None and measure_at is None and now - warm_at >= a.settle_s:
            measure_at, t_measure = now, time.time()
            if os.path.exists(workers_file):
                with open(workers_file) as f:
                    pids += sorted({int(x) for x in f if x.strip()})
            before = ({p: sched(p) for p in pids}, psi())
        if measure_at is not None and end_at is None and now - measure_at >= a.seconds:
            end_at = now
            after = ({p: sched(p) for p in pids}, psi())
            prof = profile(activities=[ProfilerActivity.CPU], on_trace_ready=on_trace,
                           schedule=schedule(wait=0, warmup=1, active=a.profile_steps, repeat=1))
            prof.start()
        if prof is not None and prof_steps >= a.profile_steps + 2:
            break
        if mem.release.is_set() and mem.pinned:
            staging = None
            mem.free_pinned()
        t0 = time.perf_counter()
        with record_function("gs_step"):
            with record_function("gs_data"):
                x, y = next(it)
            t1 = time.perf_counter()
            x, y = dev.to(x), y.to(dev.t, non_blocking=True)
            if staging is not None and mem.pinned:
                buf = mem.pinned[steps % len(mem.pinned)]
                staging.copy_(buf[:staging.numel()], non_blocking=True)
            with dev.autocast():
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
        t2 = time.perf_counter()
        if measure_at is not None and end_at is None:
            wall["data"] += t1 - t0
            wall["step"] += t2 - t0
            images += x.shape[0]
        steps += 1
        if prof is not None:
            prof.step()
            prof_steps += 1
    if prof is not None:
        prof.stop()
    STOP.set()
    measured = (end_at or time.perf_counter()) - measure_at if measure_at else 0
    if before and after is None:
        after = ({p: sched(p) for p in pids}, psi())
    main = sched_delta({pids[0]: before[0][pids[0]]}, after[0], measured) if before else None
    workers = sched_delta({p: before[0][p] for p in pids[1:]}, after[0], measured) if before else None
    pressure = psi_shares(before[1], after[1], measured) if before else {}
    if workers and images:
        # What one image cost the workers in CPU: where threads fight over too few cores, this rises.
        workers["cpu_ms_per_image"] = round(1000 * workers["run_s"] / images, 2)
    data_share = share(wall["data"], wall["step"])
    truth = {
        "case": "loader", "main_pid": os.getpid(), "workers": pids[1:], "num_workers": a.workers,
        "worker_threads": a.worker_threads or 1, "aug": a.aug, "model": a.model, "batch": dev.batch(a.batch),
        "cpus_allowed": sorted(os.sched_getaffinity(0)), "cgroup": own_cgroup(), "steps": steps,
        "measured_from": round(t_measure, 3) if measure_at else None, "measured_s": round(measured, 1),
        "images_per_s": round(images / wall["step"], 1) if wall["step"] > 0 else None,
        "shares": {"data": data_share, "step_rest": share(wall["step"] - wall["data"], wall["step"])},
        "profiler": {"data_share": share(totals["gs_data"], totals["gs_step"]), "cycles": totals["cycles"],
                     "steps": a.profile_steps},
        "main_sched": main, "worker_sched": workers, "psi": pressure,
        "memory": {"cache_gib": round(sum(c.numel() for c in chunks) / GIB, 2),
                   "pinned_gib": round(mem.pinned_bytes / GIB, 2),
                   "floor_gib": a.mem_floor_gib, "valve": mem.valve, "notes": mem.notes, "cgroup": mem.events(),
                   "timeline": mem.timeline, "timeline_fields": ["unix_s", "mem_available_gib", "cgroup_current_gib"]},
        "note": None if measure_at else "never got warm",
    }
    mem_avail = min((r[1] for r in mem.timeline), default=None)
    truth["summary"] = (
        f"next(loader) {pct(data_share)} of the step (wall), {pct(truth['profiler']['data_share'])} (profiler); "
        f"{truth['images_per_s']} images/s; workers runnable-but-waiting {pct((workers or {}).get('wait_share'))} "
        f"of their time, {(workers or {}).get('threads')} threads on {(workers or {}).get('cpus_used')} CPUs, "
        f"{(workers or {}).get('cpu_ms_per_image')} CPU ms an image; "
        f"main thread waiting {pct((main or {}).get('wait_share'))}; PSI cpu some {pct(pressure.get('cpu_some'))}, "
        f"io some {pct(pressure.get('io_some'))}, memory some {pct(pressure.get('memory_some'))}"
        + (f"; MemAvailable min {mem_avail} GiB" if a.cache_gib or a.pinned_gib else ""))
    write_truth(a.truth, truth)
    del it, loader


# --- burn ------------------------------------------------------------------------------------------------------------

BURN_DOC = """CPU burners: --procs processes (default two a CPU), each spinning in pure Python until --seconds have
passed or the parent is stopped, as another user's CPU-heavy job would. No PyTorch, so it runs as a user that cannot
see the job's Python packages. Truth: the user, the burners' PIDs, and the CPU time they got (utime + stime)."""


def burn_main(argv):
    ap = argparse.ArgumentParser(prog=f"{PROG} burn", description=BURN_DOC)
    ap.add_argument("--procs", type=int, default=2 * (os.cpu_count() or 1))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--truth", required=True)
    a = ap.parse_args(argv)
    install_signals()
    end = time.monotonic() + a.seconds
    parent = os.getpid()
    pids = []
    t0 = time.time()
    for _ in range(a.procs):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            x = 0
            while time.monotonic() < end and os.getppid() == parent:
                for _ in range(200_000):
                    x += 1
            os._exit(0)
        pids.append(pid)
    while time.monotonic() < end and not STOP.is_set():
        STOP.wait(0.5)
    hz = os.sysconf("SC_CLK_TCK")
    cpu = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / hz
        except (OSError, ValueError):
            pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
    wall = time.time() - t0
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name
    write_truth(a.truth, {
        "case": "burn", "user": user, "uid": os.getuid(), "burner_pids": pids, "procs": a.procs,
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cpus_used": round(cpu / wall, 2) if wall else None,
        "summary": f"user {user}: {a.procs} burners used {cpu / max(wall, 1e-9):.1f} CPUs for {wall:.0f} s",
    })


# --- crash-loop ------------------------------------------------------------------------------------------------------

CRASH_DOC = """A restart loop, as a pod's restartPolicy or a Slurm requeue would make it: the wrapper starts
`crash-child` (a ResNet-50 that loads its checkpoint to the GPU, trains --train-s seconds, then fails with an
error), waits for it to exit, waits --backoff-s (the kubelet's back-off), and starts it again, until --seconds have
passed. The first child writes the checkpoint (--ckpt-gib of extra state beside the model) when there is none.

Truth: every attempt's PID, when it was spawned, imported PyTorch, had CUDA, had loaded the checkpoint, finished its
first step, and crashed or exited (with its exit status); the GPU-idle spans between (start-up: spawned to first
step; tear-down: the error to the process's end; back-off: the end to the next spawn) and their shares of the
wall time."""


def crash_loop_main(argv):
    ap = argparse.ArgumentParser(prog=f"{PROG} crash-loop", description=CRASH_DOC)
    ap.add_argument("--train-s", type=float, default=45)
    ap.add_argument("--backoff-s", type=float, default=10)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--ckpt-gib", type=float, default=2)
    add_common(ap, 240)
    a = ap.parse_args(argv)
    install_signals()
    log = f"{a.truth}.attempts"
    if os.path.exists(log):
        os.remove(log)
    t0 = time.time()
    attempts = []
    while not STOP.is_set() and time.time() - t0 < a.seconds:
        spawned = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), "crash-child", "--train-s", str(a.train_s), "--ckpt", a.ckpt,
               "--ckpt-gib", str(a.ckpt_gib), "--log", log, "--spawned-at", f"{spawned:.3f}",
               "--attempt", str(len(attempts) + 1)] + (["--smoke"] if a.smoke else [])
        child = subprocess.Popen(cmd)
        if not attempts:
            touch(a.ready)
        print(f"crash-loop: attempt {len(attempts) + 1} PID {child.pid}", flush=True)
        while child.poll() is None and not STOP.is_set() and time.time() - t0 < a.seconds:
            STOP.wait(0.2)
        if child.poll() is None:  # the wrapper's time is up: the attempt is stopped, not crashed
            child.terminate()
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        attempts.append({"pid": child.pid, "spawned_at": round(spawned, 3), "exited_at": round(time.time(), 3),
                         "exit_status": child.returncode})
        if STOP.is_set() or time.time() - t0 >= a.seconds:
            break
        STOP.wait(a.backoff_s)
    end = time.time()
    seen = {}
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    seen[rec["pid"]] = rec
    startup = backoff = training = teardown = 0.0
    spans = []
    for i, at in enumerate(attempts):
        at.update({k: v for k, v in seen.get(at["pid"], {}).items() if k not in at})
        first = at.get("first_step_at")
        up_end = first or at["exited_at"]
        spans.append(["start-up", at["spawned_at"], up_end])
        startup += up_end - at["spawned_at"]
        if first:
            crashed = min(at.get("crashed_at") or at["exited_at"], at["exited_at"])
            spans.append(["training", first, crashed])
            training += crashed - first
            # From the error to the process's end: the traceback, CUDA's teardown.
            spans.append(["tear-down", crashed, at["exited_at"]])
            teardown += at["exited_at"] - crashed
        nxt = attempts[i + 1]["spawned_at"] if i + 1 < len(attempts) else None
        if nxt:
            spans.append(["back-off", at["exited_at"], nxt])
            backoff += nxt - at["exited_at"]
    wall = end - t0
    ups = [at["first_step_at"] - at["spawned_at"] for at in attempts if at.get("first_step_at")]
    write_truth(a.truth, {
        "case": "crash-loop", "wrapper_pid": os.getpid(), "started": round(t0, 3), "ended": round(end, 3),
        "attempts": attempts, "spans": [[k, round(s, 3), round(e, 3)] for k, s, e in spans],
        "shares": {"start-up": share(startup, wall), "back-off": share(backoff, wall),
                   "training": share(training, wall), "tear-down": share(teardown, wall)},
        "summary": (f"{len(attempts)} attempts in {wall:.0f} s (exit statuses "
                    f"{[at['exit_status'] for at in attempts]}); start-up {pct(share(startup, wall))} of wall "
                    f"(spawn to first step, median "
                    f"{sorted(ups)[len(ups) // 2] if ups else 0:.1f} s), back-off {pct(share(backoff, wall))}, "
                    f"tear-down {pct(share(teardown, wall))}, training {pct(share(training, wall))}"),
    })


def crash_child_main(argv):
    ap = argparse.ArgumentParser(prog=f"{PROG} crash-child", description="One attempt of crash-loop (see its --help).")
    ap.add_argument("--train-s", type=float, default=45)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--ckpt-gib", type=float, default=2)
    ap.add_argument("--log", required=True)
    ap.add_argument("--spawned-at", type=float, required=True)
    ap.add_argument("--attempt", type=int, default=1)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    install_signals()
    rec = {"pid": os.getpid(), "attempt": a.attempt, "spawned_at": a.spawned_at, "imported_at": round(IMPORTED_AT, 3)}

    def note():
        with open(a.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    dev = Dev(a.smoke)
    torch.zeros(1, device=dev.t)
    dev.sync()
    rec["cuda_at"] = round(time.time(), 3)
    step = SynthStep(dev, "resnet50", 128)
    if not os.path.exists(a.ckpt):
        extra = torch.empty(int((0.01 if a.smoke else a.ckpt_gib) * GIB) // 4).uniform_()
        os.makedirs(os.path.dirname(os.path.abspath(a.ckpt)), exist_ok=True)
        torch.save({"model": step.model.state_dict(), "extra": extra}, a.ckpt + ".tmp")
        os.replace(a.ckpt + ".tmp", a.ckpt)
        rec["wrote_checkpoint"] = True
    state = torch.load(a.ckpt, map_location="cpu", weights_only=True)
    step.model.load_state_dict(state["model"])
    extra = state["extra"].to(dev.t)  # kept on the GPU, as optimizer state would be
    dev.sync()
    rec["loaded_at"] = round(time.time(), 3)
    rec["checkpoint_gib"] = round(os.path.getsize(a.ckpt) / GIB, 2)
    steps = 0
    first = None
    while not STOP.is_set():
        step()
        steps += 1
        if first is None:
            dev.sync()
            first = time.time()
            rec["first_step_at"] = round(first, 3)
        elif time.time() - first >= a.train_s:
            break
    dev.sync()
    rec.update(steps=steps, crashed_at=round(time.time(), 3), extra_numel=extra.numel())
    note()
    if STOP.is_set():
        return 0
    raise RuntimeError(f"loss is NaN at step {steps} (a crash made on purpose: attempt {a.attempt})")


# --- weight-load -----------------------------------------------------------------------------------------------------

WEIGHT_DOC = """A job whose start-up loads a multi-GB checkpoint to the GPU, then trains steadily.

  --make     writes --ckpt: --gib GiB of bf16 weights, layers of --width x --width, saved with torch.save, fsynced
             and dropped from the page cache; then exits
  (run)      drops the file from the page cache, loads it with torch.load(mmap=True) and copies it to the GPU one
             tensor at a time (each copy faults its pages in from storage), then trains an MLP of those layers
             (bf16, SGD) on random batches for --seconds. With GS_IO_CGROUP set, the program moves itself into that
             cgroup (whose io.max throttles reads) for the load only and back after; with --pace-mib-s it paces the
             copies itself instead (when no cgroup can throttle: the truth says so)

Truth: the process's start, CUDA ready, the load's span, bytes and rate, memory_reserved through the load and the
steady phase (min/max once steady), step time."""


def weight_load_main(argv):
    ap = parser("weight-load", WEIGHT_DOC)
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--gib", type=float, default=8)
    ap.add_argument("--width", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--pace-mib-s", type=float, default=0)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    width = 256 if a.smoke else a.width
    layer_bytes = width * width * 2
    if a.make:
        layers = max(1, round((0.001 if a.smoke else a.gib) * GIB / layer_bytes))
        base = torch.randn(width, width).to(torch.bfloat16)
        state = {f"layers.{i}.weight": base.clone() * (1 + i / layers) for i in range(layers)}
        tmp = a.ckpt + ".tmp"
        os.makedirs(os.path.dirname(os.path.abspath(a.ckpt)), exist_ok=True)
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        os.replace(tmp, a.ckpt)
        print(f"weight-load: wrote {a.ckpt}: {layers} layers, {os.path.getsize(a.ckpt) / GIB:.2f} GiB", flush=True)
        return 0
    started = proc_start_unix() or IMPORTED_AT
    dev = Dev(a.smoke)
    timeline = []

    def mark(phase, steps=0):
        timeline.append([round(time.time(), 2), phase, steps, round(dev.reserved() / MIB),
                         round(dev.allocated() / MIB)])

    torch.zeros(1, device=dev.t)
    dev.sync()
    cuda_at = time.time()
    mark("cuda")
    with open(a.ckpt, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    size = os.path.getsize(a.ckpt)
    cg, home = os.environ.get("GS_IO_CGROUP", ""), own_cgroup()
    moved = False
    if cg:
        try:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(f"{os.getpid()}\n")
            moved = True
        except OSError as e:
            print(f"weight-load: could not join {cg}: {e}", flush=True)
    load_start = time.time()
    state = torch.load(a.ckpt, mmap=True, weights_only=True, map_location="cpu")
    names = sorted(state, key=lambda k: int(k.split(".")[1]))
    weights = []
    done = 0
    last_mark = 0.0
    for name in names:
        if STOP.is_set():
            break
        t = state[name]
        if a.pace_mib_s > 0:
            ahead = (done + t.numel() * 2) / (a.pace_mib_s * MIB) - (time.time() - load_start)
            if ahead > 0:
                time.sleep(ahead)
        weights.append(nn.Parameter(t.to(dev.t)))
        done += t.numel() * t.element_size()
        if time.time() - last_mark >= 0.5:
            dev.sync()
            mark("load")
            last_mark = time.time()
    dev.sync()
    load_end = time.time()
    mark("loaded")
    if moved and home:
        try:
            with open(os.path.join(home, "cgroup.procs"), "w") as f:
                f.write(f"{os.getpid()}\n")
        except OSError as e:
            print(f"weight-load: could not go back to {home}: {e}", flush=True)
    del state
    touch(a.ready)
    x = torch.randn(dev.batch(a.batch) if not a.smoke else 64, width, device=dev.t, dtype=torch.bfloat16)
    steps = 0
    step_s = []
    first_step = None
    while not STOP.is_set() and time.time() - load_end < a.seconds:
        t0 = time.time()
        h = x
        for w in weights:
            h = torch.relu(h @ w.t())
        loss = h.float().pow(2).mean()
        loss.backward()
        with torch.no_grad():
            for w in weights:
                w.add_(w.grad, alpha=-1e-6)
                w.grad = None
        dev.sync()
        steps += 1
        step_s.append(time.time() - t0)
        if first_step is None:
            first_step = time.time()
        if time.time() - last_mark >= 1.0:
            mark("steady", steps)
            last_mark = time.time()
    mark("end", steps)
    steady = [r[3] for r in timeline if r[1] == "steady" and r[2] >= 3]
    load_s = load_end - load_start
    med = sorted(step_s)[len(step_s) // 2] if step_s else None
    write_truth(a.truth, {
        "case": "weight-load", "process_started": round(started, 3), "cuda_at": round(cuda_at, 3),
        "load": {"start": round(load_start, 3), "end": round(load_end, 3), "seconds": round(load_s, 1),
                 "gib": round(done / GIB, 2), "file_gib": round(size / GIB, 2),
                 "mib_per_s": round(done / MIB / load_s) if load_s > 0 else None,
                 "throttled_by": "cgroup io.max" if moved else ("the program's own pacing" if a.pace_mib_s else None)},
        "first_step_at": round(first_step, 3) if first_step else None, "steps": steps,
        "step_ms": round(1000 * med, 1) if med else None,
        "steady_reserved_mib": {"min": min(steady, default=None), "max": max(steady, default=None)},
        "timeline": timeline, "timeline_fields": ["unix_s", "phase", "steps", "reserved_mib", "allocated_mib"],
        "summary": (f"start-up {(first_step or load_end) - started:.1f} s (CUDA after {cuda_at - started:.1f} s; "
                    f"load {load_s:.1f} s of {done / GIB:.1f} GiB at {done / MIB / max(load_s, 1e-9):.0f} MiB/s"
                    f"{' under io.max' if moved else ''}); then {steps} steps of {1000 * (med or 0):.0f} ms with "
                    f"reserved {min(steady, default=0)}..{max(steady, default=0)} MiB"),
    })


# --- full-vram -------------------------------------------------------------------------------------------------------

FULL_DOC = """A healthy training run that holds ~97 % of the GPU's memory, flat: ResNet-50 trains --warm-steps on a
batch made on the GPU, then one block of (--fill-pct of the card, less what is in use) is allocated and freed, so
the caching allocator keeps it reserved (as a job sized to its card keeps its memory) and every later allocation is
carved from it; then training goes on for --seconds. Truth: memory_reserved, memory_allocated and the card's memory
in use about once a second; the allocator's retries and OOMs (0 for a healthy run)."""


def full_vram_main(argv):
    ap = parser("full-vram", FULL_DOC)
    ap.add_argument("--fill-pct", type=float, default=97)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--warm-steps", type=int, default=5)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    dev = Dev(a.smoke)
    torch.backends.cudnn.benchmark = True
    step = SynthStep(dev, a.model, a.batch)
    for _ in range(a.warm_steps):
        step()
    dev.sync()
    used, total = dev.used_total()
    fill = int(total * a.fill_pct / 100) - used
    if dev.cuda and fill > 0:
        # Allocated and dropped at once: the caching allocator keeps the block reserved and carves later
        # allocations from it.
        torch.empty(fill, dtype=torch.uint8, device=dev.t)
    used_after, _ = dev.used_total()
    touch(a.ready)
    timeline = []
    steps = ooms = 0
    t0 = time.time()
    last = 0.0
    error = None
    while not STOP.is_set() and time.time() - t0 < a.seconds:
        try:
            step().item()
        except torch.cuda.OutOfMemoryError as e:
            ooms += 1
            error = str(e).splitlines()[0]
            break
        steps += 1
        if time.time() - last >= 1.0:
            last = time.time()
            u, _ = dev.used_total()
            timeline.append([round(last, 2), steps, round(dev.reserved() / MIB), round(dev.allocated() / MIB),
                             round(u / MIB)])
    stats = torch.cuda.memory_stats() if dev.cuda else {}
    res = [r[2] for r in timeline]
    write_truth(a.truth, {
        "case": "full-vram", "total_mib": round(total / MIB), "fill_pct": a.fill_pct,
        "used_before_fill_mib": round(used / MIB), "used_after_fill_mib": round(used_after / MIB), "steps": steps,
        "reserved_mib": {"min": min(res, default=None), "max": max(res, default=None)},
        "max_allocated_mib": round(torch.cuda.max_memory_allocated() / MIB) if dev.cuda else None,
        "alloc_retries": stats.get("num_alloc_retries"), "ooms": ooms + stats.get("num_ooms", 0), "error": error,
        "timeline": timeline, "timeline_fields": ["unix_s", "steps", "reserved_mib", "allocated_mib", "gpu_used_mib"],
        "summary": (f"reserved {min(res, default=0)}..{max(res, default=0)} MiB of {total / MIB:.0f} "
                    f"({pct(used_after / total if total else None)} of the card in use after the fill); {steps} steps; "
                    f"{stats.get('num_alloc_retries', 0)} allocator retries, {ooms + stats.get('num_ooms', 0)} OOMs"),
    })


# --- ckpt-sync -------------------------------------------------------------------------------------------------------

CKPT_DOC = """Synchronous checkpoints: a GPU-bound ResNet training step on a batch made on the GPU, and every N steps
the main thread saves the model, the optimizer and --ckpt-gib of host-side state (an EMA copy, a data-loader state)
with torch.save to --path on local disk, then flush and os.fsync, then renames it into place. N is --every-steps, or
(when 0) the number of steps in --every-s measured at warm-up. Truth: each save's span (torch.save, fsync), the
bytes, and the share of wall time inside save over the measured --seconds."""


def ckpt_sync_main(argv):
    ap = parser("ckpt-sync", CKPT_DOC)
    ap.add_argument("--path", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--ckpt-gib", type=float, default=4)
    ap.add_argument("--every-steps", type=int, default=0)
    ap.add_argument("--every-s", type=float, default=8)
    ap.add_argument("--warm-steps", type=int, default=10)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    dev = Dev(a.smoke)
    torch.backends.cudnn.benchmark = True
    step = SynthStep(dev, a.model, a.batch)
    extra = torch.empty(int((0.02 if a.smoke else a.ckpt_gib) * GIB) // 4).uniform_()
    os.makedirs(os.path.dirname(os.path.abspath(a.path)), exist_ok=True)
    t_warm = time.time()
    for _ in range(a.warm_steps):
        step()
    dev.sync()
    every = a.every_steps or max(1, round(a.every_s / ((time.time() - t_warm) / a.warm_steps)))
    touch(a.ready)
    saves = []
    steps = 0
    t0 = time.time()
    while not STOP.is_set() and time.time() - t0 < a.seconds:
        step()
        steps += 1
        if steps % every == 0:
            s0 = time.time()
            with open(a.path + ".tmp", "wb") as f:
                torch.save({"model": step.model.state_dict(), "opt": step.opt.state_dict(), "extra": extra,
                            "step": steps}, f)
                f.flush()
                s1 = time.time()
                os.fsync(f.fileno())
            os.replace(a.path + ".tmp", a.path)
            s2 = time.time()
            saves.append([round(s0, 3), round(s1 - s0, 2), round(s2 - s1, 2)])
    dev.sync()
    wall = time.time() - t0
    size = os.path.getsize(a.path) if os.path.exists(a.path) else 0
    in_save = sum(s[1] + s[2] for s in saves)
    for p in (a.path, a.path + ".tmp"):
        with contextlib.suppress(OSError):
            os.remove(p)
    write_truth(a.truth, {
        "case": "ckpt-sync", "every_steps": every, "steps": steps, "saves": saves,
        "saves_fields": ["unix_s", "torch_save_s", "fsync_s"], "bytes_per_save": size, "wall_s": round(wall, 1),
        "shares": {"save": share(in_save, wall), "torch_save": share(sum(s[1] for s in saves), wall),
                   "fsync": share(sum(s[2] for s in saves), wall)},
        "summary": (f"{len(saves)} saves of {size / GIB:.1f} GiB every {every} steps; {pct(share(in_save, wall))} of "
                    f"wall time inside save (torch.save {sum(s[1] for s in saves):.1f} s, fsync "
                    f"{sum(s[2] for s in saves):.1f} s of {wall:.0f} s)"),
    })


# --- spin ------------------------------------------------------------------------------------------------------------

SPIN_DOC = """A kernel that spins: torch.cuda._sleep(cycles), one thread block on one SM spinning on the clock,
launched back to back (--depth kernels queued ahead) so that a kernel is always running: NVML's utilization reads
~100 % while GPM's SM activity is about one SM of all of them. Each kernel is --kernel-ms long (cycles calibrated
with CUDA events at start). Truth: kernels launched, their measured length, the share of wall time a kernel ran,
and the SMs used (1) of the card's."""


def spin_main(argv):
    ap = parser("spin", SPIN_DOC)
    ap.add_argument("--kernel-ms", type=float, default=50)
    ap.add_argument("--depth", type=int, default=4)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    dev = Dev(a.smoke)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if dev.cuda else None
    cycles = 0
    if dev.cuda:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        s.record()
        torch.cuda._sleep(10_000_000)
        e.record()
        e.synchronize()
        cycles = int(10_000_000 * a.kernel_ms / max(s.elapsed_time(e), 1e-3))
    touch(a.ready)
    queue = []
    launched = 0
    busy_ms = 0.0
    t0 = time.time()
    while not STOP.is_set() and time.time() - t0 < a.seconds:
        if dev.cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.cuda._sleep(cycles)
            e.record()
            queue.append((s, e))
            launched += 1
            while len(queue) > a.depth:
                s0, e0 = queue.pop(0)
                e0.synchronize()
                busy_ms += s0.elapsed_time(e0)
        else:
            time.sleep(a.kernel_ms / 1000)
            launched += 1
            busy_ms += a.kernel_ms
    for s0, e0 in queue:
        e0.synchronize()
        busy_ms += s0.elapsed_time(e0)
    wall = time.time() - t0
    write_truth(a.truth, {
        "case": "spin", "kernels": launched, "cycles_each": cycles, "kernel_ms": round(busy_ms / max(launched, 1), 2),
        "kernel_share_of_wall": share(busy_ms / 1000, wall), "blocks": 1, "threads_per_block": 1, "sms_used": 1,
        "sms": sms, "sm_share": share(1, sms) if sms else None, "smoke": a.smoke,
        "summary": (f"{launched} spinning kernels of {busy_ms / max(launched, 1):.0f} ms: a kernel ran "
                    f"{pct(share(busy_ms / 1000, wall))} of the wall time on 1 SM of {sms} "
                    f"({pct(share(1, sms) if sms else None)} of the SMs)"),
    })


# --- ddp -------------------------------------------------------------------------------------------------------------

DDP_DOC = """Data-parallel training over gloo/TCP on one machine: torchrun starts two ranks (the program execs it
when RANK is not set), each a ResNet-50 on a batch made on the GPU, both on GPU 0 when there is one GPU (one a GPU
with --gpu-per-rank and two GPUs). Each step: forward and backward; the gradients flattened into one bucket, copied
to the host and all-reduced with gloo over TCP (DDP's bucket, without its overlap, so each rank can time its
all_reduce); copied back; SGD. --slow-rank R makes rank R slower each step by --slow-ms of extra work in its main
thread: pure-Python CPU work (--slow-kind cpu) or bf16 matmuls on its GPU (--slow-kind gpu), never by clocks or
power. The other rank then waits for it inside all_reduce.

Truth per rank: steps, step time, and its split: forward/backward, the extra work, the host copies, all_reduce
(which holds the waiting for the slower rank). Rank 0 writes both ranks' truth to --truth."""


def ddp_main(argv):
    ap = parser("ddp", DDP_DOC)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=150)
    ap.add_argument("--slow-kind", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warm-steps", type=int, default=5)
    ap.add_argument("--gpu-per-rank", action="store_true")
    add_common(ap, 60)
    a = ap.parse_args(argv)
    if "RANK" not in os.environ:
        run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               os.path.abspath(__file__), "ddp"] + argv
        os.execv(sys.executable, run)
    import datetime

    import torch.distributed as dist

    install_signals()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = Dev(a.smoke)
    if dev.cuda:
        idx = rank if a.gpu_per_rank and torch.cuda.device_count() > rank else 0
        torch.cuda.set_device(idx)
        dev.t = torch.device("cuda", idx)
    step = SynthStep(dev, a.model, a.batch)
    params = list(step.model.parameters())
    slow = rank == a.slow_rank
    mm = torch.randn(4096, 4096, device=dev.t, dtype=torch.bfloat16 if dev.cuda else torch.float32) if slow else None
    mm_per_ms = 1
    if slow and a.slow_kind == "gpu":
        t = time.time()
        for _ in range(20):
            mm @ mm
        dev.sync()
        mm_per_ms = max(1, round(20 / max((time.time() - t) * 1000, 1e-3)))
    split = {"compute": 0.0, "extra": 0.0, "copy": 0.0, "allreduce": 0.0}
    steps = 0
    measuring = False
    t_measure = None
    while True:
        if steps % 10 == 0:
            # Both ranks stop at the same step: a rank past its end says so, and the flag is all-reduced.
            done = measuring and (time.time() - t_measure >= a.seconds)
            flag = torch.tensor([1.0 if done or STOP.is_set() else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag.item() > 0:
                break
        if not measuring and steps >= a.warm_steps:
            measuring, t_measure = True, time.time()
            if rank == 0:
                touch(a.ready)
        t0 = time.perf_counter()
        with dev.autocast():
            loss = F.cross_entropy(step.model(step.x), step.y)
        step.opt.zero_grad(set_to_none=True)
        loss.backward()
        dev.sync()
        t1 = time.perf_counter()
        if slow:
            if a.slow_kind == "cpu":
                end = time.perf_counter() + a.slow_ms / 1000
                x = 0
                while time.perf_counter() < end:
                    x += 1
            else:
                for _ in range(int(a.slow_ms * mm_per_ms)):
                    mm @ mm
                dev.sync()
        t2 = time.perf_counter()
        flat = torch.cat([p.grad.reshape(-1) for p in params]).float()
        host = flat.cpu()
        t3 = time.perf_counter()
        dist.all_reduce(host)
        t4 = time.perf_counter()
        flat.copy_(host.div_(world))
        offset = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n
        step.opt.step()
        dev.sync()
        t5 = time.perf_counter()
        steps += 1
        if measuring:
            split["compute"] += t1 - t0
            split["extra"] += t2 - t1
            split["copy"] += (t3 - t2) + (t5 - t4)
            split["allreduce"] += t4 - t3
    total = sum(split.values())
    n = max(1, steps - a.warm_steps)
    mine = {"rank": rank, "pid": os.getpid(), "device": str(dev.t), "slow": slow, "steps": steps,
            "step_ms": round(1000 * total / n, 1), "ms_per_step": {k: round(1000 * v / n, 1) for k, v in split.items()},
            "shares": {k: share(v, total) for k, v in split.items()},
            "bucket_mib": round(sum(p.numel() for p in params) * 4 / MIB, 1)}
    with open(f"{a.truth}.rank{rank}", "w") as f:
        json.dump(mine, f)
    dist.barrier()
    if rank == 0:
        ranks = []
        for r in range(world):
            with open(f"{a.truth}.rank{r}") as f:
                ranks.append(json.load(f))
        write_truth(a.truth, {
            "case": "ddp", "backend": "gloo", "world_size": world, "slow_rank": a.slow_rank, "slow_ms": a.slow_ms,
            "slow_kind": a.slow_kind, "ranks": ranks, "rank_pids": [r["pid"] for r in ranks],
            "summary": "; ".join(
                f"rank {r['rank']} (PID {r['pid']}{', slowed' if r['slow'] else ''}): step {r['step_ms']} ms, "
                f"all_reduce {pct(r['shares']['allreduce'])}, extra {pct(r['shares']['extra'])}, compute "
                f"{pct(r['shares']['compute'])}" for r in ranks),
        })
    dist.destroy_process_group()


# --- rare-serve, rare-client, serve-train ----------------------------------------------------------------------------

SERVE_DOC = """An inference server: a ResNet-50 (fp16, eval) behind a threaded HTTP server on 127.0.0.1 holding
--hold-gib more as a cache, and its client (`rare-client`, started by the server) sending one request every --every-s
(each on a new connection), or --burst requests back to back each time. Truth: the request log (when each request
came, its GPU time by CUDA events, its latency), the longest gap between requests, the share of wall time the GPU
ran inference; the server's PID and port."""


def rare_serve_main(argv):
    ap = parser("rare-serve", SERVE_DOC)
    ap.add_argument("--every-s", type=float, default=45)
    ap.add_argument("--burst", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--hold-gib", type=float, default=2)
    add_common(ap, 180)
    a = ap.parse_args(argv)
    install_signals()
    dev = Dev(a.smoke)
    dtype = torch.float16 if dev.cuda else torch.float32
    model = dev.model("resnet50", 1000).eval().to(dtype)
    cache = torch.empty(int((0 if a.smoke else a.hold_gib) * GIB), dtype=torch.uint8, device=dev.t)
    side = dev.side(224)
    with torch.no_grad():
        model(dev.to(torch.randn(1, 3, side, side, dtype=dtype)))
    dev.sync()
    lock = threading.Lock()
    log = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_args):
            pass

        def do_POST(self):  # noqa: N802 (the stdlib's name)
            t_in = time.time()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            batch = max(1, min(64, a.batch if not body else len(body) // 64 or a.batch))
            with lock, torch.no_grad():
                x = dev.to(torch.randn(batch, 3, side, side, dtype=dtype))
                t0 = time.perf_counter()
                if dev.cuda:
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                y = model(x)
                if dev.cuda:
                    e.record()
                    e.synchronize()
                    gpu_ms = s.elapsed_time(e)
                else:
                    gpu_ms = 1000 * (time.perf_counter() - t0)
                top = int(y[0].argmax())
            log.append([round(t_in, 3), round(gpu_ms, 2), round(1000 * (time.time() - t_in), 1), batch])
            out = json.dumps({"top1": top}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    client_log = f"{a.truth}.client"
    client = subprocess.Popen([sys.executable, os.path.abspath(__file__), "rare-client", "--port", str(port),
                               "--every-s", str(a.every_s), "--burst", str(a.burst), "--batch", str(a.batch),
                               "--seconds", str(a.seconds), "--log", client_log])
    touch(a.ready)
    t0 = time.time()
    while not STOP.is_set() and time.time() - t0 < a.seconds and client.poll() is None:
        STOP.wait(0.5)
    if client.poll() is None:
        client.terminate()
        client.wait(10)
    wall = time.time() - t0
    srv.shutdown()
    del cache
    times = [r[0] for r in log]
    gaps = [b - a_ for a_, b in zip(times, times[1:])]
    gpu_s = sum(r[1] for r in log) / 1000
    write_truth(a.truth, {
        "case": "rare-serve", "server_pid": os.getpid(), "port": port, "client_pid": client.pid,
        "every_s": a.every_s, "burst": a.burst, "requests": len(log), "wall_s": round(wall, 1),
        "started": round(t0, 3), "longest_gap_s": round(max(gaps), 1) if gaps else None,
        "gpu_busy_share": share(gpu_s, wall), "held_gib": a.hold_gib, "log": log,
        "log_fields": ["unix_s", "gpu_ms", "latency_ms", "batch"],
        "summary": (f"server PID {os.getpid()} on port {port}: {len(log)} requests in {wall:.0f} s, longest gap "
                    f"{max(gaps, default=0):.0f} s; inference {pct(share(gpu_s, wall))} of wall time; holds "
                    f"{a.hold_gib} GiB beside the weights"),
    })


def rare_client_main(argv):
    ap = argparse.ArgumentParser(prog=f"{PROG} rare-client", description="rare-serve's client (see its --help).")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--every-s", type=float, default=45)
    ap.add_argument("--burst", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    install_signals()
    end = time.time() + a.seconds
    with open(a.log, "a") as log:
        while not STOP.is_set() and time.time() < end:
            t_next = time.time() + a.every_s
            for _ in range(a.burst):
                t0 = time.time()
                try:
                    c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
                    c.request("POST", "/infer", body=os.urandom(64 * a.batch),
                              headers={"Content-Type": "application/octet-stream"})
                    status = c.getresponse().status
                    c.close()
                except OSError as e:
                    status = str(e)
                log.write(json.dumps([round(t0, 3), round(1000 * (time.time() - t0), 1), status]) + "\n")
                log.flush()
            STOP.wait(max(0.0, min(t_next, end) - time.time()))


TRAIN_DOC = """An inference server beside a training job on the same GPU: this process trains a ResNet-50 (bf16, a
batch made on the GPU, GPU-bound) and starts `rare-serve` as a second GPU process, whose client sends a burst of
--burst requests every --every-s. Truth: the trainer's step times (median, 90th percentile) with and without a
request in flight (from the server's log), and the server's own truth (its PID, requests, GPU time)."""


def serve_train_main(argv):
    ap = parser("serve-train", TRAIN_DOC)
    ap.add_argument("--every-s", type=float, default=5)
    ap.add_argument("--burst", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--warm-steps", type=int, default=10)
    add_common(ap, 60)
    a = ap.parse_args(argv)
    install_signals()
    dev = Dev(a.smoke)
    torch.backends.cudnn.benchmark = True
    step = SynthStep(dev, "resnet50", a.batch)
    server_truth, server_ready = f"{a.truth}.server", f"{a.truth}.server.ready"
    with contextlib.suppress(OSError):
        os.remove(server_ready)
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "rare-serve", "--every-s", str(a.every_s),
                               "--burst", str(a.burst), "--hold-gib", "1", "--seconds", str(a.seconds + 60),
                               "--truth", server_truth, "--ready", server_ready] + (["--smoke"] if a.smoke else []))
    for _ in range(a.warm_steps):
        step()
    dev.sync()
    while not os.path.exists(server_ready) and server.poll() is None and not STOP.is_set():
        STOP.wait(0.2)
    touch(a.ready)
    ends = []
    t0 = time.time()
    while not STOP.is_set() and time.time() - t0 < a.seconds:
        s = time.time()
        step().item()
        ends.append([round(s, 3), round(time.time() - s, 4)])
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
    srv = {}
    with contextlib.suppress(OSError, ValueError):
        with open(server_truth) as f:
            srv = json.load(f)
    spans = [(r[0], r[0] + r[2] / 1000) for r in srv.get("log", [])]

    def busy(s, d):
        return any(b0 < s + d and s < b1 for b0, b1 in spans)

    def q(xs, p):
        xs = sorted(xs)
        return round(1000 * xs[min(len(xs) - 1, int(p * len(xs)))], 1) if xs else None

    during = [d for s, d in ends if busy(s, d)]
    outside = [d for s, d in ends if not busy(s, d)]
    write_truth(a.truth, {
        "case": "serve-train", "trainer_pid": os.getpid(), "server_pid": srv.get("server_pid", server.pid),
        "steps": len(ends), "step_ms": {"median": q([d for _, d in ends], 0.5), "p90": q([d for _, d in ends], 0.9),
                                        "median_during_requests": q(during, 0.5), "median_otherwise": q(outside, 0.5)},
        "steps_during_requests": len(during), "server": {k: v for k, v in srv.items() if k != "log"},
        "summary": (f"trainer PID {os.getpid()}: {len(ends)} steps, median {q([d for _, d in ends], 0.5)} ms "
                    f"({q(during, 0.5)} ms while a request ran, {q(outside, 0.5)} ms otherwise); server: "
                    f"{srv.get('summary', 'no truth')}"),
    })


# --- table -----------------------------------------------------------------------------------------------------------

TABLE_DOC = """The table of GROUP=account: for each case of --cases (lines NAME<TAB>SECONDS<TAB>EXPECTED<TAB>WHAT, the
runner's list), the live doctor's verdict (NAME.doctor.json), the replay's (NAME.replay.json), the program's truth
summary (NAME.truth.json) and PASS or FAIL against EXPECTED, written to --out/table.md and printed.

EXPECTED is words, each a check on the findings (active or cleared):
  RULE           RULE is found                 R1|R2       one of them is found
  !RULE          RULE is not found             exit0       doctor exits 0
  RULE~TEXT      found, with TEXT in its title, evidence or remedy (case-insensitive)
  RULE@KEY       found on the PID the truth's KEY names (pid, server_pid, main_pid, ...)
A case with NAME.skipped is SKIP with its reason, one with NAME.failed (the job never got ready) FAIL with it;
NAME.note (how the situation was made, when not as planned) and the burners' NAME.burn.json join the truth."""


def table_main(argv):
    ap = argparse.ArgumentParser(prog=f"{PROG} table", description=TABLE_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the group's output directory")
    ap.add_argument("--cases", required=True)
    a = ap.parse_args(argv)

    def load(name):
        try:
            with open(os.path.join(a.out, name)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def findings(doc):
        return (doc or {}).get("findings", []) + (doc or {}).get("cleared", [])

    def matches(f, rules, key, text, truth):
        if f.get("rule") not in rules:
            return False
        if key is not None and (truth.get(key) is None or f.get("pid") != truth.get(key)):
            return False
        if text is not None:
            hay = " ".join([f.get("title", ""), f.get("evidence", ""), f.get("remedy", "")]
                           + [x.get("evidence", "") for x in f.get("also", [])]).lower()
            return text.lower() in hay
        return True

    def check(doc, truth, expected):
        if doc is None:
            return False, ["no doctor JSON"]
        bad = []
        for word in expected.split():
            if word == "exit0":
                if doc.get("exit_code") != 0:
                    bad.append(f"exit {doc.get('exit_code')}, not 0")
                continue
            neg = word.startswith("!")
            body, _, text = word.lstrip("!").partition("~")
            body, _, key = body.partition("@")
            hit = any(matches(f, body.split("|"), key or None, text or None, truth) for f in findings(doc))
            if hit == neg:
                bad.append(f"{'found' if neg else 'no'} {word.lstrip('!')}")
        return not bad, bad

    def found(doc):
        if doc is None:
            return "no doctor JSON"
        act = ", ".join(f"{f['rule']} ({f['severity']}{', PID ' + str(f['pid']) if f.get('pid') else ''})"
                        for f in doc.get("findings", [])) or "none"
        gone = ", ".join(f["rule"] for f in doc.get("cleared", []))
        return f"exit {doc.get('exit_code')}: {act}" + (f"; cleared: {gone}" if gone else "")

    rows, details = [], []
    with open(a.cases) as f:
        cases = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for name, seconds, expected, what in cases:
        skipped = os.path.join(a.out, f"{name}.skipped")
        if os.path.exists(skipped):
            with open(skipped) as f:
                rows.append(f"| {name} | {what} | {expected} | skipped: {f.read().strip()} | | | SKIP |")
            continue
        doc, replay, truth = load(f"{name}.doctor.json"), load(f"{name}.replay.json"), load(f"{name}.truth.json")
        failed = os.path.join(a.out, f"{name}.failed")
        if doc is None and truth is None and not os.path.exists(failed):
            continue
        truth = truth or {}
        live_ok, live_bad = check(doc, truth, expected)
        replay_ok, replay_bad = check(replay, truth, expected)
        result = "PASS" if live_ok and replay_ok else ("FAIL" if not live_ok else "PASS live, FAIL replay")
        why = "; ".join(live_bad or replay_bad)
        if os.path.exists(failed):
            with open(failed) as f:
                result, why = "FAIL", f.read().strip()
        said = truth.get("summary", "no truth")
        side = load(f"{name}.burn.json")
        if side:
            said += f"; burners: {side.get('summary')}"
        if os.path.exists(os.path.join(a.out, f"{name}.note")):
            with open(os.path.join(a.out, f"{name}.note")) as f:
                said += "; note: " + " ".join(f.read().split())
        rows.append(f"| {name} | {what} | {expected} | {found(doc)} | {found(replay)} | {said} | "
                    f"{result}{': ' + why if why else ''} |")
        for f in findings(doc):
            details.append(f"-- {name}: {f['rule']} ({f['severity']}, PID {f.get('pid')}) | {f.get('evidence', '')}")
        for n in (doc or {}).get("not_judged", []):
            details.append(f"-- {name}: not judged: {n}")
        if (doc or {}).get("account") is not None:
            details.append(f"-- {name}: account: {json.dumps(doc['account'])[:600]}")
    table = ["| case | what ran | expected | doctor live (exit: rules) | doctor --replay | the program's own truth "
             "| result |", "|---|---|---|---|---|---|---|"] + rows
    text = "\n".join(table) + "\n"
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text)
    print(text)
    print("\n".join(details))
    return 0


PROGRAMS = {
    "loader": loader_main, "burn": burn_main, "crash-loop": crash_loop_main, "crash-child": crash_child_main,
    "weight-load": weight_load_main, "full-vram": full_vram_main, "ckpt-sync": ckpt_sync_main, "spin": spin_main,
    "ddp": ddp_main, "rare-serve": rare_serve_main, "rare-client": rare_client_main, "serve-train": serve_train_main,
    "table": table_main,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in PROGRAMS:
        print(__doc__)
        return 0 if len(sys.argv) >= 2 and sys.argv[1] in ("-h", "--help") else 2
    name, argv = sys.argv[1], sys.argv[2:]
    if name not in LIGHT and torch is None and not {"-h", "--help"} & set(argv):
        print(f"{PROG} {name}: needs PyTorch and torchvision", file=sys.stderr)
        return 3
    return PROGRAMS[name](argv)


if __name__ == "__main__":
    sys.exit(main())
