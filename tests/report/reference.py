"""Reference figures of a p2pshim run log (docs/LOG_FORMAT.md, versions 1 and 2),
computed independently of the C report from the same rules, with nothing
but the standard library: the tests compare the report against these.

The rules (the report's contract):
- A decision is cross-GPU when src.dev and dst.dev are ordinals >= 0 that
  differ and its reason is not host-memory, same-device or unknown-pointer;
  the rest is "local".
- Activity lines join the decision with their id that came before them in
  the same process image (a header starts one); an embedded activity counts
  as one record. Kinds merge as a set: {PTOP} is peer, {DTOH, HTOD} staged,
  any other set "other". Time is the last end minus the first start (or the
  embedded duration_ns when it has no start/end).
- Without activity: would-upgrade (once would-enable) is staged; enable-then-pass, or reasons
  upgraded, shim-access, app-enabled-peer, peer; reasons pair-excluded,
  below-min-bytes, cannot-peer, enable-failed, staged; else other.
- A decision without bytes takes the largest bytes of its records.
- Savings candidates: CUPTI-staged copies, and would-upgrade copies without
  activity. saved = staged time (bytes / topo staged_gbps when the table
  has it, since CUPTI's staged records cover one staging chunk; else
  CUPTI's span)
  - bytes / peer GB/s (topo's, unless it says can_peer false; else the
  pair's best PTOP GB/s in the log; else none).
"""
import json

LOCAL_REASONS = {"host-memory", "same-device", "unknown-pointer"}
PEER_REASONS = {"upgraded", "shim-access", "app-enabled-peer"}
# Older logs name observe mode's would-upgrade would-enable.
ACTION_ALIASES = {"would-enable": "would-upgrade"}
STAGED_REASONS = {"pair-excluded", "below-min-bytes", "cannot-peer", "enable-failed",
                  "observe-would-upgrade"}


class Malformed(Exception):
    pass


def read_lines(path):
    """[(lineno, obj)], torn: a last line without newline that is not JSON
    is dropped (the writer was stopped mid-line)."""
    with open(path, "rb") as f:
        raw = f.read().split(b"\n")
    out, torn = [], False
    for i, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except ValueError:
            if i == len(raw) and out:
                torn = True
                break
            raise Malformed("%s:%d" % (path, i))
        if not isinstance(obj, dict):
            raise Malformed("%s:%d" % (path, i))
        if not out and obj.get("type") != "header":
            raise Malformed("%s:%d" % (path, i))
        out.append((i, obj))
    if not out:
        raise Malformed(path)
    return out, torn


def num(o, k):
    v = o.get(k)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v)


def dev(o, k):
    v = num(o, k) if isinstance(o, dict) else None
    return v if v is not None and -1 <= v <= (1 << 24) else None


def kinds_of(s):
    known = {"PTOP", "DTOH", "HTOD", "DTOD"}
    return {k if k in known else "OTHER" for k in (s or "").split("+") if k} if s else {"OTHER"}


def copies(lines):
    """Each decision with its merged activity, in the order the report
    finishes them does not matter here: a list of dicts."""
    out, open_ = [], {}
    seg = 0
    for _, o in lines:
        t = o.get("type")
        if t == "header":
            seg += 1
            open_ = {}
        elif t == "decision":
            d = {"seg": seg, "id": num(o, "id"), "t": num(o, "t_ns"),
                 "tid": num(o, "tid"), "bytes": num(o, "bytes"),
                 "src": dev(o.get("src"), "dev"), "dst": dev(o.get("dst"), "dev"),
                 "action": ACTION_ALIASES.get(o.get("action"), o.get("action"))
                           if isinstance(o.get("action"), str) else None,
                 "reason": o.get("reason") if isinstance(o.get("reason"), str) else None,
                 "kinds": set(), "start": None, "end": None, "dur": None, "rec_bytes": None}
            a = o.get("activity")
            if isinstance(a, dict):
                d["kinds"] |= kinds_of(a.get("kind"))
                s, e = num(a, "start_ns"), num(a, "end_ns")
                if s is not None and e is not None and e >= s:
                    d["start"], d["end"] = s, e
                d["dur"] = num(a, "duration_ns")
            out.append(d)
            if d["id"] is not None:
                open_[d["id"]] = d
        elif t == "activity":
            d = open_.get(num(o, "decision"))
            if d is None:
                continue
            d["kinds"] |= kinds_of(o.get("kind"))
            s, e = num(o, "start_ns"), num(o, "end_ns")
            if s is not None and e is not None and e >= s:
                d["start"] = s if d["start"] is None else min(d["start"], s)
                d["end"] = e if d["end"] is None else max(d["end"], e)
            b = num(o, "bytes")
            if b is not None and b >= 0:
                d["rec_bytes"] = b if d["rec_bytes"] is None else max(d["rec_bytes"], b)
    for d in out:
        if d["bytes"] is None or d["bytes"] < 0:
            d["bytes"] = d["rec_bytes"] if d["rec_bytes"] is not None else 0
        d["ns"] = d["end"] - d["start"] if d["start"] is not None else d["dur"]
    return out


def path_of(d):
    if d["kinds"]:
        if d["kinds"] == {"PTOP"}:
            return "peer"
        if d["kinds"] == {"DTOH", "HTOD"}:
            return "staged"
        return "other"
    if d["action"] == "would-upgrade":
        return "staged"
    if d["action"] == "enable-then-pass" or d["reason"] in PEER_REASONS:
        return "peer"
    if d["reason"] in STAGED_REASONS:
        return "staged"
    return "other"


def new_pair():
    p = {"copies": 0, "bytes": 0, "peer": 0, "staged": 0, "other": 0,
         "peer_bytes": 0, "staged_bytes": 0, "other_bytes": 0, "by_activity": 0,
         "act": {"peer": [0, 0, 0], "staged": [0, 0, 0]}, "best_ptop": 0.0,
         "cand_meas": [0, 0, 0], "cand_unmeas": [0, 0], "reasons": {}}
    return p


def load_topo(path):
    if not path:
        return {}
    with open(path) as f:
        t = json.load(f)
    return {(l["src"], l["dst"]): l for l in t.get("links", [])}


def last_run(lines):
    """The lines of the file's last run (LOG_FORMAT.md "Runs"): a version 2
    header of a process not yet in the run, nor a child of one, starts a
    new run; version 1 headers (no "process") continue it."""
    start, procs, runs = 0, [], 0
    for i, (_, o) in enumerate(lines):
        if o.get("type") != "header":
            continue
        proc = o.get("process")
        if runs == 0:
            runs = 1
        if not isinstance(proc, str) or not proc:
            continue
        same = any(p == proc for p, _ in procs)
        child = any(pid == o.get("ppid") for _, pid in procs)
        if same:
            continue
        procs.append((proc, o.get("pid")))
        if not child and len(procs) > 1:
            start, procs, runs = i, [procs[-1]], runs + 1
    return lines[start:], runs, max(len(procs), 1)


def image_footers(lines):
    """Each process image's last footer: an image's footers count it so far."""
    last, seg = {}, 0
    for _, o in lines:
        if o.get("type") == "header":
            seg += 1
        elif o.get("type") == "footer":
            last[seg] = o
    return list(last.values())


def compute(log_path, topo_path=None):
    lines, torn = read_lines(log_path)
    lines, runs, processes = last_run(lines)
    topo = load_topo(topo_path)
    header = lines[0][1]
    footers = image_footers(lines)
    headers = [o for _, o in lines if o.get("type") == "header"]
    last_header = max(i for i, (_, o) in enumerate(lines) if o.get("type") == "header")
    cut = not any(o.get("type") == "footer" for _, o in lines[last_header:])
    cs = copies(lines)
    pairs, local, actions = {}, new_pair(), {}
    for d in cs:
        actions[d["action"] or "(absent)"] = actions.get(d["action"] or "(absent)", 0) + 1
        cross = (d["src"] is not None and d["dst"] is not None and d["src"] >= 0
                 and d["dst"] >= 0 and d["src"] != d["dst"] and d["reason"] not in LOCAL_REASONS)
        p = pairs.setdefault((d["src"], d["dst"]), new_pair()) if cross else local
        path = path_of(d)
        p["copies"] += 1
        p["bytes"] += d["bytes"]
        p[path] += 1
        p[path + "_bytes"] += d["bytes"]
        p["by_activity"] += bool(d["kinds"])
        r = d["reason"] or "(absent)"
        p["reasons"][r] = p["reasons"].get(r, 0) + 1
        if not cross:
            continue
        ns = d["ns"]
        link = topo.get((d["src"], d["dst"]))
        if d["kinds"] and path == "staged" and link and (link.get("staged_gbps") or 0) > 0:
            ns = int(d["bytes"] / link["staged_gbps"])  # CUPTI times one chunk
        if d["kinds"] and ns is not None and ns > 0 and path in ("peer", "staged"):
            a = p["act"][path]
            a[0] += 1
            a[1] += d["bytes"]
            a[2] += ns
            if path == "peer":
                p["best_ptop"] = max(p["best_ptop"], d["bytes"] / ns)
        staged = bool(d["kinds"]) and path == "staged"
        if staged and ns is not None and ns > 0:
            m = p["cand_meas"]
            m[0] += 1
            m[1] += d["bytes"]
            m[2] += ns
        elif staged or (not d["kinds"] and d["action"] == "would-upgrade"):
            p["cand_unmeas"][0] += 1
            p["cand_unmeas"][1] += d["bytes"]
    for key, p in pairs.items():
        estimate(p, topo.get(key))
    return {"header": header, "segments": len(headers), "footer": bool(footers),
            "runs": runs, "processes": processes,
            "records": sum(f.get("records", 0) for f in footers),
            "cut_short": cut, "torn": torn,
            "dropped": sum(f.get("dropped", 0) for f in footers),
            "decisions": sum(1 for _, o in lines if o.get("type") == "decision"),
            "activity_lines": sum(1 for _, o in lines if o.get("type") == "activity"),
            "pairs": pairs, "local": local, "actions": actions,
            "events": [o for _, o in lines if o.get("type") == "event"]}


def estimate(p, link):
    cand = p["cand_meas"][0] + p["cand_unmeas"][0]
    p["candidates"], p["estimated"], p["unestimated"], p["saved_ns"] = cand, 0, 0, None
    peer = 0.0
    if link and link.get("can_peer") is False:
        peer = 0.0
    elif link and link.get("peer_gbps", 0) > 0:
        peer = link["peer_gbps"]
    else:
        peer = p["best_ptop"]
    if peer <= 0:
        p["unestimated"] = cand
        return
    staged_gbps = link.get("staged_gbps", 0) if link else 0
    if staged_gbps and staged_gbps > 0:
        # the table's staged GB/s times every candidate (CUPTI's staged
        # records cover one staging chunk, not the copy)
        p["cand_unmeas"][0] += p["cand_meas"][0]
        p["cand_unmeas"][1] += p["cand_meas"][1]
        p["cand_meas"] = [0, 0, 0]
    staged_ns, peer_bytes, n = p["cand_meas"][2], p["cand_meas"][1], p["cand_meas"][0]
    if p["cand_unmeas"][0] and staged_gbps > 0:
        staged_ns += p["cand_unmeas"][1] / staged_gbps
        peer_bytes += p["cand_unmeas"][1]
        n += p["cand_unmeas"][0]
    else:
        p["unestimated"] = p["cand_unmeas"][0]
    p["estimated"] = n
    if n:
        p["saved_ns"] = staged_ns - peer_bytes / peer


def gbps(a):
    return a[1] / a[2] if a[2] > 0 else None


def totals(ref):
    t = {"copies": 0, "bytes": 0, "peer": 0, "staged": 0, "other": 0,
         "candidates": 0, "estimated": 0, "unestimated": 0, "saved_ns": 0.0}
    act = {"peer": [0, 0, 0], "staged": [0, 0, 0]}
    for p in ref["pairs"].values():
        for k in ("copies", "bytes", "peer", "staged", "other", "candidates",
                  "estimated", "unestimated"):
            t[k] += p[k]
        t["saved_ns"] += p["saved_ns"] or 0.0
        for k in act:
            for i in range(3):
                act[k][i] += p["act"][k][i]
    t["peer_gbps"], t["staged_gbps"] = gbps(act["peer"]), gbps(act["staged"])
    return t


def fmt_ns(ns):
    """The report's human time unit."""
    a = abs(ns)
    if a < 1e3:
        return "%.0f ns" % ns
    if a < 1e6:
        return "%.1f \u00b5s" % (ns / 1e3)
    if a < 1e9:
        return "%.1f ms" % (ns / 1e6)
    return "%.2f s" % (ns / 1e9)


def fmt_bytes(b):
    if -1024 < b < 1024:
        return "%d B" % b
    v, u = b / 1024, 0
    while u < 4 and abs(v) >= 1024:
        v /= 1024
        u += 1
    return "%.1f %s" % (v, ["KiB", "MiB", "GiB", "TiB", "PiB"][u])


def trace_expect(log_path):
    """What the trace must hold: decision slices per host thread, activity
    slices per (GPU, stream track name), and the expected ts of each, keyed
    by decision id and kind: {"host": {tid: [(id, ts)]}, "gpu": {(dev,
    stream_name): [(id, kind, ts, dur)]}, "flows": n}. Times are on the
    shim's clock (CUPTI's moved by each header's clock pair), from the
    earliest time the log holds: none is negative."""
    lines, _ = read_lines(log_path)
    host, gpu, flows = {}, {}, 0
    clock = cupti = 0
    seen = {}
    times = []
    for _, o in lines:
        t = o.get("type")
        if t == "header":
            clock, cupti = num(o, "clock_ns") or 0, num(o, "cupti_ns") or 0
            if num(o, "clock_ns") is not None and num(o, "cupti_ns") is not None:
                times.append(clock)
            seen = {}
        elif t == "decision":
            tns = num(o, "t_ns")
            if tns is None:
                continue
            times.append(tns)
            host.setdefault(num(o, "tid") or 0, []).append((num(o, "id"), tns))
            seen[num(o, "id")] = True
            a = o.get("activity")
            if isinstance(a, dict) and num(a, "start_ns") is not None:
                src, dst = dev(o.get("src"), "dev"), dev(o.get("dst"), "dev")
                d = src if src is not None and src >= 0 else dst
                key = (d, "stream " + (o.get("stream") or "?"))
                start = num(a, "start_ns") - cupti + clock
                times.append(start)
                gpu.setdefault(key, []).append(
                    (num(o, "id"), a.get("kind"), start,
                     (num(a, "end_ns") - num(a, "start_ns")) / 1e3))
                flows += 1
        elif t == "activity":
            if num(o, "start_ns") is None or num(o, "end_ns") is None:
                continue
            s, dd = dev(o, "src_dev"), dev(o, "dst_dev")
            d = s if s is not None and s >= 0 else dd
            sid = num(o, "stream_id")
            key = (d, "stream %s" % (sid if sid is not None else "?"))
            start = num(o, "start_ns") - cupti + clock
            times.append(start)
            gpu.setdefault(key, []).append(
                (num(o, "decision"), o.get("kind"), start,
                 (num(o, "end_ns") - num(o, "start_ns")) / 1e3))
            flows += num(o, "decision") in seen
    base = min(times) if times else 0
    host = {tid: [(i, (ns - base) / 1e3) for i, ns in v] for tid, v in host.items()}
    gpu = {k: [(i, kind, (ns - base) / 1e3, dur) for i, kind, ns, dur in v]
           for k, v in gpu.items()}
    return {"host": host, "gpu": gpu, "flows": flows}
