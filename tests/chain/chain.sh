#!/bin/sh
# chain.sh ARRANGEMENT PROGRAM
# The shim in a chain with other tools: the test doubles chain_tool (a
# profiler loaded by the driver through CUDA_INJECTION64_PATH) and
# chain_intr (an LD_PRELOAD interposer hooking dlsym and cuGetProcAddress).
#   inject        the injected tool
#   before        the interposer before the shim in LD_PRELOAD
#   after         the interposer after the shim
#   inject_before, inject_after: both
# Three runs: the shim alone; the arrangement without the shim; the
# arrangement with it. Every run checks its bytes and (program) each
# double's wrappers called once per call. The shim's exit summary
# (P2PSHIM_LOG=info "summary" lines) must be the same alone and in the
# chain, and must have seen the copies.
# Env: CH_SHIM, CH_TOOL, CH_INTR (library paths), CH_RT (a sanitizer
# runtime to preload first, or empty).
set -u
arr=$1
prog=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/chain.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

join() { # the non-empty arguments, joined with ':'
    out=""
    for x in "$@"; do
        [ -n "$x" ] && out="${out:+$out:}$x"
    done
    printf '%s' "$out"
}

inject="" before="" after=""
case "$arr" in
    inject) inject=$CH_TOOL ;;
    before) before=$CH_INTR ;;
    after) after=$CH_INTR ;;
    inject_before) inject=$CH_TOOL before=$CH_INTR ;;
    inject_after) inject=$CH_TOOL after=$CH_INTR ;;
    *) echo "chain.sh: unknown arrangement $arr"; exit 2 ;;
esac
intr=$before$after

# run NAME PRELOAD INJECT INTR: runs the program, keeps its output and the
# shim's summary lines.
run() {
    CUDA_INJECTION64_PATH=$3 CHAIN_INTR=$4 P2PSHIM_LOG=info LD_PRELOAD=$2 \
        "$prog" >"$dir/$1.out" 2>"$dir/$1.err"
    rc=$?
    # Without the identity (host:pid): runs have different pids.
    grep -E '^[^ :]+:[0-9]+ (r[^ ]+ )?p2pshim: summary' "$dir/$1.err" |
        sed -E 's/^[^ :]+:[0-9]+ (r[^ ]+ )?//' >"$dir/$1.summary"
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: run '$1' exited $rc"; cat "$dir/$1.out" "$dir/$1.err"; fail=1
    fi
}

fail=0
run alone "$(join "${CH_RT:-}" "$CH_SHIM")" "" ""
run without "$(join "${CH_RT:-}" "$intr")" "$inject" "$intr"
run with "$(join "${CH_RT:-}" "$before" "$CH_SHIM" "$after")" "$inject" "$intr"

if ! grep -q 'summary total copies=[1-9]' "$dir/alone.summary"; then
    echo "FAIL: the shim alone saw no cross-device copy"; cat "$dir/alone.err"; fail=1
fi
if ! cmp -s "$dir/alone.summary" "$dir/with.summary"; then
    echo "FAIL: the shim's counts differ in the chain (< alone, > with $arr):"
    diff "$dir/alone.summary" "$dir/with.summary"; fail=1
fi
if [ -s "$dir/without.summary" ]; then
    echo "FAIL: a shim summary without the shim"; fail=1
fi
if ! cmp -s "$dir/without.out" "$dir/with.out"; then
    echo "FAIL: the doubles' counts differ with the shim (< without, > with):"
    diff "$dir/without.out" "$dir/with.out"; fail=1
fi
[ "$fail" -eq 0 ] && { echo "$arr: counts and bytes as without the other tools"; cat "$dir/with.summary"; }
exit "$fail"
