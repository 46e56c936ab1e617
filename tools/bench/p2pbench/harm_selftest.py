"""harm_run.py --self-test: the statistics, targets, tables, report and
schedule of harm_run.py on synthetic results, without a GPU. Each check
prints what it expected and what it got; exit 1 at the first mismatch."""
import contextlib
import io
import json
import os
import tempfile

import harm_stats

MIB = 1 << 20
failures = []


def expect(what, got, want):
    same = abs(got - want) < 1e-9 if isinstance(want, float) and got is not None else got == want
    if not same:
        failures.append(what)
        print("FAIL %s: got %r, want %r" % (what, got, want))


def paired(noshim, shim, noshim2):
    """The ratio as documented, computed directly: per cycle (index), shim
    over the geometric mean of the two no-shim figures; their median (of an
    even count, the geometric mean of the middle two: a median of logs)."""
    r = sorted(b / (a * c) ** 0.5 for a, b, c in zip(noshim, shim, noshim2))
    n = len(r)
    return r[n // 2] if n % 2 else (r[n // 2 - 1] * r[n // 2]) ** 0.5


def line(arm, proc, row, nbytes, ok=True, cudart="static", **metrics):
    d = {"bench": "harm", "row": row, "cudart": cudart, "label": arm, "bytes": nbytes,
         "ok": ok, "arm": arm, "proc": "%s/%d" % (arm, proc)}
    d.update(metrics)
    return d


def process(arm, proc, row, free, uffd=0, cudart="static"):
    return {"bench": "harm", "row": row, "cudart": cudart, "label": arm, "process": True,
            "devices": [0], "free_bytes": [free], "uffd_ranges": uffd,
            "uffd_bytes": uffd * 4096, "uffd_fds": 1 if uffd else 0, "ok": True, "arm": arm,
            "proc": "%s/%d" % (arm, proc)}


def series(row, nbytes, metric, noshim, shim, noshim2, bad_arm=None, **extra):
    """One line per process: the values of each arm in order."""
    out = []
    for arm, values in (("noshim", noshim), ("shim", shim), ("noshim2", noshim2)):
        for i, v in enumerate(values):
            out.append(line(arm, i, row, nbytes, ok=arm != bad_arm, **{metric: v}, **extra))
    return out


def synthetic():
    """Results with known medians: some targets met, some missed."""
    L = []
    # Never bounces, 1.02 (ok); A/A 1.005.
    L += series("malloc_read", MIB, "ms", [10.0, 10.2, 9.8, 10.1, 9.9],
                [10.4, 10.2, 10.1, 10.3, 10.0], [10.05, 9.9, 10.2, 10.1, 10.0])
    # Never bounces, 1.69 (FAIL: the whole interval misses): an even count,
    # median of the middle two.
    L += series("fresh_pinned", 16 * MIB, "ms", [0.30, 0.31, 0.29, 0.32],
                [0.50, 0.52, 0.49, 0.55], [0.3, 0.3, 0.3, 0.3])
    # Never bounces, 1.10 at 1 MiB with processes spread +-25 % (noise: the
    # interval reaches 1.03); 0.94 at 4 MiB: pooled 1.017 (the row is ok).
    L += series("pinned_write", MIB, "ms", [0.8, 1.0, 1.25, 0.9, 1.1],
                [0.9, 1.1, 1.35, 1.0, 1.2], [1.0] * 5)
    L += series("pinned_write", 4 * MIB, "ms", [4.0, 4.1, 3.9, 4.0, 4.05],
                [3.76, 3.8, 3.7, 3.75, 3.8], [4.0] * 5)
    # Loops: pageable across GPUs 60x (ok), pinned 1.49x (FAIL), read 1.01 (ok),
    # a first round (stated only).
    L += series("bounce.pageable.untouched.cross", 256 * MIB, "steady_ms", [60, 61, 59],
                [1.0, 1.1, 0.9], [60, 60, 60])
    L += series("bounce.pageable.untouched.cross", 256 * MIB, "first_ms", [60, 61, 59],
                [70, 71, 72], [60, 60, 60])
    L += series("bounce.pinned.untouched.same", 256 * MIB, "steady_ms", [9.7, 9.7, 9.7],
                [6.5, 6.5, 6.5], [9.7, 9.6, 9.8])
    L += series("bounce.pageable.read.same", 256 * MIB, "steady_ms", [100, 100, 100],
                [101, 101, 101], [100, 99, 101])
    # The same loop's mean: its back-off probes cost 1.2x in total (FAIL).
    L += series("bounce.pageable.read.same", 256 * MIB, "mean_ms", [100, 100, 100],
                [120, 121, 119], [100, 99, 101])
    # An untouched loop's mean: stated, never judged.
    L += series("bounce.pageable.untouched.cross", 256 * MIB, "mean_ms", [60, 61, 59],
                [3.0, 3.1, 2.9], [60, 60, 60])
    # Wrong bytes in one arm of an otherwise fast row.
    L += series("first_page", 4 * MIB, "ms", [1.0, 1.0], [1.0, 1.0], [1.0, 1.0],
                bad_arm="shim")
    # Held at exit: equal; the shim holding 2 MiB; a userfaultfd range.
    for arm in ("noshim", "shim", "noshim2"):
        for i in range(2):
            L.append(process(arm, i, "malloc_read", 1000 * MIB))
            L.append(process(arm, i, "fresh_pinned",
                             998 * MIB if arm == "shim" else 1000 * MIB))
            L.append(process(arm, i, "first_page", 1000 * MIB, uffd=int(arm == "shim")))
            L.append(process(arm, i, "bounce.pinned.untouched.same",
                             900 * MIB if arm == "shim" else 1000 * MIB))
    return L


def check_aggregate():
    ms = {(m["row"], m["metric"]): m for m in harm_stats.aggregate(synthetic())}
    m = ms[("malloc_read", "ms")]
    expect("malloc_read no-shim median", m["median"]["noshim"], 10.0)
    expect("malloc_read shim median", m["median"]["shim"], 10.2)
    expect("malloc_read ratio", round(m["ratio"], 9), round(paired(
        [10.0, 10.2, 9.8, 10.1, 9.9], [10.4, 10.2, 10.1, 10.3, 10.0],
        [10.05, 9.9, 10.2, 10.1, 10.0]), 9))
    expect("malloc_read A/A: median of the cycles' noshim2 / noshim", round(m["aa"], 9),
           round(sorted([1.005, 9.9 / 10.2, 10.2 / 9.8, 1.0, 10.0 / 9.9])[2], 9))
    expect("malloc_read verdict", m["verdict"], "ok")
    m = ms[("fresh_pinned", "ms")]
    expect("fresh_pinned even-count median", m["median"]["shim"], 0.51)
    expect("fresh_pinned ratio", round(m["ratio"], 6), round(paired(
        [0.30, 0.31, 0.29, 0.32], [0.50, 0.52, 0.49, 0.55], [0.3] * 4), 6))
    expect("fresh_pinned verdict", m["verdict"], "FAIL")
    expect("fresh_pinned interval misses 1.03", m["ratio_ci"][0] > 1.03, True)
    expect("fresh_pinned interval holds the ratio",
           m["ratio_ci"][0] <= m["ratio"] <= m["ratio_ci"][1], True)
    m = ms[("bounce.pageable.untouched.cross", "steady_ms")]
    expect("pageable cross speedup", m["speedup"], 60.0)
    expect("pageable cross target", m["target"], ("speedup", ">=", 50.0))
    expect("pageable cross verdict", m["verdict"], "ok")
    expect("first round stated only", ms[("bounce.pageable.untouched.cross",
                                          "first_ms")]["verdict"], "-")
    expect("pinned speedup verdict", ms[("bounce.pinned.untouched.same", "steady_ms")]
           ["verdict"], "FAIL")
    expect("read-in-between verdict", ms[("bounce.pageable.read.same", "steady_ms")]
           ["verdict"], "ok")
    expect("read-in-between mean verdict", ms[("bounce.pageable.read.same", "mean_ms")]
           ["verdict"], "FAIL")
    expect("untouched loop's mean: stated", ms[("bounce.pageable.untouched.cross", "mean_ms")]
           ["verdict"], "-")
    m = ms[("first_page", "ms")]
    expect("wrong bytes: bytes_ok", m["bytes_ok"], False)
    expect("wrong bytes: verdict despite ratio 1", m["verdict"], "FAIL")
    m = [x for x in harm_stats.aggregate(synthetic()) if x["row"] == "pinned_write"]
    r1, r4 = (paired([0.8, 1.0, 1.25, 0.9, 1.1], [0.9, 1.1, 1.35, 1.0, 1.2], [1.0] * 5),
              paired([4.0, 4.1, 3.9, 4.0, 4.05], [3.76, 3.8, 3.7, 3.75, 3.8], [4.0] * 5))
    expect("noisy cell ratio", round(m[0]["ratio"], 9), round(r1, 9))
    expect("noisy cell verdict", m[0]["verdict"], "noise")
    expect("noisy cell interval reaches 1.03", m[0]["ratio_ci"][0] <= 1.03, True)
    pool = harm_stats.pooled(m)
    expect("pooled geometric mean", round(pool[0], 9), round((r1 * r4) ** 0.5, 9))
    expect("pooled count", pool[2], 2)
    expect("pooled row verdict", harm_stats.group_verdict(m, pool), "ok")
    expect("pooled above the target: noise",
           harm_stats.group_verdict(m[:1], harm_stats.pooled(m[:1])), "noise")
    # A missing arm gives n/a, never ok.
    only = [l for l in synthetic() if l.get("arm") != "shim" and not l.get("process")]
    expect("missing shim arm", harm_stats.aggregate(only)[0]["verdict"], "n/a")


def check_targets():
    t = harm_stats.target
    expect("x.cpu().cuda() shape target", t("bounce.fresh.untouched.same", "steady_ms",
                                            256 * MIB), ("speedup", ">=", 100.0))
    expect("pageable same GPU: stated", t("bounce.pageable.untouched.same", "steady_ms",
                                          256 * MIB), None)
    expect("loop below 256 MiB: stated", t("bounce.pinned.untouched.same", "steady_ms",
                                           16 * MIB), None)
    expect("torch to cuda:1", t("torch.loop.cpu_to1", "steady_ms", 256 * MIB),
           ("speedup", ">=", 100.0))
    expect("torch read between", t("torch.loop.cpu_read_cuda", "steady_ms", 256 * MIB),
           ("ratio", "<=", 1.03))
    expect("small copies", t("d2h_4B", "us", 4), ("ratio", "<=", 1.03))


def check_held():
    hs = {h["row"]: h for h in harm_stats.held(synthetic())}
    expect("held equal: verdict", hs["malloc_read"]["verdict"], "ok")
    expect("held equal: diff", hs["malloc_read"]["diff_bytes"], 0)
    expect("shim holds 2 MiB: diff", hs["fresh_pinned"]["diff_bytes"], -2 * MIB)
    expect("shim holds 2 MiB: verdict", hs["fresh_pinned"]["verdict"], "FAIL")
    expect("userfaultfd range: verdict", hs["first_page"]["verdict"], "FAIL")
    expect("loop holds snapshots: not judged",
           hs["bounce.pinned.untouched.same"]["verdict"], "-")


def check_summary():
    lines = synthetic()
    out = harm_stats.summary(harm_stats.aggregate(lines), harm_stats.held(lines), len(lines))
    loop = [l for l in out if "bounce.pageable.untouched.cross" in l and "steady_ms" in l]
    expect("one summary line per loop", len(loop), 1)
    expect("loop line: steady speedup and round 1", loop and "60.0x" in loop[0] and
           "round 1: 0.85x" in loop[0] and loop[0].startswith("ok"), True)
    worst = [l for l in out if " fresh_pinned " in l]
    expect("worst ratio line", worst and worst[0].startswith("FAIL") and "1.686" in worst[0],
           True)
    expect("bytes line", out[-1].split()[:3] == ["FAIL", "every", "byte"], True)
    loops = [l for l in lines if l["row"].startswith("bounce.")]
    only = harm_stats.summary(harm_stats.aggregate(loops), harm_stats.held(loops), len(loops))
    expect("loops alone: nothing held to judge, not a failure",
           [l for l in only if "held at exit" in l],
           ["-     held at exit: no row that never bounces ran"])
    aa_row = [l for l in out if " pinned_write " in l]
    expect("A/A pooled on the row line", aa_row and "A/A spread" in aa_row[0] and
           ", pooled 1.000" in aa_row[0] and "A/A differs" not in aa_row[0], True)
    row = [l for l in out if " pinned_write " in l]
    expect("pooled row line", row and row[0].startswith("ok") and "pooled 1.016" in row[0]
           and "over 2" in row[0], True)


def check_report():
    import harm_run
    good = [l for l in synthetic() if l["row"] in ("malloc_read", "bounce.pageable.read.same")
            and "mean_ms" not in l]
    for lines, want in ((synthetic(), 1), (good, 0)):
        rec = [{"group": "g", "kind": "harm", "arm": "noshim", "cycle": 0, "argv": [],
                "rc": 0, "wall_s": 1.0, "lines": lines, "stderr_tail": ""}]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with contextlib.redirect_stdout(io.StringIO()):
                rc = harm_run.report(rec, 12.0, 0, path, {})
            saved = json.load(open(path))
        expect("report exit (%d lines)" % len(lines), rc, want)
        expect("saved summary", saved["summary"][-1].startswith("time: 12 s"), True)
        expect("saved lines", len(saved["processes"][0]["lines"]), len(lines))
    rec[0]["rc"] = 1
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        rc = harm_run.report(rec, 1.0, 0, os.path.join(d, "r.json"), {})
    expect("a failed process fails the run", rc, 1)


def check_schedule():
    """Every group gets its processes in every arm; the arms' order rotates;
    nothing starts after the time limit."""
    import harm_run
    calls = []
    saved = harm_run.run_one
    harm_run.run_one = lambda g, arm, c, a, shim: calls.append((g[0], arm, c)) or {
        "group": g[0], "kind": g[1], "rc": 0, "wall_s": 0, "lines": []}
    try:
        a = harm_run.parse_args(["--max-seconds", "0"])
        groups = [("x", "harm", 3, []), ("y", "bounce", 1, [])]
        with contextlib.redirect_stdout(io.StringIO()):
            harm_run.run_all(a, "shim.so", groups)
        for g, n in (("x", 3), ("y", 1)):
            for arm in harm_stats.ARMS:
                expect("%s %s processes" % (g, arm),
                       len([c for c in calls if c[0] == g and c[1] == arm]), n)
        firsts = [arm for (g, arm, c) in calls if g == "x"][::3]
        expect("arms rotate per cycle", firsts, ["noshim", "shim", "noshim2"])
        calls.clear()
        a.max_seconds = 1e-9
        with contextlib.redirect_stdout(io.StringIO()):
            _, _, stopped = harm_run.run_all(a, "shim.so", groups)
        expect("time limit stops new processes",
               (len(calls) <= 1, len(calls) + stopped), (True, 12))
    finally:
        harm_run.run_one = saved


def run():
    for check in (check_aggregate, check_targets, check_held, check_summary, check_report,
                  check_schedule):
        check()
    print("harm_run self-test: %s (%d failed)" % ("FAIL" if failures else "ok",
                                                 len(failures)))
    return 1 if failures else 0
