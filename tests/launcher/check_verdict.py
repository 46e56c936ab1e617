#!/usr/bin/env python3
"""check_verdict.py: the verdict's estimate from a run's own records,
recomputed from the run logs alone (verdict_test.sh runs the jobs).

  estimate LOGDIR REPORT.json NVLINKS SOURCE
                                        the JSON verdict: estimate true, its
                                        saving and share as the logs give them
                                        at NVLINKS links (0: PCIe, at the host
                                        link's rate) named by SOURCE (table,
                                        nvml, nvml-pcie or none)
  text LOGDIR REPORT.txt                the text verdict states the same saving
  html PAGE.html DOM.html LOGDIR        the page: a header naming every process
                                        of the logs, the verdict card first
  exit LOGDIR STDERR                    upgrade mode's exit line: the copies,
                                        bytes and time saved the logs give
  exit-nominal LOGDIR STDERR LINK       the same without CUPTI times: the
                                        nominal saving at LINK NVLinks as NVML
                                        names them, or none for LINK pix (a
                                        PCIe link) and none (no link known)

Exit status 0 when every check holds, 1 otherwise (each failure one line)."""
import glob
import json
import os
import re
import sys

NVLINK_GBPS = 20.0   # docs/LAUNCHER.md, "Estimates"
PCIE_GBPS = 10.0     # the same: the host link when the run timed no host copy
fails = []
# The reasons of the class "upgrade" (the shim put the copy on the peer
# link), from the log's vocabulary itself.
VOCAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "interpose",
                     "include", "log_vocab.def")
UPGRADE = set(re.findall(r'X\(\w+, "([a-z-]+)", UPGRADE\)', open(VOCAB).read()))


def check(ok, what):
    if not ok:
        fails.append(what)


def close(got, want, what, rel=1e-3):
    ok = got is not None and abs(got - want) <= rel * max(abs(want), 1.0)
    check(ok, "%s: %s, want %s" % (what, got, want))


def read_logs(logdir):
    """Per log: its header, decisions merged with their CUPTI records, the
    times it spans."""
    runs = []
    for path in sorted(glob.glob(os.path.join(logdir, "*.jsonl"))):
        lines = [json.loads(l) for l in open(path) if l.strip()]
        header = lines[0]
        copies, times = {}, [header["clock_ns"]]
        for o in lines:
            t = o.get("type")
            if t in ("decision", "event", "footer") and "t_ns" in o:
                times.append(o["t_ns"])
            if t == "decision":
                d = dict(o, recs=[])
                if "activity" in o:
                    d["recs"].append(o["activity"])
                copies[o["id"]] = d
            elif t == "activity" and o.get("decision") in copies:
                copies[o["decision"]]["recs"].append(o)
        # The process's start: clock ticks since boot, the header's
        # process identity (boot id/pid/ticks), when before the first record.
        ticks = int(header.get("process", "x/0/0").split("/")[2] or 0)
        start = ticks * (10**9 // os.sysconf("SC_CLK_TCK"))
        first = min(times + ([start] if start > 0 else []))
        runs.append({"header": header, "copies": list(copies.values()),
                     "first": first, "last": max(times)})
    return runs


def span(d):
    """(kinds, ns) of a copy's CUPTI records: first start to last end."""
    recs = [r for r in d["recs"] if "start_ns" in r and "end_ns" in r]
    kinds = set()
    for r in d["recs"]:
        kinds.update(r.get("kind", "").split("+"))
    if not recs:
        return kinds, None
    return kinds, max(r["end_ns"] for r in recs) - min(r["start_ns"] for r in recs)


def host_rate(runs):
    """The host link's rate the estimate uses: the slower direction's best."""
    best = {"HTOD": 0.0, "DTOH": 0.0}
    for run in runs:
        for d in run["copies"]:
            kinds, ns = span(d)
            src, dst = d["src"]["dev"], d["dst"]["dev"]
            if not ns or d["bytes"] <= 0:
                continue
            if src == -1 and dst >= 0 and kinds == {"HTOD"}:
                best["HTOD"] = max(best["HTOD"], d["bytes"] / ns)
            if src >= 0 and dst == -1 and kinds == {"DTOH"}:
                best["DTOH"] = max(best["DTOH"], d["bytes"] / ns)
    rates = [r for r in best.values() if r > 0]
    return min(rates) if rates else 0.0


def wall(runs):
    hosts = {}
    for run in runs:
        h = hosts.setdefault(run["header"].get("host"), [run["first"], run["last"]])
        h[0], h[1] = min(h[0], run["first"]), max(h[1], run["last"])
    return max(b - a for a, b in hosts.values())


def want_saving(runs, nvlinks):
    """The staged copies' time (their CUPTI time, at least their bytes at
    the host link's rate) against the peer rate of the link."""
    host = host_rate(runs)
    check(host > 0, "the run timed no host copy")
    staged_ns = staged_bytes = 0
    for run in runs:
        for d in run["copies"]:
            kinds, ns = span(d)
            if d["src"]["dev"] >= 0 and d["dst"]["dev"] >= 0 and kinds == {"DTOH", "HTOD"}:
                staged_ns += ns
                staged_bytes += d["bytes"]
    check(staged_bytes > 0, "no staged copy in the logs")
    peer = NVLINK_GBPS * nvlinks if nvlinks > 0 else host
    staged = max(staged_ns, staged_bytes / host) if host else staged_ns
    return max(0.0, staged - staged_bytes / peer), host


BASIS = {"table": "the link the bandwidth table names (NVLink x%s)",
         "nvml": "the link NVML names (NVLink x%s)",
         "nvml-pcie": "the link NVML names (PIX)",
         "none": "no link type known"}


def check_estimate(logdir, report, nvlinks, source):
    runs = read_logs(logdir)
    v = json.load(open(report))["verdict"]
    saving, _ = want_saving(runs, int(nvlinks))
    check(v.get("estimate") is True, "verdict.estimate %s" % v.get("estimate"))
    check("estimate from this run's records" in (v.get("basis") or ""),
          "basis %s" % v.get("basis"))
    word = BASIS[source].replace("%s", nvlinks)
    check(word in (v.get("basis") or ""), "basis lacks '%s': %s" % (word, v.get("basis")))
    close(v.get("saving_ns"), saving, "saving_ns")
    close(v.get("wall_ns"), wall(runs), "wall_ns")
    if v.get("wall_ns"):
        close(v.get("share"), saving / wall(runs), "share", rel=1e-2)
    if int(nvlinks):
        check(saving > 0, "the recomputed saving is %s: the case proves nothing" % saving)


NS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}


def ns_of(text):
    m = re.match(r"([0-9.]+) (ns|µs|ms|s)$", text)
    return float(m.group(1)) * NS[m.group(2)] if m else None


def check_text(logdir, report):
    text = open(report, encoding="utf-8").read()
    v = json.load(open(report.replace(".txt", ".json")))["verdict"]
    m = re.search(r"^  P2P would save an estimated ([0-9.]+ (?:ns|µs|ms|s)), ([0-9.]+)% of "
                  r"the run's ([0-9.]+ (?:ns|µs|ms|s)) wall time$", text, re.M)
    check(m is not None, "text verdict lacks the estimated saving: %s" % text[:900])
    if m:
        close(ns_of(m.group(1)), v["saving_ns"], "text saving", rel=0.01)
        close(float(m.group(2)), 100 * v["share"], "text share", rel=0.05)
    check(re.search(r"^  basis: estimate from this run's records", text, re.M) is not None,
          "text verdict lacks the basis")


def check_html(page, dom, logdir):
    runs = read_logs(logdir)
    src, html = open(page, encoding="utf-8").read(), open(dom, encoding="utf-8").read()
    head = re.search(r'<header id="job">(.*?)</header>', html, re.S)
    check(head is not None, "no header in the rendered page")
    procs = re.findall(r'<li id="job-proc-\d+"><b>rank (\d+)</b> · pid (\d+)',
                       head.group(1) if head else "")
    want = sorted((r["header"]["rank"], r["header"]["pid"]) for r in runs)
    check(sorted((int(r), int(p)) for r, p in procs) == want,
          "header names %s, want (rank, pid) %s" % (procs, want))
    card = re.search(r'<section id="verdict" class="card">(.*?)</section>', html, re.S)
    check(card is not None, "no verdict card")
    if card:
        c = card.group(1)
        check("<pre>" not in c, "the card holds terminal text")
        check(re.search(r'id="saving">[0-9.]+ (ns|µs|ms|s)<', c) is not None, "no saving")
        check(re.search(r'id="share">[0-9.]+%<', c) is not None, "no share")
        check('id="estimate">estimate<' in c, "not labelled an estimate")
        check('id="basis">Basis: estimate from this run' in c, "no basis")
    check(0 <= html.find('id="job"') < html.find('id="verdict"') < html.find('id="pairs"'),
          "order: header, card, evidence")
    check(src.count('class="card"') == 1, "one card in the page")


def exit_line(stderr):
    lines = [l for l in open(stderr, encoding="utf-8").read().splitlines()
             if l.startswith("p2pshim: upgraded")]
    check(len(lines) == 1, "exit lines %s" % lines)
    return lines[0] if lines else ""


def check_exit(logdir, stderr):
    runs = read_logs(logdir)
    up = [d for r in runs for d in r["copies"]
          if d.get("reason") in UPGRADE and span(d)[0] == {"PTOP"}]
    line = exit_line(stderr)
    if not line:
        return
    n, nbytes = len(up), sum(d["bytes"] for d in up)
    check(n > 0 and UPGRADE, "no upgraded copy in the logs (reasons %s)" % UPGRADE)
    m = re.match(r"p2pshim: upgraded (\d+) cop(?:y|ies) \(([^)]*)\) onto the peer link; "
                 r"estimated time saved: ([0-9.]+ (?:ns|µs|ms|s)) \(([0-9.]+)% of ", line)
    check(m is not None, "exit line: %s" % line)
    if not m:
        return
    check(int(m.group(1)) == n, "exit line copies %s, want %d" % (m.group(1), n))
    check(m.group(2) == "%.1f MiB" % (nbytes / 2**20), "exit line bytes %s, want %d B"
          % (m.group(2), nbytes))
    want = nbytes / host_rate(runs) - sum(span(d)[1] for d in up)
    close(ns_of(m.group(3)), max(want, 0), "exit line saving", rel=0.01)
    close(float(m.group(4)), 100 * max(want, 0) / wall(runs), "exit line share", rel=0.05)


def check_exit_nominal(logdir, stderr, link):
    """The nominal figure: each upgraded copy's bytes at the host link's
    rate (PCIe's nominal one when no host copy was timed) against the
    same bytes at the link's NVLink rate; no figure for a PCIe or unknown
    link, each said in words."""
    runs = read_logs(logdir)
    up = [d for r in runs for d in r["copies"]
          if d.get("reason") in UPGRADE and span(d)[0] <= {"PTOP"} and
          d["src"]["dev"] >= 0 and d["dst"]["dev"] >= 0 and d["src"]["dev"] != d["dst"]["dev"]]
    n, nbytes = len(up), sum(d["bytes"] for d in up)
    check(n > 0, "no upgraded copy in the logs")
    line = exit_line(stderr)
    head = "p2pshim: upgraded %d cop%s (%.1f MiB) onto the peer link; " % (
        n, "y" if n == 1 else "ies", nbytes / 2**20)
    check(line.startswith(head), "exit line %s, want it to start %s" % (line, head))
    rest = line[len(head):]
    if link == "none":
        check(rest.startswith("time saved: not estimated (no link known for GPU 0 -> GPU 1: "
                              "no NVML or bandwidth table names it"), "no-link line: %s" % line)
        check(rest.endswith("CUPTI off, upgrade mode's default: --set CUPTI=1 times the "
                            "copies)"), "no-link line lacks the CUPTI hint: %s" % line)
        return
    if link == "pix":
        check(rest == "time saved: not estimated (the link of GPU 0 -> GPU 1, PIX as NVML "
                      "names it, is not known to be faster than the staged path)",
              "PCIe line: %s" % line)
        return
    host = host_rate(runs) or PCIE_GBPS
    peer = NVLINK_GBPS * int(link)
    want = nbytes / host - nbytes / peer
    check(want > 0, "the recomputed saving is %s: the case proves nothing" % want)
    m = re.match(r"nominal time saved: ([0-9.]+ (?:ns|µs|ms|s)) \(([0-9.]+)% of [^)]* wall "
                 r"time\); nominal estimate, not measured: (.*)$", rest)
    check(m is not None, "nominal line: %s" % line)
    if not m:
        return
    close(ns_of(m.group(1)), want, "nominal saving", rel=0.01)
    close(float(m.group(2)), 100 * want / wall(runs), "nominal share", rel=0.05)
    staged = ("staged at PCIe's nominal %.1f GB/s (no host copy timed)" % PCIE_GBPS
              if not host_rate(runs) else "staged at the host link's %.1f GB/s as timed" % host)
    basis = "%s against the peer link's %.1f GB/s (NVLink x%s as NVML names it, %.0f GB/s per " \
            "NVLink)" % (staged, peer, link, NVLINK_GBPS)
    check(m.group(3).startswith(basis), "basis %s, want %s" % (m.group(3), basis))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"estimate": check_estimate, "text": check_text, "html": check_html,
     "exit": check_exit, "exit-nominal": check_exit_nominal}[cmd](*args)
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
