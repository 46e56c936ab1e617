#!/bin/sh
# torchrun_report.sh LAUNCHER PYTHON: a PyTorch job started with
# `torchrun --nproc-per-node 2` under `p2pshim run --observe --report`
# gives one report naming both ranks, each with its real copies. With one
# GPU both ranks run on cuda:0 (CUDA_VISIBLE_DEVICES=0): GPU-host copies
# only. Skips (77) without a GPU, torch or torchrun.
set -u
L=$1
PY=$2
here=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "SKIP: no torch with CUDA"; exit 77; }
"$PY" -c 'import torch.distributed.run' 2>/dev/null || { echo "SKIP: no torchrun"; exit 77; }
ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
dir=$(mktemp -d "${TMPDIR:-/tmp}/torchrun.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
[ "$ngpu" -ge 2 ] || export CUDA_VISIBLE_DEVICES=0
cd "$dir" || exit 1
"$L" run --observe --log-dir "$dir/job" --report "$dir/report.txt" -- \
    "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 \
    "$here/torchrun_job.py" >"$dir/out" 2>"$dir/err"
rc=$?
cat "$dir/out" "$dir/err"
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
"$PY" - "$dir/report.txt" "$dir/out" "$ngpu" <<'PYEOF'
import json, re, sys
report, out, ngpu = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = [json.loads(l[2:]) for l in open(report) if l.startswith("@ ")]
procs = {p["rank"]: p for p in recs if p.get("record") == "process" and p.get("rank") is not None}
copied = {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
          for m in re.finditer(r"copied rank=(\d) cross=(\d+) host=(\d+)", open(out).read())}
fails = []
if sorted(copied) != [0, 1]:
    fails.append("the job's ranks printed %s" % sorted(copied))
if sorted(procs) != [0, 1]:
    fails.append("report's process rows: ranks %s" % sorted(procs))
for r, (cross, host) in copied.items():
    p = procs.get(r, {})
    # Each rank's own copies: its cross-GPU bytes exactly, and at least
    # the round trip through the host among its local copies.
    if p.get("cross_bytes") != cross:
        fails.append("rank %d: cross_bytes %s, want %d" % (r, p.get("cross_bytes"), cross))
    if p.get("bytes", 0) - p.get("cross_bytes", 0) < 2 * host:
        fails.append("rank %d: %s local bytes, want >= %d" %
                     (r, p.get("bytes", 0) - p.get("cross_bytes", 0), 2 * host))
text = open(report).read()
if "verdict: " not in text:
    fails.append("no verdict")
for f in fails:
    print("FAIL: " + f)
print("torchrun_report: %d GPU(s), ranks %s" % (ngpu, sorted(procs)))
sys.exit(1 if fails else 0)
PYEOF
