#!/bin/sh
# footprint.sh CASE PROBE [LIB]: what the shim costs a process it cannot
# help, measured by fp_probe with the shim ($FP_WITH in LD_PRELOAD) and
# without it, each figure printed ("footprint: ...") and checked against
# the budget (docs/FOOTPRINT.md).
set -u
case_name=$1
probe=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/fp.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
with() { env LD_PRELOAD="${FP_WITH:?FP_WITH must name the shim}" "$@"; }
bad() { echo "FAIL: $*"; fail=1; }
val() { sed -n "s/^$1=//p" "$2" | head -n 1; }
# within NAME FIGURE LIMIT: prints the figure, fails above the limit
within() {
    echo "footprint: $1 = $2 (budget $3)"
    case "$2" in ''|*[!0-9-]*) bad "$1: no figure"; return ;; esac
    [ "$2" -le "$3" ] || bad "$1: $2 is over the budget of $3"
}
# runs: with.out/without.out, and checks the shim was (not) in front
both() {
    with "$probe" "$@" >"$dir/with.out" 2>"$dir/with.err" || bad "with the shim: exit $?"
    "$probe" "$@" >"$dir/without.out" 2>"$dir/without.err" || bad "without the shim: exit $?"
    [ "$(val shim "$dir/with.out")" = 1 ] || bad "the shim was not loaded"
    [ "$(val shim "$dir/without.out")" = 0 ] || bad "the shim was loaded without LD_PRELOAD"
}

case "$case_name" in
tls)
    "$probe" tls "$3" >"$dir/out" || bad "probe: exit $?"
    within "static TLS per thread (bytes)" "$(val static_tls_bytes "$dir/out")" 256 ;;
stack64k)
    both stack64k
    echo "footprint: thread with a 64 KiB stack: $(val stack64k "$dir/with.out") with the shim, $(val stack64k "$dir/without.out") without"
    [ "$(val stack64k "$dir/with.out")" = ok ] || bad "64 KiB-stack thread under the shim"
    [ "$(val stack64k "$dir/without.out")" = ok ] || bad "64 KiB-stack thread without the shim" ;;
rss)
    # Three runs each, the smallest figure of each: page-cache and
    # allocator noise only ever adds. Default settings (host bounces on):
    # the one-device round trip makes no bounce prediction, so it must
    # cost nothing of a bounce.
    for i in 1 2 3; do
        both rss
        for f in with without; do
            for k in rss_before_kib rss_after_kib; do
                echo "$f.$k $(val $k "$dir/$f.out")" >>"$dir/all"
            done
        done
    done
    min() { awk -v k="$1" '$1 == k && (m == "" || $2 < m) { m = $2 } END { print m }' "$dir/all"; }
    wb=$(min with.rss_before_kib); ob=$(min without.rss_before_kib)
    wa=$(min with.rss_after_kib); oa=$(min without.rss_after_kib)
    echo "footprint: RSS with $(val threads "$dir/with.out") threads, before CUDA: ${wb} KiB with the shim, ${ob} KiB without"
    echo "footprint: RSS after the first CUDA calls (run log off, default settings): ${wa} KiB with the shim, ${oa} KiB without"
    within "RSS added before the first CUDA call (KiB)" $((wb - ob)) 1024
    within "RSS added after it (KiB)" $((wa - oa)) 2048 ;;
fork)
    export P2PSHIM_RUN_LOG="$dir/run-%p.jsonl"
    for i in 1 2 3; do
        both fork
        echo "with $(val fork_private_dirty_kib "$dir/with.out")" >>"$dir/all"
        echo "without $(val fork_private_dirty_kib "$dir/without.out")" >>"$dir/all"
    done
    min() { awk -v k="$1" '$1 == k && (m == "" || $2 < m) { m = $2 } END { print m }' "$dir/all"; }
    w=$(min with); o=$(min without)
    echo "footprint: forked child's Private_Dirty (run log on in the parent): ${w} KiB with the shim, ${o} KiB without"
    # The run-log ring is the part that scales (old: every page of it,
    # 22.8 MB by default); what remains is fork handlers writing lock and
    # counter words on a dozen pages of the shim's data.
    within "private dirty added to a forked child (KiB)" $((w - o)) 128 ;;
exec)
    both exec
    echo "footprint: execl/execlp/execle with 100,000 arguments, with the shim:"
    sed 's/^/footprint:   /' "$dir/with.out"
    grep -v '^shim=' "$dir/with.out" >"$dir/w"
    grep -v '^shim=' "$dir/without.out" >"$dir/o"
    cmp -s "$dir/w" "$dir/o" || { bad "the execs differ with the shim:"; diff "$dir/o" "$dir/w"; }
    for f in execl execlp; do
        grep -q "^$f: args=100000 bad=0 env=-$" "$dir/o" || bad "$f without the shim did not run"
    done
    grep -q "^execle: args=100000 bad=0 env=given$" "$dir/o" || bad "execle without the shim did not run" ;;
*)
    echo "footprint.sh: unknown case $case_name"; exit 2 ;;
esac
if [ "$fail" -ne 0 ]; then
    for f in "$dir"/*.out "$dir"/*.err; do
        [ -s "$f" ] && { echo "---- $(basename "$f")"; head -c 4000 "$f"; }
    done
fi
exit "$fail"
