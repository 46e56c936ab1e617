#!/bin/sh
# under_tool.sh TOOL SHIM PROGRAM [ARGS...]  (SHIM: the LD_PRELOAD value with the shim)
# A program under a profiler or a sanitizer, with and without the shim.
#   TOOL: ncu | memcheck | racecheck | initcheck
# Runs: the program with the shim alone; under the tool without the shim;
# under the tool with the shim (LD_PRELOAD=SHIM, P2PSHIM_LOG=info, the
# shim's lines in per-process log files). Requires:
#   - every run exits 0 and prints the same transcript (checksums);
#   - the shim's summary lines under the tool equal those without it (the
#     tool does not take the copies away from the shim);
#   - the tool's summary lines (ERROR / LEAK / RACECHECK SUMMARY, or ncu's
#     "==PROF==" errors) are the same with and without the shim.
# Exit 77 (skipped) when the tool or a GPU is missing.
set -u
tool=$1 shim=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/under_tool.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

find_tool() {
    command -v "$1" 2>/dev/null && return 0
    [ -x "/usr/local/cuda/bin/$1" ] && { echo "/usr/local/cuda/bin/$1"; return 0; }
    return 1
}
case "$tool" in
    ncu) bin=$(find_tool ncu) || { echo "ncu not found: skipped"; exit 77; }
         opts="--target-processes all --clock-control none -c 5" ;;
    memcheck) bin=$(find_tool compute-sanitizer) ||
                  { echo "compute-sanitizer not found: skipped"; exit 77; }
         opts="--tool memcheck --leak-check full --error-exitcode 0" ;;
    racecheck|initcheck) bin=$(find_tool compute-sanitizer) ||
                  { echo "compute-sanitizer not found: skipped"; exit 77; }
         opts="--tool $tool --error-exitcode 0" ;;
    *) echo "under_tool.sh: unknown tool $tool" >&2; exit 2 ;;
esac

# ncu prints its report on the program's stdout: it goes to a file of its
# own, so that the program's transcript can be compared.
tool_log() { [ "$tool" = ncu ] && echo "--log-file $dir/$1.tool.log"; }

run() { # NAME PRELOAD CMD...: output in NAME.out/.err, shim lines in NAME.summary
    name=$1 pre=$2
    shift 2
    env LD_PRELOAD="$pre" P2PSHIM_LOG=info P2PSHIM_LOG_FILE="$dir/$name.%p.log" \
        "$@" >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
    cat "$dir/$name".*.log 2>/dev/null | grep 'summary' | sed 's/^.*p2pshim: //' \
        | sed -E 's/ handler_us(_per_snap)?=[0-9.]+//g' | sort \
        >"$dir/$name.summary"
    return $rc
}

run alone "$shim" "$@"
rc=$?
if [ "$rc" -eq 77 ]; then cat "$dir/alone.out"; exit 77; fi
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: the program with the shim exited $rc"; cat "$dir/alone.err"; fail=1; }
# shellcheck disable=SC2086
run plain "" "$bin" $opts $(tool_log plain) "$@" ||
    { echo "FAIL: $tool without the shim exited $?"; tail -40 "$dir/plain.err"; fail=1; }
# shellcheck disable=SC2086
run shim "$shim" "$bin" $opts $(tool_log shim) "$@" ||
    { echo "FAIL: $tool with the shim exited $?"; tail -40 "$dir/shim.err"; fail=1; }

# The program's transcript: its own lines (the tools prefix theirs "==").
for n in alone plain shim; do
    grep -v '^==' "$dir/$n.out" >"$dir/$n.transcript"
done
cat "$dir/plain.transcript"
for n in plain shim; do
    cmp -s "$dir/alone.transcript" "$dir/$n.transcript" ||
        { echo "FAIL: transcript differs ($n):"; diff "$dir/alone.transcript" "$dir/$n.transcript"; fail=1; }
done
grep -q 'summary total' "$dir/alone.summary" ||
    { echo "FAIL: no shim summary from the run with the shim alone"; fail=1; }
if ! cmp -s "$dir/alone.summary" "$dir/shim.summary"; then
    echo "FAIL: the shim's counts under $tool differ (< alone, > under $tool):"
    diff "$dir/alone.summary" "$dir/shim.summary"; fail=1
else
    echo "shim counts, alone and under $tool:"; cat "$dir/shim.summary"
fi
# The tool's verdict, with and without the shim.
for n in plain shim; do
    cat "$dir/$n.out" "$dir/$n.err" "$dir/$n.tool.log" 2>/dev/null |
        grep -E '(ERROR|LEAK|RACECHECK|INITCHECK) SUMMARY|==PROF== Error|==ERROR==' |
        sed 's/^=* *[0-9]* *=* *//' >"$dir/$n.verdict"
done
if ! cmp -s "$dir/plain.verdict" "$dir/shim.verdict"; then
    echo "FAIL: $tool reports differently with the shim (< without, > with):"
    diff "$dir/plain.verdict" "$dir/shim.verdict"
    echo "-- $tool's output with the shim:"; grep -E '^=' "$dir/shim.out" "$dir/shim.err" | head -60
    fail=1
else
    echo "$tool's verdict, with and without the shim:"; cat "$dir/shim.verdict"
fi
exit "$fail"
