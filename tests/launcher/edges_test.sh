#!/bin/sh
# edges_test.sh CASE: the user-facing edges of the launcher and the report
# (CPU tier, stand-in driver): outputs checked before the job, bad values
# that change nothing, the report's format from the file name, run folders
# holding files that are no readable log, gzip logs. One case per CTest
# test; the variables are launcher_test.sh's (see CMakeLists.txt here).
set -u
L=$LT_LAUNCHER
P=$LT_PROBE
SAN=${LT_SAN:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/le.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
SCHEMA=$(dirname "$0")/../../docs/report-schema.json
CHECK() { "${LT_PYTHON:-python3}" "$(dirname "$0")/check_edges.py" "$@" || bad "check_edges $*"; }
# The stand-in driver, the build's shim, no table, the link verdicts here.
SD="LD_LIBRARY_PATH=$LT_STANDIN"
LIB="P2PSHIM_LIBRARY=$LT_SHIM"
HERMETIC="P2PSHIM_TOPO_FILE=$dir/none.json XDG_CACHE_HOME=$dir/cache"
MIB=1048576

# launch [VAR=value...] -- ARGS...: the launcher with LD_PRELOAD=$SAN;
# stdout in $dir/out, stderr in $dir/err, the status in $rc.
launch() {
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$SAN" $HERMETIC $vars "$L" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
# alone [VAR=value...] -- PROGRAM ARGS...: PROGRAM under the shim without
# the launcher (plain LD_PRELOAD), on the stand-in.
alone() {
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
    shift
    pre=$LT_SHIM
    [ -n "$SAN" ] && pre="$SAN:$LT_SHIM"
    # shellcheck disable=SC2086
    env LD_PRELOAD="$pre" "$SD" $HERMETIC $vars "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
expect_rc() { # what, expected
    [ "$rc" -eq "$2" ] || { bad "$1: exit $rc, expected $2"; cat "$dir/out" "$dir/err"; }
}
expect_err() { # what, extended regex expected in stderr
    grep -qE -- "$2" "$dir/err" || { bad "$1: stderr lacks /$2/"; cat "$dir/err"; }
}
one_line() { # what: stderr is one line
    [ "$(wc -l <"$dir/err")" -eq 1 ] || bad "$1: not one line on stderr: $(cat "$dir/err")"
}
not_run() { # what: the probe printed nothing (it never started)
    [ -s "$dir/out" ] && bad "$1: the program ran: $(cat "$dir/out")"
}
# A run log of p2pdemo 1 2 in observe mode (3 MiB from GPU 0 to GPU 1).
demo_log() { # FILE
    alone P2PSHIM_MODE=observe "P2PSHIM_RUN_LOG=$1" -- "$LT_DEMO" 1 2
    [ "$rc" -eq 0 ] && [ -s "$1" ] || bad "demo log $1: exit $rc: $(cat "$dir/err")"
}

case_out_folders() {
    # Missing folders are made, as mkdir -p: the job's logs and report land.
    launch "$SD" "$LIB" -- run --log "$dir/a/b/x.jsonl" "$LT_DEMO" 1 2
    expect_rc "--log DIR/x.jsonl" 0
    [ -s "$dir/a/b/x.jsonl" ] || bad "--log into a missing folder: no log"
    launch "$SD" "$LIB" -- run --observe --log "$dir/l.jsonl" --report "$dir/c/d/r.html" \
        "$LT_DEMO" 1 2
    expect_rc "--report DIR/r.html" 0
    grep -q "<!DOCTYPE html>" "$dir/c/d/r.html" 2>/dev/null || bad "--report into a missing folder"
    launch "$SD" "$LIB" -- run --observe --log-dir "$dir/e/f/run" --report "$dir/r.txt" \
        "$LT_DEMO" 1 2
    expect_rc "--log-dir, parent missing" 0
    ls "$dir"/e/f/run/*.jsonl >/dev/null 2>&1 || bad "--log-dir, parent missing: no log"
    [ -s "$dir/r.txt" ] || bad "--log-dir, parent missing: no report"
    # The variables, from the environment or --set, the same way.
    launch "$SD" "$LIB" "P2PSHIM_RUN_LOG=$dir/g/x.jsonl" P2PSHIM_LOG=info -- run \
        --set "LOG_FILE=$dir/h/shim.log" "$LT_DEMO" 1 2
    expect_rc "variables" 0
    [ -s "$dir/g/x.jsonl" ] || bad "P2PSHIM_RUN_LOG into a missing folder: no log"
    grep -q "p2pshim: summary" "$dir/h/shim.log" 2>/dev/null || bad "LOG_FILE: no log file"
    # Where it cannot be: exit 2 before the program, one line naming the
    # path and why.
    : >"$dir/file"
    mkdir "$dir/folder"
    for args in "--log $dir/file/x.jsonl|the run log .*: $dir/file is not a folder" \
        "--report $dir/file/sub/r.html|the report .*: $dir/file is not a folder" \
        "--report $dir/folder|the report $dir/folder: $dir/folder is a folder" \
        "--log-dir $dir/file/run|the run folder .*: $dir/file is not a folder" \
        "--log-dir $dir/file|the run folder $dir/file: $dir/file is not a folder" \
        "--set LOG_FILE=$dir/file/s.log|the log file .*: $dir/file is not a folder"; do
        # shellcheck disable=SC2086
        launch -- run ${args%%|*} "$P" env
        expect_rc "${args%%|*}" 2; one_line "${args%%|*}"; not_run "${args%%|*}"
        expect_err "${args%%|*}" "^p2pshim: run: ${args#*|}$"
    done
    launch "P2PSHIM_RUN_LOG=$dir/file/x.jsonl" -- run "$P" env
    expect_rc "inherited run log" 2; one_line "inherited run log"; not_run "inherited run log"
    if [ "$(id -u)" -ne 0 ]; then # root writes anywhere
        mkdir "$dir/ro" && chmod 555 "$dir/ro"
        launch -- run --log "$dir/ro/x.jsonl" "$P" env
        expect_rc "read-only folder" 2; one_line "read-only folder"; not_run "read-only folder"
        expect_err "read-only folder" "cannot write in $dir/ro: Permission denied$"
    fi
    # The shim alone says so once, at its start, and the program runs.
    alone "P2PSHIM_RUN_LOG=$dir/none/x.jsonl" -- "$LT_DEMO" 1 2
    expect_rc "shim alone" 0; one_line "shim alone"
    expect_err "shim alone" "p2pshim: warning: cannot open the run log $dir/none/x.jsonl: No such file"
    grep -q "bytes verified" "$dir/out" || bad "shim alone: $(cat "$dir/out")"
}

case_folder_logs() {
    # Two good logs, and beside them files that are no readable log.
    mkdir "$dir/run"
    demo_log "$dir/run/a.jsonl"
    demo_log "$dir/run/b.jsonl"
    mkdir "$dir/run/folder.jsonl"
    printf '{"type":"metrics","x":1}\n' >"$dir/run/foreign.jsonl"
    gzip -c "$dir/run/a.jsonl" | head -c 200 >"$dir/run/cut.jsonl.gz"
    mkfifo "$dir/run/pipe.jsonl" # opened, it would block the report
    nbad=4
    if [ "$(id -u)" -ne 0 ]; then
        cp "$dir/run/a.jsonl" "$dir/run/locked.jsonl" && chmod 000 "$dir/run/locked.jsonl"
        nbad=5
    fi
    launch -- report "$dir/run" -o "$dir/r.json"
    expect_rc "folder with bad files" 0
    [ "$(wc -l <"$dir/err")" -eq "$nbad" ] || bad "folder: $nbad warnings wanted: $(cat "$dir/err")"
    expect_err "folder" "^p2pshim: report: warning: skipping $dir/run/folder.jsonl: a folder$"
    expect_err "folder" "^p2pshim: report: warning: skipping $dir/run/pipe.jsonl: not a regular file$"
    expect_err "folder" "^p2pshim: report: warning: skipping $dir/run/foreign.jsonl: not a p2pshim run log"
    expect_err "folder" "^p2pshim: report: warning: skipping $dir/run/cut.jsonl.gz: truncated gzip file$"
    [ "$nbad" -eq 5 ] && expect_err "folder" "skipping $dir/run/locked.jsonl: cannot open: Permission denied$"
    CHECK schema "$dir/r.json" "$SCHEMA" 2 $((6 * MIB))
    # A glob's matches the same way.
    launch -- report "$dir/run/*.jsonl*" --format text -o "$dir/r.txt"
    expect_rc "glob with bad files" 0; expect_err "glob" "skipping $dir/run/foreign.jsonl"
    # --strict: the first one fails the report, and no file is written.
    launch -- report --strict "$dir/run" -o "$dir/s.json"
    expect_rc "--strict" 1; one_line "--strict"
    expect_err "--strict" "^p2pshim: report: $dir/run/[a-z]+\.jsonl(\.gz)?: "
    [ -e "$dir/s.json" ] && bad "--strict wrote a report"
    # Named on its own, a bad file is an error still.
    launch -- report "$dir/run/foreign.jsonl"
    expect_rc "a foreign file named" 1
    # Only bad files: nothing to report.
    mkdir "$dir/none" && cp "$dir/run/foreign.jsonl" "$dir/none/"
    launch -- report "$dir/none"
    expect_rc "no good log" 1; expect_err "no good log" "no run log the report can read"
}

case_typo_mode() {
    # Under the launcher: refused before the program, one line, the near miss.
    launch "$SD" "$LIB" P2PSHIM_MODE=obsrve -- run "$P" env
    expect_rc "P2PSHIM_MODE=obsrve" 2; one_line "P2PSHIM_MODE=obsrve"; not_run "obsrve"
    expect_err "obsrve" '^p2pshim: run: environment: P2PSHIM_MODE="obsrve": not a mode \(upgrade, observe or off\), did you mean observe\?$'
    launch -- run --mode obsrve "$P" env
    expect_rc "--mode obsrve" 2; one_line "--mode obsrve"
    expect_err "--mode obsrve" '^p2pshim: run: P2PSHIM_MODE="obsrve": .*, did you mean observe\?$'
    launch P2PSHIM_BOUNCE=lzy -- run "$P" env
    expect_rc "P2PSHIM_BOUNCE=lzy" 2; expect_err "lzy" "did you mean lazy\?$"
    # An option that replaces the variable: its value is never passed on.
    launch P2PSHIM_MODE=obsrve -- run --observe "$P" env
    expect_rc "replaced by --observe" 0
    grep -q "^P2PSHIM_MODE=observe$" "$dir/out" || bad "replaced: $(cat "$dir/out")"
    # An unknown name: one warning with its near miss; the program runs.
    launch P2PSHIM_MOD=observe -- run "$P" env
    expect_rc "P2PSHIM_MOD" 0; one_line "P2PSHIM_MOD"
    expect_err "P2PSHIM_MOD" '^p2pshim: run: warning: environment: unknown variable P2PSHIM_MOD, did you mean P2PSHIM_MODE\?$'
    launch -- run --set MODEE=off "$P" env
    expect_rc "--set MODEE" 2; expect_err "--set MODEE" "did you mean P2PSHIM_MODE\?$"
    # Alone: the stand-in counts the copies that went peer to peer. Without
    # the shim and with it in upgrade mode they differ; with the typo the
    # shim passes every call through, as without it, and says so once.
    env "$SD" "$LT_DEMO" 1 2 >"$dir/plain" 2>&1
    grep -q " 0 copies went peer-to-peer, 3 were staged" "$dir/plain" || bad "plain: $(cat "$dir/plain")"
    alone -- "$LT_DEMO" 1 2
    grep -q " 3 copies went peer-to-peer, 0 were staged" "$dir/out" || bad "upgrade: $(cat "$dir/out")"
    alone P2PSHIM_MODE=obsrve P2PSHIM_LOG=info -- "$LT_DEMO" 1 2
    expect_rc "alone, obsrve" 0
    grep -q " 0 copies went peer-to-peer, 3 were staged" "$dir/out" || bad "alone, obsrve: upgraded: $(cat "$dir/out")"
    grep -c "p2pshim: warning:" "$dir/err" | grep -qx 1 || bad "alone, obsrve: warnings: $(cat "$dir/err")"
    expect_err "alone, obsrve" 'p2pshim: warning: P2PSHIM_MODE="obsrve": not a mode \(upgrade, observe or off\), did you mean observe\?; using off: the shim changes nothing$'
    grep -q "upgraded=[1-9]" "$dir/err" && bad "alone, obsrve: $(cat "$dir/err")"
    # A pair list that does not parse upgrades no pair.
    alone P2PSHIM_PAIRS=0-l -- "$LT_DEMO" 1 2
    expect_rc "alone, PAIRS=0-l" 0; one_line "alone, PAIRS=0-l"
    grep -q " 0 copies went peer-to-peer, 3 were staged" "$dir/out" || bad "PAIRS=0-l: $(cat "$dir/out")"
    expect_err "PAIRS=0-l" 'P2PSHIM_PAIRS="0-l": entry 1: .*; upgrading no pair \(none\)$'
}

case_format_by_name() {
    demo_log "$dir/o.jsonl"
    launch -- report "$dir/o.jsonl" -o "$dir/x.json"
    expect_rc "-o x.json" 0
    CHECK schema "$dir/x.json" "$SCHEMA" 1 $((3 * MIB))
    for name in x.trace.json x.pftrace X.TRACE.JSON; do
        launch -- report "$dir/o.jsonl" -o "$dir/$name"; expect_rc "-o $name" 0
        head -c 15 "$dir/$name" | grep -qF '{"traceEvents"' || bad "-o $name: not a trace"
    done
    launch -- report "$dir/o.jsonl" -o "$dir/x.txt"
    head -n 1 "$dir/x.txt" | grep -q "^p2pshim report: " || bad "-o x.txt: $(head -n 2 "$dir/x.txt")"
    launch -- report "$dir/o.jsonl" --format text -o "$dir/t.json"
    head -n 1 "$dir/t.json" | grep -q "^p2pshim report: " || bad "--format wins over the name"
    # The table: by name and by --format, the same bytes; its rows are the
    # JSON report's pairs.
    launch -- report "$dir/o.jsonl" -o "$dir/x.csv"; expect_rc "-o x.csv" 0
    launch -- report "$dir/o.jsonl" --format csv; expect_rc "--format csv" 0
    cmp -s "$dir/out" "$dir/x.csv" || bad "--format csv differs from -o x.csv"
    CHECK csv "$dir/x.csv" "$dir/x.json"
    # run --report follows the same rule.
    launch "$SD" "$LIB" -- run --observe --log "$dir/r.jsonl" --report "$dir/r.json" \
        "$LT_DEMO" 1 2
    expect_rc "run --report r.json" 0
    CHECK schema "$dir/r.json" "$SCHEMA" 1 $((3 * MIB))
}

# data FILE: the text report's data lines (after "@ "), as the report reads FILE.
data() {
    launch -- report "$1"
    grep '^@ ' "$dir/out"
}

case_gzip() {
    demo_log "$dir/o.jsonl"
    data "$dir/o.jsonl" >"$dir/want"
    [ -s "$dir/want" ] || { bad "no data lines"; return; }
    gzip -c "$dir/o.jsonl" >"$dir/full.jsonl.gz"
    data "$dir/full.jsonl.gz" >"$dir/got"
    cmp -s "$dir/want" "$dir/got" || bad "gzip: other data: $(cat "$dir/err")"
    # Members one after another, and bytes after the last: as gzip -dc.
    n=$(wc -l <"$dir/o.jsonl")
    { head -n $((n / 2)) "$dir/o.jsonl" | gzip -c; tail -n +$((n / 2 + 1)) "$dir/o.jsonl" | gzip -c
      printf 'trailing bytes'; } >"$dir/two.jsonl.gz"
    data "$dir/two.jsonl.gz" >"$dir/got"
    cmp -s "$dir/want" "$dir/got" || bad "two members: other data: $(cat "$dir/err")"
    # Cut short: said so, in one line; from a file and from a pipe.
    size=$(wc -c <"$dir/full.jsonl.gz")
    head -c $((size / 2)) "$dir/full.jsonl.gz" >"$dir/cut.jsonl.gz"
    launch -- report "$dir/cut.jsonl.gz"
    expect_rc "truncated" 1; one_line "truncated"
    expect_err "truncated" "^p2pshim: report: $dir/cut.jsonl.gz: truncated gzip file$"
    env LD_PRELOAD="$SAN" "$L" report - <"$dir/cut.jsonl.gz" >"$dir/out" 2>"$dir/err"; rc=$?
    expect_rc "truncated, stdin" 1; expect_err "truncated, stdin" "^p2pshim: report: -: truncated gzip file$"
    head -c 12 "$dir/full.jsonl.gz" >"$dir/head.jsonl.gz"
    launch -- report "$dir/head.jsonl.gz"
    expect_rc "header only" 1; expect_err "header only" "truncated gzip file$"
    # Damaged inside: its own words.
    "${LT_PYTHON:-python3}" -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) - 6] ^= 0xff
open(sys.argv[2], "wb").write(d)' "$dir/full.jsonl.gz" "$dir/bad.jsonl.gz"
    launch -- report "$dir/bad.jsonl.gz"
    expect_rc "corrupt" 1; one_line "corrupt"
    expect_err "corrupt" "^p2pshim: report: $dir/bad.jsonl.gz: corrupt gzip data: "
    grep -qi "multibyte" "$dir/err" && bad "corrupt: $(cat "$dir/err")"
}

case_$1
[ "$fail" -eq 0 ] && echo "edges $1: passed"
exit "$fail"
