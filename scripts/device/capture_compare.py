#!/usr/bin/env python3
"""Compares `gpusight --once --json` on the real card with the same on a capture of it replayed through the fake
NVML (scripts/device/capture_compare.sh runs both), field by field: the driver's versions, every GPU's static facts
(`machine.gpus`), its readings (`tick.gpus`) and its processes (`tick.gpu_processes`, matched by GPU and PID).

Readings that move over time are compared within a tolerance taken from the capture itself: the largest change
between two of the card's own samples (the capture's phases), for power, temperature, utilization, clocks, memory,
PCIe and GPM rates, and each NVLink link's RX/TX rate. Counters (energy, throttle time, each NVLink link's data
counters) are compared within what the card adds in the time between the capture and the real reading
(`--elapsed`, plus the two seconds `--once` takes), at the capture's highest rate.
Everything else must be equal.

Prints one line per field that differs (and a summary); `--all` prints every field. Exit 0 when every field agrees,
1 when some differ.
"""

import argparse
import json
import sys

try:
    import tomllib
except ImportError:  # Python before 3.11: the capture's tolerances cannot be read, moving readings must be equal.
    tomllib = None

# tick.gpus[i] field -> [(capture phase key, factor to the field's unit)]
MOVING = {
    "util_pct": [("util", 1)],
    "mem_util_pct": [("mem_util", 1)],
    "mem_used_bytes": [("mem_used_bytes", 1)],
    "mem_free_bytes": [("mem_free_bytes", 1)],
    "power_mw": [("power_w", 1000)],
    "temp_c": [("temp_c", 1)],
    "mem_temp_c": [("mem_temp_c", 1)],
    "sm_clock_mhz": [("sm_clock_mhz", 1)],
    "mem_clock_mhz": [("mem_clock_mhz", 1)],
    "throttle_bits": [("throttle", 1)],
    "pstate": [("pstate", 1)],
    "pcie_gen": [("pcie_gen", 1)],
    "pcie_width": [("pcie_width", 1)],
    "fan_pct": [("fan_pct", 1)],
    "enc_util_pct": [("enc_util", 1)],
    "dec_util_pct": [("dec_util", 1)],
    # gpusight reads PCIe from GPM (MiB/s -> KB/s) where it can, else from the throughput call: either source.
    "pcie_rx_kbps": [("pcie_rx_kbps", 1), ("gpm_pcie_rx_mib_s", 1048.576)],
    "pcie_tx_kbps": [("pcie_tx_kbps", 1), ("gpm_pcie_tx_mib_s", 1048.576)],
    "nvlink_rx_mib_s": [("nvlink_rx_mib_s", 1)],
    "nvlink_tx_mib_s": [("nvlink_tx_mib_s", 1)],
    "gpm.gr_engine_active_pct": [("gpm_graphics", 1)],
    "gpm.sm_active_pct": [("gpm_sm", 1)],
    "gpm.sm_occupancy_pct": [("gpm_occupancy", 1)],
    "gpm.tensor_active_pct": [("gpm_tensor", 1)],
    "gpm.dram_active_pct": [("gpm_dram", 1)],
}
# Counters: field -> (capture phase key of its rate per second, factor to the field's unit).
COUNTERS = {
    "energy_mj": ("power_w", 1000),
    "throttle_ns.sw_power_cap_ns": ("throttle_ns_per_s.0", 1),
    "throttle_ns.sync_boost_ns": ("throttle_ns_per_s.1", 1),
    "throttle_ns.sw_thermal_ns": ("throttle_ns_per_s.2", 1),
    "throttle_ns.hw_thermal_ns": ("throttle_ns_per_s.3", 1),
    "throttle_ns.hw_power_brake_ns": ("throttle_ns_per_s.4", 1),
}
# Per-process readings that move with the GPU's utilization.
PROCESS_MOVING = {"sm_util_pct": "util", "mem_util_pct": "mem_util", "enc_util_pct": "enc_util",
                  "dec_util_pct": "dec_util"}


def flatten(value, prefix=""):
    """A JSON value as {"a.b.0.c": leaf}."""
    out = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix.rstrip(".")] = value
    return out


def phase_values(phases, key):
    """The values of a phase key over the capture (`key.N` indexes an array)."""
    name, _, idx = key.partition(".")
    out = []
    for p in phases:
        v = p.get(name)
        if idx and isinstance(v, list):
            v = v[int(idx)] if int(idx) < len(v) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
    return out


def tolerances(gpu_spec, elapsed):
    """Field -> tolerance for one GPU of the capture."""
    phases = gpu_spec.get("phase", [])
    tol = {}
    for field, sources in MOVING.items():
        values = [v * f for key, f in sources for v in phase_values(phases, key)]
        if values:
            tol[field] = max(values) - min(values)
    for field, (key, factor) in COUNTERS.items():
        rates = phase_values(phases, key)
        if rates:
            tol[field] = max(rates) * factor * (elapsed + 2.0)
    # Each NVLink link: its rate (bytes/s) moves like the other rates, plus 2 % for the clocks of two counter reads
    # (the real card's and the replay's), and its data counters (KiB) like the counters.
    for link in range(gpu_spec.get("nvlink", {}).get("links", 0)):
        for way in ("rx", "tx"):
            rates = phase_values(phases, f"nvlink_link_{way}_mib_s.{link}")
            if rates:
                tol[f"nvlinks.{link}.{way}_bytes_s"] = (max(rates) * 1.02 - min(rates)) * 1048576
                tol[f"nvlinks.{link}.{way}_kib"] = max(rates) * 1024 * (elapsed + 2.0)
    return tol


def numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Report:
    def __init__(self):
        self.rows = []

    def compare(self, where, real, replay, tol=0.0):
        if real == replay:
            verdict, diff = "same", 0
        elif numeric(real) and numeric(replay):
            diff = replay - real
            verdict = "within" if abs(diff) <= tol + 1e-9 else "DIFFERS"
        else:
            verdict, diff = "DIFFERS", None
        self.rows.append({"field": where, "real": real, "replay": replay, "diff": diff, "tolerance": tol,
                          "verdict": verdict})

    def text(self, everything):
        lines = []
        for r in self.rows:
            if everything or r["verdict"] == "DIFFERS":
                diff = "" if r["diff"] in (None, 0) else f"  diff {r['diff']:+g}"
                tol = f"  tolerance {r['tolerance']:g}" if r["tolerance"] else ""
                lines.append(f"{r['verdict']:8} {r['field']}: real {json.dumps(r['real'])}, replay "
                             f"{json.dumps(r['replay'])}{diff}{tol}")
        counts = {v: sum(1 for r in self.rows if r["verdict"] == v) for v in ("same", "within", "DIFFERS")}
        lines.append(f"{len(self.rows)} fields: {counts['same']} same, {counts['within']} within the card's own "
                     f"change, {counts['DIFFERS']} differ")
        return "\n".join(lines)


def compare_flat(report, where, real, replay, tol):
    real_flat, replay_flat = flatten(real), flatten(replay)
    for key in sorted(set(real_flat) | set(replay_flat)):
        report.compare(f"{where}.{key}", real_flat.get(key), replay_flat.get(key), tol.get(key, 0.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--capture", required=True)
    ap.add_argument("--real", required=True)
    ap.add_argument("--replay", required=True)
    ap.add_argument("--elapsed", type=float, default=0.0, help="seconds from the capture's end to the real reading")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--all", action="store_true", help="print every field, not only those that differ")
    args = ap.parse_args()
    real = json.load(open(args.real))
    replay = json.load(open(args.replay))
    specs = []
    if tomllib is not None:
        with open(args.capture, "rb") as f:
            specs = tomllib.load(f).get("gpu", [])
    else:
        print("python3 has no tomllib: moving readings are compared exactly", file=sys.stderr)
    report = Report()
    for key in ("driver_version", "cuda_driver_version", "nvml_version", "open_kernel_module"):
        report.compare(f"machine.{key}", real["machine"].get(key), replay["machine"].get(key))
    real_gpus, replay_gpus = real["machine"]["gpus"], replay["machine"]["gpus"]
    report.compare("machine.gpus.count", len(real_gpus), len(replay_gpus))
    for i, (a, b) in enumerate(zip(real_gpus, replay_gpus)):
        compare_flat(report, f"machine.gpus.{i}", a, b, {})
    real_ticks, replay_ticks = real["tick"]["gpus"], replay["tick"]["gpus"]
    for i, (a, b) in enumerate(zip(real_ticks, replay_ticks)):
        tol = tolerances(specs[i], args.elapsed) if i < len(specs) else {}
        compare_flat(report, f"tick.gpus.{i}", a, b, tol)
    procs = lambda doc: {(p.get("gpu_index"), p.get("pid")): p for p in doc["tick"].get("gpu_processes", [])}
    real_procs, replay_procs = procs(real), procs(replay)
    for key in sorted(set(real_procs) | set(replay_procs), key=str):
        gpu = key[0] if isinstance(key[0], int) else 0
        phases = specs[gpu].get("phase", []) if gpu < len(specs) else []
        tol = {}
        for field, phase_key in PROCESS_MOVING.items():
            values = phase_values(phases, phase_key)
            tol[field] = (max(values) - min(values)) if values else 0.0
        compare_flat(report, f"tick.gpu_processes.gpu{key[0]}.pid{key[1]}", real_procs.get(key), replay_procs.get(key),
                     tol)
    print(report.text(args.all))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.rows, f, indent=1)
    return 1 if any(r["verdict"] == "DIFFERS" for r in report.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
