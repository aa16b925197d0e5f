#!/usr/bin/env python3
"""Writes the datasets of scripts/device/findings.sh to local disk.

  --jpeg DIR N   N smooth 256x256 JPEG images (about 15 KB each) in DIR/cls0 .. DIR/cls9 (an ImageFolder)
  --raw DIR N    N small raw files of 3x128x128 uint8 (48 KiB each) in DIR, for the many-small-files case

Uses a process pool so a few thousand files take seconds.
"""
import argparse
import os
import sys
from multiprocessing import Pool


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jpeg", nargs=2, metavar=("DIR", "N"))
    ap.add_argument("--raw", nargs=2, metavar=("DIR", "N"))
    a = ap.parse_args()
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


if __name__ == "__main__":
    main()
