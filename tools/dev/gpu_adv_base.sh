#!/bin/sh
# gpu_adv_base.sh TARBALL BUILD [CASE...]: the GPU adversarial cases
# (tests/gpu/adversarial_gpu.cu, already built in BUILD, e.g. by
# gpu_oneshot.sh) run against the shim built from another source tree:
# what they catch there that the tree under test fixes. TARBALL is that
# tree (`git archive --prefix=base/ -o .abtrees/base.tar.gz COMMIT`;
# carry .abtrees and .deps). Only its library is built (Release), in
# BUILD/base. Each case runs through tests/adversarial/adv_run.sh as
# gpu.adversarial.CASE does; one line per case, "CASE: passed|FAILED",
# "skipped" without a GPU, the failures' output after. Default cases: closefrom close_range dup2.
# Exit: 0 whatever the cases did (the lines say), 1 when nothing could run.
set -u
[ $# -ge 2 ] || { echo "usage: gpu_adv_base.sh TARBALL BUILD [CASE...]" >&2; exit 1; }
tarball=$1 build=$2
shift 2
[ $# -gt 0 ] || set -- closefrom close_range dup2
root=$(cd "$(dirname "$0")/../.." && pwd)
prog=$root/$build/tests/gpu/gpu_adversarial
[ -x "$prog" ] || { echo "gpu_adv_base: $prog not built" >&2; exit 1; }
base=$root/$build/base
lib=$(sh "$root/tools/dev/build_base_shim.sh" "$tarball" "$base") || exit 1
echo "base library: $lib ($(tar -tzf "$tarball" | head -n 1))"
for c in "$@"; do
    PL_WITH=$lib P2PSHIM_BOUNCE=lazy P2PSHIM_BOUNCE_MIN=64K P2PSHIM_TRUST=skip \
        ADV_RUN_TIMEOUT=60 sh "$root/tests/adversarial/adv_run.sh" "$prog" "$c" \
        >"$base/$c.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "$c: passed"
    elif [ "$rc" -eq 77 ]; then
        echo "$c: skipped ($(tail -n 1 "$base/$c.log"))"
    else
        echo "$c: FAILED"
        sed 's/^/    /' "$base/$c.log" | head -n 30
    fi
done
exit 0
