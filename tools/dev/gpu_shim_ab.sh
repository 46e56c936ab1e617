#!/bin/sh
# gpu_shim_ab.sh TARBALL BUILD OUT SECONDS KINDS SIZES ACTIONS: cells of the
# misprediction matrix run with the shim of the tree under test (BUILD,
# e.g. built by gpu_oneshot.sh) and with the shim of another source tree,
# one after the other on the same machine: what a change to the bounce
# path did to a mispredicted round, each arm beside its own no-shim and
# A/A runs (harm_matrix.py), then where each one's time went
# (gpu_phases.sh, one run a cell at P2PSHIM_LOG=debug).
#
# TARBALL is the other tree (`git archive --prefix=base/ -o
# .abtrees/base.tar.gz COMMIT`; carry .abtrees and .deps); only its
# library is built (Release), in BUILD/base, as gpu_adv_base.sh does.
# KINDS, SIZES, ACTIONS are harm_matrix.py's lists (e.g. malloc 64M,1G
# memset), between the D2H and the H2D, static cudart, no PyTorch; each
# arm gets SECONDS/2 (harm_matrix.py --max-seconds and --hard-seconds).
# Results: OUT/{new,base}/matrix-*.txt and OUT/phases-{new,base}.txt.
# Exit: 0 whatever the ratios were, 1 when nothing could run.
set -u
[ $# -eq 7 ] || { sed -n '2,17p' "$0" >&2; exit 1; }
tarball=$1 build=$2 out=$3 seconds=$4 kinds=$5 sizes=$6 actions=$7
root=$(cd "$(dirname "$0")/../.." && pwd)
new=$root/$build/interpose/libp2pshim.so
[ -f "$new" ] || { echo "gpu_shim_ab: $new not built" >&2; exit 1; }
base=$root/$build/base
mkdir -p "$out" || exit 1
old=$(sh "$root/tools/dev/build_base_shim.sh" "$tarball" "$base") || exit 1
echo "base library: $old ($(tar -tzf "$tarball" | head -n 1))"
half=$((seconds / 2))
cells=""
for k in $(echo "$kinds" | tr , ' '); do
    for z in $(echo "$sizes" | tr , ' '); do
        for a in $(echo "$actions" | tr , ' '); do cells="$cells $k:$z:$a"; done
    done
done
for arm in new base; do
    lib=$new
    [ "$arm" = base ] && lib=$old
    echo "== $arm: $lib"
    python3 "$root/tools/bench/p2pbench/harm_matrix.py" --build-dir "$root/$build" \
        --shim "$lib" --kinds "$kinds" --sizes "$sizes" --actions "$actions" \
        --where between --cudart static --no-torch --max-seconds $((half - 30)) \
        --hard-seconds "$half" --results-dir "$out/$arm" 2>&1 | tail -n 25
    # shellcheck disable=SC2086
    PHASES_SHIM=$lib bash "$root/tools/dev/gpu_phases.sh" "$root/$build" "$out/phases-$arm.txt" $cells
done
exit 0
