#!/bin/sh
# nocuda.sh: item 10. A program that never touches CUDA is untouched by the
# shim: the same stdout byte for byte, an empty stderr, and no file created
# even with P2PSHIM_LOG_FILE (and a chatty P2PSHIM_LOG) set.
# LD_PRELOAD=$PL_WITH puts the shim in; $PL_WITHOUT is the baseline (empty,
# or the sanitizer runtime the shim needs before it).
set -u
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-nocuda.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/logs"
fail=0
with() {
    env LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" P2PSHIM_LOG=debug \
        P2PSHIM_DUMP_CONFIG=1 "P2PSHIM_LOG_FILE=$dir/logs/shim-%p.log" "$@"
}
without() { env LD_PRELOAD="${PL_WITHOUT:-}" "$@"; }

# A sanitizer runtime preloaded alone must leave ls and sh working, or
# there is no baseline to compare with (TSan's does not): skip.
if ! without sh -c true >/dev/null 2>&1 || ! without ls /usr >/dev/null 2>&1; then
    echo "nocuda: skipped: LD_PRELOAD=$PL_WITHOUT alone breaks sh or ls"
    exit 77
fi

check() { # name, command...
    name=$1
    shift
    # ls -la shows directory times, which other tests may touch (/tmp
    # changes all the time while tests run in parallel: it is not listed):
    # a run with the shim must equal the run before or after it (three
    # tries).
    for try in 1 2 3; do
        without "$@" >"$dir/a.out" 2>"$dir/a.err"; ra=$?
        with "$@" >"$dir/w.out" 2>"$dir/w.err"; rw=$?
        without "$@" >"$dir/b.out" 2>"$dir/b.err"
        if cmp -s "$dir/a.out" "$dir/w.out" || cmp -s "$dir/b.out" "$dir/w.out"; then
            break
        fi
    done
    if [ "$ra" -ne "$rw" ]; then
        echo "FAIL: $name: exit $rw with the shim, $ra without"; fail=1
    fi
    if ! cmp -s "$dir/a.out" "$dir/w.out" && ! cmp -s "$dir/b.out" "$dir/w.out"; then
        echo "FAIL: $name: stdout differs with the shim:"
        diff "$dir/a.out" "$dir/w.out"; fail=1
    fi
    if [ -s "$dir/w.err" ] || [ -s "$dir/a.err" ]; then
        echo "FAIL: $name: stderr not empty:"; cat "$dir/a.err" "$dir/w.err"; fail=1
    fi
    if [ ! -s "$dir/w.out" ]; then
        echo "FAIL: $name: no output at all"; fail=1
    fi
}
check "ls -la /usr" ls -la /usr
check "sh -c 'echo hi'" sh -c 'echo hi'
if [ -n "$(ls -A "$dir/logs")" ]; then
    echo "FAIL: files created: $(ls -A "$dir/logs")"; fail=1
fi
[ "$fail" -eq 0 ] && echo "nocuda: untouched"
exit "$fail"
