#!/usr/bin/env bash
# Installs a gpusight wheel into a fresh virtual environment and runs the binary it installed, as a user of
# `pip install gpusight` would: the demo snapshot, doctor's JSON on the demo, the version.
#   scripts/check_wheel.sh dist/gpusight-*-manylinux*_x86_64.whl
set -euo pipefail
wheel=$1
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
bin="$venv/bin/gpusight"
[ -x "$bin" ] || { echo "check_wheel.sh: the wheel installed no gpusight command" >&2; exit 1; }

echo "== gpusight --version (from the wheel)"
"$bin" --version | tee "$venv/version.txt"
grep -qx "gpusight $(sed -n 's/^version = "\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml" | head -1)" "$venv/version.txt"

echo "== gpusight --demo --once"
"$bin" --demo --once > "$venv/once.txt"
head -3 "$venv/once.txt"
grep -q "H200" "$venv/once.txt"

echo "== gpusight doctor --demo --json"
# doctor exits 0, 1 or 2 by what it found (the demo has findings); anything else, or bad JSON, is a failure.
set +e
"$bin" doctor --demo --json > "$venv/doctor.json"
code=$?
set -e
case $code in 0|1|2) ;; *) echo "check_wheel.sh: doctor exited $code" >&2; exit 1 ;; esac
python3 - "$venv/doctor.json" "$code" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
code = int(sys.argv[2])
assert doc["exit_code"] == code, (doc["exit_code"], code)
assert isinstance(doc["findings"], list) and doc["findings"], "the demo has findings"
for f in doc["findings"]:
    assert f["rule"] and f["severity"] in ("info", "warning", "critical"), f
print(f"   doctor: exit {code}, {len(doc['findings'])} findings: " + ", ".join(sorted({f['rule'] for f in doc['findings']})))
PY
echo "== the wheel works"
