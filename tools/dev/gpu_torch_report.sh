#!/usr/bin/env bash
# gpu_torch_report.sh [BUILD] [OUTDIR]: the answer a user gets for a
# PyTorch script on this machine's GPUs with no measured link table (no
# `p2pshim topo --measure` first): `p2pshim run --observe --report` as
# text and as HTML, then upgrade mode's exit line. BUILD: a build folder
# with the launcher and the library (default build-gpu); OUTDIR: where the
# reports and transcripts go, as one tarball (default $OUT, else /tmp).
# TORCH_REPORT_CMD: another program instead (the CPU tier tries the script
# with p2pdemo on the stand-in driver).
# Prints the verdict's lines and the exit line last. Exit: 0 both runs
# ended as the script did without the shim, 1 otherwise.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build-gpu}
out=${2:-${OUT:-/tmp}}
launcher=$build/tools/launcher/p2pshim
# The program: the PyTorch smoke test, or TORCH_REPORT_CMD (words).
read -r -a cmd <<<"${TORCH_REPORT_CMD:-python3 tests/gpu/torch_smoke.py}"
work=$(mktemp -d "${TMPDIR:-/tmp}/torch-report.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export PYTHONPATH=$PWD/tests/gpu${PYTHONPATH:+:$PYTHONPATH}
# The link verdicts the shim caches: kept with the run, not in a home.
export P2PSHIM_TRUST_FILE=$work/trust
status=0
"${cmd[@]}" >"$work/noshim.out" 2>"$work/noshim.err"
rc0=$?
"$launcher" run --observe --log-dir "$work/logs" --report "$work/verdict.txt" -- \
    "${cmd[@]}" >"$work/observe.out" 2>"$work/observe.err"
rc1=$?
"$launcher" report "$work/logs" -o "$work/verdict.html" >>"$work/observe.err" 2>&1 || status=1
"$launcher" run -- "${cmd[@]}" >"$work/upgrade.out" 2>"$work/upgrade.err"
rc2=$?
[ "$rc1" -eq "$rc0" ] && [ "$rc2" -eq "$rc0" ] || status=1
cmp -s "$work/noshim.out" "$work/observe.out" || status=1
cmp -s "$work/noshim.out" "$work/upgrade.out" || status=1
tar czf "$out/torch-report.tar.gz" -C "$work" --exclude=trust . 2>/dev/null
echo "torch report: exit without the shim $rc0, observe $rc1, upgrade $rc2;" \
     "transcripts $(cmp -s "$work/noshim.out" "$work/observe.out" && echo equal || echo DIFFER)" \
     "(observe), $(cmp -s "$work/noshim.out" "$work/upgrade.out" && echo equal || echo DIFFER)" \
     "(upgrade)"
echo "-- the verdict (observe, no measured table):"
sed -n '1,12p' "$work/verdict.txt" 2>/dev/null || echo "(no report)"
echo "-- HTML: $(grep -c 'id="verdict"' "$work/verdict.html" 2>/dev/null) verdict card(s)"
echo "-- upgrade mode's last lines on stderr:"
grep 'p2pshim' "$work/upgrade.err" | tail -n 3
exit "$status"
