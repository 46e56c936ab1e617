#!/bin/sh
# readme_commands.sh README SRC DEMO STANDIN CMAKE CI_RUN
# The shell blocks of the README run as a user would type them, in order,
# in one fresh folder: the build block builds SRC (the source tree) and
# installs it, the blocks after it run that install on the stand-in driver
# (STANDIN: the folder of its libcuda.so.1). Two words are rewritten, so
# that nothing is written outside that folder: `-S .` names SRC, and
# /opt/p2pshim is the folder's opt/p2pshim, whose bin/ is first on PATH.
# `./your_program` there is DEMO (p2pdemo, a CUDA program that checks its
# bytes), with small copies; CMAKE's folder is first on PATH.
#
# Every fenced block of the README is marked on the line before it:
#   <!-- ci: run -->         run here; fails on a non-zero exit, on a
#                            `./your_program` whose bytes were not verified,
#                            and on a file named by -o, --log or --report
#                            that is missing or empty afterwards
#   <!-- ci: skip NAME -->   not run here; NAME must be one of the skips
#                            below, each with the reason and what covers it
# An unmarked block, or a skip this script does not know, fails the test,
# and so does a page of docs/ that the README's index does not link.
set -u
readme=$1 src=$2 demo=$3 standin=$4 cmake=$5 ci_run=$6
dir=$(mktemp -d "${TMPDIR:-/tmp}/readme-cmds.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# skip_reason NAME: why block NAME is not run, or nothing for an unknown one.
skip_reason() {
    case $1 in
    demo) echo "it builds into build/ of the source tree, which may be a" \
        "developer's own; demo.standin.noshim and demo.standin.shim run its" \
        "p2pdemo without and with the shim" ;;
    test-command) echo "it is CI itself (.ci/run), which runs this ctest;" \
        "checked here: .ci/run runs this exact line" ;;
    jobs) echo "needs torchrun and mpirun; launcher.job-tree and" \
        "launcher.job-ranks run the same recipes with stand-in launchers" ;;
    esac
}

# The blocks, one file each: $dir/block.N holds the body, $dir/mark.N the
# mark ("run", "skip NAME", or "none").
awk -v dir="$dir" '
    /^```/ {
        if (!inside) {
            n++; inside = 1
            mark = "none"
            if (prev ~ /^<!-- ci: (run|skip [a-z-]+) -->$/) {
                mark = prev; sub(/^<!-- ci: /, "", mark); sub(/ -->$/, "", mark)
            }
            print mark > (dir "/mark." n); printf "" > (dir "/block." n)
            next
        }
        inside = 0; prev = $0; next
    }
    inside { print > (dir "/block." n); next }
    { prev = $0 }
    END { print n + 0 > (dir "/count") }' "$readme"
count=$(cat "$dir/count")
[ "$count" -gt 0 ] || { echo "FAIL: no fenced block in $readme"; exit 1; }

# The folder the blocks run in.
prefix=$dir/opt/p2pshim
mkdir -p "$dir/work" "$dir/home"
printf '#!/bin/sh\nexec "%s" 4 3 "$@"\n' "$demo" >"$dir/work/your_program"
chmod +x "$dir/work/your_program"

ran=0 skipped=0 i=1
while [ "$i" -le "$count" ]; do
    mark=$(cat "$dir/mark.$i")
    first=$(grep -m1 . "$dir/block.$i")
    case $mark in
    run)
        out=$dir/out.$i
        sed -e "s|-S \\. |-S $src |g" -e "s|/opt/p2pshim|$prefix|g" "$dir/block.$i" \
            >"$dir/run.$i"
        (cd "$dir/work" &&
            env PATH="$prefix/bin:$(dirname "$cmake"):$PATH" HOME="$dir/home" \
                XDG_CACHE_HOME="$dir/home/.cache" LD_LIBRARY_PATH="$standin" \
                bash -eu -o pipefail "$dir/run.$i") >"$out" 2>&1
        rc=$?
        [ "$rc" -eq 0 ] || bad "block $i ($first) exited $rc"
        runs=$(grep -cE '(^|[ =])\./your_program( |$)' "$dir/block.$i")
        verified=$(grep -c 'bytes verified' "$out")
        [ "$runs" -eq "$verified" ] ||
            bad "block $i: $runs runs of ./your_program, $verified with their bytes verified"
        for f in $(grep -oE -- '(-o|--log|--report) [^ ]+' "$dir/block.$i" | cut -d' ' -f2); do
            [ -s "$dir/work/$f" ] || bad "block $i: $f missing or empty"
        done
        [ "$fail" -eq 0 ] || { echo "--- block $i:"; cat "$dir/block.$i"; echo "--- output:"; cat "$out"; }
        echo "ran block $i: $first ($runs runs of the program)"
        ran=$((ran + 1)) ;;
    "skip "*)
        name=${mark#skip }
        why=$(skip_reason "$name")
        if [ -z "$why" ]; then
            bad "block $i ($first): unknown skip '$name'"
        else
            echo "skipped block $i ($name: $first): $why"
            skipped=$((skipped + 1))
        fi
        if [ "$name" = test-command ]; then
            line=$(grep -m1 . "$dir/block.$i")
            grep -qxF "$line" "$ci_run" || bad "the README's test command '$line' is not what $ci_run runs"
        fi ;;
    *) bad "block $i ($first) has no <!-- ci: run --> or <!-- ci: skip NAME --> line before it" ;;
    esac
    i=$((i + 1))
done
[ "$ran" -gt 0 ] || bad "no block marked to run"

# The README's index of docs/ names every page there.
for page in "$src"/docs/*.md; do
    grep -qF "(docs/${page##*/})" "$readme" || bad "the README's index lacks docs/${page##*/}"
done
echo "readme_commands: $ran blocks ran, $skipped skipped, of $count"
exit "$fail"
