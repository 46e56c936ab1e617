#!/usr/bin/env python3
"""hookbench_ab.py: the shim's own per-call cost in two or more source trees
(e.g. before and after a change), side by side in one script.

  hookbench_ab.py [--rounds N] [--jobs J] [--out FILE] NAME=SRC_DIR ...

Each SRC_DIR is a source tree of p2pshim (a checkout or an extracted
`git archive`); it is configured and built (Release, benchmarks on) in
SRC_DIR/build-hookbench unless that folder already has hookbench and the
library. Then N rounds (default 10), each running every tree's hookbench
without and with LD_PRELOAD=libp2pshim.so (trees in a rotated order per
round, so that drift on the machine falls on all of them alike). A row's
figure is the median over rounds of (with shim - without shim) in ns per
call; the A/A column is the same tree's difference between the medians of
its even and its odd rounds, the spread to read a change against. Every
tree after the first is stated against the first. Prints the table last
(and writes it to FILE). Exit 1 when a build or a run fails.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^(.*?)\s+(\d+\.\d+) ns/(call|pair)")


def build(src, jobs):
    out = os.path.join(src, "build-hookbench")
    bench = os.path.join(out, "tools", "bench", "hookbench", "hookbench")
    if not os.path.exists(bench):
        bench_old = os.path.join(out, "tools", "hookbench", "hookbench")
        if os.path.exists(bench_old):
            bench = bench_old
    lib = os.path.join(out, "interpose", "libp2pshim.so")
    if os.path.exists(bench) and os.path.exists(lib):
        return bench, lib
    subprocess.run(["cmake", "-S", src, "-B", out, "-DCMAKE_BUILD_TYPE=Release",
                    "-DP2PSHIM_BUILD_BENCHMARKS=ON"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", out, "-j", str(jobs), "--target", "p2pshim",
                    "hookbench"], check=True, stdout=subprocess.DEVNULL)
    for cand in (bench, os.path.join(out, "tools", "bench", "hookbench", "hookbench"),
                 os.path.join(out, "tools", "hookbench", "hookbench")):
        if os.path.exists(cand):
            return cand, lib
    raise RuntimeError(f"{src}: no hookbench after the build")


def standin_dir(bench):
    """The folder of the stand-in's libcuda.so.1 in bench's build folder: put
    first on LD_LIBRARY_PATH, which a machine with a real driver may set to
    the real one's folder (searched before the program's RUNPATH)."""
    build = bench
    while os.path.basename(build) != "build-hookbench":
        build = os.path.dirname(build)
    for root, _, files in os.walk(build):
        if "libcuda.so.1" in files:
            return root
    raise RuntimeError(f"{build}: no stand-in libcuda.so.1")


def run_once(bench, lib):
    env = dict(os.environ, P2PSHIM_TRUST="skip")
    env["LD_LIBRARY_PATH"] = standin_dir(bench) + ":" + env.get("LD_LIBRARY_PATH", "")
    if lib:
        env["LD_PRELOAD"] = lib
    else:
        env.pop("LD_PRELOAD", None)
    text = subprocess.run([bench], env=env, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name = m.group(1).strip()
        if "thread" in line:
            name += " (%s)" % re.search(r"(\d+ threads?)", line).group(1)
        rows[name] = float(m.group(2))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out")
    ap.add_argument("trees", nargs="+", metavar="NAME=SRC_DIR")
    a = ap.parse_args()
    trees = []
    for t in a.trees:
        name, _, src = t.partition("=")
        if not src:
            ap.error(f"{t}: NAME=SRC_DIR")
        try:
            trees.append((name, *build(os.path.abspath(src), a.jobs)))
        except (subprocess.CalledProcessError, RuntimeError) as e:
            print(f"hookbench_ab: {name}: build failed: {e}", file=sys.stderr)
            return 1
    diffs = {name: [] for name, _, _ in trees}
    for r in range(a.rounds):
        order = trees[r % len(trees):] + trees[:r % len(trees)]
        for name, bench, lib in order:
            try:
                plain, shim = run_once(bench, None), run_once(bench, lib)
            except (subprocess.CalledProcessError, RuntimeError) as e:
                print(f"hookbench_ab: {name}: run failed: {e}", file=sys.stderr)
                return 1
            diffs[name].append({k: shim[k] - plain[k] for k in plain if k in shim})
    keys = [k for k in diffs[trees[0][0]][0]]
    lines = [f"hookbench_ab: {a.rounds} rounds; ns per call added by the shim "
             "(median over rounds of with - without); A/A = even rounds' median - odd rounds'"]
    head = f"{'call':<44}" + "".join(f"{n:>14}{'A/A':>8}" for n, _, _ in trees)
    if len(trees) > 1:
        head += "".join(f"{n + '-' + trees[0][0]:>16}" for n, _, _ in trees[1:])
    lines.append(head)
    for k in keys:
        cells, med = "", {}
        for name, _, _ in trees:
            v = [d[k] for d in diffs[name] if k in d]
            med[name] = statistics.median(v)
            aa = (statistics.median(v[0::2]) - statistics.median(v[1::2])) if len(v) > 1 else 0
            cells += f"{med[name]:>14.1f}{aa:>8.1f}"
        for name, _, _ in trees[1:]:
            cells += f"{med[name] - med[trees[0][0]]:>16.1f}"
        lines.append(f"{k:<44}{cells}")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
