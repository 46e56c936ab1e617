#!/usr/bin/env python3
"""GPU tier, issue 3: the shim's run log against what CUPTI saw.

runlog_check.py CASE PROGRAM PRELOAD
  upgrade   P2PSHIM_CUPTI=1: every upgraded cross-GPU decision is joined to
            PTOP activity records only (the copy really went peer-to-peer)
  observe   P2PSHIM_MODE=observe: the program's copies are staged as without
            the shim, and every cross-GPU decision (would-upgrade) is joined
            to its DTOH + HTOD records
  held      the program holds CUPTI first (--hold-cupti, as Nsight Systems
            would): the shim says so in exactly one warning, the header says
            "unavailable", and the decisions are still logged
Exit 77 when the program says it needs two GPUs."""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    case, program, preload = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="p2p-runlog-")
    env = dict(os.environ, LD_PRELOAD=preload,
               P2PSHIM_RUN_LOG=os.path.join(tmp, "run-%p.jsonl"))
    args = [program]
    if case == "upgrade":
        env["P2PSHIM_CUPTI"] = "1"
    elif case == "observe":
        env["P2PSHIM_MODE"] = "observe"
    elif case == "held":
        env["P2PSHIM_MODE"] = "observe"
        args.append("--hold-cupti")
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    sys.stdout.write(p.stdout)
    if p.returncode == 77:
        return 77
    fails = []
    if p.returncode != 0:
        fails.append(f"program exited {p.returncode}: {p.stderr.strip()[-500:]}")
    logs = os.listdir(tmp)
    if len(logs) != 1:
        print("FAIL: expected one run log, found", logs)
        return 1
    lines = [json.loads(l) for l in open(os.path.join(tmp, logs[0]))]
    header, footer = lines[0], lines[-1]
    decisions = {l["id"]: l for l in lines if l["type"] == "decision"}
    kinds = collections.defaultdict(list)
    for l in lines:
        if l["type"] == "activity":
            kinds[l["decision"]].append(l["kind"])
    cross = [d for d in decisions.values()
             if d["src"]["dev"] >= 0 and d["dst"]["dev"] >= 0 and d["src"]["dev"] != d["dst"]["dev"]]
    if footer.get("type") != "footer" or footer.get("dropped") != 0:
        fails.append(f"footer: {footer}")
    if len(cross) < 9:
        fails.append(f"{len(cross)} cross-GPU decisions, expected at least 9")
    if case == "upgrade":
        if header.get("cupti") != "on":
            fails.append(f"header cupti {header.get('cupti')}")
        for d in cross:
            k = kinds.get(d["id"], [])
            if d["reason"] not in ("upgraded", "shim-access") or not k or set(k) != {"PTOP"}:
                fails.append(f"decision {d['id']} {d['api']} {d['reason']}: activity {k}")
    elif case == "observe":
        if header.get("cupti") != "on" or header.get("mode") != "observe":
            fails.append(f"header {header}")
        for d in cross:
            k = kinds.get(d["id"], [])
            if d["action"] != "would-upgrade" or d["reason"] != "observe-would-upgrade" \
                    or set(k) != {"DTOH", "HTOD"}:
                fails.append(f"decision {d['id']} {d['api']} {d['action']}: activity {k}")
    elif case == "held":
        warnings = [l for l in p.stderr.splitlines() if re.search(r"CUPTI .*another tool", l)]
        if len(warnings) != 1:
            fails.append(f"{len(warnings)} CUPTI warnings: {p.stderr.strip()[-300:]}")
        if not str(header.get("cupti", "")).startswith("unavailable"):
            fails.append(f"header cupti {header.get('cupti')}")
        if kinds:
            fails.append("activity records although CUPTI was held by the program")
    joined = sum(1 for d in cross if kinds.get(d["id"]))
    print(f"runlog {case}: {len(cross)} cross-GPU decisions, {joined} joined, "
          f"{sum(len(v) for v in kinds.values())} activities")
    for f in fails[:20]:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
