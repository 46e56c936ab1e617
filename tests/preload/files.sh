#!/bin/sh
# files.sh PROGRAM: the files the shim opens (P2PSHIM_LOG_FILE and
# P2PSHIM_RUN_LOG) are regular files of the user: a symbolic link, a FIFO
# (without hanging), a device or another user's file is refused with one
# warning and the program goes on; a new file is created 0600, an existing
# own file appended to with its mode kept; %h is the host name; a name that
# would not fit is refused with a warning, never cut.
set -u
prog=$1
dir=$(mktemp -d "${PL_TMP:-$PWD}/pl-files.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { # label VAR=value ...: the program, with a time limit (a FIFO must not block)
    label=$1; shift
    timeout 60 env "$@" LD_PRELOAD="${PL_WITH:?}" "$prog" shim files >"$dir/out" 2>"$dir/err"
    rc=$?
    [ "$rc" -eq 0 ] || { bad "$label: exit $rc"; cat "$dir/err"; }
}
warnings() { # label regex n
    n=$(grep -Ec "^[^ :]+:[0-9]+ (r[^ ]+ )?p2pshim: warning: " "$dir/err")
    m=$(grep -E "^[^ :]+:[0-9]+ (r[^ ]+ )?p2pshim: warning: " "$dir/err" | grep -Ec -- "$2")
    [ "$n" -eq "$3" ] && [ "$m" -eq "$3" ] ||
        { bad "$1: $n warning lines, $m matching '$2', expected $3"; cat "$dir/err"; }
}
mode_of() { stat -c %a "$1"; }

for var in P2PSHIM_LOG_FILE P2PSHIM_RUN_LOG; do
    echo "secret" >"$dir/target"
    ln -s "$dir/target" "$dir/link"
    run "$var symlink" "$var=$dir/link" P2PSHIM_LOG=info
    warnings "$var symlink" "symbolic link" 1
    [ "$(cat "$dir/target")" = secret ] || bad "$var: the symlink's target was written"
    rm -f "$dir/link"

    mkfifo "$dir/fifo"
    run "$var FIFO" "$var=$dir/fifo"
    warnings "$var FIFO" "not a regular file" 1
    rm -f "$dir/fifo"

    run "$var device" "$var=/dev/null"
    warnings "$var device" "not a regular file" 1

    if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
        echo "theirs" >"$dir/theirs"
        chown nobody "$dir/theirs"
        run "$var other user's file" "$var=$dir/theirs"
        warnings "$var other user's file" "owned by another user" 1
        [ "$(cat "$dir/theirs")" = theirs ] || bad "$var: another user's file was written"
    else
        echo "files: another user's file not tried for $var (needs root and a nobody user)"
    fi

    run "$var new" "$var=$dir/new-%p.txt" P2PSHIM_LOG=info
    pid=$(sed -n 's/^pid=//p' "$dir/out")
    warnings "$var new" "." 0
    [ -s "$dir/new-$pid.txt" ] || bad "$var: new-$pid.txt not written"
    [ "$(mode_of "$dir/new-$pid.txt")" = 600 ] || bad "$var: created $(mode_of "$dir/new-$pid.txt"), not 600"

    echo "first line" >"$dir/mine"; chmod 644 "$dir/mine"
    run "$var own file" "$var=$dir/mine" P2PSHIM_LOG=info
    [ "$(head -n 1 "$dir/mine")" = "first line" ] && [ "$(wc -l <"$dir/mine")" -gt 1 ] ||
        bad "$var: own file not appended to"
    [ "$(mode_of "$dir/mine")" = 644 ] || bad "$var: own file's mode changed"

    run "$var %h" "$var=$dir/h-%h-%p.txt" P2PSHIM_LOG=info
    pid=$(sed -n 's/^pid=//p' "$dir/out")
    [ -s "$dir/h-$(uname -n)-$pid.txt" ] || bad "$var: no h-$(uname -n)-$pid.txt: $(ls "$dir")"
    rm -f "$dir"/new-* "$dir"/h-* "$dir/mine" "$dir/theirs" "$dir/target"
done

# Long names: 511 bytes once expanded fit whole; 512 do not (one warning,
# nothing written). Folders of 200-byte names make the length.
long=$dir/$(printf '%0200d' 0)/$(printf '%0200d' 1)
mkdir -p "$long"
for var in P2PSHIM_LOG_FILE P2PSHIM_RUN_LOG; do
    pad=$((511 - ${#long} - 1))
    name=$long/$(printf '%0*d' "$pad" 2)
    run "$var 511 bytes" "$var=$name" P2PSHIM_LOG=info
    warnings "$var 511 bytes" "." 0
    [ -s "$name" ] || bad "$var: the 511-byte name was not written whole: $(ls "$long")"
    rm -f "$long"/*
    run "$var 512 bytes" "$var=${name}3" P2PSHIM_LOG=info
    warnings "$var 512 bytes" "longer than 511 bytes" 1
    [ -z "$(ls "$long")" ] || bad "$var: something was written for a 512-byte name: $(ls "$long")"
done
[ "$fail" -eq 0 ] && echo "files: all refused or written as they should be"
exit "$fail"
