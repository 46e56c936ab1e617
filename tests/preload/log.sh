#!/bin/sh
# log.sh PROGRAM SCENARIO [REGEX...]
# Runs "PROGRAM shim SCENARIO" with the shim (LD_PRELOAD=$PL_WITH); it must
# exit 0, and its stderr (where the shim logs) must hold a line matching
# each extended REGEX.
set -u
prog=$1
scenario=$2
shift 2
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-log.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" "$prog" shim "$scenario" \
    >"$dir/out" 2>"$dir/err"
rc=$?
cat "$dir/out"
fail=0
if [ "$rc" -ne 0 ]; then
    echo "FAIL: $scenario exited $rc"; fail=1
fi
for re in "$@"; do
    if ! grep -Eq -- "$re" "$dir/err"; then
        echo "FAIL: no log line matches: $re"; fail=1
    fi
done
if [ "$fail" -ne 0 ]; then
    echo "---- stderr ----"; cat "$dir/err"
fi
exit "$fail"
