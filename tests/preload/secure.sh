#!/bin/sh
# secure.sh SECURE PLAIN: under secure execution (AT_SECURE, which the
# SECURE program claims through its own getauxval) the shim reads no P2PSHIM_* variable,
# opens no file and passes every call through; the same run without the
# claim shows that the variables would have acted.
set -u
secure_prog=$1
plain_prog=$2
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-secure.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { # secure|plain PROGRAM
    mkdir "$dir/$1"
    env LD_PRELOAD="${PL_WITH:?}" P2PSHIM_LOG=debug P2PSHIM_DUMP_CONFIG=1 P2PSHIM_BOGUS=1 \
        "P2PSHIM_LOG_FILE=$dir/$1/log-%p" "P2PSHIM_RUN_LOG=$dir/$1/run-%p.jsonl" \
        "$2" >"$dir/$1.out" 2>"$dir/$1.err" || bad "$1: exit $? $(cat "$dir/$1.err")"
}
run secure "$secure_prog"
run plain "$plain_prog"
[ -z "$(ls -A "$dir/secure")" ] || bad "secure: files created: $(ls -A "$dir/secure")"
[ -s "$dir/secure.err" ] && bad "secure: the shim wrote: $(cat "$dir/secure.err")"
grep -q "path=staged" "$dir/secure.out" || bad "secure: the copy was not passed through"
# the control: the variables act when the execution is not secure
[ "$(ls "$dir/plain" | wc -l)" -eq 2 ] || bad "plain: expected a log and a run log: $(ls "$dir/plain")"
grep -q "path=peer" "$dir/plain.out" || bad "plain: the copy was not upgraded"
grep -q "unknown variable P2PSHIM_BOGUS" "$dir"/plain/log-* || bad "plain: no warning about P2PSHIM_BOGUS"
[ "$fail" -eq 0 ] && echo "secure: nothing read, nothing opened, the copy passed through"
exit "$fail"
