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
  check     the default link check (P2PSHIM_TRUST=check, a cache file of its
            own): the verdict line and a `link-check` event of the shim's,
            every cross-GPU copy upgraded, the program's bytes right; a
            second run finds the verdict cached and checks nothing
The other cases run with P2PSHIM_TRUST=skip (CMakeLists.txt): the check's
own copies are not the program's.
With one GPU the program copies between two buffers of device 0 (it says
so): upgrade, observe and held then check those same-device decisions
(reason same-device, passed, joined to DTOD records), and check that no
link is checked (there is none); the cross-GPU checks need two GPUs.
Exit 77 when the program finds no GPU."""
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
    args = [program, "--allow-one-gpu"]
    if case == "upgrade":
        env["P2PSHIM_CUPTI"] = "1"
    elif case == "observe":
        env["P2PSHIM_MODE"] = "observe"
    elif case == "held":
        env["P2PSHIM_MODE"] = "observe"
        args.append("--hold-cupti")
    elif case == "check":
        env.update(P2PSHIM_TRUST="check", P2PSHIM_LOG="info",
                   P2PSHIM_TRUST_FILE=os.path.join(tmp, "trust-verdicts"))
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    one_gpu = "two-GPU part skipped" in p.stdout
    if case == "check" and p.returncode != 77:
        return (one_gpu_check_case if one_gpu else check_case)(p, env, tmp)
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
             if d["src"]["dev"] >= 0 and d["dst"]["dev"] >= 0 and
             (d["src"]["dev"] == d["dst"]["dev"]) == one_gpu]
    scope = "same-device" if one_gpu else "cross-GPU"
    # What a copy the shim upgrades (two GPUs) or leaves alone (one) shows.
    want_reasons = ("same-device",) if one_gpu else ("upgraded", "shim-access")
    want_kinds = {"DTOD"} if one_gpu else {"PTOP"}
    if footer.get("type") != "footer" or footer.get("dropped") != 0:
        fails.append(f"footer: {footer}")
    if len(cross) < 9:
        fails.append(f"{len(cross)} {scope} decisions, expected at least 9")
    if case == "upgrade":
        if header.get("cupti") != "on":
            fails.append(f"header cupti {header.get('cupti')}")
        for d in cross:
            k = kinds.get(d["id"], [])
            if d["reason"] not in want_reasons or not k or set(k) != want_kinds or \
                    (one_gpu and d["action"] != "pass"):
                fails.append(f"decision {d['id']} {d['api']} {d['action']} {d['reason']}: "
                             f"activity {k}")
    elif case == "observe":
        if header.get("cupti") != "on" or header.get("mode") != "observe":
            fails.append(f"header {header}")
        for d in cross:
            k = kinds.get(d["id"], [])
            want = (("pass-observed", "same-device", {"DTOD"}) if one_gpu else
                    ("would-upgrade", "observe-would-upgrade", {"DTOH", "HTOD"}))
            if (d["action"], d["reason"], set(k)) != want:
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
    print(f"runlog {case}: {len(cross)} {scope} decisions, {joined} joined, "
          f"{sum(len(v) for v in kinds.values())} activities")
    for f in fails[:20]:
        print("FAIL:", f)
    return 1 if fails else 0


def link_checks(log):
    return [l for l in (json.loads(x) for x in open(log))
            if l["type"] == "event" and l.get("what") == "link-check"]


def one_gpu_check_case(p, env, tmp):
    """The default check with one GPU: there is no link to check, so none is
    checked (no verdict line, no event, nothing cached), and the program's
    copies within device 0 are right. The check itself needs two GPUs."""
    fails = []
    sys.stdout.write(p.stdout)
    if p.returncode != 0 or not re.search(r"xfer: \d+ bytes within device 0, 0 wrong", p.stdout):
        fails.append(f"program exited {p.returncode}: {p.stdout.strip()[-300:]}")
    if re.search(r"p2pshim: link \d+-\d+", p.stderr):
        fails.append("a link verdict line with one GPU: " + p.stderr.strip()[-300:])
    logs = [f for f in os.listdir(tmp) if f.endswith(".jsonl")]
    checks = link_checks(os.path.join(tmp, logs[0])) if len(logs) == 1 else None
    if checks is None or checks:
        fails.append(f"run logs {logs}, link-check events {checks}")
    cache = env["P2PSHIM_TRUST_FILE"]
    if os.path.exists(cache) and "verdict=" in open(cache).read():
        fails.append("a verdict in the cache file with one GPU")
    print("runlog check: one GPU, no link to check; the check itself needs two GPUs")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


def check_case(p, env, tmp):
    """The default check on real GPUs: it ran once, said so, and the
    program's copies were upgraded with every byte right."""
    args = list(p.args)
    fails = []
    sys.stdout.write(p.stderr[-2000:])
    if p.returncode != 0 or not re.search(r"xfer: \d+ bytes across, 0 wrong", p.stdout):
        fails.append(f"program exited {p.returncode}: {p.stdout.strip()[-300:]}")
    if not re.search(r"p2pshim: link 0-1: trusted: peer [\d.]+ GB/s", p.stderr):
        fails.append("no verdict line 'link 0-1: trusted' (a link that fails its check "
                     "here is worth a look)")
    logs = [f for f in os.listdir(tmp) if f.endswith(".jsonl")]
    checks = link_checks(os.path.join(tmp, logs[0])) if len(logs) == 1 else []
    if len(checks) != 1 or "cached" in checks[0].get("detail", ""):
        fails.append(f"link-check events: {checks}")
    if "verdict=trusted" not in open(env["P2PSHIM_TRUST_FILE"]).read():
        fails.append("no trusted verdict in the cache file")
    if not re.search(r"summary total copies=(\d+) upgraded=\1 passed=0 ", p.stderr):
        fails.append("not every cross-GPU copy upgraded")
    for f in logs:
        os.remove(os.path.join(tmp, f))
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    if again.returncode != 0 or "trusted (cached)" not in again.stderr:
        fails.append(f"second run: exit {again.returncode}, no cached verdict said")
    logs = [f for f in os.listdir(tmp) if f.endswith(".jsonl")]
    cached = link_checks(os.path.join(tmp, logs[0])) if len(logs) == 1 else []
    if len(cached) != 1 or "(cached)" not in cached[0].get("detail", ""):
        fails.append(f"second run's link-check events: {cached}")
    print(f"runlog check: {checks[0]['detail'] if checks else 'no check'}")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
