#!/bin/sh
# summary_bounds.sh PROGRAM ARGS... -- CHECK...
# Runs "PROGRAM shim ARGS..." with the shim (LD_PRELOAD=$PL_WITH) at
# P2PSHIM_LOG=info; it must exit 0, and its "summary bounce" line must
# satisfy every CHECK: NAME=VALUE (equal) or NAME<=VALUE (at most), where
# NAME is a counter of that line (its number before any decimal point).
set -u
prog=$1
shift
args=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    args="$args $1"
    shift
done
[ $# -gt 0 ] && shift
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-bounds.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
# shellcheck disable=SC2086
P2PSHIM_LOG=info LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" "$prog" shim $args \
    >"$dir/out" 2>"$dir/err"
rc=$?
fail=0
if [ "$rc" -ne 0 ]; then
    echo "FAIL: the run exited $rc"; cat "$dir/out"; fail=1
fi
line=$(grep 'summary bounce candidates=' "$dir/err" | tail -1)
if [ -z "$line" ]; then
    echo "FAIL: no summary bounce line"; fail=1
fi
for check in "$@"; do
    case $check in
        *'<='*) name=${check%%<=*}; limit=${check#*<=}; op=le ;;
        *=*) name=${check%%=*}; limit=${check#*=}; op=eq ;;
        *) echo "FAIL: bad check '$check'"; fail=1; continue ;;
    esac
    value=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$name=\([0-9]*\).*/\1/p")
    if [ -z "$value" ]; then
        echo "FAIL: $name is not in the summary line"; fail=1
    elif [ "$op" = le ] && [ "$value" -gt "$limit" ]; then
        echo "FAIL: $name=$value, at most $limit"; fail=1
    elif [ "$op" = eq ] && [ "$value" -ne "$limit" ]; then
        echo "FAIL: $name=$value, expected $limit"; fail=1
    else
        echo "ok: $name=$value ($check)"
    fi
done
if [ "$fail" -ne 0 ]; then
    echo "---- stderr ----"; cat "$dir/err"
fi
exit "$fail"
