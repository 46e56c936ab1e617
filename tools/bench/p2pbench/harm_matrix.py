#!/usr/bin/env python3
"""harm_matrix.py: the misprediction matrix, what wrong bounce predictions cost.

harmbench --row miss (static and shared cudart) and harm_torch.py's
refilled pinned batch, without and with the shim, processes alternating as
harm_run.py runs them (arms noshim, shim, noshim2 = the A/A pair, rotated
per cycle; ratios paired per cycle, 90 % bootstrap intervals:
harm_stats.py).

A cell is a memory kind (pinned = cudaMallocHost, registered = malloc +
cudaHostRegister of the whole pages inside, malloc, mmap = anonymous mmap, thp = mmap +
madvise(MADV_HUGEPAGE)) x a size x what the program does with the host
buffer (none, memset, random = every page in a random order, pagebyte =
one byte per page, word = one 8-byte word, read = a checksum,
write/pwrite/writev to a file, memcpy out of it, fork = a forked child
reads it, thread = another thread writes it), between the D2H and the H2D
or after the H2D. The program first gives the shim evidence (plain rounds
of D2H then H2D of the buffer), then the mispredicted round (miss_ms), then
a loop alternating a useful and a spoilt round (alt_ms: the median pair);
every destination byte is checked on the GPU (harmbench.cu, harm_matrix.cu).
Target: shim / no shim <= 1.05 for both, in every cell.

One process runs one memory kind and placement at the set's sizes and
actions (1 GiB in processes of its own); the shim arm writes its exit
summary (P2PSHIM_LOG=info) to a log file of its own, whose bounce line
(snapshots, useful, wasted, faults and, where the shim prints them,
faults_per_snap, handler_us, filled_bytes) is shown per process group
('-' where a field is absent). Per cell the program itself counts its page
faults and its other threads' CPU time in a spoilt round (getrusage).

  harm_matrix.py [--set full|quick] [--kinds K,..] [--sizes 64K,..]
                 [--actions A,..|all] [--where between,after] [--cudart ..]
                 [--build-dir build-gpu] [--results-dir DIR] [--dry-run]

--set full (default, about 6 minutes on one H200): static cudart, every
kind, 64 KiB, 1 MiB and 64 MiB, every action, between and after; shared
cudart, pinned and malloc, 1 and 64 MiB, between; 1 GiB pinned and malloc
memset, random and read, between; PyTorch. --set quick (about 90 s):
static, pinned and malloc, 64 MiB none/memset/random/word/read/pwrite
between, 1 GiB memset, PyTorch. Any of --kinds --sizes --actions --where
--cudart makes the matrix one block: the product of the lists given, the
others from the set's first block. The results (machine, command, table,
bounds) go to RESULTS_DIR/matrix-SET-TIME.txt and .json, the shim's logs to
RESULTS_DIR/matrix-SET-TIME-logs/. Exit: 0 every bound met, 1 otherwise,
2 nothing could run.
"""
import argparse
import copy
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harm_run  # noqa: E402
import harm_stats  # noqa: E402

KINDS = ("pinned", "registered", "malloc", "mmap", "thp")
ACTIONS = ("none", "memset", "random", "pagebyte", "word", "read", "write", "pwrite",
           "writev", "memcpy", "fork", "thread")
WRITES = ("memset", "random", "pagebyte", "word", "thread")
GIB = 1 << 30
MIB = 1 << 20
SUMMARY_FIELDS = ("snapshots", "useful", "wasted", "faults", "faults_per_snap",
                  "handler_us", "filled_bytes")


def block(cudart, kinds, sizes, actions, where):
    return {"cudart": cudart, "kinds": kinds, "sizes": sizes, "actions": actions,
            "where": where}


ALL = ",".join(ACTIONS)
SETS = {
    "full": [block("static", ",".join(KINDS), "64K,1M,64M", ALL, "between"),
             block("static", ",".join(KINDS), "64K,1M,64M", ",".join(ACTIONS[1:]), "after"),
             block("shared", "pinned,malloc", "1M,64M", ALL, "between"),
             block("static", "pinned,malloc", "1G", "memset,random,read", "between")],
    "quick": [block("static", "pinned,malloc", "64M", "none,memset,random,word,read,pwrite",
                    "between"),
              block("static", "pinned,malloc", "1G", "memset", "between")],
}
SET_SECONDS = {"full": 420, "quick": 110}


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        raise ValueError(text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def size_text(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", default="full", choices=sorted(SETS))
    for dim, what in (("kinds", "memory kinds: " + ",".join(KINDS)),
                      ("sizes", "sizes, e.g. 64K,1M,64M,1G"),
                      ("actions", "actions: " + ALL + " (or all)"),
                      ("where", "between, after"), ("cudart", "static, shared")):
        p.add_argument("--" + dim, help=what + " (a custom block; see above)")
    p.add_argument("--build-dir", default=os.path.join(harm_run.repo_root(), "build-gpu"))
    p.add_argument("--shim", help="libp2pshim.so (default: BUILD/interpose/libp2pshim.so)")
    p.add_argument("--results-dir", help="default: results/ at the top of the tree (git ignores it)")
    p.add_argument("--procs", type=int, default=3, help="cycles (processes per arm)")
    p.add_argument("--torch-procs", type=int, default=2, help="cycles of the PyTorch group")
    p.add_argument("--no-torch", action="store_true", help="leave the PyTorch rows out")
    p.add_argument("--evidence", type=int, default=2, help="plain rounds before the miss")
    p.add_argument("--alt", type=int, default=0,
                   help="pairs of the alternating loop (0: 4, 3 from 1 GiB)")
    p.add_argument("--shim-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the shim arm (e.g. P2PSHIM_BOUNCE_MIN=64K)")
    p.add_argument("--max-seconds", type=float,
                   help="start no process after this many seconds (default: full %d, quick "
                   "%d; 0: no limit)" % (SET_SECONDS["full"], SET_SECONDS["quick"]))
    p.add_argument("--timeout", type=int, default=150, help="seconds per process")
    p.add_argument("--hard-seconds", type=float, default=0,
                   help="no process runs past this many seconds from the start (its timeout "
                   "shortened to fit), so that the results are written in time (0: no limit)")
    p.add_argument("--cpus", default="gpu", help="as harm_run.py --cpus")
    p.add_argument("--tmpdir", help="where the file actions write (default: TMPDIR or /tmp)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (every process, its command) and exit: no GPU needed")
    p.add_argument("--self-test", action="store_true",
                   help="check the tables and bounds on synthetic results and exit")
    a = p.parse_args(argv)
    if a.max_seconds is None:
        a.max_seconds = SET_SECONDS[a.set]
    a.blocks = blocks_for(a)
    return a


def blocks_for(a):
    """The set's blocks, or one block made of the dimensions given."""
    dims = ("cudart", "kinds", "sizes", "actions", "where")
    if not any(getattr(a, d) for d in dims):
        blocks = copy.deepcopy(SETS[a.set])
    else:
        b = dict(SETS[a.set][0])
        b.update({d: getattr(a, d) for d in dims if getattr(a, d)})
        blocks = [b]
    for b in blocks:
        if b["actions"] == "all":
            b["actions"] = ALL
        for d, allowed in (("kinds", KINDS), ("actions", ACTIONS),
                           ("where", ("between", "after")), ("cudart", ("static", "shared"))):
            bad = [x for x in b[d].split(",") if x not in allowed]
            if bad:
                raise SystemExit("harm_matrix: --%s: unknown %s" % (d, ",".join(bad)))
        for s in b["sizes"].split(","):
            try:
                if parse_size(s) % 4096:
                    raise ValueError(s)
            except ValueError:
                raise SystemExit("harm_matrix: --sizes: %s is not a whole number of pages" % s)
    return blocks


def groups_for(a, torch_devices):
    """(name, kind, procs, argv) per process: one per cudart, memory kind and
    placement, sizes under 1 GiB together and from 1 GiB on apart."""
    out = []
    binary = lambda cudart: os.path.join(a.build_dir, "tools", "bench", "p2pbench",
                                         "harmbench_" + cudart)
    for b in a.blocks:
        sizes = b["sizes"].split(",")
        parts = [[s for s in sizes if parse_size(s) < GIB], [s for s in sizes
                                                             if parse_size(s) >= GIB]]
        for cudart in b["cudart"].split(","):
            for where in b["where"].split(","):
                acts = [x for x in b["actions"].split(",") if where == "between" or x != "none"]
                for kind in b["kinds"].split(","):
                    for part in (p for p in parts if p):
                        argv = [binary(cudart), "--row", "miss", "--memory", kind, "--sizes",
                                ",".join(part), "--actions", ",".join(acts), "--where", where,
                                "--evidence", str(a.evidence), "--alt", str(a.alt)]
                        if a.tmpdir:
                            argv += ["--tmpdir", a.tmpdir]
                        out.append(("%s %s %s %s" % (cudart, kind, where, ",".join(part)),
                                    "miss", a.procs, argv))
    if torch_devices and not a.no_torch:
        here = os.path.dirname(os.path.abspath(__file__))
        out.append(("torch refill", "torch", a.torch_procs,
                    [sys.executable, os.path.join(here, "harm_torch.py"), "--rows",
                     "refill,cpu_cuda", "--loop-mib", "256", "--rounds", "6"]))
    return out


def parse_summary(text):
    """The shim's exit summary bounce line in text as a dict (numbers where
    they parse), or None."""
    found = None
    for line in text.splitlines():
        m = re.search(r"p2pshim: summary bounce (.*)$", line)
        if m:
            found = {}
            for k, v in re.findall(r"(\w+)=(\S+)", m.group(1)):
                try:
                    found[k] = float(v) if "." in v else int(v)
                except ValueError:
                    found[k] = v
    return found


def run_group(g, arm, cycle, a, shim, logdir, index, left=None):
    """One process (harm_run.run_one), the shim arm with its own log file;
    its record gets the shim's summary. left: seconds it may take at most."""
    b = copy.copy(a)
    if left is not None:
        b.timeout = max(1, int(min(a.timeout, left)))
    log = os.path.join(logdir, "g%02d-c%d-%s.log" % (index, cycle, arm))
    if arm == "shim":
        b.shim_env = a.shim_env + ["P2PSHIM_LOG=info", "P2PSHIM_LOG_FILE=" + log]
    r = harm_run.run_one(g, arm, cycle, b, shim)
    if arm == "shim":
        try:
            with open(log, errors="replace") as f:
                r["shim_summary"] = parse_summary(f.read())
        except OSError:
            r["shim_summary"] = None
    return r


def run_all(a, shim, groups, logdir):
    records, t0, stopped = [], time.monotonic(), 0
    cycles = max(g[2] for g in groups)
    for c in range(cycles):
        for i, g in enumerate(groups):
            if c >= g[2]:
                continue
            for k in range(len(harm_stats.ARMS)):
                arm = harm_stats.ARMS[(k + c) % len(harm_stats.ARMS)]
                now = time.monotonic() - t0
                left = a.hard_seconds - now if a.hard_seconds else None
                if (a.max_seconds and now > a.max_seconds) or (left is not None and left < 5):
                    stopped += 1
                    continue
                records.append(run_group(g, arm, c, a, shim, logdir, i, left))
        print("cycle %d/%d done: %d processes, %.1f s" % (c + 1, cycles, len(records),
                                                         time.monotonic() - t0), flush=True)
    if stopped:
        print("time limit (--max-seconds %g): %d processes not started" % (a.max_seconds,
                                                                           stopped))
    return records, time.monotonic() - t0, stopped


def cell_key(line):
    return (line["cudart"], line["row"], line.get("bytes", 0))


def cell_extras(lines):
    """Per cell: medians per arm of the program's own counts, and whether a
    forked child died in every no-shim process (the memory is not inherited:
    the cell is not applicable)."""
    per = {}
    for l in lines:
        if l.get("bench") != "harm" or l.get("process") or not l["row"].startswith("miss."):
            continue
        e = per.setdefault(cell_key(l), {arm: [] for arm in harm_stats.ARMS})
        e.setdefault(l["arm"], []).append(l)
    out = {}
    for key, arms in per.items():
        med = lambda arm, f: (statistics.median([x[f] for x in arms[arm] if f in x])
                              if any(f in x for x in arms[arm]) else None)
        noshim = arms["noshim"] + arms["noshim2"]
        out[key] = {f + "_" + arm: med(arm, f) for arm in ("noshim", "shim")
                    for f in ("alt_faults", "alt_cpu_ms", "miss_faults", "alt_action_ms")}
        out[key]["not_inherited"] = bool(noshim) and all(x.get("child_signals") for x in noshim)
    return out


def num(v, fmt="%.3f"):
    return fmt % v if v is not None else "-"


def ci_text(m):
    ci = m.get("ratio_ci") if m else None
    return "[%.3f-%.3f]" % ci if ci else "[-]"


def cell_rows(measures, extras):
    """One dict per cell: its miss and alt measurements, extras, verdict."""
    cells = {}
    for m in measures:
        if m["row"].startswith("miss.") and m["metric"] in ("miss_ms", "alt_ms"):
            cells.setdefault((m["cudart"], m["row"], m["bytes"]), {})[m["metric"]] = m
    out = []
    for key, ms in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        ex = extras.get(key, {})
        verdicts = [m["verdict"] for m in ms.values()]
        verdict = ("n/a" if ex.get("not_inherited") else "FAIL" if "FAIL" in verdicts else
                   "n/a" if "n/a" in verdicts else "noise" if "noise" in verdicts else "ok")
        _, kind, action, where = key[1].split(".")
        out.append({"cudart": key[0], "kind": kind, "action": action, "where": where,
                    "bytes": key[2], "miss": ms.get("miss_ms"), "alt": ms.get("alt_ms"),
                    "extras": ex, "verdict": verdict})
    return out


def cell_table(cells):
    head = ("%-6s %-10s %-8s %-7s %5s | %9s %9s %6s %-13s %6s | %9s %9s %6s %-13s %6s | "
            "%11s %11s | %s" % ("cudart", "kind", "action", "where", "size", "miss: no",
                                "shim", "ratio", "90% interval", "A/A", "alt: no", "shim",
                                "ratio", "90% interval", "A/A", "faults s/n", "cpu ms s/n",
                                "verdict"))
    out = [head]
    for c in cells:
        parts = []
        for m in (c["miss"], c["alt"]):
            med = m["median"] if m else {}
            parts.append("%9s %9s %6s %-13s %6s" % (
                num(med.get("noshim")), num(med.get("shim")), num(m and m["ratio"]),
                ci_text(m), num(m and m["aa"])))
        ex = c["extras"]
        out.append("%-6s %-10s %-8s %-7s %5s | %s | %s | %11s %11s | %s%s" % (
            c["cudart"], c["kind"], c["action"], c["where"], size_text(c["bytes"]),
            parts[0], parts[1],
            "%s/%s" % (num(ex.get("alt_faults_shim"), "%.0f"),
                       num(ex.get("alt_faults_noshim"), "%.0f")),
            "%s/%s" % (num(ex.get("alt_cpu_ms_shim"), "%.1f"),
                       num(ex.get("alt_cpu_ms_noshim"), "%.1f")),
            c["verdict"], " (a forked child cannot read this memory)"
            if ex.get("not_inherited") else ""))
    return out


def summary_table(records):
    """Per process group: the medians over its shim processes of the exit
    summary's bounce fields ('-': absent, or no summary line)."""
    groups = {}
    for r in records:
        if r["arm"] == "shim" and r["kind"] == "miss":
            groups.setdefault(r["group"], []).append(r.get("shim_summary"))
    out = ["%-40s %s" % ("group (shim processes)", " ".join("%14s" % f
                                                            for f in SUMMARY_FIELDS))]
    for name, sums in sorted(groups.items()):
        have = [s for s in sums if s]
        vals = []
        for f in SUMMARY_FIELDS:
            v = [s[f] for s in have if isinstance(s.get(f), (int, float))]
            vals.append("%14s" % (num(statistics.median(v), "%.6g") if v else "-"))
        out.append("%-40s %s%s" % ("%s (%d)" % (name, len(sums)), " ".join(vals),
                                   "" if have else "  (no summary line)"))
    return out


def find(measures, row, metric, nbytes=None):
    return [m for m in measures if m["row"] == row and m["metric"] == metric and
            (nbytes is None or m["bytes"] == nbytes)]


def bound(met, text):
    return "%-7s %s" % ({True: "met", False: "NOT MET", None: "-"}[met], text)


def describe(ms, figure="ratio"):
    return ", ".join("%s %s %s %s%s (A/A %s)" % (
        m["cudart"], m["row"], size_text(m["bytes"]), m["metric"],
        " %s %s" % (figure, num(m[figure], "%.3f" if figure == "ratio" else "%.1fx")),
        num(m["aa"])) for m in ms) or "no figure"


def bounds(measures, cells, nlines):
    """The issue's bounds that these figures decide: met, NOT MET or -
    (not measured in this run)."""
    out = []
    judged = [c for c in cells if c["verdict"] != "n/a"]
    ratios = [(m["ratio"], c, m) for c in judged for m in (c["miss"], c["alt"])
              if m and m["ratio"] is not None]
    over = [x for x in ratios if x[0] > harm_stats.MISS_LIMIT]
    worst = max(ratios, key=lambda x: x[0]) if ratios else None
    out.append(bound(bool(ratios) and not over if ratios else None,
                     "every cell: median shim / no shim <= %.2f, mispredicted round and "
                     "alternating loop (%d cells, %d figures over; worst %s)" % (
                         harm_stats.MISS_LIMIT, len(judged), len(over),
                         describe([worst[2]]) if worst else "-")))
    gib = [m for kind in ("pinned", "malloc") for metric in ("miss_ms", "alt_ms")
           for m in find(measures, "miss.%s.memset.between" % kind, metric, GIB)]
    out.append(bound(all(m["ratio"] is not None and m["ratio"] <= harm_stats.MISS_LIMIT
                         for m in gib) if gib else None,
                     "1 GiB full rewrite, pinned and pageable, <= %.2f: %s" % (
                         harm_stats.MISS_LIMIT, describe(gib))))
    refill = find(measures, "torch.loop.refill", "steady_ms") + find(
        measures, "torch.loop.refill", "refill_ms")
    out.append(bound(all(m["ratio"] is not None and m["ratio"] <= harm_stats.MISS_LIMIT
                         for m in refill) if refill else None,
                     "PyTorch refilled pinned batch <= %.2f: %s" % (harm_stats.MISS_LIMIT,
                                                                     describe(refill))))
    cpu_cuda = find(measures, "torch.loop.cpu_cuda", "steady_ms")
    out.append(bound(all(m["speedup"] and m["speedup"] >= 100 for m in cpu_cuda)
                     if cpu_cuda else None,
                     "x.cpu().cuda() 256 MiB >= 100x: %s" % describe(cpu_cuda, "speedup")))
    out.append(faults_bound(cells))
    wins = [c["alt"] for c in judged if c["action"] in ("word", "read") and c["alt"] and
            c["where"] == "between" and c["bytes"] >= 64 * MIB]
    out.append(bound(all(m["ratio"] is not None and m["ratio"] < 1.0 for m in wins)
                     if wins else None,
                     "one-word patch and alternating-read loops (64 MiB and up) faster than "
                     "without the shim: %s" % describe(wins)))
    wrong = [m for m in measures if not m["bytes_ok"]]
    out.append(bound(not wrong and nlines > 0, "every byte equal to the source (%d result "
                     "lines%s)" % (nlines, ", wrong in " + describe(wrong) if wrong else "")))
    return out


def faults_bound(cells):
    """A spoilt snapshot's faults must not grow with its size: the shim's
    extra page faults per spoilt round (shim minus no shim, the program's
    own count) of a full rewrite at the largest size against 64 MiB."""
    pairs = []
    for kind in ("pinned", "malloc"):
        by_size = {c["bytes"]: c for c in cells if c["kind"] == kind and
                   c["action"] == "memset" and c["where"] == "between"}
        extra = {n: (c["extras"].get("alt_faults_shim") or 0) -
                 (c["extras"].get("alt_faults_noshim") or 0) for n, c in by_size.items()}
        big = max(extra) if extra else None
        if big is not None and big > 64 * MIB and 64 * MIB in extra:
            pairs.append((kind, extra[64 * MIB], big, extra[big]))
    if not pairs:
        return bound(None, "a spoilt snapshot's faults do not grow with its size: needs "
                     "memset between at 64 MiB and a larger size")
    ok = all(f_big <= 2 * max(f_small, 0) + 64 for _, f_small, _, f_big in pairs)
    return bound(ok, "a spoilt snapshot's faults do not grow with its size (extra faults per "
                 "spoilt full rewrite): " + ", ".join(
                     "%s 64M %.0f, %s %.0f" % (k, a, size_text(n), b) for k, a, n, b in pairs))


def machine_text(a, shim):
    def cmd(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            return "(%s: %s)" % (argv[0], e)
    root = harm_run.repo_root()
    return "\n".join([
        "date: %s" % datetime.datetime.now().isoformat(timespec="seconds"),
        "host: %s, %s, %d CPUs" % (platform.node(), platform.platform(), os.cpu_count() or 0),
        "gpus: %s" % cmd(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                          "--format=csv,noheader"]).replace("\n", "; "),
        "source: %s %s" % (cmd(["git", "-C", root, "rev-parse", "--short", "HEAD"]),
                           "(modified)" if cmd(["git", "-C", root, "status", "--porcelain",
                                                "-uno"]) else ""),
        "shim: %s %s" % (shim, " ".join(a.shim_env)),
        "command: %s" % " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])])


def report(a, records, elapsed, stopped, meta, out_base):
    lines = [l for r in records for l in r["lines"]]
    failed = [r for r in records if r["rc"] not in (0, harm_run.SKIP)]
    measures = harm_stats.aggregate(lines)
    cells = cell_rows(measures, cell_extras(lines))
    text = ["== machine and command", meta["machine"], "",
            "== misprediction matrix (ms: medians over processes; ratio shim / no shim, "
            "paired per cycle; faults and other threads' CPU per spoilt round, shim/no shim)"]
    text += cell_table(cells)
    text += ["", "== the shim's exit summaries (bounce line, median over each group's shim "
             "processes)"] + summary_table(records)
    others = [m for m in measures if not m["row"].startswith("miss.")]
    if others:
        text += ["", "== PyTorch"] + harm_stats.row_table(others)
    verdicts = [c["verdict"] for c in cells]
    text += ["", "== bounds"] + bounds(measures, cells, len(lines))
    text += ["", "== matrix summary",
             "cells: %d (ok %d, noise %d, FAIL %d, n/a %d)" % (
                 len(cells), verdicts.count("ok"), verdicts.count("noise"),
                 verdicts.count("FAIL"), verdicts.count("n/a")),
             "%-4s every process exited cleanly (%d of %d)" % (
                 "ok" if not failed else "FAIL", len(records) - len(failed), len(records)),
             "time: %.0f s, %d processes%s" % (elapsed, len(records),
                                                ", %d not started (time limit)" % stopped
                                                if stopped else "")]
    for r in failed[:10]:
        text.append("FAIL %s (%s, cycle %d) exit %d: %s" % (
            r["group"], r["arm"], r["cycle"] + 1, r["rc"],
            " | ".join(r["stderr_tail"].strip().splitlines()[-2:])))
    print("\n".join(text))
    meta.update(elapsed_s=round(elapsed, 1), processes_not_started=stopped)
    with open(out_base + ".txt", "w") as f:
        f.write("\n".join(text) + "\n")
    with open(out_base + ".json", "w") as f:
        json.dump({"meta": meta, "cells": cells, "measurements": measures,
                   "processes": records}, f, indent=1, default=str)
    print("results: %s.txt, %s.json" % (out_base, out_base))
    met = all(not l.startswith("NOT MET") for l in bounds(measures, cells, len(lines)))
    return 0 if met and not failed and not stopped and cells else 1


def main(argv):
    a = parse_args(argv)
    if a.self_test:
        import harm_matrix_selftest
        return harm_matrix_selftest.run()
    shim = os.path.abspath(a.shim or os.path.join(a.build_dir, "interpose", "libp2pshim.so"))
    if a.dry_run:
        groups = groups_for(a, 1)
        procs = sum(g[2] for g in groups) * len(harm_stats.ARMS)
        print("harm_matrix --set %s: %d groups, %d processes (3 arms), stops starting "
              "processes after %g s" % (a.set, len(groups), procs, a.max_seconds))
        for g in groups:
            print("  %-34s x%d  %s" % (g[0], g[2], " ".join(g[3])))
        return 0
    static = os.path.join(a.build_dir, "tools", "bench", "p2pbench", "harmbench_static")
    for path in (shim, static):
        if not os.path.exists(path):
            print("harm_matrix: %s not found (build first, or --build-dir)" % path)
            return 2
    devices, note = harm_run.probe([static, "--row", "devices"], "harmbench devices")
    if int(devices.get("count", 0)) < 1:
        print("harm_matrix: no GPU (%s)" % note)
        return 2
    torch_devices = 0
    if not a.no_torch:
        here = os.path.dirname(os.path.abspath(__file__))
        found, note = harm_run.probe([sys.executable, os.path.join(here, "harm_torch.py"),
                                      "--probe"], "harm_torch")
        torch_devices = int(found.get("count", 0))
        if not torch_devices:
            print("torch: skipped (%s)" % note)
    a.cpu_set, pinning = harm_run.choose_cpus(a.cpus, devices.get("bus0", ""))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = a.results_dir or os.path.join(harm_run.repo_root(), "results")
    out_base = os.path.join(results, "matrix-%s-%s" % (a.set, stamp))
    logdir = out_base + "-logs"
    os.makedirs(logdir, exist_ok=True)
    groups = groups_for(a, torch_devices)
    print("harm_matrix --set %s: %d groups, CPUs: %s, shim %s" % (a.set, len(groups), pinning,
                                                                 shim), flush=True)
    meta = {"machine": machine_text(a, shim), "set": a.set, "blocks": a.blocks,
            "cpus": pinning, "torch_devices": torch_devices,
            "args": {k: v for k, v in vars(a).items() if k != "cpu_set"}}
    records, elapsed, stopped = run_all(a, shim, groups, logdir)
    return report(a, records, elapsed, stopped, meta, out_base)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
