#!/bin/sh
# tools/dev/verdict_screenshot.sh [BUILD_DIR]: renders the top of a 3-rank
# job's HTML report (its header and verdict card) into docs/verdict.png with
# headless Chromium. The job runs on the stand-in driver and its CUPTI of
# BUILD_DIR (default build; built with the tests), in observe mode, with no
# bandwidth table; the report reads the link from the tests' stand-in NVML
# (tests/launcher/fake_nvml.c), set to 18 NVLinks between the two GPUs, so
# the card shows the estimate from the run's records. Exit 0, or 1 with
# the step that failed.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
launcher=$build/tools/launcher/p2pshim
sd=$build/standin-lib
nvml=$build/tests/launcher/fake-nvml
for f in "$launcher" "$sd/libcuda.so.1" "$build/standin-cupti/libcupti.so" "$nvml/libnvidia-ml.so.1" \
         "$build/tools/bench/demo/p2pdemo"; do
    [ -e "$f" ] || { echo "verdict_screenshot: $f missing (build the tests)" >&2; exit 1; }
done
command -v chromium >/dev/null || { echo "verdict_screenshot: no chromium" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/verdict-shot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

LD_PRELOAD=$sd/libcuda.so.1 LD_LIBRARY_PATH=$build/standin-cupti:$sd \
    P2PSHIM_LIBRARY=$build/interpose/libp2pshim.so P2PSHIM_TOPO_FILE=$tmp/none.json \
    "$launcher" run --observe --log-dir "$tmp/logs" -- \
    "$root/tests/launcher/fake_torchrun.sh" 3 "$build/tools/bench/demo/p2pdemo" 64 5 \
    >/dev/null 2>&1 || { echo "verdict_screenshot: the job failed" >&2; exit 1; }
pci=$(python3 -c 'import glob, json, sys
h = json.loads(open(sorted(glob.glob(sys.argv[1] + "/*.jsonl"))[0]).readline())
print(",".join(d["pci"] for d in h["devices"]))' "$tmp/logs")
LD_LIBRARY_PATH=$nvml FAKE_NVML_GPUS=$pci FAKE_NVML_NVLINKS=18 P2PSHIM_TOPO_FILE=$tmp/none.json \
    "$launcher" report "$tmp/logs" -o "$tmp/report.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$tmp/profile" --window-size=1180,430 \
    --screenshot="$root/docs/verdict.png" "file://$tmp/report.html" >/dev/null 2>&1 ||
    { echo "verdict_screenshot: chromium failed" >&2; exit 1; }
echo "wrote $root/docs/verdict.png"
