#!/bin/sh
# cold_lines.sh BUILD SHIM: the shim's memory lines per device-to-host copy
# made with cold caches (tools/hookbench/coldlines.sh) stay within budget:
# a copy below the bounce minimum, and a 1 MiB bounce candidate (pinned and
# pageable), whose path once scanned every remembered copy (62 lines; 29
# since). Each line is a cache miss the program pays for right after it
# allocates a host buffer. Skips (77) without valgrind.
set -u
out=$(sh "$(dirname "$0")/../../tools/hookbench/coldlines.sh" "$1" "$2")
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit $rc
echo "$out" | awk '
    /^ +[0-9]+ B / {
        budget = ($1 >= 1048576) ? 40 : 24
        lines = $4 + 0
        printf "footprint: cold copy %s B %s: %.1f data lines (budget %d)\n", $1, $3, lines, budget
        seen++
        if (lines > budget) bad++
    }
    END {
        if (seen != 3) { print "cold_lines: expected 3 figures, got " seen + 0; exit 1 }
        exit bad ? 1 : 0
    }'
