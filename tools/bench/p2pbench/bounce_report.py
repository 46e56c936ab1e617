#!/usr/bin/env python3
"""bounce_report.py RESULTS.jsonl: issue 4's criteria from one bounce_run.sh
run (bouncebench and bounce_torch lines, labels noshim/shim/direct), as
ratios of medians measured side by side. Prints "== bounce criteria" and
one line per criterion; exit 1 when one fails or any byte was wrong."""
import json
import sys

MIB256 = 256 << 20
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bench = {}
for r in rows:
    if r.get("bench") == "bounce":
        bench[(r["cudart"], r["label"], r["memory"], r["touch"], r["bytes"])] = r
torch = {r["label"]: r for r in rows if r.get("bench") == "bounce_torch"}
bad = [r for r in rows if not r.get("ok", True)]
lines, failed = [], False


def check(name, value, op, limit, detail):
    global failed
    ok = value >= limit if op == ">=" else value <= limit
    failed |= not ok
    lines.append("%-4s %-58s %7.2f %s %-5g %s" % ("ok" if ok else "FAIL", name, value, op, limit,
                                                 detail))


for cudart in ("static", "shared"):
    def ms(label, memory, touch, n=MIB256):
        r = bench.get((cudart, label, memory, touch, n))
        return r["pair_ms"] if r else None
    for memory, want in (("pageable", 35.0), ("pinned", 1.6)):
        a, b = ms("noshim", memory, "none"), ms("shim", memory, "none")
        if a and b:
            c = ms("direct", memory, "none")
            check("%s %s 256 MiB untouched: no shim / shim" % (cudart, memory), a / b, ">=",
                  want, "(%.2f ms -> %.2f ms; ceiling %s ms)" % (a, b,
                                                                 "%.2f" % c if c else "-"))
    for memory in ("pageable", "pinned"):
        a, b = ms("noshim", memory, "read"), ms("shim", memory, "read")
        if a and b:
            check("%s %s 256 MiB read in between: shim / no shim" % (cudart, memory), b / a,
                  "<=", 1.2, "(%.2f ms -> %.2f ms)" % (a, b))
if "noshim" in torch and "shim" in torch:
    a, b = torch["noshim"], torch["shim"]
    check("torch x.cpu().to('%s') 256 MiB: no shim / shim" % b.get("dst", "cuda:1"),
          a["ms"] / b["ms"], ">=", 20.0,
          "(%.2f ms -> %.2f ms)" % (a["ms"], b["ms"]))
    check("torch, CPU read in between: shim / no shim",
          b["ms_read_between"] / a["ms_read_between"], "<=", 1.2,
          "(%.2f ms -> %.2f ms)" % (a["ms_read_between"], b["ms_read_between"]))
print("== bounce criteria")
for l in lines:
    print(l)
print("%-4s every destination byte equal to the source (%d result lines)" %
      ("ok" if not bad else "FAIL", len(rows)))
sys.exit(1 if failed or bad or not lines else 0)
