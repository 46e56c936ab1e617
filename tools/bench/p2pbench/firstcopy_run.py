#!/usr/bin/env python3
"""Attributes a one-off cost on a process's first large D2H (firstcopy.cu).

Runs firstcopy in alternating processes per arm (in a shuffled order each
round): no shim, no shim again
(the A/A spread), the shim with its defaults, and the shim with parts
turned off. Prints the median per arm of repetition 0 (the first copy) and
of the later repetitions, for host time, event time and page faults, and
each arm's ratio to no shim.

  firstcopy_run.py --build-dir build-gpu [--procs 15] [--bytes 1048576]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys


def arms(shim, diagnose):
    """(name, environment) per arm; diagnose adds arms that stop the D2H's
    bounce decision at successive points."""
    out = [("noshim", {}), ("shim", {"LD_PRELOAD": shim}),
           ("shim bounce=off", {"LD_PRELOAD": shim, "P2PSHIM_BOUNCE": "off"}),
           ("shim mode=off", {"LD_PRELOAD": shim, "P2PSHIM_MODE": "off"})]
    if diagnose:
        out += [("shim min_bytes=1G", {"LD_PRELOAD": shim, "P2PSHIM_MIN_BYTES": "1G"}),
                ("shim bounce_min=1G", {"LD_PRELOAD": shim, "P2PSHIM_BOUNCE_MIN": "1G"})]
    return out + [("noshim2", {})]


def run_once(prog, nbytes, env_extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    out = subprocess.run([prog, "--bytes", str(nbytes), "--reps", "4"], env=env,
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("%s: rc %d: %s" % (prog, out.returncode, out.stderr.strip()))
    reps = []
    for line in out.stdout.splitlines():
        f = line.split()
        reps.append({f[i]: float(f[i + 1]) for i in range(0, len(f), 2)})
    return reps


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default="build-gpu")
    p.add_argument("--procs", type=int, default=15)
    p.add_argument("--bytes", type=int, default=1 << 20)
    p.add_argument("--diagnose", action="store_true",
                   help="add arms that stop the bounce decision early (P2PSHIM_MIN_BYTES, "
                        "P2PSHIM_BOUNCE_MIN)")
    a = p.parse_args(argv)
    shim = os.path.abspath(os.path.join(a.build_dir, "interpose", "libp2pshim.so"))
    table = {}
    for kind in ("static", "shared"):
        prog = os.path.join(a.build_dir, "tools", "bench", "p2pbench", "firstcopy_" + kind)
        order = arms(shim, a.diagnose)
        rng = random.Random(1)
        for _ in range(a.procs):
            rng.shuffle(order)  # no arm always runs right after another
            for name, env in order:
                reps = run_once(prog, a.bytes, env)
                cell = table.setdefault((kind, name), {"first": [], "later": []})
                cell["first"].append(reps[0])
                cell["later"].extend(reps[1:])
    print("%-7s %-16s %10s %10s %8s | %10s %10s %8s" % (
        "cudart", "arm", "1st host", "1st event", "1st flt", "host", "event", "flt"))
    for (kind, name), cell in sorted(table.items()):
        row = []
        for which in ("first", "later"):
            for key in ("host_us", "event_us", "faults"):
                row.append(statistics.median(r[key] for r in cell[which]))
        base = table[(kind, "noshim")]
        b0 = statistics.median(r["event_us"] for r in base["first"])
        print("%-7s %-16s %10.2f %10.2f %8.0f | %10.2f %10.2f %8.0f   1st event ratio %.3f" % (
            kind, name, *row, row[1] / b0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
