"""harm_stats: the statistics, targets and tables of harm_run.py, apart from
running anything, so that harm_run.py --self-test can check them on
synthetic results without a GPU.

Input: result lines (dicts) as harmbench and harm_torch.py print them, each
tagged by the driver with "arm" (noshim, shim, or noshim2: a second set of
processes without the shim, the A/A comparison) and "proc" (its process).
A measurement is keyed by (cudart, row, bytes, metric); its figure per arm
is the median over that arm's processes; ratio = shim / no shim, speedup =
no shim / shim, A/A = noshim2 / noshim.
"""
import statistics

ARMS = ("noshim", "shim", "noshim2")
METRICS = ("ms", "first_ms", "steady_ms", "mean_ms", "us")
MIB = 1 << 20
HARM_LIMIT = 1.03


def is_loop(row):
    """A loop that copies host bytes back to a GPU (where the shim may win)."""
    return row.startswith("bounce.") or row.startswith("torch.loop.")


def target(row, metric, nbytes):
    """(figure, op, limit) the measurement is judged by, or None (stated only).
    figure is "ratio" (shim / no shim) or "speedup" (no shim / shim)."""
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
            e = table.setdefault(key, {"values": {a: [] for a in ARMS}, "bytes_ok": True})
            e["values"][line["arm"]].append(float(line[metric]))
            e["bytes_ok"] &= bool(line.get("ok"))
    out = []
    for (cudart, row, nbytes, metric), e in sorted(table.items()):
        med = {a: median(e["values"][a]) for a in ARMS}
        a, b, a2 = med["noshim"], med["shim"], med["noshim2"]
        m = {"cudart": cudart, "row": row, "bytes": nbytes, "metric": metric,
             "values": e["values"], "median": med, "bytes_ok": e["bytes_ok"],
             "ratio": b / a if a and b else None, "speedup": a / b if a and b else None,
             "aa": a2 / a if a and a2 else None, "target": target(row, metric, nbytes)}
        m["verdict"] = judge(m)
        out.append(m)
    return out


def judge(m):
    """ok, FAIL, n/a (a figure missing) or - (no target, bytes fine)."""
    if not m["bytes_ok"]:
        return "FAIL"
    if m["target"] is None:
        return "-"
    figure, op, limit = m["target"]
    value = m[figure]
    if value is None:
        return "n/a"
    return "ok" if (value <= limit if op == "<=" else value >= limit) else "FAIL"


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


def summary(measures, helds, nlines):
    """The short table: per (row, metric) over sizes and cudarts, the worst
    figure against its target; then memory held, then the bytes."""
    groups, first_round = {}, {}
    for m in measures:
        if is_loop(m["row"]) and m["metric"] == "first_ms":  # beside its steady state
            first_round[(m["cudart"], m["row"], m["bytes"])] = m
        else:
            groups.setdefault((m["row"], m["metric"]), []).append(m)
    out = []
    for (row, metric), ms in sorted(groups.items()):
        verdicts = [m["verdict"] for m in ms]
        verdict = ("FAIL" if "FAIL" in verdicts else "n/a" if "n/a" in verdicts
                   else "ok" if "ok" in verdicts else "-")
        judged = [m for m in ms if m["target"]] or ms
        figure = judged[0]["target"][0] if judged[0]["target"] else (
            "speedup" if is_loop(row) else "ratio")
        have = [m for m in judged if m[figure] is not None]
        aas = [abs(m["aa"] - 1) for m in ms if m["aa"] is not None]
        if not have:
            out.append("%-4s %-34s %-9s no figure" % (verdict, row, metric))
            continue
        pick = max if figure == "ratio" else min
        w = pick(have, key=lambda m: m[figure])
        t = w["target"]
        first = first_round.get((w["cudart"], row, w["bytes"]))
        out.append("%-4s %-34s %-9s worst %-7s %8s (%s %s)  A/A spread <= %s%s%s" % (
            verdict, row, metric, figure, _num(w[figure], "%.3f" if figure == "ratio" else
                                               "%.1fx"), w["cudart"], _size(w["bytes"]),
            _num(max(aas) * 100 if aas else None, "%.1f %%"),
            "  [target %s %s %g]" % t if t else "",
            "  round 1: %s" % _num(first["speedup"], "%.2fx") if first else ""))
    judged = [h for h in helds if h["verdict"] != "-"]
    bad = [h for h in judged if h["verdict"] != "ok"]
    out.append("%-4s held at exit, rows that never bounce: free device memory equal and no "
               "userfaultfd range in %d of %d" % ("ok" if judged and not bad else "FAIL",
                                                   len(judged) - len(bad), len(judged)))
    wrong = [m for m in measures if not m["bytes_ok"]]
    out.append("%-4s every byte equal to the source (%d result lines)" % (
        "ok" if not wrong else "FAIL", nlines))
    return out


def passed(measures, helds):
    return (all(m["verdict"] in ("ok", "-") for m in measures) and measures and
            all(h["verdict"] in ("ok", "-") for h in helds))
