#!/usr/bin/env python3
"""Real PyTorch programs shaped like the places training runs, for checking gpusight's findings on a GPU machine.

    cluster_workloads.py serve   --seconds 400 --truth T.json   a bursty HTTP inference server and its client
    cluster_workloads.py offload --seconds 90  --truth T.json   AdamW on the CPU (ZeRO-offload style), grad accum 8
    cluster_workloads.py compile --seconds 120 --truth T.json   torch.compile: warm-up, then steady state
    cluster_workloads.py evalrank --seconds 200 --truth T.json  2 ranks over gloo; rank 0 computes metrics on the CPU
                                                                for --eval-s seconds while rank 1 waits in a barrier
    cluster_workloads.py logger  --seconds 90 --log-dir DIR      a healthy MLP step whose logging thread writes to DIR

Each prints its ground truth (what the program really spent its time on, measured inside it) to --truth as JSON.
Every program stops on SIGTERM/SIGINT or after --seconds and frees the GPU.
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
    batch's forward pass)."""
    import http.server
    import multiprocessing as mp
    import socketserver
    import torchvision

    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev).eval().half()
    # A serving process holds weights plus a preallocated cache, as vLLM-style servers do.
    cache = torch.empty(int(a.hold_gib * (1 << 30)) // 2, dtype=torch.float16, device=dev)
    lock = threading.Lock()
    stats = {"requests": 0, "gpu_s": 0.0}

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
    client = mp.get_context("spawn").Process(target=serve_client, args=(port, a.seconds, a.burst_s, a.pause_s))
    t0 = time.time()
    client.start()
    while client.is_alive() and not STOP.is_set():
        client.join(0.5)
    if client.is_alive():
        client.terminate()
    wall = time.time() - t0
    srv.shutdown()
    del cache
    write_truth(a.truth, {
        "case": "serve", "port": port, "requests": stats["requests"], "wall_s": round(wall, 1),
        "gpu_busy_share": round(stats["gpu_s"] / wall, 3),
        "held_gib": a.hold_gib,
    })


def serve_client(port, seconds, burst_s, pause_s):
    """Bursts of requests (4 concurrent clients for burst_s), then silence for pause_s: a chat-style load."""
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
        time.sleep(min(max(0.0, end - time.time()), pause_s * random.uniform(0.5, 1.5)))


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
    """Two ranks (spawned here, gloo over TCP on 127.0.0.1, both on GPU 0: one GPU is lent). They train in
    lockstep (all_reduce of the gradients each step); after --train-s rank 0 computes evaluation metrics on the
    CPU in Python for --eval-s while rank 1 waits in dist.barrier(); then both train again until --seconds."""
    import torch.multiprocessing as tmp

    port = 29500 + os.getpid() % 1000
    tmp.spawn(evalrank_worker, args=(a, port), nprocs=2, join=True)


def evalrank_worker(rank, a, port):
    import datetime
    import torch.distributed as dist

    signal.signal(signal.SIGTERM, on_signal)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                      LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=a.eval_s + 300))
    dev = torch.device("cuda", 0)
    model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.time()
    phases = {"train1_steps": 0, "eval_s": 0.0, "barrier_wait_s": 0.0, "train2_steps": 0}

    def train_until(deadline, key):
        while time.time() < deadline and not STOP.is_set():
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=["serve", "offload", "compile", "evalrank", "logger"])
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--hold-gib", type=float, default=1.0, help="serve: extra GPU memory held as a cache")
    ap.add_argument("--burst-s", type=float, default=6.0)
    ap.add_argument("--pause-s", type=float, default=20.0)
    ap.add_argument("--accum", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--cpu-threads", type=int, default=4)
    ap.add_argument("--train-s", type=float, default=20)
    ap.add_argument("--eval-s", type=float, default=150)
    ap.add_argument("--log-dir", default="/tmp/gs_logger")
    ap.add_argument("--ckpt-every", type=float, default=30)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    {"serve": serve, "offload": offload, "compile": compile_case, "evalrank": evalrank, "logger": logger}[a.case](a)


if __name__ == "__main__":
    sys.exit(main())
