#!/bin/sh
# readme_config.sh README PROGRAM
# The README's Configuration table against the shim's table of variables,
# which PROGRAM prints (print_config_table.c): the same variables in the
# same order, each with the same default. Fails on a variable in one and
# not the other, or on a default that differs.
set -u
readme=$1
prog=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/readme-config.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# Rows of the table under "## Configuration" that name a P2PSHIM_ variable:
# the first cell without backquotes, the last cell as written.
awk -F'|' '
    /^## / { in_table = ($0 == "## Configuration"); next }
    in_table && /^\| *`?P2PSHIM_/ {
        name = $2; def = $(NF - 1)
        gsub(/^ +| +$|`/, "", name); gsub(/^ +| +$/, "", def)
        print name "\t" def
    }' "$readme" >"$dir/readme"
"$prog" >"$dir/table" || { echo "FAIL: $prog exited $?"; exit 1; }

if [ ! -s "$dir/readme" ]; then
    echo "FAIL: no P2PSHIM_ rows under '## Configuration' in $readme"; exit 1
fi
if ! diff -u "$dir/readme" "$dir/table" >"$dir/diff"; then
    echo "FAIL: the README's Configuration table (-) and the shim's table (+) differ:"
    cat "$dir/diff"
    exit 1
fi
echo "readme_config: $(wc -l <"$dir/table") variables, names and defaults agree"
