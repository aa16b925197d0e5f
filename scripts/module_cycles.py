#!/usr/bin/env python3
"""Import circles between gpusight's top-level modules, and between the submodules of `advice` (src/<module>.rs or src/<module>/), from `crate::<module>`
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


def module_of(path):
    """`src/advice/rules/jobs.rs` -> ("advice", "rules", "jobs"); a `mod.rs` names its directory."""
    parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
    return tuple(parts[:-1]) if parts[-1] == "mod" else tuple(parts)


# Inside the modules listed here, no import circle between submodules either: a module may use its ancestors'
# items and its descendants, but two siblings (or cousins) never import each other, directly or around a circle.
NESTED = ["advice"]
inner = {}
for top in NESTED:
    files = []
    for root, _, names in os.walk(os.path.join(SRC, top)):
        files += [os.path.join(root, n) for n in names if n.endswith(".rs") and not n.endswith("_tests.rs")
                  and n not in ("tests.rs", "testkit.rs")]
    known = {module_of(f) for f in files}
    for path in files:
        here = module_of(path)
        for line in code_lines(path):
            if line.lstrip().startswith("//"):
                continue
            refs = [tuple(m.group(1).split("::")) for m in re.finditer(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", line)]
            for m in re.finditer(r"\b((?:super::)+)((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", line):
                ups = m.group(1).count("super::")
                refs.append(here[: len(here) - ups] + tuple(m.group(2).split("::")))
            for m in re.finditer(r"\bself::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", line):
                refs.append(here + tuple(m.group(1).split("::")))
            for ref in refs:
                while ref and ref not in known:
                    ref = ref[:-1]
                related = ref[: len(here)] == here or here[: len(ref)] == ref
                if ref and not related:
                    inner.setdefault(here, set()).add(ref)
inner_cycles = set()


def walk_inner(start, node, seen):
    for nxt in sorted(inner.get(node, ())):
        if nxt == start:
            inner_cycles.add(tuple(seen))
        elif nxt not in seen and len(seen) < 6:
            walk_inner(start, nxt, seen + [nxt])


for m in sorted(inner):
    walk_inner(m, m, [m])
inner_canon = {}
for c in inner_cycles:
    i = c.index(min(c))
    inner_canon[c[i:] + c[:i]] = True
for c in sorted(inner_canon, key=len):
    print(" -> ".join("::".join(m) for m in c + (c[0],)))
canon.update(inner_canon)
app_users = sorted(m for m, there in edges.items() if "app" in there and m not in APP_IMPORTERS)
for m in app_users:
    print(f"{m} -> app (only {', '.join(sorted(APP_IMPORTERS))} may import the interactive monitor)")
sys.exit(1 if canon or app_users else 0)
