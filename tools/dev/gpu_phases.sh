#!/usr/bin/env bash
# gpu_phases.sh: where a mispredicted bounce's time goes, cell by cell of
# the misprediction matrix, on a GPU machine (gpu_oneshot.sh --phases runs
# it after its other stages).
#
#   tools/dev/gpu_phases.sh BUILD_DIR OUT_FILE KIND:SIZE:ACTION[:WHERE] ...
#
# For each cell, harmbench's miss row (static cudart) once without the
# shim and once with it at P2PSHIM_LOG=debug: the cell's JSON line
# (miss_ms, alt_ms, ...) of each run, then the shim's bounce lines (the
# phases of each snapshot: set-up, copy, protection, give-up) and its exit
# summary, into OUT_FILE. One run a cell: a look at the parts, not a
# ratio (harm_matrix.py gives those). PHASES_SHIM names another
# libp2pshim.so (gpu_shim_ab.sh). Exit: 0, 2 bad arguments.
set -u -o pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
build=$1 out=$2
shift 2
bench=$build/tools/bench/p2pbench/harmbench_static
shim=${PHASES_SHIM:-$build/interpose/libp2pshim.so}
[ -x "$bench" ] && [ -f "$shim" ] || { echo "gpu_phases.sh: no $bench or $shim" >&2; exit 2; }
: >"$out"
for cell in "$@"; do
    IFS=: read -r kind size action where <<<"$cell"
    where=${where:-between}
    args=(--row miss --memory "$kind" --sizes "$size" --actions "$action" --where "$where")
    {
        echo "== $kind $size $action $where"
        echo "-- without the shim"
        timeout 120 "$bench" "${args[@]}" 2>&1 | grep -E '"miss_ms"' | cut -c1-600
        echo "-- with the shim"
        P2PSHIM_LOG=debug LD_PRELOAD=$shim timeout 120 "$bench" "${args[@]}" >"$out.tmp" 2>&1
        grep -E '"miss_ms"' "$out.tmp" | cut -c1-600
        grep -E 'bounce' "$out.tmp" | sed 's/^[^ ]* p2pshim: //' | cut -c1-400
    } >>"$out"
done
rm -f "$out.tmp"
