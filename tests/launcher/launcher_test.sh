#!/bin/sh
# launcher_test.sh CASE: the launcher's tests (CPU tier). One case per
# CTest test; see CMakeLists.txt here for the cases and the variables:
#   LT_LAUNCHER  the p2pshim executable      LT_PROBE   lt_probe
#   LT_SHIM      libp2pshim.so (build tree)  LT_DUMMY   liblt_dummy.so
#   LT_SAN       sanitizer runtime to preload first ("" in plain builds)
#   LT_STANDIN   folder of the stand-in libcuda.so.1
#   LT_DEMO      p2pdemo                     LT_BUILD   the build folder
#   LT_CMAKE     cmake                       LT_VERSION the project version
#   LT_LIBDIR    the install libdir (GNUInstallDirs), relative to the prefix
#   LT_REFUSED   pl_refused (tests/preload/refused.c): calls the driver refuses
# LD_PRELOAD is put on the commands run, never on this shell.
set -u
L=$LT_LAUNCHER
P=$LT_PROBE
SAN=${LT_SAN:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/lt.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# launch [VAR=value...] -- ARGS...: runs the launcher with LD_PRELOAD=$SAN
# (plus the variables given); stdout in $dir/out, stderr in $dir/err, the
# status in $rc.
launch() {
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$SAN" $vars "$L" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
expect_rc() { # what, expected
    [ "$rc" -eq "$2" ] || { bad "$1: exit $rc, expected $2"; cat "$dir/out" "$dir/err"; }
}
expect_out() { # what, fixed string expected in stdout
    grep -qF -- "$2" "$dir/out" || { bad "$1: stdout lacks '$2'"; cat "$dir/out"; }
}
expect_err() { # what, extended regex expected in stderr
    grep -qE -- "$2" "$dir/err" || { bad "$1: stderr lacks /$2/"; cat "$dir/err"; }
}
# The LD_PRELOAD the program should see: the sanitizer runtime first.
with_san() { if [ -n "$SAN" ]; then echo "$SAN:$1"; else echo "$1"; fi; }
shim=$(realpath "$LT_SHIM")

case_help() {
    launch -- --help; expect_rc "--help" 0; expect_out "--help" "usage: p2pshim COMMAND"
    expect_out "--help" "127 program"
    launch -- run --help; expect_rc "run --help" 0
    expect_out "run --help" "usage: p2pshim run"; expect_out "run --help" "exit status"
    cp "$dir/out" "$dir/run_help"
    launch -- help run; expect_rc "help run" 0
    cmp -s "$dir/out" "$dir/run_help" || bad "help run differs from run --help"
    launch -- topo --help; expect_rc "topo --help" 0
    expect_out "topo --help" "usage: p2pshim topo"; expect_out "topo --help" "--measure"
    launch -- --version; expect_rc "--version" 0; expect_out "--version" "p2pshim $LT_VERSION"
    launch --; expect_rc "no arguments" 2; expect_err "no arguments" "usage: p2pshim"
    launch -- frobnicate; expect_rc "unknown command" 2
    expect_err "unknown command" "^p2pshim: unknown command 'frobnicate'"
    launch -- --frob; expect_rc "unknown option" 2
    launch -- topo --frob; expect_rc "topo --frob" 2
    expect_err "topo --frob" "^p2pshim: topo: unknown option '--frob' \(see p2pshim topo --help\)$"
}

case_cli() {
    # One parser for every command: the same forms, the same lines.
    for cmd in run topo report; do
        launch -- "$cmd" --bogus x; expect_rc "$cmd --bogus" 2
        expect_err "$cmd --bogus" "^p2pshim: $cmd: unknown option '--bogus' \(see p2pshim $cmd --help\)$"
        [ "$(wc -l <"$dir/err")" -eq 1 ] || bad "$cmd --bogus: not one line: $(cat "$dir/err")"
        launch -- "$cmd" --bogus=1 x
        expect_err "$cmd --bogus=1" "^p2pshim: $cmd: unknown option '--bogus' "
        launch -- "$cmd" -Z; expect_rc "$cmd -Z" 2
        expect_err "$cmd -Z" "^p2pshim: $cmd: unknown option '-Z' "
        launch -- "$cmd" --help; expect_rc "$cmd --help" 0
        expect_out "$cmd --help" "usage: p2pshim $cmd"
        launch -- "$cmd" -h; expect_rc "$cmd -h" 0
        expect_out "$cmd -h" "usage: p2pshim $cmd"
        launch -- "$cmd" --help=x; expect_rc "$cmd --help=x" 2
        expect_err "$cmd --help=x" "^p2pshim: $cmd: option '--help' takes no value "
    done
    launch -- --bogus; expect_err "top --bogus" "^p2pshim: unknown option '--bogus' \(see p2pshim --help\)$"
    # A missing value: the same words for every command.
    launch -- run --log; expect_err "run --log" "^p2pshim: run: option '--log' needs a value "
    launch -- report --topo; expect_err "report --topo" "^p2pshim: report: option '--topo' needs a value "
    launch -- topo --output; expect_err "topo --output" "^p2pshim: topo: option '--output' needs a value "
    launch -- topo -o; expect_err "topo -o" "^p2pshim: topo: option '-o' needs a value "
    # An unambiguous prefix is the option; an ambiguous one says which.
    launch -- run --lo x; expect_rc "run --lo" 2
    expect_err "run --lo" "^p2pshim: run: ambiguous option '--lo' \(--log, --log-dir\) "
    launch -- run --obs "$P" env; expect_rc "run --obs" 0; expect_out "run --obs" "P2PSHIM_MODE=observe"
    # -oFILE, -o FILE, --output=FILE, --output FILE: one file each.
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo -o"$dir/t1"; expect_rc "topo -oFILE" 0
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo -o "$dir/t2"; expect_rc "topo -o FILE" 0
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo --output="$dir/t3"; expect_rc "topo --output=" 0
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo --output "$dir/t4"; expect_rc "topo --output" 0
    for k in 2 3 4; do cmp -s "$dir/t1" "$dir/t$k" || bad "topo output form $k differs"; done
    grep -q "Stand-in GPU 0" "$dir/t1" || bad "topo -oFILE: $(cat "$dir/t1")"
    # --mode weird and --set MODE=weird: the same line.
    launch -- run --mode weird "$P" env; cp "$dir/err" "$dir/err1"
    launch -- run --set MODE=weird "$P" env; expect_rc "--set MODE=weird" 2
    cmp -s "$dir/err" "$dir/err1" || bad "--mode/--set differ: $(cat "$dir/err1" "$dir/err")"
    expect_err "--set MODE=weird" "^p2pshim: run: P2PSHIM_MODE=\"weird\": not a mode"
    launch -- run --set LOG=loud "$P" env; expect_rc "--set LOG=loud" 2
    expect_err "--set LOG=loud" "^p2pshim: run: P2PSHIM_LOG=\"loud\""
    # -- ends the options; options after PROGRAM are the program's.
    launch -- run --observe -- "$P" env --mode=x; expect_rc "run -- PROG" 0
    expect_out "run -- PROG" "P2PSHIM_MODE=observe"
    launch -- run "$P" env --bogus; expect_rc "run PROG --bogus" 0
    launch -- run --set=LOG=info "$P" env; expect_out "run --set=" "P2PSHIM_LOG=info"
    launch -- report -- --not-an-option; expect_rc "report -- LOG" 1
    expect_err "report -- LOG" "^p2pshim: report: --not-an-option: no such file$"
}

case_preload() {
    # P2PSHIM_LIBRARY, then the build tree's interpose/ found by itself.
    launch "P2PSHIM_LIBRARY=$LT_SHIM" -- run "$P" env; expect_rc "run env" 0
    expect_out "run env" "LD_PRELOAD=$(with_san "$shim")"
    expect_out "run env" "mapped libp2pshim.so"
    grep -q P2PSHIM_LIBRARY "$dir/out" && bad "run env: P2PSHIM_LIBRARY reached the program"
    [ -s "$dir/err" ] && bad "run env: stderr not empty: $(cat "$dir/err")"
    launch -- run -- "$P" env; expect_rc "run -- env (found)" 0
    expect_out "run -- env (found)" "LD_PRELOAD=$(with_san "$shim")"
    # Relative program names go through PATH, as with a shell.
    launch "PATH=$(dirname "$P"):$PATH" -- run "$(basename "$P")" env
    expect_rc "run via PATH" 0; expect_out "run via PATH" "mapped libp2pshim.so"
}

case_keep_preload() {
    dummy=$LT_DUMMY
    env LD_PRELOAD="$(with_san "$dummy")" "$L" run "$P" env >"$dir/out" 2>"$dir/err"; rc=$?
    expect_rc "existing LD_PRELOAD" 0
    expect_out "existing LD_PRELOAD" "LD_PRELOAD=$(with_san "$shim:$dummy")"
    expect_out "existing LD_PRELOAD" "mapped liblt_dummy.so"
    # One shim only, separators normalised, order kept.
    env LD_PRELOAD="$(with_san "$shim") $dummy:$shim" "$L" run "$P" env >"$dir/out" 2>&1
    rc=$?
    expect_rc "shim already there" 0
    expect_out "shim already there" "LD_PRELOAD=$(with_san "$shim:$dummy")"
}

case_options() {
    cd "$dir" || exit 1
    launch -- run --observe --set LOG=info --set P2PSHIM_PAIRS=0-1 --log rel-%p.jsonl \
        --set MIN_BYTES= "$P" env
    expect_rc "options" 0
    expect_out "options" "P2PSHIM_MODE=observe"
    expect_out "options" "P2PSHIM_LOG=info"
    expect_out "options" "P2PSHIM_PAIRS=0-1"
    expect_out "options" "P2PSHIM_RUN_LOG=$dir/rel-%p.jsonl"
    expect_out "options" "P2PSHIM_MIN_BYTES="
    # Later options win; --x=value works as --x value.
    launch -- run --observe --mode=upgrade --set MODE=off --mode upgrade "$P" env
    expect_rc "later wins" 0; expect_out "later wins" "P2PSHIM_MODE=upgrade"
    launch -- run --mode off "$P" env; expect_out "--mode off" "P2PSHIM_MODE=off"
    # The program's own options are the program's.
    launch -- run "$P" env --observe; expect_rc "program options" 0
    grep -q P2PSHIM_MODE "$dir/out" && bad "program options: --observe was taken"
    # Bad input: one line, exit 2.
    for args in "--mode fast $P env" "--set NOPE=1 $P env" "--set LOG $P env" \
        "--report= $P env" "--log" "--bogus $P env" "" "--"; do
        # shellcheck disable=SC2086
        launch -- run $args
        expect_rc "run $args" 2
        [ "$(wc -l <"$dir/err")" -eq 1 ] || bad "run $args: not one line: $(cat "$dir/err")"
        grep -q "^p2pshim: " "$dir/err" || bad "run $args: no prefix: $(cat "$dir/err")"
    done
}

case_exit_codes() {
    launch -- run "$P" exit 3; expect_rc "exit 3" 3
    launch -- run "$P" exit 0; expect_rc "exit 0" 0
    launch -- run "$P" signal 9; expect_rc "SIGKILL" 137
    expect_err "SIGKILL" "killed by signal 9"
    launch -- run "$P" signal 15; expect_rc "SIGTERM" 143
}

case_not_found() {
    launch -- run no-such-program-p2pshim-test; expect_rc "not found" 127
    expect_err "not found" "^p2pshim: no-such-program-p2pshim-test: program not found$"
    launch -- run "$dir/nothing/here"; expect_rc "not found (path)" 127
    printf 'not a program\n' >"$dir/plain"
    chmod 644 "$dir/plain"
    launch -- run "$dir/plain"; expect_rc "not executable" 126
    expect_err "not executable" "cannot run: Permission denied"
}

case_no_library() {
    launch "P2PSHIM_LIBRARY=$dir/none/libp2pshim.so" -- run "$P" env
    expect_rc "P2PSHIM_LIBRARY missing" 3
    expect_err "P2PSHIM_LIBRARY missing" "^p2pshim: P2PSHIM_LIBRARY=.*: No such file"
    # A launcher with no library beside it, in ../$LT_LIBDIR or ../../interpose.
    mkdir -p "$dir/a/b/bin"
    cp "$L" "$dir/a/b/bin/p2pshim"
    L=$dir/a/b/bin/p2pshim launch -- run "$P" env
    expect_rc "no library" 3; expect_err "no library" "libp2pshim.so not found"
    # An installed layout: bin/p2pshim finds $LT_LIBDIR/libp2pshim.so, also
    # through a symlink to it.
    mkdir -p "$dir/a/b/$LT_LIBDIR" "$dir/links"
    cp "$LT_SHIM" "$dir/a/b/$LT_LIBDIR/libp2pshim.so"
    ln -s "$dir/a/b/bin/p2pshim" "$dir/links/p2pshim"
    L=$dir/links/p2pshim launch -- run "$P" env
    expect_rc "prefix layout" 0
    expect_out "prefix layout" "LD_PRELOAD=$(with_san "$dir/a/b/$LT_LIBDIR/libp2pshim.so")"
}

case_signals() {
    env LD_PRELOAD="$SAN" "$L" run "$P" wait "$dir/ready" >"$dir/out" 2>"$dir/err" &
    pid=$!
    i=0
    while [ ! -e "$dir/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
    [ -e "$dir/ready" ] || bad "the program never started"
    kill -TERM "$pid"
    wait "$pid"; rc=$?
    expect_rc "SIGTERM forwarded once" 41
    expect_out "SIGTERM forwarded" "got 1 signal(s)"
}

# signo NAME: the number of signal NAME (SIGRTMIN+1 as RTMIN+1).
signo() {
    "${LT_PYTHON:-python3}" -c "import signal,sys; n=sys.argv[1]
print(signal.SIGRTMIN + int(n[6:]) if n.startswith('RTMIN+') else getattr(signal, 'SIG' + n))" "$1"
}
# start_bg [VAR=value...] -- ARGS...: the launcher in the background (its
# pid in $pid), started once the program made $dir/ready.
start_bg() {
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
    shift
    rm -f "$dir/ready"
    # shellcheck disable=SC2086
    env LD_PRELOAD="$SAN" $vars "$L" "$@" >"$dir/out" 2>"$dir/err" &
    pid=$!
    i=0
    while [ ! -e "$dir/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
    [ -e "$dir/ready" ] || bad "the program never started"
}
# The state letter of process $1 (R, S, T, ...) from /proc.
pstate() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }

case_signals_all() {
    # Each signal sent to the launcher reaches the program once, the
    # launcher lives on and exits with the program's status. SIGINT and
    # SIGQUIT too, although a background job of a script ignores them.
    for name in USR1 USR2 ALRM HUP INT QUIT TERM WINCH PIPE URG RTMIN+1; do
        n=$(signo "$name")
        start_bg -- run "$P" wait "$dir/ready" "$n"
        kill "-$n" "$pid"
        wait "$pid"; rc=$?
        expect_rc "SIG$name forwarded" 41
        expect_out "SIG$name forwarded once" "got 1 signal(s)"
    done
    # A value queued with a signal goes with it.
    n=$(signo RTMIN+2)
    start_bg -- run "$P" wait "$dir/ready" "$n"
    "$P" sigqueue "$pid" "$n" 4242 || bad "sigqueue failed"
    wait "$pid"; rc=$?
    expect_rc "queued signal" 41; expect_out "queued signal's value" "value 4242"
    # A signal the program does not catch kills it: 128+N, and said.
    start_bg -- run "$P" wait "$dir/ready"
    kill -USR1 "$pid"
    wait "$pid"; rc=$?
    expect_rc "SIGUSR1 kills the program" $((128 + $(signo USR1)))
    expect_err "SIGUSR1 kills the program" "was killed by signal $(signo USR1) "
}

case_signals_report() {
    # A batch system's warning before its time limit (Slurm's
    # --signal=USR1@N) while a CUDA program runs: the program gets it, the
    # report is written when it ends.
    n=$(signo USR1)
    start_bg "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" \
        "P2PSHIM_TOPO_FILE=$dir/none.json" "P2PSHIM_TRUST=skip" -- run \
        --log "$dir/run-%p.jsonl" --report "$dir/r.txt" -- sh -c \
        '"$1" 1 2 >/dev/null && exec "$2" wait "$3" "$4"' sh "$LT_DEMO" "$P" "$dir/ready" "$n"
    kill -USR1 "$pid"
    wait "$pid"; rc=$?
    expect_rc "USR1 with --report" 41
    expect_out "USR1 with --report" "got 1 signal(s)"
    grep -q "copies between GPUs" "$dir/r.txt" 2>/dev/null ||
        bad "USR1 with --report: no report: $(cat "$dir/err")"
}

case_signals_job() {
    # SIGTSTP sent to the launcher stops the program and the launcher (a
    # shell waiting for the job sees it stop); SIGCONT resumes both. Up to
    # 30 s each way: a loaded machine may take seconds to schedule them.
    # Where SIGTSTP stops nothing (the kernel discards it in an orphaned
    # process group, as under a detached runner), there is no job control
    # to check: skipped (77).
    sh -c 'kill -TSTP $$; exec sleep 5' &
    probe=$!
    sleep 0.3
    stoppable=$(pstate "$probe")
    kill -CONT "$probe" 2>/dev/null; kill "$probe" 2>/dev/null; wait "$probe" 2>/dev/null
    if [ "$stoppable" != T ]; then
        echo "launcher signals_job: SKIP: SIGTSTP stops no process here (an orphaned process group)"
        exit 77
    fi
    start_bg -- run "$P" wait "$dir/ready"
    child=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | tr -d ' ')
    [ -n "$child" ] || bad "no child of the launcher"
    kill -TSTP "$pid"
    i=0
    while { [ "$(pstate "$pid")" != T ] || [ "$(pstate "$child")" != T ]; } && [ $i -lt 1500 ]; do
        sleep 0.02; i=$((i + 1))
    done
    [ "$(pstate "$pid")" = T ] || bad "SIGTSTP: the launcher is $(pstate "$pid"), not stopped"
    [ "$(pstate "$child")" = T ] || bad "SIGTSTP: the program is $(pstate "$child"), not stopped"
    kill -CONT "$pid"
    i=0
    while [ "$(pstate "$child")" = T ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done
    [ "$(pstate "$child")" != T ] || bad "SIGCONT: the program is still stopped"
    kill -TERM "$pid"
    wait "$pid"; rc=$?
    expect_rc "after stop and continue" 41
    expect_out "after stop and continue" "got 1 signal(s)"
}

case_signals_group() {
    # The program signals its own process group, the launcher among it:
    # the program has its copy, the launcher sends it no second one.
    n=$(signo USR2)
    rm -f "$dir/ready"
    env LD_PRELOAD="$SAN" setsid "$L" run "$P" wait-group "$dir/ready" "$n" \
        >"$dir/out" 2>"$dir/err"
    rc=$?
    expect_rc "the program's group signal" 41
    expect_out "the program's group signal, once" "got 1 signal(s)"
}

case_refused_report() {
    # Copies the driver refuses (SIZE_MAX bytes, past an allocation) and
    # three good ones, under run --report: the report is written (exit 0)
    # and counts the good copies only.
    launch "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" "P2PSHIM_TRUST=skip" \
        "P2PSHIM_TOPO_FILE=$dir/none.json" -- run --log "$dir/run.jsonl" \
        --report "$dir/r.txt" "$LT_REFUSED" shim linear
    expect_rc "refused copies, --report" 0
    grep -q "verdict: 1 process, 3 copies between GPUs (16.0 KiB)" "$dir/r.txt" 2>/dev/null ||
        bad "refused copies: the report: $(cat "$dir/r.txt" "$dir/err" 2>/dev/null)"
    grep -q "64-bit limit" "$dir/r.txt" && bad "refused copies: figures at the 64-bit limit"
}

case_topo_list() {
    # Where NVML is installed (the GPU machines) it is found, and finds
    # none of the stand-in's devices; elsewhere topo must say so.
    nvml=no
    if ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then nvml=yes; fi
    for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
        [ -e "$d/libnvidia-ml.so.1" ] && nvml=yes
    done
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo; expect_rc "topo" 0
    expect_out "topo" "2 devices"
    expect_out "topo" "GPU0   0000:10:00.0   Stand-in GPU 0"
    expect_out "topo" "GPU1   0000:11:00.0   Stand-in GPU 1"
    grep -qE "^  GPU0 +- +yes" "$dir/out" || bad "topo: peer row 0: $(cat "$dir/out")"
    grep -qE "^  GPU1 +yes +-" "$dir/out" || bad "topo: peer row 1: $(cat "$dir/out")"
    [ $nvml = no ] && expect_out "topo" "Links: NVML unavailable"
    launch "LD_LIBRARY_PATH=$LT_STANDIN" STANDIN_TOPOLOGY=none STANDIN_DEVICES=3 -- topo
    expect_rc "topo none" 0; expect_out "topo none" "3 devices"
    grep -qE "^  GPU2 +no +no +-" "$dir/out" || bad "topo none: $(cat "$dir/out")"
    launch "LD_LIBRARY_PATH=$LT_STANDIN" -- topo --json --output "$dir/t.json"
    expect_rc "topo --json" 0
    check_table "$dir/t.json" false
    launch "LD_LIBRARY_PATH=$dir/empty" -- topo; expect_rc "no driver" 1
    expect_err "no driver" "^p2pshim: topo: no CUDA driver"
}

# check_table FILE MEASURED: the bandwidth table's structure.
check_table() {
    command -v python3 >/dev/null 2>&1 || { grep -q '"format":"p2pshim-topo"' "$1" ||
        bad "table $1: $(cat "$1")"; return; }
    python3 - "$1" "$2" <<'PY' || bad "table $1: $(cat "$1")"
import json, sys
t = json.load(open(sys.argv[1]))
measured = sys.argv[2] == "true"
assert t["format"] == "p2pshim-topo" and t["version"] == 1, t
assert isinstance(t["driver"], int) and t["measured"] == measured
assert [d["ordinal"] for d in t["devices"]] == [0, 1]
assert all(d["name"].startswith("Stand-in GPU") and d["pci"] for d in t["devices"])
pairs = sorted((l["src"], l["dst"]) for l in t["links"])
assert pairs == [(0, 1), (1, 0)], pairs
for l in t["links"]:
    assert l["can_peer"] is True
    for k in ("type", "nvlinks", "staged_gbps", "peer_gbps"):
        assert k in l, k
    # The stand-in's time model (standin.h): peer 400 GB/s, staged 40.
    if measured:
        assert 0 < l["staged_gbps"] < l["peer_gbps"], l
    else:
        assert l["staged_gbps"] is None and l["peer_gbps"] is None, l
PY
}

case_topo_measure() {
    sd="LD_LIBRARY_PATH=$LT_STANDIN"
    launch "$sd" "P2PSHIM_TOPO_FILE=$dir/x/y/topo.json" -- topo --measure
    expect_rc "measure" 0
    expect_err "measure" "^p2pshim: measuring 1/4: 0->1 staged$"
    expect_err "measure" "^p2pshim: measuring 4/4: 1->0 peer$"
    expect_err "measure" "bandwidth table written to $dir/x/y/topo.json"
    expect_out "measure" "0->1"
    check_table "$dir/x/y/topo.json" true
    ls "$dir/x/y" | grep -q tmp && bad "measure: a temporary file was left: $(ls "$dir/x/y")"
    # The default places: XDG_CACHE_HOME, then HOME.
    launch "$sd" P2PSHIM_TOPO_FILE= "XDG_CACHE_HOME=$dir/xdg" -- topo --measure --json
    expect_rc "measure xdg" 0
    check_table "$dir/xdg/p2pshim/topo.json" true
    cmp -s "$dir/out" "$dir/xdg/p2pshim/topo.json" || bad "--json output differs from the table"
    launch "$sd" P2PSHIM_TOPO_FILE= XDG_CACHE_HOME= "HOME=$dir/home" -- topo --measure
    expect_rc "measure home" 0
    check_table "$dir/home/.cache/p2pshim/topo.json" true
    # Never under the shim.
    env LD_PRELOAD="$(with_san "$shim")" "$sd" "P2PSHIM_TOPO_FILE=$dir/z.json" "$L" topo \
        --measure >"$dir/out" 2>"$dir/err"; rc=$?
    expect_rc "measure under the shim" 1; expect_err "measure under the shim" "refusing"
    [ -e "$dir/z.json" ] && bad "measure under the shim wrote a table"
}

# topo_of REPORT.json: the table the JSON report used ("null" for none).
topo_of() {
    "${LT_PYTHON:-python3}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["topo"])' "$1" 2>/dev/null ||
        echo "unreadable"
}

case_topo_identity() {
    # The table knows its machine: host, UUIDs and bus ids. A report uses
    # it only for the GPUs it was measured on (by UUID, whatever ordinal a
    # process gave them), refuses it with one line otherwise, and --topo
    # forces it with a warning.
    sd="LD_LIBRARY_PATH=$LT_STANDIN"
    launch "$sd" STANDIN_DEVICES=3 CUDA_VISIBLE_DEVICES=0,1 "P2PSHIM_TOPO_FILE=$dir/t.json" -- \
        topo --measure
    expect_rc "measure" 0
    grep -q '"uuid":"GPU-5344494e-0000-0000-0000-000000000001"' "$dir/t.json" &&
        grep -q "\"host\":\"$(hostname)\"" "$dir/t.json" || bad "table identity: $(cat "$dir/t.json")"
    log() { # NAME CUDA_VISIBLE_DEVICES: a run log of p2pdemo 1 2 (device 0 to 1)
        env LD_PRELOAD="$(with_san "$shim")" "$sd" STANDIN_DEVICES=3 CUDA_VISIBLE_DEVICES="$2" \
            P2PSHIM_MODE=observe P2PSHIM_RUN_LOG="$dir/$1.jsonl" "$LT_DEMO" 1 2 >/dev/null 2>&1 ||
            bad "log $1"
    }
    log same 0,1; log swapped 1,0; log other 1,2
    for name in same swapped; do
        launch "P2PSHIM_TOPO_FILE=$dir/t.json" -- report --format json -o "$dir/$name.json" \
            "$dir/$name.jsonl"
        expect_rc "report $name" 0
        [ -s "$dir/err" ] && bad "report $name: warned: $(cat "$dir/err")"
        [ "$(topo_of "$dir/$name.json")" = "$dir/t.json" ] || bad "report $name: table not used"
    done
    # Other GPUs of this host: refused, by default and from run alike.
    launch "P2PSHIM_TOPO_FILE=$dir/t.json" -- report --format json -o "$dir/other.json" \
        "$dir/other.jsonl"
    expect_rc "other GPUs" 0; [ "$(wc -l <"$dir/err")" -eq 1 ] || bad "other GPUs: $(cat "$dir/err")"
    expect_err "other GPUs" "^p2pshim: report: warning: bandwidth table $dir/t.json not used: it names no GPU GPU-5344494e-0000-0000-0000-000000000002 of host"
    [ "$(topo_of "$dir/other.json")" = None ] || bad "other GPUs: table used"
    launch "$sd" STANDIN_DEVICES=3 CUDA_VISIBLE_DEVICES=1,2 "P2PSHIM_LIBRARY=$LT_SHIM" \
        "P2PSHIM_TOPO_FILE=$dir/t.json" -- run --observe --log "$dir/r.jsonl" \
        --report "$dir/r.txt" "$LT_DEMO" 1 2
    expect_rc "run, other GPUs" 0; expect_err "run, other GPUs" "warning: bandwidth table .* not used"
    # Forced: used, with a warning that it is foreign.
    launch -- report --topo "$dir/t.json" --format json -o "$dir/forced.json" "$dir/other.jsonl"
    expect_rc "forced" 0
    expect_err "forced" "^p2pshim: report: warning: bandwidth table $dir/t.json is foreign: .*; used as --topo asks$"
    [ "$(topo_of "$dir/forced.json")" = "$dir/t.json" ] || bad "forced: table not used"
    # Another host's table.
    sed 's/"host":"[^"]*"/"host":"elsewhere"/' "$dir/t.json" >"$dir/e.json"
    launch "P2PSHIM_TOPO_FILE=$dir/e.json" -- report --format json -o "$dir/e-r.json" "$dir/same.jsonl"
    expect_err "other host" "not used: it was measured on host elsewhere, the logs are from $(hostname)"
    [ "$(topo_of "$dir/e-r.json")" = None ] || bad "other host: table used"
    # Why a figure is n/a.
    launch "$sd" STANDIN_TOPOLOGY=none "P2PSHIM_TOPO_FILE=$dir/n.json" -- topo --measure
    expect_out "no peer" "n/a (no peer access)"
    grep -q '"peer_na":"no peer access"' "$dir/n.json" || bad "no peer: $(cat "$dir/n.json")"
    launch "$sd" STANDIN_ARENA_MB=16 "P2PSHIM_TOPO_FILE=$dir/a.json" -- topo --measure
    expect_rc "cannot allocate" 1; expect_err "cannot allocate" "cannot allocate"
    launch "$sd" STANDIN_FAIL_ENABLE=0:1 "P2PSHIM_TOPO_FILE=$dir/f.json" -- topo --measure
    expect_rc "enable refused" 0; expect_out "enable refused" "n/a (peer access refused"
}

case_report() {
    # A CUDA program on the stand-in, with a temporary run log.
    cd "$dir" || return
    mkdir "$dir/tmp"
    launch "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" "TMPDIR=$dir/tmp" \
        "P2PSHIM_TOPO_FILE=$dir/none.json" -- run --observe --report "$dir/r.html" \
        "$LT_DEMO" 4 3
    expect_rc "run --report" 0
    expect_err "run --report" "report written to $dir/r.html"
    [ -s "$dir/r.html" ] || bad "run --report: no report"
    [ -z "$(ls -A "$dir/tmp")" ] || bad "run --report: left $(ls -A "$dir/tmp")"
    # Without --log the logs stay in the run folder (here the test's
    # current folder).
    ls -d p2pshim-*-*-*/*.jsonl >/dev/null 2>&1 || bad "run --report: no run folder with a log"
    rm -rf p2pshim-*-*-*
    # With --log the log stays.
    launch "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" -- run --log \
        "$dir/run-%p.jsonl" --report "$dir/r.md" "$LT_DEMO" 4 3
    expect_rc "run --log --report" 0
    [ -s "$dir/r.md" ] || bad "run --log --report: no report"
    ls "$dir"/run-*.jsonl >/dev/null 2>&1 || bad "run --log --report: the log is gone"
    # A program without CUDA writes no log: the report fails (4), and the
    # empty run folder goes.
    launch "TMPDIR=$dir/tmp" -- run --report "$dir/n.html" "$P" exit 0
    expect_rc "report without a log" 4; expect_err "report without a log" "no run log"
    ls -d p2pshim-*-*-* >/dev/null 2>&1 && bad "report without a log: left a run folder"
    [ -z "$(ls -A "$dir/tmp")" ] || bad "report without a log: left $(ls -A "$dir/tmp")"
    # The program's status wins over a failed report.
    launch "TMPDIR=$dir/tmp" -- run --report "$dir/n.html" "$P" exit 5
    expect_rc "report without a log, exit 5" 5
}

# The job cases: a torchrun-like launcher starting 4 workers as children,
# each `p2pdemo RANK+1 2` (check_job.py says what that copies).
TORCHRUN=$(dirname "$0")/fake_torchrun.sh
SRUN=$(dirname "$0")/fake_srun.sh
SCHEMA=$(dirname "$0")/../../docs/report-schema.json
CHECK_JOB() { "${LT_PYTHON:-python3}" "$(dirname "$0")/check_job.py" "$@" || bad "check_job $*"; }
worker() { # the command a worker runs: a shell (not exec) running the demo
    echo 'exec "$0" $((RANK + 1)) 2'
}

case_job_tree() {
    # The whole tree under one launcher: the default run folder in the
    # current folder, one report naming the 4 ranks.
    mkdir "$dir/cwd" && cd "$dir/cwd" || return
    launch "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" "P2PSHIM_LOG=info" \
        "P2PSHIM_TOPO_FILE=$dir/none.json" -- run --observe --report "$dir/out.html" -- \
        "$TORCHRUN" 4 sh -c "$(worker)" "$LT_DEMO"
    expect_rc "run the tree" 0
    expect_err "run the tree" "report written to $dir/out.html"
    set -- "$dir"/cwd/p2pshim-*-*-*
    [ "$#" -eq 1 ] && [ -d "$1" ] || { bad "run folder: $*"; return; }
    CHECK_JOB logs "$1" 4
    CHECK_JOB html "$dir/out.html" 4
    CHECK_JOB prefix "$dir/err" 4
    launch -- report "$1" -o "$dir/out.txt"; expect_rc "report the folder" 0
    CHECK_JOB text "$dir/out.txt" 4
    launch -- report "$1/*.jsonl" -o "$dir/job.trace.json"; expect_rc "trace of a glob" 0
    CHECK_JOB trace "$dir/job.trace.json" 4
    cd "$dir" || return
}

case_job_ranks() {
    # Per-rank wrapping (mpirun/srun style): each rank's own launcher, one
    # run folder; --report templates per rank.
    env LD_PRELOAD="$SAN" LD_LIBRARY_PATH="$LT_STANDIN" P2PSHIM_LIBRARY="$LT_SHIM" \
        P2PSHIM_TOPO_FILE="$dir/none.json" "$TORCHRUN" 4 "$L" run --observe \
        --log-dir "$dir/job" --report "$dir/r%r.txt" -- sh -c "$(worker)" "$LT_DEMO" \
        >"$dir/out" 2>"$dir/err"
    rc=$?; expect_rc "per rank" 0
    [ -d "$dir/job" ] || { bad "per rank: no run folder"; cat "$dir/err"; return; }
    for r in 0 1 2 3; do [ -s "$dir/r$r.txt" ] || bad "per rank: no r$r.txt"; done
    CHECK_JOB logs "$dir/job" 4
    launch -- report "$dir/job" -o "$dir/job.txt"; expect_rc "report per-rank folder" 0
    CHECK_JOB text "$dir/job.txt" 4
    # --observe alone: the verdict on stderr, no folder left.
    mkdir "$dir/tmp"
    launch "LD_LIBRARY_PATH=$LT_STANDIN" "P2PSHIM_LIBRARY=$LT_SHIM" "TMPDIR=$dir/tmp" \
        "P2PSHIM_TOPO_FILE=$dir/none.json" -- run --observe "$LT_DEMO" 1 2
    expect_rc "observe alone" 0
    expect_err "observe alone" "^p2pshim: verdict: 1 process, 3 copies between GPUs \(3.0 MiB\)"
    expect_err "observe alone" "^p2pshim:   upgrade mode would: carry 3 copies over the peer link"
    [ -z "$(ls -A "$dir/tmp")" ] || bad "observe alone: left $(ls -A "$dir/tmp")"
}

case_job_srun() {
    # the srun recipe of docs/JOBS.md: no launcher around the tasks, the
    # library from --print-library given through srun's --export. Three tasks
    # see the two GPUs in different orders (CUDA_VISIBLE_DEVICES), each
    # copying 3 MiB from its device 0 to its device 1: the JSON report merges
    # them by GPU UUID, and follows docs/report-schema.json.
    lib=$(env LD_PRELOAD="$SAN" P2PSHIM_LIBRARY="$LT_SHIM" "$L" --print-library) ||
        { bad "print-library"; return; }
    mkdir "$dir/job"
    env LD_LIBRARY_PATH="$LT_STANDIN" FAKE_SRUN_GPUS="0,1 1,0 0,1" "$SRUN" -n 3 \
        --export=ALL,LD_PRELOAD="$(with_san "$lib")",P2PSHIM_MODE=observe,P2PSHIM_RUN_LOG="$dir/job/%h-pid%p-rank%r.jsonl" \
        "$LT_DEMO" 1 2 >"$dir/out" 2>"$dir/err"
    rc=$?; expect_rc "srun tasks" 0
    CHECK_JOB logs-as-seen "$dir/job" 3
    [ "$fail" -eq 0 ] || return
    launch "P2PSHIM_TOPO_FILE=$dir/none.json" -- report "$dir/job" --format json \
        -o "$dir/job.json"
    expect_rc "report --format json" 0
    CHECK_JOB json "$dir/job.json" 3 "$SCHEMA"
    launch "P2PSHIM_TOPO_FILE=$dir/none.json" -- report "$dir/job" -o "$dir/job.txt"
    CHECK_JOB matrix-text "$dir/job.txt" 3
    launch "P2PSHIM_TOPO_FILE=$dir/none.json" -- report "$dir/job" -o "$dir/job.html"
    CHECK_JOB matrix-html "$dir/job.html" 3
}

case_install() {
    "$LT_CMAKE" --install "$LT_BUILD" --prefix "$dir/prefix" >"$dir/install.log" 2>&1 ||
        { bad "cmake --install"; cat "$dir/install.log"; return; }
    for f in bin/p2pshim "$LT_LIBDIR/libp2pshim.so" share/doc/p2pshim/README.md \
        share/doc/p2pshim/LAUNCHER.md share/doc/p2pshim/LICENSE; do
        [ -e "$dir/prefix/$f" ] || bad "install: no $f"
    done
    L=$dir/prefix/bin/p2pshim launch -- run "$P" env
    expect_rc "installed run" 0
    expect_out "installed run" "LD_PRELOAD=$(with_san "$dir/prefix/$LT_LIBDIR/libp2pshim.so")"
    expect_out "installed run" "mapped libp2pshim.so"
}

case_print_library() {
    # The library run would preload: $P2PSHIM_LIBRARY, the build tree's,
    # an installed prefix's (also through a symlink); its real path.
    launch "P2PSHIM_LIBRARY=$LT_SHIM" -- --print-library; expect_rc "from P2PSHIM_LIBRARY" 0
    [ "$(cat "$dir/out")" = "$shim" ] || bad "from P2PSHIM_LIBRARY: '$(cat "$dir/out")'"
    [ -s "$dir/err" ] && bad "from P2PSHIM_LIBRARY: stderr: $(cat "$dir/err")"
    launch -- --print-library; expect_rc "build tree" 0
    [ "$(cat "$dir/out")" = "$shim" ] || bad "build tree: '$(cat "$dir/out")'"
    mkdir -p "$dir/p/bin" "$dir/p/$LT_LIBDIR" "$dir/links"
    cp "$L" "$dir/p/bin/p2pshim"
    cp "$LT_SHIM" "$dir/p/$LT_LIBDIR/libp2pshim.so"
    ln -s "$dir/p/bin/p2pshim" "$dir/links/p2pshim"
    L=$dir/links/p2pshim launch -- --print-library; expect_rc "prefix" 0
    lib=$(realpath "$dir/p/$LT_LIBDIR/libp2pshim.so")
    [ "$(cat "$dir/out")" = "$lib" ] || bad "prefix: '$(cat "$dir/out")', expected $lib"
    # What it prints is what run preloads, and works as LD_PRELOAD by hand.
    L=$dir/links/p2pshim launch -- run "$P" env
    expect_out "prefix run" "LD_PRELOAD=$(with_san "$lib")"
    env LD_PRELOAD="$(with_san "$lib")" "$P" env >"$dir/out" 2>"$dir/err"
    expect_out "by hand" "mapped libp2pshim.so"
    # None: nothing on stdout (a script's LD_PRELOAD=$(...) stays empty),
    # one line saying where it looked, status 3 as for run.
    rm "$dir/p/$LT_LIBDIR/libp2pshim.so"
    L=$dir/p/bin/p2pshim launch -- --print-library; expect_rc "none" 3
    [ -s "$dir/out" ] && bad "none: stdout: $(cat "$dir/out")"
    expect_err "none" "^p2pshim: libp2pshim.so not found \(looked at .*$LT_LIBDIR/libp2pshim.so"
    launch "P2PSHIM_LIBRARY=$dir/nope.so" -- --print-library; expect_rc "missing" 3
    expect_err "missing" "^p2pshim: P2PSHIM_LIBRARY=.*nope.so: No such file"
    launch -- --print-library extra; expect_rc "argument" 2
}

case_$1
[ "$fail" -eq 0 ] && echo "launcher $1: passed"
exit "$fail"
