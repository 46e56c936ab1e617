"""harm_stats: the statistics, targets and tables of harm_run.py, apart from
running anything, so that harm_run.py --self-test can check them on
synthetic results without a GPU.

Input: result lines (dicts) as harmbench and harm_torch.py print them, each
tagged by the driver with "arm" (noshim, shim, or noshim2: a second set of
processes without the shim, the A/A comparison) and "proc" (its process).
A measurement is keyed by (cudart, row, bytes, metric); its figure per arm
is the median over that arm's processes (shown). Its ratios are paired by
cycle, because processes of one cycle run back to back and share the
machine's state of that moment (on a virtual machine the figures of a
whole cycle move together by 20 % and more): ratio = the median over
cycles of shim / the geometric mean of that cycle's two no-shim
processes; A/A = the median over cycles of noshim2 / noshim; speedup =
1 / ratio.

How sure a figure is: every ratio carries a 90 % bootstrap interval (the
cycles resampled). A measurement misses its target (FAIL) only when its
whole interval does; a median past the target whose interval still
reaches it is "noise": this many cycles cannot tell. A row is judged as a
whole by the geometric mean of its measurements' ratios over sizes and
builds (pooled, with its own interval): ok when the pooled figure meets
the target and no measurement fails.
"""
import math
import random
import statistics

ARMS = ("noshim", "shim", "noshim2")
METRICS = ("ms", "first_ms", "steady_ms", "mean_ms", "us", "copy_ms", "miss_ms", "alt_ms",
           "refill_ms")
MIB = 1 << 20
HARM_LIMIT = 1.03
# A wrong bounce prediction (the misprediction matrix, harm_matrix.py, and
# PyTorch's refilled pinned batch): shim / no shim at most this.
MISS_LIMIT = 1.05
BOOT_ITERS = 2000
CONFIDENCE = 0.90


def is_loop(row):
    """A loop that copies host bytes back to a GPU (where the shim may win)."""
    return row.startswith(("bounce.", "torch.loop.", "miss."))


def target(row, metric, nbytes):
    """(figure, op, limit) the measurement is judged by, or None (stated only).
    figure is "ratio" (shim / no shim) or "speedup" (no shim / shim)."""
    if row.startswith("miss."):  # the mispredicted round, the alternating loop
        return ("ratio", "<=", MISS_LIMIT) if metric in ("miss_ms", "alt_ms") else None
    if row == "torch.loop.refill":
        return ("ratio", "<=", MISS_LIMIT) if metric in ("steady_ms", "refill_ms") else None
    if not is_loop(row):
        return ("ratio", "<=", HARM_LIMIT) if metric in METRICS else None
    if metric not in ("steady_ms", "mean_ms"):
        return None  # the first round of a loop cannot be predicted: stated only
    if ".read" in row or row == "torch.loop.cpu_read_cuda":
        # A loop that reads its buffer must not be slower in its steady
        # state (median) nor in total (mean: the back-off's probes count).
        return ("ratio", "<=", HARM_LIMIT)
    if metric == "mean_ms":
        return None  # stated: the speedup targets are the steady state's
    if nbytes != 256 * MIB:
        return None
    if row in ("bounce.pageable.untouched.cross", "bounce.fresh.untouched.same",
               "torch.loop.cpu_cuda", "torch.loop.cpu_to1"):
        return ("speedup", ">=", 50.0 if row.startswith("bounce.pageable") else 100.0)
    if row.startswith("bounce.pinned.untouched"):
        return ("speedup", ">=", 1.6)
    return None


def median(values):
    return statistics.median(values) if values else None


def aggregate(lines):
    """Measurements from result lines: a list of dicts sorted by cudart, row,
    bytes, metric, each with the per-arm values and medians, ratio, speedup,
    A/A, bytes_ok (every line of every arm ok), target and verdict."""
    table = {}
    for line in lines:
        if line.get("bench") != "harm" or line.get("process") or "arm" not in line:
            continue
        for metric in METRICS:
            if metric not in line:
                continue
            key = (line["cudart"], line["row"], line.get("bytes", 0), metric)
            e = table.setdefault(key, {"values": {a: [] for a in ARMS}, "cycles": {},
                                       "bytes_ok": True})
            value = float(line[metric])
            e["values"][line["arm"]].append(value)
            e["cycles"].setdefault(cycle_of(line), {})[line["arm"]] = value
            e["bytes_ok"] &= bool(line.get("ok"))
    out, rng = [], random.Random(20261201)
    for (cudart, row, nbytes, metric), e in sorted(table.items()):
        med = {a: median(e["values"][a]) for a in ARMS}
        paired, aa = paired_logs(e["cycles"])
        ratio = math.exp(statistics.median(paired)) if paired else None
        m = {"cudart": cudart, "row": row, "bytes": nbytes, "metric": metric,
             "values": e["values"], "median": med, "bytes_ok": e["bytes_ok"],
             "paired_logs": paired, "aa_logs": aa, "ratio": ratio,
             "speedup": 1 / ratio if ratio else None,
             "aa": math.exp(statistics.median(aa)) if aa else None,
             "target": target(row, metric, nbytes), "ratio_ci": ratio_interval([paired], rng)}
        m["verdict"] = judge(m)
        out.append(m)
    return out


def cycle_of(line):
    """The cycle of a result line: the last field of its "proc" tag
    (harm_run.py writes group/arm/cycle), None when there is none."""
    last = str(line.get("proc", "")).rsplit("/", 1)[-1]
    return int(last) if last.isdigit() else None


def paired_logs(cycles):
    """Per cycle with all three arms and positive figures: log(shim / the
    geometric mean of the two no-shim figures), and log(noshim2 / noshim)."""
    paired, aa = [], []
    for c, arms in sorted(cycles.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        if c is None or len(arms) < len(ARMS) or min(arms.values()) <= 0:
            continue
        n1, b, n2 = arms["noshim"], arms["shim"], arms["noshim2"]
        paired.append(math.log(b) - (math.log(n1) + math.log(n2)) / 2)
        aa.append(math.log(n2 / n1))
    return paired, aa


def ratio_interval(cells, rng, iters=BOOT_ITERS):
    """The CONFIDENCE bootstrap interval (lo, hi) of the geometric mean over
    cells of each cell's ratio (exp of the median of its paired logs), the
    cycles of every cell resampled with replacement. None when a cell has
    fewer than 3 cycles."""
    if not cells or any(len(logs) < 3 for logs in cells):
        return None
    def draw(logs):
        return statistics.median([rng.choice(logs) for _ in logs])
    means = sorted(sum(draw(logs) for logs in cells) / len(cells) for _ in range(iters))
    k = int(iters * (1 - CONFIDENCE) / 2)
    return (math.exp(means[k]), math.exp(means[-k - 1]))


def _meets(value, op, limit):
    return value <= limit if op == "<=" else value >= limit


def _best_case(figure, interval):
    """The end of a ratio interval most favourable to the shim, as figure."""
    return interval[0] if figure == "ratio" else 1 / interval[0]


def judge(m):
    """ok, noise (misses the target, but its interval reaches it), FAIL,
    n/a (a figure missing) or - (no target, bytes fine)."""
    if not m["bytes_ok"]:
        return "FAIL"
    if m["target"] is None:
        return "-"
    figure, op, limit = m["target"]
    value = m[figure]
    if value is None:
        return "n/a"
    if _meets(value, op, limit):
        return "ok"
    ci = m.get("ratio_ci")
    return "noise" if ci and _meets(_best_case(figure, ci), op, limit) else "FAIL"


def pooled(ms, rng=None, logs="paired_logs"):
    """A row's figure over its measurements (sizes, builds) that have a ratio
    target: (geometric mean of their ratios, its interval, count), or None.
    logs="aa_logs": the same for the A/A pair, whose interval should hold
    1.0; when it does not, the intervals of this row are too narrow (its
    cycles are not alike enough for the bootstrap) and say so."""
    cells = [m for m in ms if m["target"] and m["target"][0] == "ratio" and m.get(logs)]
    if not cells:
        return None
    gmean = math.exp(sum(statistics.median(m[logs]) for m in cells) / len(cells))
    ci = ratio_interval([m[logs] for m in cells], rng or random.Random(20261201))
    return gmean, ci, len(cells)


def group_verdict(ms, pool):
    """A row's verdict: FAIL when a measurement fails or the pooled interval
    misses the target, n/a when a figure is missing, noise when the pooled
    figure misses the target but its interval reaches it (or, without a pooled
    figure, a measurement is noise), else ok (or - when nothing is judged)."""
    verdicts = [m["verdict"] for m in ms]
    if "FAIL" in verdicts:
        return "FAIL"
    if "n/a" in verdicts:
        return "n/a"
    if pool:
        gmean, ci, _ = pool
        limit = next((m["target"][2] for m in ms if m["target"] and m["target"][0] == "ratio"),
                     HARM_LIMIT)
        if gmean <= limit:
            return "ok"
        return "noise" if ci and ci[0] <= limit else "FAIL"
    return "noise" if "noise" in verdicts else "ok" if "ok" in verdicts else "-"


def held(lines):
    """Per (cudart, row): free device memory and userfaultfd registrations
    at the end of each process, per arm; verdict for rows that never bounce:
    the shim's free memory equal to the no-shim figure, no registration."""
    table = {}
    for line in lines:
        if line.get("bench") != "harm" or not line.get("process") or "arm" not in line:
            continue
        e = table.setdefault((line["cudart"], line["row"]), {a: [] for a in ARMS})
        e[line["arm"]].append(line)
    out = []
    for (cudart, row), arms in sorted(table.items()):
        def free(arm):  # the median per device over the arm's processes
            per_dev = list(zip(*[l.get("free_bytes", []) for l in arms[arm]]))
            return [int(statistics.median(d)) for d in per_dev] if per_dev else None
        def worst(arm, key):
            v = [l.get(key, 0) for l in arms[arm]]
            return max(v) if v else None
        a, b, a2 = free("noshim"), free("shim"), free("noshim2")
        h = {"cudart": cudart, "row": row, "free_noshim": a, "free_shim": b,
             "free_noshim2": a2, "uffd_ranges_shim": worst("shim", "uffd_ranges"),
             "uffd_bytes_shim": worst("shim", "uffd_bytes"),
             "diff_bytes": sum(y - x for x, y in zip(a, b)) if a and b else None,
             "aa_diff_bytes": sum(y - x for x, y in zip(a, a2)) if a and a2 else None}
        if is_loop(row):
            h["verdict"] = "-"
        elif h["diff_bytes"] is None:
            h["verdict"] = "n/a"
        else:
            h["verdict"] = "ok" if h["diff_bytes"] == 0 and not h["uffd_ranges_shim"] else "FAIL"
        out.append(h)
    return out


def _size(n):
    return "%d MiB" % (n // MIB) if n >= MIB and n % MIB == 0 else "%d B" % n


def _num(v, fmt="%.3f"):
    return fmt % v if v is not None else "-"


def row_table(measures):
    """The per-measurement table: one line each."""
    out = ["%-6s %-34s %8s %-9s %10s %10s %8s %8s %7s %-5s %s" % (
        "cudart", "row", "size", "metric", "no shim", "shim", "ratio", "speedup", "A/A",
        "bytes", "target")]
    for m in measures:
        t = m["target"]
        ttext = "stated" if t is None else "%s %s %g" % (t[0], t[1], t[2])
        flag = ""
        if t and t[0] == "ratio" and m["aa"] is not None and abs(m["aa"] - 1) > t[2] - 1:
            flag = " (A/A spread exceeds the margin)"
        out.append("%-6s %-34s %8s %-9s %10s %10s %8s %8s %7s %-5s %s: %s%s" % (
            m["cudart"], m["row"], _size(m["bytes"]), m["metric"],
            _num(m["median"]["noshim"]), _num(m["median"]["shim"]), _num(m["ratio"]),
            _num(m["speedup"], "%.1fx"), _num(m["aa"]), "ok" if m["bytes_ok"] else "FAIL",
            ttext, m["verdict"], flag))
    return out


def held_table(helds):
    out = ["%-6s %-34s %16s %16s %14s %12s %6s %s" % (
        "cudart", "row", "free no shim", "free shim", "shim-no shim", "A/A", "uffd", "")]
    for h in helds:
        out.append("%-6s %-34s %16s %16s %14s %12s %6s %s" % (
            h["cudart"], h["row"], _num(h["free_noshim"] and sum(h["free_noshim"]), "%d"),
            _num(h["free_shim"] and sum(h["free_shim"]), "%d"), _num(h["diff_bytes"], "%d"),
            _num(h["aa_diff_bytes"], "%d"), _num(h["uffd_ranges_shim"], "%d"), h["verdict"]))
    return out


def _groups(measures):
    """{(row, metric): measurements} over sizes and builds, and the first
    rounds of the loops by (cudart, row, bytes) (shown beside their steady
    state, never judged)."""
    groups, first_round = {}, {}
    for m in measures:
        if is_loop(m["row"]) and m["metric"] == "first_ms":
            first_round[(m["cudart"], m["row"], m["bytes"])] = m
        else:
            groups.setdefault((m["row"], m["metric"]), []).append(m)
    return groups, first_round


def _interval(ci, figure):
    if not ci:
        return ""
    lo, hi = (ci[0], ci[1]) if figure == "ratio" else (1 / ci[1], 1 / ci[0])
    return " [%s-%s]" % ((_num(lo), _num(hi)) if figure == "ratio" else
                         (_num(lo, "%.1fx"), _num(hi, "%.1fx")))


def summary(measures, helds, nlines):
    """The short table: per (row, metric), its verdict, the pooled ratio of
    its measurements (rows with a ratio target) and the worst one, each
    with its interval; then memory held, then the bytes."""
    groups, first_round = _groups(measures)
    out = []
    for (row, metric), ms in sorted(groups.items()):
        pool = pooled(ms)
        verdict = group_verdict(ms, pool)
        judged = [m for m in ms if m["target"]] or ms
        figure = judged[0]["target"][0] if judged[0]["target"] else (
            "speedup" if is_loop(row) else "ratio")
        have = [m for m in judged if m[figure] is not None]
        aas = [abs(m["aa"] - 1) for m in ms if m["aa"] is not None]
        if not have:
            out.append("%-5s %-34s %-9s no figure" % (verdict, row, metric))
            continue
        w = (max if figure == "ratio" else min)(have, key=lambda m: m[figure])
        t = w["target"]
        first = first_round.get((w["cudart"], row, w["bytes"]))
        aa_pool = pooled(ms, logs="aa_logs") if pool and pool[2] > 1 else None
        aa_text = ""
        if aa_pool:
            aa_text = ", pooled %s%s" % (_num(aa_pool[0]), _interval(aa_pool[1], "ratio"))
            if aa_pool[1] and not aa_pool[1][0] <= 1.0 <= aa_pool[1][1]:
                aa_text += " (A/A differs too: intervals too narrow here)"
        out.append("%-5s %-34s %-9s %sworst %s %s%s (%s %s)  A/A spread <= %s%s%s%s" % (
            verdict, row, metric,
            "pooled %s%s over %d, " % (_num(pool[0]), _interval(pool[1], "ratio"), pool[2])
            if pool and pool[2] > 1 else "",
            figure, _num(w[figure], "%.3f" if figure == "ratio" else "%.1fx"),
            _interval(w.get("ratio_ci"), figure), w["cudart"], _size(w["bytes"]),
            _num(max(aas) * 100 if aas else None, "%.1f %%"), aa_text,
            "  [target %s %s %g]" % t if t else "",
            "  round 1: %s" % _num(first["speedup"], "%.2fx") if first else ""))
    judged = [h for h in helds if h["verdict"] != "-"]
    bad = [h for h in judged if h["verdict"] != "ok"]
    if judged:
        out.append("%-5s held at exit, rows that never bounce: free device memory equal and "
                   "no userfaultfd range in %d of %d" % ("FAIL" if bad else "ok",
                                                          len(judged) - len(bad), len(judged)))
    else:
        out.append("-     held at exit: no row that never bounces ran")
    wrong = [m for m in measures if not m["bytes_ok"]]
    out.append("%-5s every byte equal to the source (%d result lines)" % (
        "ok" if not wrong else "FAIL", nlines))
    return out


def passed(measures, helds):
    """Every row ok as a whole (a measurement may be noise, none may fail),
    every held figure ok."""
    groups, _ = _groups(measures)
    return (bool(measures) and all(group_verdict(ms, pooled(ms)) in ("ok", "-")
                                   for ms in groups.values()) and
            all(m["bytes_ok"] for m in measures) and
            all(h["verdict"] in ("ok", "-") for h in helds))
