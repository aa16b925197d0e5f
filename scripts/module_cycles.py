#!/usr/bin/env python3
"""Import circles between gpusight's top-level modules (src/<module>.rs or src/<module>/), from `crate::<module>`
paths in non-test code (lines after a `#[cfg(test)]` module opener are skipped). Prints each circle; exits 1 if any.
Also fails when a module other than `run` and `ui` imports `app`, the interactive monitor: what it shares with
`--once`, the fleet view and the config lives in `table`, `keys` and `config`.

    python3 scripts/module_cycles.py
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
# The only top-level modules that may import the interactive monitor.
APP_IMPORTERS = {"run", "ui"}


def top_module(path):
    rel = os.path.relpath(path, SRC)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def code_lines(path):
    with open(path) as f:
        for line in f:
            if line.strip().startswith("#[cfg(test)]"):
                return
            yield line


edges = {}
for root, _, files in os.walk(SRC):
    for name in files:
        if not name.endswith(".rs") or name.endswith("_tests.rs") or name == "tests.rs":
            continue
        path = os.path.join(root, name)
        here = top_module(path)
        if here in ("lib", "main"):
            continue
        for line in code_lines(path):
            if line.lstrip().startswith("//"):
                continue
            for m in re.finditer(r"crate::([a-z_][a-z0-9_]*)", line):
                there = m.group(1)
                if there != here:
                    edges.setdefault(here, set()).add(there)

cycles = set()


def walk(start, node, seen):
    for nxt in sorted(edges.get(node, ())):
        if nxt == start:
            cycles.add(tuple(seen))
        elif nxt not in seen and len(seen) < 6:
            walk(start, nxt, seen + [nxt])


for m in sorted(edges):
    walk(m, m, [m])
canon = {}
for c in cycles:
    i = c.index(min(c))
    canon[c[i:] + c[:i]] = True
for c in sorted(canon, key=len):
    print(" -> ".join(c + (c[0],)))
app_users = sorted(m for m, there in edges.items() if "app" in there and m not in APP_IMPORTERS)
for m in app_users:
    print(f"{m} -> app (only {', '.join(sorted(APP_IMPORTERS))} may import the interactive monitor)")
sys.exit(1 if canon or app_users else 0)
