#!/usr/bin/env python3
"""oneshot_summary.py: the short table tools/dev/gpu_oneshot.sh prints last, from
the logs and results of its run.

  oneshot_summary.py LOGS RESULTS [--stage NAME=STATE:SECONDS]... [--budget S]
                     [--elapsed S] [--tarball PATH]
  oneshot_summary.py --self-test

LOGS holds machine.txt, ctest.log (ctest's own output), harm.log and
bounce.log; RESULTS the matrix's matrix-*.json and .txt (harm_matrix.py)
and harm-results.json (harm_run.py). Prints: each stage's state and time;
the GPU tests' pass/fail/skip counts with the names of those that did not
pass; each matrix cell's ratios with their A/A (the worst 20 when there are
more than 40); each of the issue's bounds met or not; the bounce criteria.
Standard library only; exit 0 (the table is information, the stages' own
states say what failed)."""
import glob
import json
import os
import re
import sys

TEST_LINE = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(?:\*\*\*)?([A-Za-z][A-Za-z ]*?)"
                       r"(?::[^\d]*)?\s+[\d.]+ sec")


def ctest_states(path):
    """{test: pass|fail|skip|notrun} from ctest's log."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        m = TEST_LINE.search(line)
        if m:
            word = m.group(2).strip().lower()
            out[m.group(1)] = {"passed": "pass", "skipped": "skip", "not run": "notrun"}.get(
                word, "fail")
        m = re.search(r"^\s*\d+ - (\S+) \((Not Run|Timeout|Failed|Skipped)\)", line)
        if m and m.group(1) not in out:
            out[m.group(1)] = {"Not Run": "notrun", "Skipped": "skip"}.get(m.group(2), "fail")
    return out


def tests_section(logs):
    states = ctest_states(os.path.join(logs, "ctest.log"))
    if not states:
        return ["tests: no ctest results"], None
    count = lambda s: sum(1 for v in states.values() if v == s)
    out = ["tests: %d passed, %d failed, %d skipped, %d not run (of %d)" % (
        count("pass"), count("fail"), count("skip"), count("notrun"), len(states))]
    for name, s in sorted(states.items()):
        if s != "pass":
            out.append("  %-6s %s" % (s.upper() if s == "fail" else s, name))
    met = count("fail") == 0 and count("notrun") == 0 and count("pass") > 0
    return out, ("%-7s the GPU tier's tests run and pass here (%d passed, %d failed, %d not "
                 "run, %d skipped)" % ("met" if met else "NOT MET", count("pass"),
                                        count("fail"), count("notrun"), count("skip")))


def newest(pattern):
    found = sorted(glob.glob(pattern), key=os.path.getmtime)
    return found[-1] if found else None


def ratio_text(m):
    if not m or m.get("ratio") is None:
        return "-"
    return "%.3f (A/A %s)" % (m["ratio"], "%.3f" % m["aa"] if m.get("aa") else "-")


def matrix_section(results):
    path = newest(os.path.join(results, "matrix-*.json"))
    if not path:
        return ["matrix: no results"], []
    data = json.load(open(path))
    cells = data.get("cells", [])
    verdicts = [c["verdict"] for c in cells]
    out = ["matrix (%s, %s): %d cells: ok %d, noise %d, FAIL %d, n/a %d; %d processes not "
           "started" % (data["meta"].get("set"), os.path.basename(path), len(cells),
                        verdicts.count("ok"), verdicts.count("noise"), verdicts.count("FAIL"),
                        verdicts.count("n/a"), data["meta"].get("processes_not_started", 0))]
    worst = lambda c: max([m["ratio"] for m in (c["miss"], c["alt"])
                           if m and m.get("ratio") is not None] or [0])
    shown = cells if len(cells) <= 40 else sorted(cells, key=worst, reverse=True)[:20]
    if len(shown) < len(cells):
        out.append("  (the %d worst of %d; every cell in %s)" % (len(shown), len(cells),
                                                                  path[:-5] + ".txt"))
    out.append("  %-6s %-10s %-8s %-7s %5s  %-24s %-24s %s" % (
        "cudart", "kind", "action", "where", "size", "mispredicted round", "alternating loop",
        "verdict"))
    for c in shown:
        n = c["bytes"]
        size = "%dG" % (n >> 30) if n >= 1 << 30 else "%dM" % (n >> 20) if n >= 1 << 20 \
            else "%dK" % (n >> 10)
        out.append("  %-6s %-10s %-8s %-7s %5s  %-24s %-24s %s" % (
            c["cudart"], c["kind"], c["action"], c["where"], size, ratio_text(c["miss"]),
            ratio_text(c["alt"]), c["verdict"]))
    bounds = []
    txt = path[:-5] + ".txt"
    if os.path.exists(txt):
        lines = open(txt, errors="replace").read().splitlines()
        if "== bounds" in lines:
            for l in lines[lines.index("== bounds") + 1:]:
                if not l.strip():
                    break
                bounds.append(l)
    return out, bounds


def harm_bounds(results):
    """The loops' wins harm_run.py measures: a fresh host buffer each round
    (x.cpu().cuda()'s shape) >= 100x, a pinned loop >= 1.6x."""
    path = os.path.join(results, "harm-results.json")
    if not os.path.exists(path):
        return ["-       loop wins: no harm_run.py results"], []
    data = json.load(open(path))
    ms = data.get("measurements", [])
    out = []
    for row, limit, what in (("bounce.fresh.untouched.same", 100.0,
                              "a fresh host buffer each round"),
                             ("bounce.pinned.untouched.same", 1.6, "a pinned loop")):
        found = [m for m in ms if m["row"] == row and m["metric"] == "steady_ms" and
                 m.get("speedup")]
        if not found:
            out.append("-       %s >= %gx: not measured" % (what, limit))
            continue
        ok = all(m["speedup"] >= limit for m in found) and all(m["bytes_ok"] for m in found)
        out.append("%-7s %s >= %gx: %s" % ("met" if ok else "NOT MET", what, limit, ", ".join(
            "%s %d MiB %.1fx (A/A %s)" % (m["cudart"], m["bytes"] >> 20, m["speedup"],
                                          "%.3f" % m["aa"] if m.get("aa") else "-")
            for m in found)))
    return out, data.get("summary", [])


def section_after(path, marker):
    if not os.path.exists(path):
        return []
    lines = open(path, errors="replace").read().splitlines()
    return lines[lines.index(marker) + 1:] if marker in lines else []


def summary(logs, results, stages, budget, elapsed, tarball):
    out = ["== gpu_oneshot summary (budget %s s, used %s s)" % (budget, elapsed)]
    mpath = os.path.join(logs, "machine.txt")
    if os.path.exists(mpath):
        out += ["  " + l for l in open(mpath, errors="replace").read().splitlines()[:4]]
    out.append("stages: " + "   ".join("%s %s" % (k, v) for k, v in stages))
    tests, tests_bound = tests_section(logs)
    out += tests
    matrix, bounds = matrix_section(results)
    out += matrix
    wins, harm_summary = harm_bounds(results)
    if harm_summary:
        out.append("harm (harm_run.py summary):")
        out += ["  " + (l if len(l) < 160 else l[:157] + "...") for l in harm_summary]
    crit = section_after(os.path.join(logs, "bounce.log"), "== bounce criteria")
    if crit:
        out.append("bounce loops (bounce_run.sh):")
        out += ["  " + l for l in crit]
    out.append("bounds of the issue:")
    out += ["  " + l for l in bounds + wins + ([tests_bound] if tests_bound else [])]
    if tarball:
        size = os.path.getsize(tarball) if os.path.exists(tarball) else 0
        out.append("tarball: %s (%d KiB)" % (tarball, size >> 10))
    return out


def self_test():
    import tempfile
    fails = []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "ctest.log"), "w") as f:
            f.write("1/3 Test #1: gpu.a ....................   Passed    1.20 sec\n"
                    "2/3 Test #2: gpu.b ....................***Failed    2.00 sec\n"
                    "3/3 Test #3: gpu.c ....................***Skipped   0.10 sec\n")
        cells = [{"cudart": "static", "kind": "pinned", "action": "memset", "where": "between",
                  "bytes": 1 << 30, "miss": {"ratio": 1.2, "aa": 0.99},
                  "alt": {"ratio": 1.01, "aa": 1.0}, "verdict": "FAIL"}]
        with open(os.path.join(d, "matrix-quick-1.json"), "w") as f:
            json.dump({"meta": {"set": "quick"}, "cells": cells}, f)
        with open(os.path.join(d, "matrix-quick-1.txt"), "w") as f:
            f.write("== bounds\nNOT MET every cell\nmet     bytes\n\n== matrix summary\n")
        text = "\n".join(summary(d, d, [("build", "ok:10")], 540, 100, None))
    for want in ("tests: 1 passed, 1 failed, 1 skipped, 0 not run (of 3)", "FAIL   gpu.b",
                 "1.200 (A/A 0.990)", "  NOT MET every cell", "NOT MET the GPU tier's tests",
                 "loop wins: no harm_run.py results"):
        if want not in text:
            fails.append(want)
            print("FAIL: %r not in the summary" % want)
    print(text if fails else "oneshot_summary self-test: ok")
    return 1 if fails else 0


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    logs, results = argv[0], argv[1]
    stages, budget, elapsed, tarball = [], "-", "-", None
    it = iter(argv[2:])
    for k in it:
        v = next(it, "")
        if k == "--stage":
            name, _, state = v.partition("=")
            stages.append((name, state))
        elif k == "--budget":
            budget = v
        elif k == "--elapsed":
            elapsed = v
        elif k == "--tarball":
            tarball = v
    print("\n".join(summary(logs, results, stages, budget, elapsed, tarball)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
