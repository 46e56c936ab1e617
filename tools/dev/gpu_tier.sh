#!/usr/bin/env bash
# gpu_tier.sh: the GPU tier in one command, on the GPU machine.
#
#   tools/dev/gpu_tier.sh [--no-build] [--no-tests] [--no-bench]
#                     [--rounds N] [--bench-args "..."] [--tests REGEX]
#                     [--exclude REGEX] [--no-bounce] [--no-harm]
#                     [--harm-args "..."] [--no-trust]
#
# 1. prints the GPU topology (nvidia-smi topo -m);
# 2. configures and builds (cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release
#    -DP2PSHIM_WERROR=ON,
#    16 jobs); uthash comes from .deps/include, carried with the tree;
# 3. runs ctest -L gpu --output-on-failure (-R REGEX with --tests, -E with
#    --exclude), without the tests labelled gpu2 (they need two GPUs) when
#    fewer than two are present;
# 4. runs tools/bench/p2pbench/run_bench.py (results: results/p2pbench-results.json)
#    and tools/bench/p2pbench/bounce_run.sh (host bounces: results/bounce-results.jsonl);
# 5. runs tools/bench/p2pbench/harm_run.py (what the shim costs programs that never
#    bounce, and the bounce loops: results/harm-results.json; --harm-args passes
#    options, e.g. "--quick");
# 5b. runs tools/bench/p2pbench/trust_cost.sh (what the link check costs a pair's
#    first copy, checked and cached) where two or more GPUs are present; with
#    fewer it says so and skips;
# 6. copies logs and JSON to $OUT when set (8 files at most: the summary and
#    results first, every log in logs.tar.gz);
# 7. prints a summary table last: each gpu test pass/fail/skip, each
#    benchmark criterion, the harm summary.
# The machine has no internet: nothing here fetches anything, and the
# variables below make pip and friends fail fast instead of hanging.
# Exit: 0 when everything that ran passed, 1 otherwise.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
BUILD=${P2PSHIM_GPU_BUILD:-build-gpu}
LOGS=$ROOT/$BUILD/gpu-tier
# Results go to results/ (git ignores it): a GPU run leaves the work tree
# clean. The set docs/RESULTS.md cites is kept in tools/bench/results/.
RESULTS=$ROOT/results
mkdir -p "$RESULTS"
do_build=1 do_tests=1 do_bench=1 do_bounce=1 do_harm=1 do_trust=1 rounds=2 bench_args="" tests_regex=""
exclude_regex="" harm_args=""
while [ $# -gt 0 ]; do
    case "$1" in
    --no-build) do_build=0; shift ;;
    --no-tests) do_tests=0; shift ;;
    --no-bench) do_bench=0; shift ;;
    --no-bounce) do_bounce=0; shift ;;
    --no-harm) do_harm=0; shift ;;
    --no-trust) do_trust=0; shift ;;
    --harm-args) harm_args=$2; shift 2 ;;
    --tests) tests_regex=$2; shift 2 ;;
    --exclude) exclude_regex=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bench-args) bench_args=$2; shift 2 ;;
    *) echo "gpu_tier.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1
export CMAKE_BUILD_PARALLEL_LEVEL=16
mkdir -p "$LOGS"
status=0
build_state=skipped tests_state=skipped bench_state=skipped bounce_state=skipped
harm_state=skipped trust_state=skipped

echo "== nvidia-smi topo -m"
if command -v nvidia-smi >/dev/null 2>&1; then
    { nvidia-smi topo -m; echo; nvidia-smi -L;
      nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv; } \
        2>&1 | tee "$LOGS/topo.txt"
else
    echo "nvidia-smi not found" | tee "$LOGS/topo.txt"
fi

if [ "$do_build" = 1 ]; then
    echo "== configure and build ($BUILD)"
    [ -f .deps/include/uthash.h ] ||
        echo "note: .deps/include/uthash.h missing; configure finds uthash only if installed"
    if { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DP2PSHIM_WERROR=ON \
             -DP2PSHIM_BUILD_BENCHMARKS=ON &&
         cmake --build "$BUILD" -j16; } >"$LOGS/build.log" 2>&1; then
        build_state=ok
        echo "build ok (log: $LOGS/build.log)"
    else
        build_state=FAILED status=1 do_tests=0 do_bench=0
        echo "BUILD FAILED; last lines of $LOGS/build.log:"
        tail -n 40 "$LOGS/build.log"
    fi
fi

if [ "$build_state" = ok ] && [ -x "$BUILD/tools/launcher/p2pshim" ]; then
    echo "== p2pshim topo (NVML and the driver, loaded at run time)"
    "$BUILD/tools/launcher/p2pshim" topo 2>&1 | tee -a "$LOGS/topo.txt"
fi

if [ "$build_state" = ok ] && [ -x "$BUILD/tests/gpu/gpu_bounce_static_legacy" ]; then
    echo "== bounce probe (what host memory allows; a kernel reading a bounced buffer)"
    probe=$BUILD/tests/gpu/gpu_bounce_static_legacy
    { timeout 60 "$probe" --probe
      echo "-- --probe-hmm without the shim"; timeout 60 "$probe" --probe-hmm; echo "exit $?"
      echo "-- --probe-hmm with the shim, P2PSHIM_BOUNCE=lazy"
      LD_PRELOAD=$ROOT/$BUILD/interpose/libp2pshim.so P2PSHIM_BOUNCE=lazy P2PSHIM_LOG=info \
          timeout 60 "$probe" --probe-hmm; echo "exit $?"
      echo "-- --probe-hmm with the shim, P2PSHIM_BOUNCE=auto"
      LD_PRELOAD=$ROOT/$BUILD/interpose/libp2pshim.so P2PSHIM_LOG=info \
          timeout 60 "$probe" --probe-hmm; echo "exit $?"
      echo "-- kernel log (Xid, userfaultfd)"; dmesg 2>/dev/null | tail -n 15
    } 2>&1 | tee "$LOGS/bounce-probe.txt"
fi

if [ "$do_tests" = 1 ]; then
    labels=(-L gpu)
    [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ] || labels+=(-LE gpu2)
    echo "== ctest ${labels[*]}"
    if ctest --test-dir "$BUILD" "${labels[@]}" ${tests_regex:+-R "$tests_regex"} \
             ${exclude_regex:+-E "$exclude_regex"} --output-on-failure \
             --output-junit "$LOGS/ctest-gpu.xml" 2>&1 | tee "$LOGS/ctest.log"; then
        tests_state=ok
    else
        tests_state=FAILED status=1
    fi
    tar -czf "$LOGS/transcripts.tar.gz" -C "$BUILD/tests/gpu" transcripts 2>/dev/null ||
        rm -f "$LOGS/transcripts.tar.gz"
fi

if [ "$do_bench" = 1 ]; then
    echo "== run_bench.py"
    if python3 tools/bench/p2pbench/run_bench.py --build-dir "$BUILD" --rounds "$rounds" \
               --bench-args "$bench_args" --json "$RESULTS/p2pbench-results.json" 2>&1 |
           tee "$LOGS/bench.log"; then
        bench_state=ok
    else
        bench_state=FAILED status=1
    fi
fi
if [ "$do_bounce" = 1 ] && [ "$build_state" != FAILED ]; then
    echo "== bounce_run.sh"
    if sh tools/bench/p2pbench/bounce_run.sh "$BUILD" "$RESULTS/bounce-results.jsonl" 2>&1 |
           tee "$LOGS/bounce.log"; then
        bounce_state=ok
    else
        bounce_state=FAILED status=1
    fi
fi

if [ "$do_harm" = 1 ] && [ "$build_state" != FAILED ]; then
    echo "== harm_run.py"
    # shellcheck disable=SC2086 # harm_args is a list of options
    if PYTHONUNBUFFERED=1 python3 tools/bench/p2pbench/harm_run.py --build-dir "$BUILD" \
               --json "$RESULTS/harm-results.json" $harm_args 2>&1 | tee "$LOGS/harm.log"; then
        harm_state=ok
    else
        harm_state=FAILED status=1
    fi
fi

if [ "$do_trust" = 1 ] && [ "$build_state" != FAILED ]; then
    echo "== trust_cost.sh (the link check's cost per pair)"
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "${ngpu:-0}" -lt 2 ]; then
        echo "trust_cost: skipped, ${ngpu:-0} GPU(s) (needs 2)" | tee "$LOGS/trust.log"
    elif [ ! -x "$BUILD/tools/bench/p2pbench/trust_cost_shared" ]; then
        echo "trust_cost: skipped, $BUILD/tools/bench/p2pbench/trust_cost_shared not built" |
            tee "$LOGS/trust.log"
    elif sh tools/bench/p2pbench/trust_cost.sh "$BUILD" "$LOGS/trust-cost.jsonl" 2>&1 |
             tee "$LOGS/trust.log"; then
        trust_state=ok
    else
        trust_state=FAILED status=1
    fi
fi

# The summary table: from ctest's log and the benchmarks' criteria lines.
python3 - "$LOGS" "$build_state" "$tests_state" "$bench_state" "$bounce_state" \
    "$harm_state" "$trust_state" >"$LOGS/summary.txt" <<'EOF'
import os, re, sys
logs, build, tests, bench, bounce, harm, trust = sys.argv[1:8]
print("== gpu tier summary")
print("build: %s   tests: %s   bench: %s   bounce: %s   harm: %s   trust: %s" % (
    build, tests, bench, bounce, harm, trust))
pat = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?([A-Za-z][A-Za-z ]*?)(?::[^\d]*)?\s+[\d.]+ sec")
path = os.path.join(logs, "ctest.log")
if os.path.exists(path):
    for line in open(path, errors="replace"):
        m = pat.search(line)
        if m:
            word = m.group(2).strip().lower()
            state = {"passed": "pass", "skipped": "skip", "not run": "skip"}.get(word, "FAIL")
            print("  %-4s %s%s" % (state, m.group(1), "" if state != "FAIL" else " (%s)" % word))
for name, marker, title in (("bench.log", "== acceptance criteria", "benchmark criteria:"),
                            ("bounce.log", "== bounce criteria", "bounce criteria:"),
                            ("harm.log", "== harm summary", "harm (shim / no shim):")):
    path = os.path.join(logs, name)
    if os.path.exists(path):
        lines = open(path, errors="replace").read().splitlines()
        if marker in lines:
            print(title)
            for l in lines[lines.index(marker) + 1:]:
                print("  " + (l if len(l) < 200 else l[:197] + "..."))
# trust_cost.sh: its per-pair lines (after the runs' JSON lines), or why it
# did not run.
path = os.path.join(logs, "trust.log")
if os.path.exists(path):
    lines = [l for l in open(path, errors="replace").read().splitlines()
             if l.startswith("pair ") or l.startswith("trust_cost: ")]
    print("link check, first copy over a skipped check (trust_cost.sh):")
    for l in lines or ["no figures (see trust.log)"]:
        print("  " + l)
EOF

cat "$LOGS/summary.txt"
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    # At most 8 files come back: every log in one tarball, then the summary,
    # the results of the stages that ran and their logs, in that order, while
    # there is room.
    # shellcheck disable=SC2046 # the names that exist, one word each
    tar -czf "$OUT/logs.tar.gz" -C "$LOGS" $(cd "$LOGS" && ls -d build.log ctest-gpu.xml \
        transcripts.tar.gz examples topo.txt ctest.log bench.log bounce.log harm.log \
        bounce-probe.txt trust.log summary.txt 2>/dev/null) 2>/dev/null
    sent=1
    for f in "$LOGS/summary.txt" \
             "$([ "$do_harm" = 1 ] && echo "$RESULTS/harm-results.json")" \
             "$([ "$do_bench" = 1 ] && echo "$RESULTS/p2pbench-results.json")" \
             "$([ "$do_bounce" = 1 ] && echo "$RESULTS/bounce-results.jsonl")" \
             "$LOGS/harm.log" "$LOGS/ctest.log" "$LOGS/bench.log" "$LOGS/bounce.log" \
             "$LOGS/topo.txt" "$LOGS/bounce-probe.txt"; do
        [ -n "$f" ] && [ -f "$f" ] && [ "$sent" -lt 8 ] && cp "$f" "$OUT/" && sent=$((sent + 1))
    done
fi
exit $status
