"""harm_matrix.py --self-test: the plan, the summary-line parser, the cell
table, the exit summaries' table and the bounds of harm_matrix.py on
synthetic results, without a GPU. Each check prints what it expected and
what it got; exit 1 when one differs."""
import contextlib
import io
import os
import tempfile

import harm_matrix

MIB, GIB = 1 << 20, 1 << 30
failures = []


def expect(what, got, want):
    if got != want:
        failures.append(what)
        print("FAIL %s: got %r, want %r" % (what, got, want))


def cell_lines(row, nbytes, noshim, shim, noshim2, cudart="static", extra=None):
    """Three cycles of one cell: per arm (miss_ms, alt_ms) per cycle."""
    out = []
    for arm, values in (("noshim", noshim), ("shim", shim), ("noshim2", noshim2)):
        for cycle, (miss, alt) in enumerate(values):
            l = {"bench": "harm", "row": row, "cudart": cudart, "bytes": nbytes, "ok": True,
                 "miss_ms": miss, "alt_ms": alt, "alt_faults": 10 if arm != "shim" else 20,
                 "alt_cpu_ms": 0.5, "arm": arm, "proc": "g/%s/%d" % (arm, cycle)}
            l.update((extra or {}).get(arm, {}))
            out.append(l)
    return out


def synthetic():
    same = [(10.0, 20.0), (10.2, 20.4), (9.8, 19.6)]
    scaled = lambda k: [(m * k, a * k) for m, a in same]
    L = []
    for kind in ("pinned", "malloc"):
        for n in (64 * MIB, GIB):
            L += cell_lines("miss.%s.memset.between" % kind, n, same, scaled(1.01), same)
    # A loop the shim wins (read between), and one it loses (FAIL: 1.2).
    L += cell_lines("miss.malloc.read.between", 64 * MIB, same, scaled(0.8), same)
    L += cell_lines("miss.mmap.random.after", MIB, same, scaled(1.2), same)
    # A forked child that cannot read pinned memory, with or without the shim.
    died = {"child_signals": 1}
    L += cell_lines("miss.pinned.fork.between", 64 * MIB, same, same, same,
                    extra={"noshim": died, "shim": died, "noshim2": died})
    for arm, refill, cpu_cuda in (("noshim", 8.5, 238.0), ("shim", 8.6, 0.6),
                                  ("noshim2", 8.4, 240.0)):
        for c in range(3):
            L.append({"bench": "harm", "row": "torch.loop.refill", "cudart": "torch",
                      "bytes": 256 * MIB, "ok": True, "steady_ms": 20.0 + refill,
                      "refill_ms": refill, "first_ms": 30.0, "arm": arm,
                      "proc": "t/%s/%d" % (arm, c)})
            L.append({"bench": "harm", "row": "torch.loop.cpu_cuda", "cudart": "torch",
                      "bytes": 256 * MIB, "ok": True, "steady_ms": cpu_cuda,
                      "first_ms": cpu_cuda, "arm": arm, "proc": "t/%s/%d" % (arm, c)})
    return L


def check_plan():
    a = harm_matrix.parse_args(["--set", "quick", "--build-dir", "B"])
    groups = harm_matrix.groups_for(a, 1)
    expect("quick: groups (2 kinds x 64M, 2 kinds x 1G, torch)", len(groups), 5)
    expect("quick: the 1 GiB processes apart", sorted(g[0] for g in groups if "1G" in g[0]),
           ["static malloc between 1G", "static pinned between 1G"])
    a = harm_matrix.parse_args(["--build-dir", "B"])
    groups = harm_matrix.groups_for(a, 0)
    after = [g for g in groups if " after " in g[0]]
    expect("full: no torch group without torch", any(g[1] == "torch" for g in groups), False)
    expect("full: 'none' is left out after the H2D",
           all("none" not in g[3][g[3].index("--actions") + 1].split(",") for g in after), True)
    a = harm_matrix.parse_args(["--kinds", "thp", "--sizes", "1G", "--build-dir", "B"])
    expect("a custom block: one kind, one size",
           [g[0] for g in harm_matrix.groups_for(a, 0)], ["static thp between 1G"])
    try:
        harm_matrix.parse_args(["--sizes", "1000"])
        expect("a size that is not whole pages is refused", "accepted", "refused")
    except SystemExit:
        pass


def check_summary():
    line = ("vm:1 p2pshim: summary bounce candidates=9 predicted=4 skipped=1 snapshots=4 "
            "lazy=2 eager=2 seen=3 upgraded=0 useful=2 wasted=2 seen_plain=0 "
            "materialised_bytes=10 faults=524354 evicted=0 fallbacks=0 "
            "bytes_not_through_host=8 faults_per_snap=3.5 handler_us=120")
    s = harm_matrix.parse_summary("noise\n" + line + "\n")
    expect("summary: faults", s and s["faults"], 524354)
    expect("summary: a new field", s and s["faults_per_snap"], 3.5)
    expect("summary: none in other text", harm_matrix.parse_summary("p2pshim: summary total"),
           None)
    recs = [{"group": "static pinned between 64M", "arm": "shim", "kind": "miss",
             "shim_summary": s},
            {"group": "static malloc between 64M", "arm": "shim", "kind": "miss",
             "shim_summary": None}]
    table = harm_matrix.summary_table(recs)
    pinned = [l for l in table if l.startswith("static pinned")][0].split()
    expect("summary table: faults_per_snap shown", "3.5" in pinned, True)
    expect("summary table: an absent field is '-'", pinned[-1], "-")
    expect("summary table: no line said", table[1].endswith("(no summary line)"), True)


def run():
    check_plan()
    check_summary()
    lines = synthetic()
    measures = harm_matrix.harm_stats.aggregate(lines)
    cells = harm_matrix.cell_rows(measures, harm_matrix.cell_extras(lines))
    verdict = {(c["kind"], c["action"], c["bytes"]): c["verdict"] for c in cells}
    expect("cells", len(cells), 7)
    expect("1.01 is ok", verdict[("pinned", "memset", GIB)], "ok")
    expect("1.2 fails", verdict[("mmap", "random", MIB)], "FAIL")
    expect("a child killed without the shim: n/a", verdict[("pinned", "fork", 64 * MIB)],
           "n/a")
    b = harm_matrix.bounds(measures, cells, len(lines))
    state = lambda word: [l for l in b if word in l][0].split()[0]
    expect("bound: every cell (one at 1.2)", state("every cell"), "NOT")
    expect("bound: 1 GiB rewrite", state("1 GiB full rewrite"), "met")
    expect("bound: refill", state("refilled pinned batch"), "met")
    expect("bound: x.cpu().cuda()", state("x.cpu().cuda()"), "met")
    expect("bound: faults (20-10 at 64M and 1G)", state("faults do not grow"), "met")
    grown = [dict(c, extras=dict(c["extras"], alt_faults_shim=10 + (262144 if c["bytes"] == GIB
                                                                    else 16384)))
             for c in cells]
    expect("bound: faults one per page (16384 at 64M, 262144 at 1G)",
           harm_matrix.faults_bound(grown).split()[0], "NOT")
    expect("bound: the read loop faster", state("alternating-read"), "met")
    expect("bound: bytes", state("every byte"), "met")
    records = [{"group": "g", "kind": "miss", "arm": l["arm"], "cycle": 0, "rc": 0,
                "lines": [l], "stderr_tail": "", "shim_summary": None} for l in lines]
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()) as out:
        a = harm_matrix.parse_args(["--set", "quick"])
        rc = harm_matrix.report(a, records, 1.0, 0, {"machine": "synthetic"},
                                os.path.join(tmp, "m"))
        text = open(os.path.join(tmp, "m.txt")).read()
    expect("report: exit 1 with a bound not met", rc, 1)
    expect("report: the table in the results file", "miss: no" in text, True)
    expect("report: printed as written", out.getvalue().startswith(text.rstrip("\n")), True)
    print("harm_matrix self-test: %s (%d failed)" % ("ok" if not failures else "FAIL",
                                                     len(failures)))
    return 1 if failures else 0
