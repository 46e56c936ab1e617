#!/bin/sh
# verdict_test.sh CASE: the answer the report gives first (CPU tier, the
# stand-in driver and its CUPTI): the verdict's estimate from the run's own
# records when no measured bandwidth table exists, the HTML header and
# verdict card of a 3-rank job, upgrade mode's exit line (measured with
# CUPTI, nominal from NVML's link without it), CUPTI refused,
# the report's format by its file name. The variables are
# launcher_test.sh's (CMakeLists.txt here); check_verdict.py recomputes
# every figure from the run logs.
set -u
L=$LT_LAUNCHER
SAN=${LT_SAN:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/lv.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
PY=${LT_PYTHON:-python3}
here=$(dirname "$0")
CHECK() { "$PY" "$here/check_verdict.py" "$@" || bad "check_verdict $1"; }
TORCHRUN=$here/fake_torchrun.sh
SCHEMA=$here/../../docs/report-schema.json
# The stand-in's CUPTI answers only where the stand-in driver's symbols
# are global: it is preloaded after the shim (the launcher keeps it there).
CUPTI_DIR=$(dirname "$LT_STANDIN")/standin-cupti
SD_PRELOAD=$LT_STANDIN/libcuda.so.1
if [ -n "$SAN" ]; then PRE="$SAN:$SD_PRELOAD"; else PRE="$SD_PRELOAD"; fi

# job [VAR=value...] -- ARGS...: the launcher on the stand-in with CUPTI;
# stdout in $dir/out, stderr in $dir/err, the status in $rc.
job() {
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$PRE" LD_LIBRARY_PATH="$CUPTI_DIR:$LT_STANDIN" P2PSHIM_LIBRARY="$LT_SHIM" \
        P2PSHIM_TOPO_FILE="$dir/none.json" TMPDIR="$dir/tmp" $vars "$L" "$@" \
        >"$dir/out" 2>"$dir/err"
    rc=$?
}
report() { env LD_PRELOAD="$SAN" P2PSHIM_TOPO_FILE="$dir/none.json" "$L" report "$@"; }
mkdir "$dir/tmp"

# An observe run of 3 ranks, each copying GPU 0 to GPU 1 staged.
observe_job() {
    job -- run --observe --log-dir "$dir/logs" -- "$TORCHRUN" 3 "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || { bad "observe job: exit $rc"; cat "$dir/err"; return 1; }
}

case_verdict_estimate() {
    observe_job || return
    # No table at all: PCIe at the host link's rate.
    report "$dir/logs" -o "$dir/none.json.out" --format json || bad "report json"
    CHECK estimate "$dir/logs" "$dir/none.json.out" 0 none
    # A table without measurements, with the link type NVML gives
    # (p2pshim topo's own table; the stand-in has no NVML links, so the
    # test writes what NVML would say: 2 NVLinks).
    env LD_PRELOAD="$SAN" LD_LIBRARY_PATH="$LT_STANDIN" "$L" topo --json -o "$dir/t.json" ||
        bad "topo --json"
    "$PY" - "$dir/t.json" <<'EOF' || bad "editing the table"
import json, sys
t = json.load(open(sys.argv[1]))
for l in t["links"]:
    l["type"], l["nvlinks"] = "NVLink", 2
json.dump(t, open(sys.argv[1], "w"))
EOF
    report "$dir/logs" --topo "$dir/t.json" -o "$dir/nv.json" || bad "report --topo json"
    CHECK estimate "$dir/logs" "$dir/nv.json" 2 table
    report "$dir/logs" --topo "$dir/t.json" -o "$dir/nv.txt" || bad "report --topo text"
    CHECK text "$dir/logs" "$dir/nv.txt"
    "$PY" "$here/check_edges.py" schema "$dir/nv.json" "$SCHEMA" 3 $((3 * 4 * 4 << 20)) ||
        bad "schema"
}

case_verdict_nvml() {
    # No table: the link as NVML names it for the GPUs of this host (a
    # stand-in NVML knowing the logs' GPUs by their bus ids).
    observe_job || return
    pci=$("$PY" -c 'import glob, json, sys
h = json.loads(open(sorted(glob.glob(sys.argv[1] + "/*.jsonl"))[0]).readline())
print(",".join(d["pci"] for d in h["devices"]))' "$dir/logs")
    nvml() { env LD_LIBRARY_PATH="$LT_FAKE_NVML" FAKE_NVML_GPUS="$pci" "$@"; }
    nvml FAKE_NVML_NVLINKS=3 LD_PRELOAD="$SAN" P2PSHIM_TOPO_FILE="$dir/none.json" "$L" report \
        "$dir/logs" -o "$dir/nv3.json" || bad "report with NVML"
    CHECK estimate "$dir/logs" "$dir/nv3.json" 3 nvml
    # A PCIe pair: no faster than the host link.
    nvml FAKE_NVML_NVLINKS=0 LD_PRELOAD="$SAN" P2PSHIM_TOPO_FILE="$dir/none.json" "$L" report \
        "$dir/logs" -o "$dir/pix.json" || bad "report with NVML, PCIe"
    CHECK estimate "$dir/logs" "$dir/pix.json" 0 nvml-pcie
    # The same NVML as p2pshim topo reads it (the lookup is topo's own).
    nvml FAKE_NVML_NVLINKS=3 LD_PRELOAD="$SAN" LD_LIBRARY_PATH="$LT_FAKE_NVML:$LT_STANDIN" "$L" \
        topo >"$dir/topo.txt" 2>&1 || bad "topo with NVML"
    grep -q "NV3" "$dir/topo.txt" || { bad "topo does not see NV3"; cat "$dir/topo.txt"; }
}

case_verdict_html() {
    command -v chromium >/dev/null || { echo "SKIP: no chromium"; exit 77; }
    observe_job || return
    report "$dir/logs" -o "$dir/r.html" || bad "report html"
    chromium --headless --no-sandbox --disable-gpu --user-data-dir="$dir/profile" \
        --dump-dom "file://$dir/r.html" >"$dir/dom.html" 2>/dev/null || bad "chromium"
    CHECK html "$dir/r.html" "$dir/dom.html" "$dir/logs"
}

case_exit_line() {
    # Upgrade mode with CUPTI: one line, the figures the logs give.
    job -- run --set CUPTI=1 --log-dir "$dir/up" -- "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || { bad "upgrade run: exit $rc"; cat "$dir/err"; }
    CHECK exit "$dir/up" "$dir/err"
    # Without CUPTI (upgrade mode's default), without NVML and without a
    # log to keep: the line says why there is no estimate (exit-nominal
    # checks its figures), and no folder is left.
    job -- run -- "$LT_DEMO" 4 3
    n=$(grep -c "^p2pshim: upgraded 4 copies (16.0 MiB) onto the peer link; time saved: not estimated (no link known" "$dir/err")
    [ "$n" -eq 1 ] || { bad "no-CUPTI exit line: $n"; cat "$dir/err"; }
    [ -z "$(ls -A "$dir/tmp")" ] || bad "left $(ls -A "$dir/tmp")"
    # Observe mode prints its verdict instead; plain LD_PRELOAD nothing.
    job -- run --observe -- "$LT_DEMO" 4 3
    grep -q "^p2pshim: upgraded" "$dir/err" && bad "exit line in observe mode"
    # A sanitizer's runtime first, then the shim, then the stand-in.
    plain=$(realpath "$LT_SHIM"):$SD_PRELOAD
    [ -n "$SAN" ] && plain=$SAN:$plain
    env LD_PRELOAD="$plain" LD_LIBRARY_PATH="$LT_STANDIN" "$LT_DEMO" 4 3 \
        >"$dir/out" 2>"$dir/err" || bad "plain preload: exit $?"
    [ ! -s "$dir/err" ] || { bad "plain LD_PRELOAD wrote to stderr"; cat "$dir/err"; }
}

case_exit_nominal() {
    # Upgrade mode's default, CUPTI off: the nominal figure from the logs'
    # bytes where NVML names the pair's link (the stand-in NVML, knowing the
    # logs' GPUs by their bus ids); none for a PCIe link or none known.
    job -- run --log-dir "$dir/none" -- "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || { bad "run without NVML: exit $rc"; cat "$dir/err"; return; }
    CHECK exit-nominal "$dir/none" "$dir/err" none
    pci=$("$PY" -c 'import glob, json, sys
h = json.loads(open(sorted(glob.glob(sys.argv[1] + "/*.jsonl"))[0]).readline())
print(",".join(d["pci"] for d in h["devices"]))' "$dir/none")
    nvml="LD_LIBRARY_PATH=$LT_FAKE_NVML:$CUPTI_DIR:$LT_STANDIN FAKE_NVML_GPUS=$pci"
    # shellcheck disable=SC2086
    job $nvml FAKE_NVML_NVLINKS=3 -- run --log-dir "$dir/nv3" -- "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || { bad "run with NVML: exit $rc"; cat "$dir/err"; }
    CHECK exit-nominal "$dir/nv3" "$dir/err" 3
    # shellcheck disable=SC2086
    job $nvml FAKE_NVML_NVLINKS=0 -- run --log-dir "$dir/pix" -- "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || { bad "run with NVML, PCIe: exit $rc"; cat "$dir/err"; }
    CHECK exit-nominal "$dir/pix" "$dir/err" pix
    # The line never changes the exit status.
    # shellcheck disable=SC2086
    job $nvml FAKE_NVML_NVLINKS=3 -- run -- sh -c '"$0" 4 3; exit 7' "$LT_DEMO"
    [ "$rc" -eq 7 ] || bad "exit status $rc with the nominal line, want 7"
    grep -q "^p2pshim: upgraded 4 copies (16.0 MiB) onto the peer link; nominal time saved: " \
        "$dir/err" || { bad "no nominal line for a program's exit 7"; cat "$dir/err"; }
}

case_cupti_unavailable() {
    # CUPTI refused as when another profiler holds it (error 999): one
    # line per process in words, none with the bare code.
    job STANDIN_CUPTI_SUBSCRIBE_ERROR=999 -- run --observe --log "$dir/c.jsonl" -- \
        "$LT_DEMO" 4 3
    [ "$rc" -eq 0 ] || bad "run: exit $rc"
    n=$(grep -c "CUPTI unavailable (another profiler may hold it, cuptiSubscribe error 999): the run log has no timings of copies" "$dir/err")
    [ "$n" -eq 1 ] || { bad "CUPTI lines: $n"; cat "$dir/err"; }
    grep -q "CUPTI cuptiSubscribe error" "$dir/err" && bad "the bare code is still said"
    head -n 1 "$dir/c.jsonl" | grep -qF '"cupti":"unavailable: another profiler may hold it' ||
        bad "header: $(head -c 600 "$dir/c.jsonl")"
    report "$dir/c.jsonl" >"$dir/c.txt" || bad "report"
    grep -q "^  no time estimate: the run has no timings of copies (1 of 1 process: CUPTI unavailable: another profiler" "$dir/c.txt" ||
        { bad "the verdict does not say why"; head -n 20 "$dir/c.txt"; }
    # And with CUPTI on, none of it.
    job -- run --observe --log "$dir/ok.jsonl" -- "$LT_DEMO" 4 3
    grep -q "CUPTI unavailable" "$dir/err" && bad "CUPTI unavailable said with CUPTI on"
    head -n 1 "$dir/ok.jsonl" | grep -qF '"cupti":"on"' || bad "CUPTI not on in the control"
}

case_format_json() {
    observe_job || return
    for name in x.json X.JSON; do
        report "$dir/logs" -o "$dir/$name" || bad "-o $name"
        "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d.get("schema") != "p2pshim-report")' \
            "$dir/$name" || bad "-o $name: not the JSON report: $(head -c 80 "$dir/$name")"
    done
    report "$dir/logs" -o "$dir/x.html" || bad "-o x.html"
    head -c 15 "$dir/x.html" | grep -qF "<!DOCTYPE html>" || bad "-o x.html: not a page"
    report "$dir/logs" -o "$dir/x.trace.json" || bad "-o x.trace.json"
    head -c 15 "$dir/x.trace.json" | grep -qF '{"traceEvents"' || bad "-o x.trace.json: no trace"
    job -- run --observe --report "$dir/r.json" -- "$LT_DEMO" 4 3
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d.get("schema") != "p2pshim-report")' \
        "$dir/r.json" || bad "run --report r.json: not the JSON report"
}

"case_$1"
exit $fail
