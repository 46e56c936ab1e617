#!/bin/sh
# compare.sh PROGRAM [ARGS...]
# Runs PROGRAM twice, "noshim" without the shim (LD_PRELOAD=$PL_WITHOUT,
# empty or the sanitizer runtime) and "shim" with it (LD_PRELOAD=$PL_WITH).
# Both runs must exit 0 (the program asserts paths itself) and their
# transcripts (stdout) must be byte-identical: the shim is invisible.
set -u
prog=$1
shift
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-compare.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

LD_PRELOAD="${PL_WITHOUT:-}" "$prog" noshim "$@" >"$dir/without.out" 2>"$dir/without.err"
rc0=$?
LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" "$prog" shim "$@" >"$dir/with.out" 2>"$dir/with.err"
rc1=$?
fail=0
if [ "$rc0" -ne 0 ]; then
    echo "FAIL: the run without the shim exited $rc0"; cat "$dir/without.err"; fail=1
fi
if [ "$rc1" -ne 0 ]; then
    echo "FAIL: the run with the shim exited $rc1"; cat "$dir/with.err"; fail=1
fi
if [ ! -s "$dir/without.out" ]; then
    echo "FAIL: empty transcript"; fail=1
fi
if ! cmp -s "$dir/without.out" "$dir/with.out"; then
    echo "FAIL: transcripts differ (< without the shim, > with it):"
    diff "$dir/without.out" "$dir/with.out"
    fail=1
fi
if [ "$fail" -eq 0 ]; then
    echo "transcripts identical ($(wc -l <"$dir/with.out") lines)"
fi
exit "$fail"
