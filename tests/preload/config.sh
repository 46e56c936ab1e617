#!/bin/sh
# config.sh CASE PROGRAM
# Item 9: the shim configured through P2PSHIM_* variables. Runs
# "PROGRAM shim CASE" with the shim (LD_PRELOAD=$PL_WITH) and the variables
# of CASE; the program asserts the paths (stand-in counters), this script
# the log: warnings, summary lines, the log file.
set -u
case_name=$1
prog=$2
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-config.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
run() { # VAR=value ... : runs the program with them added
    env "$@" LD_PRELOAD="${PL_WITH:?PL_WITH must name the shim}" \
        "$prog" shim "$case_name" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: $case_name exited $rc"; fail=1
    fi
}
has() { # REGEX FILE
    if ! grep -Eq -- "$1" "$2"; then
        echo "FAIL: nothing in $(basename "$2") matches: $1"; fail=1
    fi
}
count() { # REGEX FILE N
    n=$(grep -Ec -- "$1" "$2")
    if [ "$n" -ne "$3" ]; then
        echo "FAIL: $n lines of $(basename "$2") match '$1', expected $3"; fail=1
    fi
}
# A line of the shim starts with the process's identity (host:pid, then
# rRANK when a launcher set a rank), then "p2pshim: ".
PFX='^[^ :]+:[0-9]+ (r[^ ]+ )?p2pshim: '
# the program's own numbers: pid=, host_copies=
val() { sed -n "s/^$1=//p" "$dir/out"; }

case "$case_name" in
mode_off)
    run P2PSHIM_MODE=off P2PSHIM_LOG=info
    has "summary pair=0->1 copies=3 upgraded=0 passed=3 .*reasons=mode-off:3$" "$dir/err"
    count "${PFX}(warning|error)" "$dir/err" 0 ;;
pairs)
    run 'P2PSHIM_PAIRS=!0:1' P2PSHIM_LOG=info
    has "summary pair=0->1 copies=2 upgraded=1 passed=1 .*reasons=pair-excluded:1$" "$dir/err"
    has "enabled peer access 1->0" "$dir/err"
    count "enabled peer access" "$dir/err" 1 ;;
min_bytes)
    run P2PSHIM_MIN_BYTES=64K P2PSHIM_LOG=info
    has "summary pair=0->1 copies=3 upgraded=2 passed=1 bytes=73728 upgraded_bytes=69632 reasons=below-min-bytes:1$" "$dir/err" ;;
summary)
    run P2PSHIM_LOG=info
    has "${PFX}summary pair=0->1 copies=3 upgraded=3 passed=0 bytes=196608 upgraded_bytes=196608 reasons=-$" "$dir/err"
    has "${PFX}summary pair=1->0 copies=2 upgraded=2 passed=0 bytes=131072 upgraded_bytes=131072 reasons=-$" "$dir/err"
    has "${PFX}summary total copies=5 upgraded=5 passed=0 bytes=327680 upgraded_bytes=327680 reasons=-$" "$dir/err"
    hc=$(val host_copies)
    has "${PFX}summary local copies=$hc bytes=[0-9]+ reasons=host-memory:$hc peer_enables=2 peer_enable_failures=0$" "$dir/err"
    count "${PFX}summary pair=" "$dir/err" 2 ;;
log_file)
    # %p and %r (the rank a launcher set: RANK first, then OMPI's) in the name.
    run "P2PSHIM_LOG_FILE=$dir/p2p-%p.r%r.log" P2PSHIM_LOG=info RANK=3 OMPI_COMM_WORLD_RANK=5
    pid=$(val pid)
    if [ -z "$pid" ] || [ ! -f "$dir/p2p-$pid.r3.log" ]; then
        echo "FAIL: no log file p2p-$pid.r3.log; found: $(ls "$dir")"; fail=1
    else
        has "${PFX}summary total copies=5 upgraded=5 " "$dir/p2p-$pid.r3.log"
        # The identity is this program's: its host and pid, and its rank.
        has "^$(uname -n):$pid r3 p2pshim: summary total " "$dir/p2p-$pid.r3.log"
        count "p2pshim: " "$dir/err" 0
    fi ;;
unknown_var)
    run P2PSHIM_BOGUS=1
    count "${PFX}warning: unknown variable P2PSHIM_BOGUS" "$dir/err" 1
    count "p2pshim" "$dir/err" 1 ;;
bad_mode)
    run P2PSHIM_MODE=fast
    count "${PFX}warning: .*P2PSHIM_MODE" "$dir/err" 1
    count "p2pshim" "$dir/err" 1 ;;
bad_min_bytes)
    run P2PSHIM_MIN_BYTES=12Q
    count "${PFX}warning: .*P2PSHIM_MIN_BYTES" "$dir/err" 1
    count "p2pshim" "$dir/err" 1 ;;
tool_vars)
    # The launcher's and the report's variables are not the shim's to warn about.
    run P2PSHIM_LIBRARY=/nowhere/libp2pshim.so P2PSHIM_TOPO_FILE=/nowhere/topo.json
    count "p2pshim" "$dir/err" 0 ;;
*)
    echo "config.sh: unknown case $case_name"; exit 2 ;;
esac
if [ "$fail" -ne 0 ]; then
    echo "---- stdout ----"; cat "$dir/out"; echo "---- stderr ----"; cat "$dir/err"
fi
exit "$fail"
