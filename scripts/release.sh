#!/usr/bin/env bash
# Release artifacts from one script: for each architecture a manylinux2014 (glibc 2.17) wheel with the
# `gpusight` binary inside (maturin, `bindings = "bin"`), and a tarball with the same binary, the man page, shell
# completions, README, LICENSE and config.example.toml; then SHA256SUMS over all of them.
#
#   scripts/release.sh                  # x86_64 and aarch64 into dist/
#   scripts/release.sh --arch x86_64    # one architecture
#   scripts/release.sh --wheel-only     # just the wheel(s) (what CI builds)
#   OUT_DIR=/tmp/dist scripts/release.sh
#   CARGO_TARGET_DIR=/tmp/tgt scripts/release.sh   # builds (and the tools' venv) there instead of target/
#
# Tools: maturin and ziglang from PyPI at pinned versions, in a virtual environment under target/ (nothing is
# installed system-wide). zig links against glibc 2.17's symbols, so no container image is needed; aarch64 is
# cross-compiled the same way and needs the Rust target aarch64-unknown-linux-gnu (`rustup target add`).
# Every binary is checked: nothing above GLIBC_2.17 (readelf, which reads any architecture's ELF).
#
# The artifacts, and only they, carry the binary layout (assets/hot-text.ld, build.rs): GPUSIGHT_HOT_TEXT=1 below.
# maturin strips the binary it links, so the layout's match check (scripts/hot_text_check.py: the share of the
# script's patterns that matched a function, failing below GPUSIGHT_HOT_TEXT_FLOOR, default 0.50) reads the
# symbols of an unstripped host release build linked the same way (target/release/gpusight); the symbol names
# come from rustc, not the linker. GPUSIGHT_HOT_TEXT_CHECK=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.13.0.post1
MAX_GLIBC=2.17

archs=(x86_64 aarch64)
wheel_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) shift; archs=("$1") ;;
    --wheel-only) wheel_only=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
out=${OUT_DIR:-dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

# Cargo (and maturin, which runs it) build under CARGO_TARGET_DIR when it is set; so does this script's venv.
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir"
target_dir=$(cd "$target_dir" && pwd)
tools=$target_dir/release-tools/venv
if ! "$tools/bin/maturin" --version 2>/dev/null | grep -q "$MATURIN_VERSION" \
  || ! "$tools/bin/python" -c "import ziglang" 2>/dev/null; then
  echo "== tools: maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION (PyPI) into $tools"
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION"
fi
export PATH="$tools/bin:$PATH"
export GPUSIGHT_HOT_TEXT=1

# The layout's patterns against the symbols of an unstripped release link (the host's), before the artifacts.
if [ "${GPUSIGHT_HOT_TEXT_CHECK:-1}" != "0" ]; then
  echo "== binary layout: host release build (unstripped) and the share of assets/hot-text.ld that matched"
  cargo build --release --locked --bin gpusight
  python3 scripts/hot_text_check.py "$target_dir/release/gpusight"
fi

# The highest GLIBC_x.y symbol version an ELF binary needs.
max_glibc() {
  readelf -W --version-info --dyn-syms "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}

failed=()
built=()
for arch in "${archs[@]}"; do
  triple="$arch-unknown-linux-gnu"
  if ! rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
    echo "== rustup target add $triple"
    if ! rustup target add "$triple"; then
      echo "release.sh: the Rust standard library for $triple could not be installed (rustup target add" \
        "failed: no network to the Rust toolchain server?). No $arch artifacts were built." >&2
      failed+=("$arch (no Rust target $triple)")
      continue
    fi
  fi
  echo "== wheel $arch (manylinux2014, zig)"
  start=$(date +%s)
  maturin build --release --locked --zig --compatibility manylinux2014 --target "$triple" --out "$out"
  echo "   built in $(( $(date +%s) - start )) s"
  binary="$target_dir/$triple/release/gpusight"
  glibc=$(max_glibc "$binary")
  echo "   $binary needs GLIBC_$glibc at most"
  if [ "$(printf '%s\n%s\n' "$glibc" "$MAX_GLIBC" | sort -V | tail -1)" != "$MAX_GLIBC" ]; then
    echo "release.sh: $binary needs GLIBC_$glibc, above GLIBC_$MAX_GLIBC" >&2
    exit 1
  fi
  wheel=$(ls -t "$out"/gpusight-"$version"-*manylinux*_"$arch".whl | head -1)
  in_wheel=$(python3 -c "import sys,zipfile,hashlib; z=zipfile.ZipFile(sys.argv[1]); n=[i for i in z.namelist() if i.endswith('/scripts/gpusight')][0]; print(hashlib.sha256(z.read(n)).hexdigest())" "$wheel")
  if [ "$in_wheel" != "$(sha256sum "$binary" | cut -d' ' -f1)" ]; then
    echo "release.sh: the binary inside $wheel is not $binary" >&2
    exit 1
  fi
  built+=("$arch")
done

if [ "$wheel_only" -eq 0 ] && [ ${#built[@]} -gt 0 ]; then
  # Completions and the man page come from the command line's definition, the same on every architecture:
  # generate them with a binary this machine can run.
  runner=""
  for candidate in "$target_dir/$(uname -m)-unknown-linux-gnu/release/gpusight" "$target_dir/release/gpusight"; do
    if [ -x "$candidate" ]; then runner=$candidate; break; fi
  done
  if [ -z "$runner" ]; then cargo build --release --locked; runner=$target_dir/release/gpusight; fi
  extras=$(mktemp -d)
  trap 'rm -rf "$extras"' EXIT
  mkdir -p "$extras/completions"
  "$runner" man > "$extras/gpusight.1"
  "$runner" completions bash > "$extras/completions/gpusight.bash"
  "$runner" completions zsh > "$extras/completions/_gpusight"
  "$runner" completions fish > "$extras/completions/gpusight.fish"
  "$runner" completions elvish > "$extras/completions/gpusight.elv"
  "$runner" completions powershell > "$extras/completions/_gpusight.ps1"
  epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
  for arch in "${built[@]}"; do
    name="gpusight-$version-$arch-unknown-linux-gnu"
    stage="$extras/$name"
    mkdir -p "$stage"
    cp "$target_dir/$arch-unknown-linux-gnu/release/gpusight" "$stage/"
    cp -r "$extras/gpusight.1" "$extras/completions" "$stage/"
    cp README.md LICENSE config.example.toml "$stage/"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$extras" -czf "$out/$name.tar.gz" "$name"
    echo "== tarball $out/$name.tar.gz"
  done
fi

shopt -s nullglob
artifacts=("$out"/*.whl "$out"/*.tar.gz)
shopt -u nullglob
echo "== artifacts in $out"
if [ ${#artifacts[@]} -gt 0 ]; then
  (cd "$out" && sha256sum -- "${artifacts[@]##*/}" > SHA256SUMS)
  for file in "${artifacts[@]}"; do printf '   %10d  %s\n' "$(stat -c %s "$file")" "${file##*/}"; done
  sed 's/^/   /' "$out/SHA256SUMS"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "release.sh: NOT built: ${failed[*]}" >&2
  exit 1
fi
