#!/usr/bin/env python3
"""Two or more builds of the shim side by side on one harmbench row.

Runs harmbench without the shim and with each given library, in a
shuffled order each round, and prints per arm the first-round and steady
figures of every process and their medians, with each arm's median ratio
to no shim and its paired ratio (the median over rounds of the arm's
figure over that round's no-shim figure). Meant for bisecting a change of one row (a rebuilt library
with a feature turned off against the current one), where harm_run.py
compares the shim against no shim only.

  shim_ab.py --harmbench build-gpu/tools/bench/p2pbench/harmbench_static \\
      --shim now=build-gpu/interpose/libp2pshim.so --shim old=/tmp/old.so \\
      --procs 6 -- --row bounce --memory pageable --touch read --sizes 256M --rounds 11
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--harmbench", required=True)
    p.add_argument("--shim", action="append", default=[], metavar="NAME=PATH",
                   help="a library to compare (repeatable); PATH none: a second arm "
                        "without the shim (the A/A spread)")
    p.add_argument("--env", action="append", default=[], metavar="NAME:VAR=VALUE",
                   help="set VAR for arm NAME only (repeatable; NAME may repeat a library "
                        "under another --shim name)")
    p.add_argument("--procs", type=int, default=6)
    p.add_argument("--metric", default="steady_ms",
                   help="the JSON member to compare (a comma-separated list: each in turn)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- then harmbench's arguments")
    a = p.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    arms = [("noshim", None)]
    for s in a.shim:
        name, _, path = s.partition("=")
        if path == "none":  # another arm without the shim: the A/A spread
            arms.append((name, None))
            continue
        if not path or not os.path.exists(path):
            print("shim_ab: --shim %s: expected NAME=PATH of an existing file" % s)
            return 2
        arms.append((name, os.path.abspath(path)))
    arm_env = {name: {} for name, _ in arms}
    for e in a.env:
        name, _, kv = e.partition(":")
        var, eq, val = kv.partition("=")
        if name not in arm_env or not eq or not var:
            print("shim_ab: --env %s: expected NAME:VAR=VALUE of a named arm" % e)
            return 2
        arm_env[name][var] = val
    metrics = a.metric.split(",")
    values = {(name, m): [] for name, _ in arms for m in metrics}
    rounds = {name: [] for name, _ in arms}
    rng = random.Random(1)
    for _ in range(a.procs):
        order = list(arms)
        rng.shuffle(order)
        for name, lib in order:
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if lib:
                env["LD_PRELOAD"] = lib
            env.update(arm_env[name])
            out = subprocess.run([a.harmbench] + args, env=env, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode != 0:
                print("shim_ab: %s: exit %d: %s" % (name, out.returncode, out.stderr.strip()[-200:]))
                return 1
            for line in out.stdout.splitlines():
                if line.startswith("{") and ('"%s"' % metrics[0]) in line:
                    j = json.loads(line)
                    for m in metrics:
                        values[(name, m)].append(j.get(m))
                    if "round_ms" in j:
                        rounds[name].append(j["round_ms"])
    for m in metrics:
        print("== %s" % m)
        base_v = [x for x in values[("noshim", m)] if x is not None]
        base = statistics.median(base_v) if base_v else None
        for name, _ in arms:
            v = [x for x in values[(name, m)] if x is not None]
            if not v:
                print("%-10s no %s lines" % (name, m))
                continue
            med = statistics.median(v)
            ratio = "" if not base else "  ratio %.3f" % (med / base)
            pairs = [x / b for x, b in zip(values[(name, m)], values[("noshim", m)])
                     if x is not None and b]
            if name != "noshim" and len(pairs) == a.procs:
                # Each round runs every arm once, back to back: paired, the
                # machine's drift from round to round cancels.
                ratio += "  paired %.3f" % statistics.median(pairs)
            print("%-10s %s median %.4g%s" % (name, " ".join("%.4g" % x for x in v), med, ratio))
    for name, _ in arms:
        if rounds[name]:
            per = [statistics.median(r[i] for r in rounds[name])
                   for i in range(min(len(r) for r in rounds[name]))]
            print("%-10s each round's median: %s" % (name, " ".join("%.1f" % x for x in per)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
