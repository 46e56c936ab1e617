#!/bin/sh
# readme_config.sh DOC PROGRAM
# The variables table of docs/CONFIGURATION.md (DOC; it was the README's)
# against the shim's table of variables, which PROGRAM prints
# (print_config_table.c): the same variables in the
# same order, each with the same default. Fails on a variable in one and
# not the other, or on a default that differs.
set -u
readme=$1
prog=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/readme-config.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# Rows of the table under "## Variables of the shim" that name a P2PSHIM_
# variable: the first cell without backquotes, the last cell as written.
awk -F'|' '
    /^## / { in_table = ($0 == "## Variables of the shim"); next }
    in_table && /^\| *`?P2PSHIM_/ {
        name = $2; def = $(NF - 1)
        gsub(/^ +| +$|`/, "", name); gsub(/^ +| +$/, "", def)
        print name "\t" def
    }' "$readme" >"$dir/readme"
"$prog" >"$dir/table" || { echo "FAIL: $prog exited $?"; exit 1; }

if [ ! -s "$dir/readme" ]; then
    echo "FAIL: no P2PSHIM_ rows under '## Variables of the shim' in $readme"; exit 1
fi
if ! diff -u "$dir/readme" "$dir/table" >"$dir/diff"; then
    echo "FAIL: the table of $readme (-) and the shim's table (+) differ:"
    cat "$dir/diff"
    exit 1
fi
echo "readme_config: $(wc -l <"$dir/table") variables, names and defaults agree"
