#!/usr/bin/env bash
# gpu_oneshot.sh: everything one GPU call should bring back, within a time
# budget, on the GPU machine (no network: uthash and jansson come from the
# .deps/ folder carried with the tree; fill it here first with
# tools/dev/fetch_deps.sh).
#
#   tools/dev/gpu_oneshot.sh [--budget SECONDS] [--matrix quick|full|none]
#                        [--no-build] [--no-tests] [--no-harm] [--no-bounce]
#                        [--harm-args "..."] [--matrix-args "..."]
#                        [--tests REGEX] [--ctest-jobs N] [--build-dir DIR]
#                        [--hookbench-rounds N] [--phases "CELL ..."]
#
# 1. the machine (GPUs, driver, kernel, CPUs, THP, torch) into machine.txt;
# 2. configure and build, Release, -j16, only what the GPU tier and the
#    benchmarks need (the library, the launcher, every gpu_* test program,
#    harmbench and bouncebench); with -Werror first, without it if only
#    that fails (build.log says so);
# 2b. with --hookbench-rounds N, tools/bench/hookbench/hookbench_ab.py over
#    the source trees carried as .abtrees/NAME.tar.gz (made here with
#    `git archive --prefix=NAME/ -o .abtrees/NAME.tar.gz COMMIT`; carry
#    .abtrees), N rounds, on the stand-in driver: the shim's per-call cost
#    before and after a change, measured on this machine's quieter CPUs;
# 3. the GPU tier: ctest -L gpu, without the gpu2 label when one GPU is
#    present (tests/gpu/CMakeLists.txt lists those), N tests at a time;
# 4. the misprediction matrix (tools/bench/p2pbench/harm_matrix.py --set quick,
#    about 90 s, or full, about 420 s: give full a call of its own, e.g.
#    --matrix full --no-tests --no-harm --no-bounce);
# 5. the harm rows and bounce loops of tools/bench/p2pbench/harm_run.py (default
#    --harm-args: --quick without PyTorch's never-bounce and training rows);
# 6. tools/bench/p2pbench/bounce_run.sh (bouncebench and bounce_torch.py);
# 6b. with --phases "KIND:SIZE:ACTION ...", tools/dev/gpu_phases.sh over
#    those cells of the matrix (where a mispredicted round's time goes);
# 7. ONE tarball of every log and result in $OUT (or the log folder when
#    $OUT is unset), then the short table (oneshot_summary.py) printed last.
# Time: --budget (default 540 s) counts from the start; the build may take
# up to 240 s; each later stage gets a share of what is left (weights:
# tests 4, matrix 4 quick / 10 full, harm 3, bounce 1, phases 1, of the stages still
# to run, 20 s kept for the tarball) and is told to stop in time (ctest
# --stop-time, --max-seconds), with `timeout` behind it.
# Results go to results/oneshot-TIME/ (git ignores it: the work tree stays
# clean; tools/bench/results/ keeps the set docs/RESULTS.md cites), logs
# to BUILD/oneshot-TIME/. Exit: 0 every stage that ran passed, 1 otherwise,
# 2 bad arguments.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
START=$(date +%s)
ARGS="$*"
BUILD=build-gpu budget=540 matrix=quick do_build=1 do_tests=1 do_harm=1 do_bounce=1
harm_args="--quick --rows fresh_pinned,pinned_write,malloc_read,fresh_read,first_page,small,bounce,torch.loops"
matrix_args="" tests_regex="" ctest_jobs=8 hookbench_rounds=0 phases=""
while [ $# -gt 0 ]; do
    case "$1" in
    --budget) budget=$2; shift 2 ;;
    --matrix) matrix=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-tests) do_tests=0; shift ;;
    --no-harm) do_harm=0; shift ;;
    --no-bounce) do_bounce=0; shift ;;
    --harm-args) harm_args=$2; shift 2 ;;
    --matrix-args) matrix_args=$2; shift 2 ;;
    --tests) tests_regex=$2; shift 2 ;;
    --phases) phases=$2; shift 2 ;;
    --ctest-jobs) ctest_jobs=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --hookbench-rounds) hookbench_rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/{ /^#/ s/^# \{0,1\}//p; }' "$0"; exit 0 ;;
    *) echo "gpu_oneshot.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$matrix" in quick | full | none) ;; *) echo "gpu_oneshot.sh: --matrix quick|full|none" >&2; exit 2 ;; esac
case "$budget" in '' | *[!0-9]*) echo "gpu_oneshot.sh: --budget SECONDS" >&2; exit 2 ;; esac
STAMP=$(date +%Y%m%d-%H%M%S)
LOGS=$ROOT/$BUILD/oneshot-$STAMP
RESULTS=$ROOT/results/oneshot-$STAMP
mkdir -p "$LOGS" "$RESULTS" || exit 1
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL=16
status=0
stages=()

elapsed() { echo $(($(date +%s) - START)); }
# stop_at SECONDS: when a stage of that many seconds stops starting work,
# leaving the rest for what was started and the stage's report.
stop_at() { local t=$(( $1 / 3 < 45 ? $1 / 3 : 45 )); echo $(( $1 - t )); }
left() { echo $((budget - $(elapsed) - 20)); }
# share WEIGHT: this stage's seconds, from the weights of the stages still
# to run (the globals w_*), at least 30 while that much is left; 0 when
# less than 15 s is left (the stage is skipped).
share() {
    local total=$((w_tests + w_matrix + w_harm + w_bounce + w_phases)) l
    l=$(left)
    [ "$total" -gt 0 ] || total=1
    local s=$((l * $1 / total))
    [ "$s" -ge 30 ] || s=30
    [ "$s" -le "$l" ] || s=$l
    [ "$s" -ge 15 ] || s=0
    echo "$s"
}
# enough NAME SECONDS: false (and the stage recorded as out of time) at 0.
enough() {
    [ "$2" -gt 0 ] && return 0
    echo "== $1: skipped, out of time"
    stages+=("--stage" "$1=skipped-out-of-time:0s")
    return 1
}
# stage NAME STATE STARTED: records a stage's state and seconds.
stage() {
    stages+=("--stage" "$1=$2:$(($(date +%s) - $3))s")
    case "$2" in ok*) ;; *) status=1 ;; esac
}
# until DEADLINE CMD...: CMD with what is left until DEADLINE (epoch s).
until_deadline() {
    local d=$1
    shift
    [ $((d - $(date +%s))) -gt 0 ] || { echo "out of time before: $*"; return 124; }
    timeout --kill-after=10 $((d - $(date +%s))) "$@"
}
# build_with WERROR DEADLINE: configure, then build what the GPU stages
# run: the library, the launcher, the benchmarks and every gpu_* program.
build_with() {
    until_deadline "$2" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DP2PSHIM_WERROR="$1" \
        -DP2PSHIM_BUILD_BENCHMARKS=ON ||
        return 1
    local targets
    targets="p2pshim p2pshim_launcher harmbench_static harmbench_shared bouncebench_static
             bouncebench_shared $(cmake --build "$BUILD" --target help |
                                  sed -n 's/^\.\.\. \(gpu_[A-Za-z0-9_]*\)$/\1/p')"
    # shellcheck disable=SC2086 # a list of targets
    echo "targets:" $targets
    # shellcheck disable=SC2086 # a list of targets
    until_deadline "$2" cmake --build "$BUILD" -j16 --target $targets
}

w_tests=$((do_tests * 4)) w_harm=$((do_harm * 3)) w_bounce=$((do_bounce * 1))
w_phases=0
[ -z "$phases" ] || w_phases=1
case "$matrix" in quick) w_matrix=4 ;; full) w_matrix=10 ;; none) w_matrix=0 ;; esac

echo "== machine"
{
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader 2>&1 |
        sed 's/^/gpu: /'
    echo "kernel: $(uname -srm); $(nproc) CPUs; $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo) MemTotal"
    echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); userfaultfd: $(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)"
    echo "tools: $(cmake --version 2>/dev/null | head -n 1); $(nvcc --version 2>/dev/null | tail -n 1); $(gcc --version 2>/dev/null | head -n 1)"
    echo "python: $(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1); torch: $(python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count(), "GPU(s)")' 2>&1 | tail -n 1)"
    echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git status --porcelain -uno 2>/dev/null | grep -q . && echo ' (modified)')"
    # The tree's content: a copied tree's HEAD may name an older commit.
    echo "tree digest: $(tools/dev/tree_digest.sh) (tools/dev/tree_digest.sh at a commit gives its own)"
    echo "command: tools/dev/gpu_oneshot.sh $ARGS"
    nvidia-smi topo -m 2>&1
} >"$LOGS/machine.txt" 2>&1
head -n 7 "$LOGS/machine.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

build_ok=1
if [ "$do_build" = 1 ]; then
    echo "== build ($BUILD, Release)"
    t0=$(date +%s)
    { [ -f .deps/include/uthash.h ] && [ -f .deps/lib/libjansson.a ]; } ||
        echo "note: .deps/ incomplete (tools/dev/fetch_deps.sh here, then carry .deps)" | tee -a "$LOGS/build.log"
    deadline=$(( $(date +%s) + ($(left) < 240 ? $(left) : 240) ))
    if build_with ON "$deadline" >>"$LOGS/build.log" 2>&1; then
        stage build ok "$t0"
    elif echo "== the -Werror build failed: again without -Werror" >>"$LOGS/build.log" &&
         build_with OFF "$deadline" >>"$LOGS/build.log" 2>&1; then
        stage build ok-without-Werror "$t0"
    else
        build_ok=0
        stage build FAILED "$t0"
        tail -n 30 "$LOGS/build.log"
    fi
    echo "build: $(($(date +%s) - t0)) s (log: $LOGS/build.log)"
fi
[ -x "$BUILD/tests/gpu/gpu_kernels_selftest" ] || build_ok=0

if [ "$hookbench_rounds" -gt 0 ] 2>/dev/null && ls .abtrees/*.tar.gz >/dev/null 2>&1; then
    t0=$(date +%s)
    echo "== hookbench_ab.py ($hookbench_rounds rounds)"
    trees=()
    mkdir -p "$ROOT/$BUILD/abtrees"
    for t in .abtrees/*.tar.gz; do
        name=$(basename "$t" .tar.gz)
        tar -xzf "$t" -C "$ROOT/$BUILD/abtrees" &&
            ln -sfn "$ROOT/.deps" "$ROOT/$BUILD/abtrees/$name/.deps" &&
            trees+=("$name=$ROOT/$BUILD/abtrees/$name")
    done
    trees+=("head=$ROOT")
    if timeout --kill-after=10 "$(( $(left) / 2 > 30 ? $(left) / 2 : 30 ))" python3 \
            tools/bench/hookbench/hookbench_ab.py --rounds "$hookbench_rounds" --jobs 16 \
            --out "$RESULTS/hookbench-ab.txt" "${trees[@]}" >"$LOGS/hookbench.log" 2>&1; then
        stage hookbench ok "$t0"
    else
        stage hookbench FAILED "$t0"
    fi
    tail -n 20 "$LOGS/hookbench.log"
fi

s=$(share "$w_tests")
if [ "$do_tests" = 1 ] && [ "$build_ok" = 1 ] && enough tests "$s"; then
    t0=$(date +%s)
    labels=(-L gpu)
    [ "${ngpu:-0}" -ge 2 ] || labels+=(-LE gpu2)
    echo "== ctest ${labels[*]} -j $ctest_jobs (${ngpu:-0} GPU(s), $s s)"
    if timeout --kill-after=10 "$((s + 15))" ctest --test-dir "$BUILD" "${labels[@]}" \
            ${tests_regex:+-R "$tests_regex"} -j "$ctest_jobs" --output-on-failure \
            --stop-time "$(date -d "@$(( $(date +%s) + s ))" +%H:%M:%S)" \
            --output-junit "$LOGS/ctest-gpu.xml" >"$LOGS/ctest.log" 2>&1; then
        stage tests ok "$t0"
    else
        stage tests FAILED "$t0"
    fi
    grep -E '^[0-9]+% tests passed|Total Test time' "$LOGS/ctest.log"
    [ -d "$BUILD/tests/gpu/transcripts" ] && cp -r "$BUILD/tests/gpu/transcripts" "$LOGS/"
    [ -d "$BUILD/gpu-tier/examples" ] && cp -r "$BUILD/gpu-tier/examples" "$LOGS/"
fi
w_tests=0

s=$(share "$w_matrix")
if [ "$matrix" != none ] && [ "$build_ok" = 1 ] && enough matrix "$s"; then
    t0=$(date +%s)
    echo "== misprediction matrix ($matrix, $s s)"
    # shellcheck disable=SC2086 # matrix_args is a list of options
    if timeout --kill-after=10 "$s" python3 tools/bench/p2pbench/harm_matrix.py --set "$matrix" \
            --build-dir "$BUILD" --results-dir "$RESULTS" --max-seconds "$(stop_at "$s")" \
            --hard-seconds $((s - 10)) $matrix_args >"$LOGS/matrix.log" 2>&1; then
        stage matrix ok "$t0"
    else
        stage matrix FAILED "$t0"
    fi
    sed -n '/^== matrix summary/,$p' "$LOGS/matrix.log"
fi
w_matrix=0

s=$(share "$w_harm")
if [ "$do_harm" = 1 ] && [ "$build_ok" = 1 ] && enough harm "$s"; then
    t0=$(date +%s)
    echo "== harm_run.py $harm_args ($s s)"
    # shellcheck disable=SC2086 # harm_args is a list of options
    if timeout --kill-after=10 "$s" python3 tools/bench/p2pbench/harm_run.py --build-dir "$BUILD" \
            --json "$RESULTS/harm-results.json" --max-seconds "$(stop_at "$s")" --timeout 60 \
            $harm_args >"$LOGS/harm.log" 2>&1; then
        stage harm ok "$t0"
    else
        stage harm FAILED "$t0"
    fi
    sed -n '/^time: /p' "$LOGS/harm.log"
fi
w_harm=0

s=$(share "$w_bounce")
if [ "$do_bounce" = 1 ] && [ "$build_ok" = 1 ] && enough bounce "$s"; then
    t0=$(date +%s)
    echo "== bounce_run.sh ($s s)"
    if timeout --kill-after=10 "$s" sh tools/bench/p2pbench/bounce_run.sh "$BUILD" \
            "$RESULTS/bounce-results.jsonl" >"$LOGS/bounce.log" 2>&1; then
        stage bounce ok "$t0"
    else
        stage bounce FAILED "$t0"
    fi
fi
w_bounce=0

if [ -n "$phases" ] && [ "$build_ok" = 1 ]; then
    t0=$(date +%s)
    echo "== phases ($phases)"
    # shellcheck disable=SC2086 # phases is a list of cells
    if timeout --kill-after=10 "$(( $(left) > 20 ? $(left) : 20 ))" tools/dev/gpu_phases.sh \
            "$BUILD" "$RESULTS/phases.txt" $phases >"$LOGS/phases.log" 2>&1; then
        stage phases ok "$t0"
    else
        stage phases FAILED "$t0"
    fi
fi

# ONE tarball (the run tool brings back files of 16 MiB at most): the logs
# and results; the shim's per-process logs are left out first if too big.
out=${OUT:-$LOGS}
mkdir -p "$out"
tarball=$out/oneshot-$STAMP.tar.gz
python3 tools/bench/p2pbench/oneshot_summary.py "$LOGS" "$RESULTS" "${stages[@]}" --budget "$budget" \
    --elapsed "$(elapsed)" >"$LOGS/summary.txt" 2>&1
tar -czf "$tarball" -C "$ROOT/$BUILD" "oneshot-$STAMP" -C "$ROOT" "results/oneshot-$STAMP" 2>/dev/null
if [ "$(stat -c %s "$tarball" 2>/dev/null || echo 0)" -gt $((15 << 20)) ]; then
    tar -czf "$tarball" -C "$ROOT/$BUILD" --exclude='*-logs' "oneshot-$STAMP" \
        -C "$ROOT" "results/oneshot-$STAMP" 2>/dev/null
    echo "note: the shim's per-process logs left out of the tarball (over 15 MiB with them)" |
        tee -a "$LOGS/summary.txt"
fi
python3 tools/bench/p2pbench/oneshot_summary.py "$LOGS" "$RESULTS" "${stages[@]}" --budget "$budget" \
    --elapsed "$(elapsed)" --tarball "$tarball"
exit $status
