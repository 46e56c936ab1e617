#!/bin/sh
# compare_runs.sh: runs a program without and then with the shim and
# requires the same exit status and the same standard output (the
# program's transcript). Standard error may differ (the shim logs there).
#
#   compare_runs.sh --name NAME --preload LD_PRELOAD_VALUE --workdir DIR
#                   [--require summary|upgraded] -- PROGRAM [ARGS...]
#
# --require summary: the shim's run must have written its
#   "p2pshim: summary total" line (proof that it was loaded and ran);
# --require upgraded: and that line must show upgraded>=1, unless the
#   program's transcript says "two-GPU part skipped" (one GPU: nothing
#   crosses GPUs to upgrade; the summary is still required).
# The shim's run gets P2PSHIM_LOG=info and P2PSHIM_LOG_FILE=DIR/NAME.shim.%p.log.
# Exit: 0 same, 1 different or a run failed, 77 the program skipped (77)
# without the shim.
set -u
name= preload= workdir= require=
while [ $# -gt 0 ]; do
    case "$1" in
    --name) name=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --require) require=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "compare_runs.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$name" ] || [ -z "$preload" ] || [ -z "$workdir" ] || [ $# -eq 0 ]; then
    echo "compare_runs.sh: need --name, --preload, --workdir and a program" >&2
    exit 2
fi
mkdir -p "$workdir" || exit 1
base="$workdir/$name"
rm -f "$base".noshim.out "$base".noshim.err "$base".shim.out "$base".shim.err \
      "$base".shim.*.log

env -u LD_PRELOAD "$@" >"$base.noshim.out" 2>"$base.noshim.err"
rc_plain=$?
if [ "$rc_plain" -eq 77 ]; then
    cat "$base.noshim.out"
    echo "compare_runs.sh: $name skipped (exit 77 without the shim)"
    exit 77
fi
env LD_PRELOAD="$preload" P2PSHIM_LOG=info P2PSHIM_LOG_FILE="$base.shim.%p.log" \
    "$@" >"$base.shim.out" 2>"$base.shim.err"
rc_shim=$?

echo "== $name without the shim (exit $rc_plain): $base.noshim.out"
cat "$base.noshim.out"
fail=0
if [ "$rc_plain" -ne 0 ]; then
    echo "FAIL: $name failed without the shim (exit $rc_plain); stderr:"
    cat "$base.noshim.err"
    fail=1
fi
if [ "$rc_shim" -ne "$rc_plain" ]; then
    echo "FAIL: exit status without the shim $rc_plain, with the shim $rc_shim; stderr with:"
    cat "$base.shim.err"
    fail=1
fi
if ! cmp -s "$base.noshim.out" "$base.shim.out"; then
    echo "FAIL: the transcripts differ (- without the shim, + with it):"
    diff -u "$base.noshim.out" "$base.shim.out"
    fail=1
else
    echo "== with the shim: identical transcript"
fi

# The shim's summary, from its log file(s), else from stderr.
summary=$(cat "$base".shim.*.log "$base.shim.err" 2>/dev/null |
          grep 'p2pshim: summary' || true)
[ -n "$summary" ] && { echo "== shim summary:"; echo "$summary"; }
if [ "$require" = upgraded ] && grep -q 'two-GPU part skipped' "$base.noshim.out"; then
    echo "== one GPU: the program skipped its cross-GPU part, so no upgrade is required"
    require=summary
fi
if [ -n "$require" ]; then
    total=$(echo "$summary" | grep 'summary total' | tail -n 1)
    if [ -z "$total" ]; then
        echo "FAIL: the shim wrote no 'p2pshim: summary total' line: was it loaded?"
        echo "      (log files: $base.shim.*.log; stderr: $base.shim.err)"
        fail=1
    elif [ "$require" = upgraded ]; then
        up=$(echo "$total" | sed -n 's/.* upgraded=\([0-9][0-9]*\).*/\1/p')
        if [ -z "$up" ] || [ "$up" -lt 1 ]; then
            echo "FAIL: the shim upgraded no copy (wanted at least one): $total"
            fail=1
        fi
    fi
fi
exit $fail
