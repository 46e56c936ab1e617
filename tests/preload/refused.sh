#!/bin/sh
# refused.sh PROGRAM: calls the driver refuses (refused.c), without and
# with the shim. Both runs exit 0 with identical transcripts; the shim
# run's exit summary and run log count and record the good copies only:
# three cross-GPU copies, 16384 bytes, all upgraded, and no decision of a
# size the driver refused.
set -u
prog=$1
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-refused.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

LD_PRELOAD="${PL_WITHOUT:-}" "$prog" noshim >"$dir/without.out" 2>"$dir/without.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "the run without the shim exited $rc"; cat "$dir/without.err"; }
LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" P2PSHIM_LOG=info \
    P2PSHIM_RUN_LOG="$dir/run.jsonl" "$prog" shim >"$dir/with.out" 2>"$dir/with.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "the run with the shim exited $rc"; cat "$dir/with.err"; }
[ -s "$dir/without.out" ] || bad "empty transcript"
if ! cmp -s "$dir/without.out" "$dir/with.out"; then
    bad "transcripts differ (< without the shim, > with it):"
    diff "$dir/without.out" "$dir/with.out"
fi
want="summary total copies=3 upgraded=3 passed=0 bytes=16384 upgraded_bytes=16384 "
grep -qF -- "$want" "$dir/with.err" || bad "no '$want' in the exit summary"
# The local copies (the program's fills and checks) add up to a few
# buffers' worth, not to a refused SIZE_MAX.
grep -Eq -- "summary local copies=[0-9]+ bytes=[0-9]{1,7} " "$dir/with.err" ||
    bad "the local bytes are not those of the program's own copies"
n=$(grep -c '"type":"decision"' "$dir/run.jsonl" 2>/dev/null)
up=$(grep '"type":"decision"' "$dir/run.jsonl" | grep -c '"reason":"upgraded"\|"reason":"shim-access"')
# Sizes of the refused calls: SIZE_MAX and the like, and one byte past
# the 16 KiB buffers.
big=$(grep '"type":"decision"' "$dir/run.jsonl" | grep -Ec '"bytes":([0-9]{6,}|16385)')
[ "${up:-0}" -eq 3 ] || bad "$up upgraded decisions in the run log, expected 3"
[ "${big:-0}" -eq 0 ] || bad "$big decisions of a size the driver refused"
# Every cuMemcpy of the program is one the driver refuses.
unified=$(grep -c '"api":"cuMemcpy"' "$dir/run.jsonl")
[ "${unified:-0}" -eq 0 ] || bad "$unified decisions of a refused cuMemcpy"
[ "${n:-0}" -gt 3 ] || bad "only $n decision lines: the program's own host copies are missing"
if [ "$fail" -ne 0 ]; then
    echo "---- stderr of the shim run ----"; cat "$dir/with.err"
else
    echo "transcripts identical ($(wc -l <"$dir/with.out") lines); $n decisions, $up upgraded"
fi
exit "$fail"
