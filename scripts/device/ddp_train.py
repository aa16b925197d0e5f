#!/usr/bin/env python3
"""A real data-parallel training job for gpusight's multi-GPU checks: torchrun, one rank per GPU, ResNet-50 from
torchvision (random weights), SGD, DistributedDataParallel over NCCL, and a real DataLoader whose workers decode
and augment images on the CPU (random JPEG-sized uint8 images, random crop and flip, normalise), so each rank has
the input pipeline a vision job has.

    torchrun --standalone --nproc_per_node=2 scripts/device/ddp_train.py --seconds 60 --workers 6

Per-rank knobs make the shapes the rank rules are checked on:
    --workers-rank R:N      rank R gets N DataLoader workers (starve one rank's loader: 1:1)
    --compute-rank R:K      rank R runs its forward/backward K times per step (a compute straggler: 1:2)
    --skip-allreduce-rank R rank R leaves the step loop after a few steps and waits: the others hang in all_reduce
                            until the process group's timeout (--pg-timeout seconds) ends the job
On one GPU (no multi-GPU machine lent), --same-gpu --backend gloo runs every rank on GPU 0 over gloo: a real
torchrun job with its ranks, for job identity, the jobs view and signalling a whole job (not for per-GPU rank rules).
Prints one line per rank every 10 s: images/s, step time, and the DataLoader wait share of the step.
"""
import argparse, datetime, os, time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision


class Images(torch.utils.data.Dataset):
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


def main():
    ap = argparse.ArgumentParser()
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
    args = ap.parse_args()

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


if __name__ == "__main__":
    main()
