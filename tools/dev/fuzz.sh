#!/bin/sh
# tools/dev/fuzz.sh TARGET SECONDS [BUILD_DIR]: runs one libFuzzer target of
# tests/fuzz (config, report or topo) for SECONDS, starting from its seed
# corpus (tests/fuzz/corpus/TARGET, only read) and the inputs earlier runs
# found (BUILD_DIR/tests/fuzz/work-TARGET/corpus). Exit 0: nothing found;
# 1: a crash, leak or sanitizer report (the input is saved in the work
# folder as crash-*, leak-*, timeout-* or oom-*; rerun it with
# `BUILD_DIR/tests/fuzz/fuzz_TARGET FILE`); 77: the target is not built
# (no clang with libFuzzer). BUILD_DIR defaults to build.
set -eu
[ $# -ge 2 ] || { echo "usage: tools/dev/fuzz.sh TARGET SECONDS [BUILD_DIR]" >&2; exit 2; }
target=$1
seconds=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${3:-$root/build}
bin=$build/tests/fuzz/fuzz_$target
seeds=$root/tests/fuzz/corpus/$target
[ -d "$seeds" ] || { echo "fuzz: no target $target (no $seeds)" >&2; exit 2; }
if [ ! -x "$bin" ]; then
    cmake --build "$build" --target "fuzz_${target}_build" >/dev/null 2>&1 || true
fi
if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not built (needs clang with libFuzzer): skipped"
    exit 77
fi
work=$build/tests/fuzz/work-$target
mkdir -p "$work/corpus"
status=0
"$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus" "$seeds" || status=$?
if [ "$status" -ne 0 ]; then
    echo "fuzz: $target found a failing input (exit $status); see $work/" >&2
    exit 1
fi
echo "fuzz: $target: $seconds s, nothing found"
