#!/bin/sh
# trust.sh SCENARIO PROGRAM PRELOAD NVML_DIR
# The link check (docs/TRUST.md) on the stand-in driver: runs PROGRAM
# (trust_copy: 3 copies of 1 MiB from device 0 to 1, every byte checked)
# under the shim in one scenario and checks the bytes, the peer state, the
# shim's own validation work (allocations, events, timing calls the
# stand-in counted), the exit summary's reasons, the run log and the cache.
set -u
scenario=$1 prog=$2 preload=$3 nvml_dir=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trust.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache/p2pshim/trust
failures=0

fail() { echo "FAIL [$scenario]: $*"; failures=$((failures + 1)); }

# run NAME [VAR=VALUE...]: the program under the shim, output in
# $tmp/NAME.out and .err, its figures in the shell variables below.
run() {
    name=$1; shift
    env -u P2PSHIM_TRUST HOME="$tmp" XDG_CACHE_HOME="$tmp/cache" P2PSHIM_LOG=info \
        P2PSHIM_RUN_LOG="$tmp/$name.jsonl" "$@" LD_PRELOAD="$preload" "$prog" 3 \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: the program failed: $(cat "$tmp/$name.err")"
    line=$(grep '^trust_copy:' "$tmp/$name.out")
    wrong=$(echo "$line" | sed -n 's/.*wrong_bytes=\([0-9]*\).*/\1/p')
    peer=$(echo "$line" | sed -n 's/.*peer_enabled=\([0-9]*\).*/\1/p')
    allocs=$(echo "$line" | sed -n 's/.*other_allocs=\([0-9]*\).*/\1/p')
    events=$(echo "$line" | sed -n 's/.* events=\([0-9]*\).*/\1/p')
    summary=$(grep 'summary pair=0->1' "$tmp/$name.err")
    echo "[$name] $line | $summary"
}

expect() { # expect WHAT GOT WANT
    [ "$2" = "$3" ] || fail "$run_name: $1 is '$2', expected '$3'"
}

# A copy that was upgraded on a good link: right bytes, peer on.
expect_upgraded() {
    run_name=$1
    expect wrong_bytes "$wrong" 0
    expect peer_enabled "$peer" 1
    echo "$summary" | grep -q 'copies=3 upgraded=3 ' || fail "$run_name: not upgraded: $summary"
}

# A copy left staged with reason $2: right bytes, peer off.
expect_staged() {
    run_name=$1
    expect wrong_bytes "$wrong" 0
    expect peer_enabled "$peer" 0
    echo "$summary" | grep -q "upgraded=0 passed=3 .*reasons=$2:3" ||
        fail "$run_name: not passed as $2: $summary"
    grep -q "\"reason\":\"$2\"" "$tmp/$run_name.jsonl" || fail "$run_name: no $2 in the run log"
}

# The shim's validation work: the probe's 2 allocations and 2 events, or none.
expect_work() {
    expect "validation allocations" "$allocs" "$2"
    expect "validation events" "$events" "$2"
}

case $scenario in
good)
    run good; expect_upgraded good; expect_work good 2
    grep -q 'verdict=trusted' "$cache" || fail "good: no trusted verdict cached"
    grep -q '"what":"link-check".*trusted' "$tmp/good.jsonl" || fail "good: no link-check event"
    mode=$(stat -c %a "$cache"); expect "cache mode" "$mode" 600 ;;
cached)
    run first; expect_upgraded first; expect_work first 2
    run second; expect_upgraded second; expect_work second 0
    grep -q 'trusted (cached)' "$tmp/second.err" || fail "second: no cached verdict said" ;;
corrupt)
    run unchecked P2PSHIM_TRUST=skip STANDIN_LINK_CORRUPT=0:1
    [ "$wrong" -gt 0 ] || fail "the corrupting link corrupts nothing without the check"
    [ -e "$cache" ] && fail "skip wrote a cache"
    run checked STANDIN_LINK_CORRUPT=0:1; expect_staged checked link-untrusted
    expect_work checked 2
    grep -q 'warning: link 0-1 failed its check' "$tmp/checked.err" || fail "no warning"
    grep -q 'verdict=link-untrusted' "$cache" || fail "no untrusted verdict cached"
    run again STANDIN_LINK_CORRUPT=0:1; expect_staged again link-untrusted
    expect_work again 0 ;;
slow)
    run slow STANDIN_LINK_SLOW=0:1; expect_staged slow link-slower; expect_work slow 2
    grep -q 'verdict=link-slower' "$cache" || fail "no slower verdict cached" ;;
nvml)
    lib=$nvml_dir:${LD_LIBRARY_PATH:-}
    run said_no LD_LIBRARY_PATH="$lib" STANDIN_NVML_P2P_NO=0:1
    expect_staged said_no link-untrusted; expect_work said_no 0
    grep -q 'NVML P2P read status 5' "$tmp/said_no.err" || fail "said_no: NVML's status not said"
    rm -f "$cache"
    run ok LD_LIBRARY_PATH="$lib" STANDIN_NVML_REPORT=1; expect_upgraded ok; expect_work ok 2
    grep -q 'p2p_status_calls=4' "$tmp/ok.out" || fail "ok: NVML not asked both ways"
    rm -f "$cache"
    run error LD_LIBRARY_PATH="$lib" STANDIN_NVML_P2P_ERROR=0:1
    expect_upgraded error; expect_work error 2 ;;
cache-foreign)
    run first; expect_work first 2
    good_line=$(grep 'verdict=trusted' "$cache")
    # Another boot, another device set, a link: never trusted; the link
    # corrupts, so trusting any of them would show wrong bytes.
    echo "$good_line" | sed 's/boot=[^ ]*/boot=00000000-0000-0000-0000-000000000000/' >"$cache"
    run other_boot STANDIN_LINK_CORRUPT=0:1; expect_staged other_boot link-untrusted
    expect_work other_boot 2
    echo "$good_line" | sed 's/@0000:10:00.0/@0000:99:00.0/' >"$cache"
    run other_devices STANDIN_LINK_CORRUPT=0:1; expect_staged other_devices link-untrusted
    expect_work other_devices 2
    echo "$good_line" >"$tmp/elsewhere"; rm -f "$cache"; ln -s "$tmp/elsewhere" "$cache"
    run symlink STANDIN_LINK_CORRUPT=0:1; expect_staged symlink link-untrusted
    expect_work symlink 2
    grep -q 'symbolic link' "$tmp/symlink.err" || fail "symlink: no warning" ;;
cache-corrupt)
    run first; expect_work first 2
    good_line=$(grep 'verdict=trusted' "$cache")
    { echo 'hello'; echo "$good_line" | sed 's/verdict=trusted/verdict=maybe/';
      printf '%s' "$good_line"; } >"$cache"
    run garbled STANDIN_LINK_CORRUPT=0:1; expect_staged garbled link-untrusted
    expect_work garbled 2
    grep -q 'warning: .*not link verdicts' "$tmp/garbled.err" || fail "garbled: no warning" ;;
no-room)
    # No device memory for the check's buffers: unchecked is untrusted, for
    # this process only (nothing cached).
    run no_room STANDIN_ARENA_MB=2; expect_staged no_room link-untrusted
    grep -q 'could not be set up' "$tmp/no_room.err" || fail "no_room: not said"
    [ -e "$cache" ] && fail "no_room: a verdict was cached" ;;
skip)
    run skip P2PSHIM_TRUST=skip; expect_upgraded skip; expect_work skip 0
    [ -e "$cache" ] && fail "skip: a cache was written" ;;
malformed)
    run malformed P2PSHIM_TRUST=maybe STANDIN_LINK_CORRUPT=0:1
    expect_staged malformed link-untrusted; expect_work malformed 2
    grep -q 'warning: P2PSHIM_TRUST="maybe": not a trust setting (check, skip or recheck); keeping check' \
        "$tmp/malformed.err" || fail "malformed: no warning: $(cat "$tmp/malformed.err")" ;;
recheck)
    run first; expect_upgraded first; expect_work first 2
    run rechecked P2PSHIM_TRUST=recheck STANDIN_LINK_CORRUPT=0:1
    expect_staged rechecked link-untrusted; expect_work rechecked 2
    run after STANDIN_LINK_CORRUPT=0:1; expect_staged after link-untrusted; expect_work after 0 ;;
counts)
    # The check's own copies are the shim's, not the program's: the exit
    # summary and the run log count the same with and without it.
    run skipped P2PSHIM_TRUST=skip; expect_work skipped 0
    run checked; expect_work checked 2; expect_upgraded checked
    for r in skipped checked; do
        sed -n 's/^.*p2pshim: summary /summary /p' "$tmp/$r.err" >"$tmp/$r.sum"
        grep -c '"type":"decision"' "$tmp/$r.jsonl" >"$tmp/$r.dec"
        grep '"type":"footer"' "$tmp/$r.jsonl" | sed 's/"[a-z_]*ns":[0-9]*//g' >>"$tmp/$r.dec"
    done
    [ -s "$tmp/checked.sum" ] || fail "counts: no summary"
    cmp -s "$tmp/skipped.sum" "$tmp/checked.sum" ||
        fail "counts: the summaries differ: $(diff "$tmp/skipped.sum" "$tmp/checked.sum")"
    cmp -s "$tmp/skipped.dec" "$tmp/checked.dec" ||
        fail "counts: the run logs differ: $(diff "$tmp/skipped.dec" "$tmp/checked.dec")" ;;
single)
    env -u P2PSHIM_TRUST HOME="$tmp" XDG_CACHE_HOME="$tmp/cache" STANDIN_DEVICES=1 \
        LD_PRELOAD="$preload" "$prog" 3 1 >"$tmp/one.out" 2>"$tmp/one.err" || fail "one device: failed"
    grep -q 'wrong_bytes=0 peer_enabled=0 other_allocs=0 events=0 elapsed_calls=0' "$tmp/one.out" ||
        fail "one device: $(cat "$tmp/one.out")"
    [ -e "$cache" ] && fail "one device: a cache was written" ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac
[ "$failures" -eq 0 ] || exit 1
echo "trust.sh $scenario: ok"
