#!/usr/bin/env bash
# Runs every cargo-fuzz target in turn for SECONDS each (default 600) with debug assertions on (`-a`), under an
# address-space limit (`ulimit -v`, default 4 GiB), so that a reader that does not bound its memory fails the run
# with an allocation failure instead of passing; libFuzzer's own RSS and malloc limits are set below it.
# AddressSanitizer reserves terabytes of address space and cannot run under `ulimit -v`: this runs without a
# sanitizer (`-s none`; the code under test has no `unsafe`), and `SANITIZER=address` runs with ASan and no ulimit.
#
#   bash scripts/fuzz_all.sh [SECONDS] [TARGET...]     # needs `cargo install cargo-fuzz` and a nightly or
#                                                       # RUSTC_BOOTSTRAP=1 (set here)
# One line per target at the end: executions, time, coverage, and the result.
set -uo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(recording config proc kmsg prometheus)
sanitizer=${SANITIZER:-none}
limit_kb=${FUZZ_ULIMIT_KB:-4194304}
logs=${FUZZ_LOGS:-/tmp/gpusight-fuzz}
mkdir -p "$logs"
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
    cargo fuzz build -a -s "$sanitizer" "$t" > "$logs/$t.build.log" 2>&1 || { echo "$t: build failed, see $logs/$t.build.log"; continue; }
done
summary=()
for t in "${targets[@]}"; do
    work=$(mktemp -d)
    cp -r "corpus/$t/." "$work/"
    (
        [ "$sanitizer" = none ] && ulimit -v "$limit_kb"
        cargo fuzz run -a -s "$sanitizer" "$t" "$work" -- -max_total_time="$seconds" -rss_limit_mb=2048 \
            -malloc_limit_mb=1024 -print_final_stats=1
    ) > "$logs/$t.log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]*' "$logs/$t.log" | tail -1 | grep -o '[0-9]*')
    took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$logs/$t.log" | tail -1)
    result=$([ $rc -eq 0 ] && echo "no finding" || echo "FINDING (exit $rc), see $logs/$t.log")
    summary+=("$t: ${execs:-?} executions, ${took:-?}, cov ${cov:-?} edges: $result")
    rm -rf "$work"
done
printf '%s\n' "${summary[@]}"
