#!/usr/bin/env python3
"""Rewrites the command lines of the embedded demo recording (assets/demo.jsonl.gz) so that they read like the
training jobs they stand for, instead of the load generator that made them on the H200. Everything else (the
header, every reading, the order of lines) is kept byte for byte as JSON; the gzip has no timestamp, so running
this twice gives the same file.

Usage: python3 scripts/demo_commands.py [assets/demo.jsonl.gz]
"""
import gzip
import json
import sys

# The load generator's mode (its first argument) -> (process name, command line) of the job it imitates.
JOBS = {
    "idle": ("python3", "python3 -m ipykernel_launcher -f /home/alice/.local/share/jupyter/runtime/kernel-7f3a.json"),
    "compute": ("python3", "python3 train.py --model resnet50 --batch-size 256 --amp --epochs 90"),
    "input": ("python3", "python3 train.py --data /mnt/nfs/imagenet --batch-size 512 --num-workers 2"),
    "loader": ("python3", "python3 finetune.py --config configs/llama3-8b-lora.yaml --num-workers 8"),
    "cpu": ("python3", "python3 eval.py --checkpoint runs/llama3-8b/step_12000.pt --tokenize-on-the-fly"),
}
LAUNCHERS = {
    "timeout": ("bash", "bash scripts/run_experiments.sh"),
    "bash": ("bash", "bash scripts/queue.sh --node h200-01"),
}


def rewrite(process):
    cmdline = process.get("cmdline") or ""
    words = cmdline.split()
    if "gpu_load.py" in cmdline:
        mode = words[words.index(next(w for w in words if w.endswith("gpu_load.py"))) + 1]
        process["name"], process["cmdline"] = JOBS[mode]
    elif words and words[0] in LAUNCHERS and ".device/" in cmdline:
        process["name"], process["cmdline"] = LAUNCHERS[words[0]]
    return process


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "assets/demo.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        tick = json.loads(line)
        for process in tick.get("processes", []):
            rewrite(process)
        out.append(json.dumps(tick, separators=(",", ":")))
    data = ("\n".join(out) + "\n").encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(data)


if __name__ == "__main__":
    main()
