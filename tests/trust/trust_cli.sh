#!/bin/sh
# trust_cli.sh SCENARIO LAUNCHER PROGRAM PRELOAD
# `p2pshim trust` on the stand-in driver: the verdicts a run of PROGRAM
# (trust_copy) under the shim cached, shown; lines of another boot or
# device set marked stale; --clear (and its refusals); --check through the
# shim, on a good and on a corrupting link.
set -u
scenario=$1 launcher=$2 prog=$3 preload=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trust_cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache/p2pshim/trust
failures=0
fail() { echo "FAIL [$scenario]: $*"; failures=$((failures + 1)); }
export HOME="$tmp" XDG_CACHE_HOME="$tmp/cache"
unset P2PSHIM_TRUST P2PSHIM_TRUST_FILE

# cli NAME ARGS...: the launcher, output in $tmp/NAME.out/.err, status in rc.
cli() {
    name=$1; shift
    "$launcher" trust "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    echo "[$name] exit $rc"; cat "$tmp/$name.out" "$tmp/$name.err"
}
has() { grep -q -- "$2" "$tmp/$1.out" || fail "$1: no '$2' in its output"; }

# The program under the shim with the default check: one verdict cached.
cache_one() {
    env "$@" LD_PRELOAD="$preload" "$prog" 3 >"$tmp/prog.out" 2>&1 ||
        fail "trust_copy failed: $(cat "$tmp/prog.out")"
    grep -q 'verdict=' "$cache" || fail "no verdict cached"
}

case $scenario in
show)
    cli none; [ "$rc" -eq 0 ] || fail "no file: exit $rc"; has none "does not exist"
    cache_one
    cli cached --show; [ "$rc" -eq 0 ] || fail "show: exit $rc"
    has cached '^0-1 *trusted *in use (this boot) *peer [0-9.]* GB/s, staged [0-9.]* GB/s, 0 wrong bytes'
    cache_one STANDIN_LINK_CORRUPT=0:1 P2PSHIM_TRUST=recheck
    cli both
    has both '^0-1 *trusted *replaced by a later line'
    has both '^0-1 *link-untrusted *in use (this boot) .* [1-9][0-9]* wrong bytes' ;;
stale)
    cache_one
    good=$(head -n 1 "$cache")
    { echo "$good" | sed 's/boot=[^ ]*/boot=00000000-0000-0000-0000-000000000000/'
      echo "$good" | sed 's/@0000:10:00.0/@0000:99:00.0/'
      echo "$good" | sed 's/driver=[^ ]*/driver=1\/2/'
      echo "$good" | sed 's/iommu=./iommu=7/'
      echo 'hello'; } >>"$cache"
    cli stale
    [ "$(grep -c 'in use' "$tmp/stale.out")" = 1 ] || fail "not exactly one line in use"
    has stale '^0-1 *trusted *stale: another boot'
    has stale '^? *trusted *stale: other devices'
    has stale 'a=GPU-[0-9a-f-]*@0000:99:00.0 b=GPU-[0-9a-f-]*@0000:11:00.0'
    has stale '^0-1 *trusted *stale: another driver'
    has stale '^line 5: not a link verdict'
    has stale '^line 6: not a link verdict' ;;
clear)
    cli nothing --clear; [ "$rc" -eq 0 ] || fail "nothing to clear: exit $rc"
    cache_one
    cli cleared --clear; [ "$rc" -eq 0 ] || fail "clear: exit $rc"
    [ -e "$cache" ] && fail "the file is still there"
    has cleared "removed $cache"
    echo keep >"$tmp/target"; ln -s "$tmp/target" "$cache"
    cli link --clear; [ "$rc" -eq 1 ] || fail "symlink: exit $rc"
    [ -L "$cache" ] && [ "$(cat "$tmp/target")" = keep ] || fail "symlink or its target touched"
    grep -q 'symbolic link' "$tmp/link.err" || fail "symlink: not said"
    cli link_show; [ "$rc" -eq 1 ] || fail "show through a symlink: exit $rc"
    rm -f "$cache"; mkdir "$cache"
    cli folder --clear; [ "$rc" -eq 1 ] || fail "folder: exit $rc"
    [ -d "$cache" ] || fail "folder removed"
    cli both --clear --check; [ "$rc" -eq 2 ] || fail "--clear --check: exit $rc" ;;
check)
    cli good --check; [ "$rc" -eq 0 ] || fail "check: exit $rc"
    has good '^0-1 *trusted *in use (this boot)'
    STANDIN_LINK_CORRUPT=0:1 cli bad --check; [ "$rc" -eq 0 ] || fail "bad check: exit $rc"
    has bad '^0-1 *link-untrusted *in use (this boot)'
    grep -q 'warning: link 0-1 failed its check' "$tmp/bad.err" || fail "bad: no warning"
    P2PSHIM_LIBRARY=$tmp/none.so cli nolib --check
    [ "$rc" -eq 3 ] || fail "no library: exit $rc"
    STANDIN_DEVICES=1 cli single --check; [ "$rc" -eq 0 ] || fail "one device: exit $rc"
    has single 'nothing to check' ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac
[ "$failures" -eq 0 ] || exit 1
echo "trust_cli.sh $scenario: ok"
