#!/usr/bin/env python3
"""Host cost per intercepted call of the decision records, on a GPU machine.

record_cost.py P2PBENCH SHIM [PROCS] [CONFIGS]
Runs p2pbench's pass-through measurement (4 KiB same-device and
host-to-device cudaMemcpyAsync, host time per call) in PROCS short processes
for each of: no shim; the shim; the shim with a run log (CUPTI off); the
shim with a run log and CUPTI on. Prints the floor (fastest process) and the
median per configuration, and the differences. Process-to-process noise is
hundreds of ns on the H200 machine (run_bench.py's A/A figure), so the
floors are the figures to read, and the CPU-side figure of
tools/bench/hookbench (steady, on the stand-in) is the precise one for the shim
alone. Information, not a test."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

bench, shim = sys.argv[1], sys.argv[2]
procs = int(sys.argv[3]) if len(sys.argv) > 3 else 8
wanted = sys.argv[4].split(",") if len(sys.argv) > 4 else None
tmp = tempfile.mkdtemp(prefix="p2p-reccost-")
configs = {
    "noshim": {},
    "shim": {"LD_PRELOAD": shim},
    "shim+log": {"LD_PRELOAD": shim, "P2PSHIM_RUN_LOG": os.path.join(tmp, "a-%p.jsonl"),
                 "P2PSHIM_CUPTI": "0"},
    "shim+log+cupti": {"LD_PRELOAD": shim, "P2PSHIM_RUN_LOG": os.path.join(tmp, "b-%p.jsonl"),
                       "P2PSHIM_CUPTI": "1"},
}
if wanted:
    configs = {c: v for c, v in configs.items() if c in wanted}
vals = {c: {} for c in configs}
for i in range(procs):
    items = list(configs.items())
    for c, extra in items[i % len(items):] + items[:i % len(items)]:
        out = os.path.join(tmp, "r.json")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.update(extra)
        p = subprocess.run([bench, "--passthrough-only", "--pt-batches", "31", "--json", out],
                           env=env, capture_output=True, text=True, timeout=300)
        if p.returncode == 77:
            print("record_cost: needs two GPUs")
            sys.exit(77)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            sys.exit(1)
        for r in json.load(open(out))["passthrough"]:
            vals[c].setdefault(r["name"], []).append(r["ns_per_call_median"])
print("host ns per call: floor (fastest of %d processes) / median" % procs)
names = sorted(vals["noshim"])
print("%-36s" % "call" + "".join("%22s" % c for c in configs))
for n in names:
    print("%-36s" % n + "".join("%11.0f /%8.0f" % (min(vals[c][n]), statistics.median(vals[c][n]))
                                for c in configs))
for n in ("d2d_same_device_async_4k", "h2d_pinned_async_4k"):
    if n not in vals["noshim"]:
        continue
    f = {c: min(vals[c][n]) for c in configs}
    a = vals["noshim"][n]
    half = len(a) // 2
    aa = abs(min(a[:half]) - min(a[half:])) if half else float("nan")
    parts = ["%s %+.0f ns" % (c, f[c] - f["noshim"]) for c in configs if c != "noshim"]
    print("%s (floors against noshim): %s; A/A %.0f ns" % (n, ", ".join(parts), aa))
