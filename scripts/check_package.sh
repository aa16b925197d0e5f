#!/usr/bin/env bash
# What `cargo package` would ship to crates.io (and so what `cargo install --locked gpusight` builds): the
# sources, the embedded demo recording and the docs, and nothing of the test fixtures, snapshots, fuzz corpora,
# benches, deploy kit or CI scripts. Fails when something unwanted is listed, something needed is missing, or
# the .crate (the gzip-compressed archive crates.io stores and `cargo install` downloads) grows past its budget.
# The uncompressed total is printed beside it: nine tenths of it are the sources, so it grows with the product.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_CRATE_BYTES=${MAX_CRATE_BYTES:-1000000}

list=$(cargo package --locked --list --allow-dirty)
echo "$list" | awk 'END {print "   " NR " files"}'
# assets/hot-text.ld: the binary layout is for release artifacts alone (scripts/release.sh), never cargo install.
unwanted=$(echo "$list" | grep -E '^(tests|fuzz|benches|examples|tools|scripts|deploy|target|\.ci)/|\.snap$|^assets/hot-text\.ld$' || true)
if [ -n "$unwanted" ]; then
  echo "check_package.sh: the package would ship files it does not need:" >&2
  echo "$unwanted" >&2
  exit 1
fi
for needed in src/main.rs src/lib.rs build.rs assets/demo.jsonl.gz Cargo.lock LICENSE README.md config.example.toml; do
  if ! echo "$list" | grep -qx "$needed"; then
    echo "check_package.sh: the package lacks $needed" >&2
    exit 1
  fi
done
bytes=0
while read -r file; do
  if [ -f "$file" ]; then bytes=$(( bytes + $(stat -c %s "$file") )); fi
done <<< "$list"
echo "   $bytes bytes uncompressed"

# The crate's own tests from the packaged .crate, as a distribution packager runs them: the unit tests must build
# and pass without the repository's test fixtures (those that read them are compiled only where `tests/fixtures`
# exists, `cfg(gpusight_fixtures)` set by build.rs). The dependencies come from the same target directory, so
# this builds gpusight alone.
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
cargo package --locked --allow-dirty --no-verify --quiet
crate="$target_dir/package/gpusight-$version.crate"
crate_bytes=$(stat -c %s "$crate")
echo "   $crate_bytes bytes as a .crate (budget $MAX_CRATE_BYTES)"
if [ "$crate_bytes" -gt "$MAX_CRATE_BYTES" ]; then
  echo "check_package.sh: the .crate is $crate_bytes bytes, over its budget of $MAX_CRATE_BYTES" >&2
  exit 1
fi
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$crate" -C "$unpacked"
if [ -e "$unpacked/gpusight-$version/tests" ]; then
  echo "check_package.sh: the .crate has a tests/ directory" >&2
  exit 1
fi
start=$(date +%s)
(cd "$unpacked/gpusight-$version" && CARGO_TARGET_DIR="$target_dir" cargo test --locked --offline --lib)
echo "   the .crate's unit tests built and passed in $(( $(date +%s) - start )) s"
