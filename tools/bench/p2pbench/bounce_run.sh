#!/bin/sh
# bounce_run.sh BUILD_DIR [OUT.jsonl]: the host-bounce measurements, side
# by side in one run: bouncebench (pageable and pinned, untouched and read
# in between, 4 KiB to 256 MiB) without the shim, with it (default
# P2PSHIM_BOUNCE=auto) and the ceiling (--direct: the program rewritten to
# snapshot and copy peer to peer itself), static and shared cudart; then
# PyTorch's x.cpu().to('cuda:1') without and with the shim. With one GPU
# the same within device 0 (pair 0,0; x.cpu().to('cuda:0')). Prints the
# criteria last (bounce_report.py).
set -u
build=${1:?usage: bounce_run.sh BUILD_DIR [OUT.jsonl]}
out=${2:-$(dirname "$0")/../../../results/bounce-results.jsonl}
mkdir -p "$(dirname "$out")"
shim=$build/interpose/libp2pshim.so
here=$(dirname "$0")
pair=0,1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "${ngpu:-0}" -ge 2 ] || { pair=0,0; echo "bounce_run: one GPU: pair 0,0 (the same-GPU bounce)"; }
: >"$out"
for kind in static shared; do
    b=$build/tools/bench/p2pbench/bouncebench_$kind
    "$b" --pair "$pair" --label noshim --json "$out" || exit 1
    LD_PRELOAD=$shim P2PSHIM_LOG=info "$b" --pair "$pair" --label shim --json "$out" || exit 1
    "$b" --pair "$pair" --label direct --direct --json "$out" || exit 1
done
if python3 -c "import torch" 2>/dev/null; then
    python3 "$here/bounce_torch.py" --label noshim --json "$out"
    LD_PRELOAD=$shim P2PSHIM_LOG=info python3 "$here/bounce_torch.py" --label shim --json "$out"
fi
echo "results: $out"
python3 "$here/bounce_report.py" "$out"
