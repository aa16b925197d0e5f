#!/usr/bin/env python3
"""Checks a linked release binary against assets/hot-text.ld: the share of the script's patterns that matched a
function of the binary, and the bytes the layout placed in `.text.hot`; fails below a floor.

Each pattern `*(.text*.NAME)` places the functions whose section is `.text.NAME` or `.text.unlikely.NAME`; rustc
names a function's section after its symbol, so a pattern matched when a function symbol of the binary matches
NAME (a glob: `*` stands for the compiler's hashes). Patterns that pin an exact hash stop matching after an edit or
a compiler update, silently: this is what notices. It reads symbols with `nm`, so the binary must be unstripped.

  python3 scripts/hot_text_check.py target/release/gpusight            # floor 0.45, or GPUSIGHT_HOT_TEXT_FLOOR
  python3 scripts/hot_text_check.py BINARY --floor 0.5
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "assets", "hot-text.ld")
# Measured when the check was written (rustc 1.95.0, the script of that day, a host release build of main): 931 of
# 1,670 patterns (55.7 %) matched a function; of the 773 that pin an exact hash, 112. The floor leaves room for
# ordinary drift and fails when the script has gone staler than that.
DEFAULT_FLOOR = 0.45


def patterns(script):
    """The NAME globs of the script's `*(.text*.NAME)` lines."""
    with open(script) as f:
        return re.findall(r"^\s*\*\(\.text\*\.(\S+)\)\s*$", f.read(), flags=re.MULTILINE)


def functions(binary):
    """Function symbols of the binary (nm: t, T, w, W)."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {cols[2] for cols in (line.split() for line in out.splitlines()) if len(cols) == 3 and cols[1] in "tTwW"}


def hot_bytes(binary):
    """Size of the binary's `.text.hot` section, or None when it has none."""
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        cols = line.replace("[ ", "[").split()
        if len(cols) > 5 and cols[1] == ".text.hot":
            return int(cols[5], 16)
    return None


def matched(globs, symbols):
    """The globs that match at least one symbol. Globs without `*` are looked up; the rest are matched by the
    literal text before their first `*`, then fnmatch (case-sensitive)."""
    by_prefix = {}
    for symbol in symbols:
        by_prefix.setdefault(symbol[:12], []).append(symbol)
    hits = []
    for glob in globs:
        if "*" not in glob:
            if glob in symbols:
                hits.append(glob)
            continue
        head = glob.split("*", 1)[0]
        pool = by_prefix.get(head[:12], []) if len(head) >= 12 else symbols
        if any(fnmatch.fnmatchcase(symbol, glob) for symbol in pool):
            hits.append(glob)
    return hits


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="the linked, unstripped gpusight")
    parser.add_argument("--script", default=SCRIPT, help="the linker script (default assets/hot-text.ld)")
    parser.add_argument("--floor", type=float, default=float(os.environ.get("GPUSIGHT_HOT_TEXT_FLOOR", DEFAULT_FLOOR)),
                        help=f"the least share of patterns that must match (default {DEFAULT_FLOOR}, "
                             "or GPUSIGHT_HOT_TEXT_FLOOR)")
    args = parser.parse_args()
    globs = patterns(args.script)
    if not globs:
        sys.exit(f"hot_text_check.py: no patterns in {args.script}")
    symbols = functions(args.binary)
    if not symbols:
        sys.exit(f"hot_text_check.py: {args.binary} has no symbol table (stripped?): nothing to check against")
    size = hot_bytes(args.binary)
    if size is None:
        sys.exit(f"hot_text_check.py: {args.binary} has no .text.hot: it was linked without the layout "
                 "(GPUSIGHT_HOT_TEXT=1, a release build)")
    hits = matched(globs, symbols)
    exact = [g for g in globs if "*" not in g]
    exact_hits = [g for g in hits if "*" not in g]
    share = len(hits) / len(globs)
    print(f"hot_text_check.py: {len(hits)} of {len(globs)} patterns matched a function ({share:.1%}; "
          f"exact names {len(exact_hits)} of {len(exact)}, globs {len(hits) - len(exact_hits)} of "
          f"{len(globs) - len(exact)}); .text.hot {size} bytes; floor {args.floor:.0%}")
    if share < args.floor:
        sys.exit(f"hot_text_check.py: {share:.1%} of the layout's patterns matched, below the floor of "
                 f"{args.floor:.0%}: the script is stale; rewrite it (python3 scripts/hot_text.py, docs/packaging.md) "
                 "or lower GPUSIGHT_HOT_TEXT_FLOOR knowingly")


if __name__ == "__main__":
    main()
