#!/usr/bin/env bash
# What `cargo package` would ship to crates.io (and so what `cargo install --locked gpusight` builds): the
# sources, the embedded demo recording and the docs, and nothing of the test fixtures, snapshots, fuzz corpora,
# benches, deploy kit or CI scripts. Fails when something unwanted is listed, something needed is missing, or
# the package grows past its budget.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_BYTES=${MAX_PACKAGE_BYTES:-2000000}

list=$(cargo package --locked --list --allow-dirty)
echo "$list" | awk 'END {print "   " NR " files"}'
unwanted=$(echo "$list" | grep -E '^(tests|fuzz|benches|examples|tools|scripts|deploy|target|\.ci)/|\.snap$' || true)
if [ -n "$unwanted" ]; then
  echo "check_package.sh: the package would ship files it does not need:" >&2
  echo "$unwanted" >&2
  exit 1
fi
for needed in src/main.rs src/lib.rs build.rs assets/hot-text.ld assets/demo.jsonl.gz Cargo.lock LICENSE README.md config.example.toml; do
  if ! echo "$list" | grep -qx "$needed"; then
    echo "check_package.sh: the package lacks $needed" >&2
    exit 1
  fi
done
bytes=0
while read -r file; do
  if [ -f "$file" ]; then bytes=$(( bytes + $(stat -c %s "$file") )); fi
done <<< "$list"
echo "   $bytes bytes uncompressed (budget $MAX_BYTES)"
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  echo "check_package.sh: the package is $bytes bytes, over its budget of $MAX_BYTES" >&2
  exit 1
fi
