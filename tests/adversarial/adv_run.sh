#!/bin/sh
# adv_run.sh PROGRAM CASE [ARG...]
# Runs "PROGRAM noshim CASE ARG..." without the shim (LD_PRELOAD=$PL_WITHOUT:
# empty, or the sanitizer runtime) and "PROGRAM shim CASE ARG..." with it
# (LD_PRELOAD=$PL_WITH), each in an empty folder of its own (ADV_TMP) and
# bounded by ADV_RUN_TIMEOUT seconds (20). Passes when both exit the same
# way, the run without the shim exits 0, and their transcripts (stdout) are
# byte for byte the same. Both exiting 77: the case's system refuses what it
# needs; the test is skipped (exit 77). Each failure says how: a hang, a
# crash, another exit, or the lines that differ.
set -u
prog=$1
shift
limit=${ADV_RUN_TIMEOUT:-20}
ulimit -c 0 2>/dev/null
dir=$(mktemp -d "${TMPDIR:-/tmp}/adv.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# run NAME PRELOAD MODE ARG...: stdout, stderr and the status in
# $dir/NAME.*. The preload goes on the program only (env), never on
# timeout or this shell.
run() {
    name=$1 pre=$2 mode=$3
    shift 3
    mkdir "$dir/$name.tmp"
    ADV_TMP="$dir/$name.tmp" ADV_PRELOAD_PLAIN="${PL_WITHOUT:-}" \
        timeout -k 5 "$limit" env LD_PRELOAD="$pre" "$prog" "$mode" "$@" \
        >"$dir/$name.out" 2>"$dir/$name.err" </dev/null
    echo $? >"$dir/$name.rc"
}

# how RC: the way a run ended, in words (timeout: 124 after TERM, 137 when
# it had to KILL; 128+N a signal).
how() {
    case $1 in
    0) echo "exit 0" ;;
    124 | 137) echo "hang" ;;
    *) if [ "$1" -gt 128 ]; then echo "signal $(kill -l $(($1 - 128)) 2>/dev/null || echo $(($1 - 128)))"
       else echo "exit $1"; fi ;;
    esac
}

case_args="$*"
run without "${PL_WITHOUT:-}" noshim "$@"
run with "${PL_WITH:?PL_WITH must name the shim}" shim "$@"
rc0=$(cat "$dir/without.rc")
rc1=$(cat "$dir/with.rc")
how0=$(how "$rc0")
how1=$(how "$rc1")

if [ "$rc0" -eq 77 ] && [ "$rc1" -eq 77 ]; then
    echo "SKIP: $case_args: $(tail -n 1 "$dir/without.err")"
    exit 77
fi
fail=0
say_err() { # NAME: the run's stderr, last lines
    echo "---- stderr of the run $1 the shim ----"
    tail -n 40 "$dir/$1.err"
}
if [ "$how0" = hang ]; then
    echo "FAIL: the run without the shim hung: no exit within $limit s"; fail=1
elif [ "$rc0" -ne 0 ]; then
    echo "FAIL: the run without the shim ended with $how0 (the case is broken)"; fail=1
fi
if [ "$how1" = hang ]; then
    echo "FAIL: the run with the shim hung: no exit within $limit s (killed)"; fail=1
elif [ "$how1" != "$how0" ]; then
    echo "FAIL: the run with the shim ended with $how1, without it with $how0"; fail=1
fi
if ! cmp -s "$dir/without.out" "$dir/with.out"; then
    echo "FAIL: transcripts differ (< without the shim, > with it):"
    diff "$dir/without.out" "$dir/with.out" | head -n 60
    fail=1
elif [ ! -s "$dir/without.out" ]; then
    echo "FAIL: empty transcript"; fail=1
fi
if [ "$fail" -ne 0 ]; then
    say_err without
    say_err with
    exit 1
fi
echo "same transcript ($(wc -l <"$dir/with.out") lines), both $how0"
cat "$dir/with.out"
exit 0
