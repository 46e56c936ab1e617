"""Tests of `p2pshim report` against reference.py, one check per call:
    check_report.py DRIVER FIXTURES CHECK
DRIVER runs report_main (tests/report/report_driver.c, or `p2pshim report`
through a wrapper); CHECK is text, trace, html, cli, chromium or extremes. Exit 0 passes, 77 skipped
(chromium only, when it is not installed)."""
import html.parser
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import reference

DRIVER, FIX, CHECK = sys.argv[1], sys.argv[2], sys.argv[3]
TOPO = os.path.join(FIX, "topo_4gpu.json")
# (fixture, topo or None): every log that renders, with and without a table
CASES = [(f, t) for f in ("upgrade_4gpu", "observe_staged", "observe_nocupti",
                          "cut_short", "exec", "reused") for t in (TOPO, None)]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def close(a, b, what):
    ok = (a is None and b is None) or (
        a is not None and b is not None and math.isclose(a, b, rel_tol=1e-7, abs_tol=1e-6))
    check(ok, "%s: report %r, reference %r" % (what, a, b))


def run(*args, env=None):
    e = dict(os.environ, P2PSHIM_TOPO_FILE=os.path.join(FIX, "no-such-topo.json"))
    e.update(env or {})
    return subprocess.run([DRIVER, *args], capture_output=True, text=True, env=e,
                          timeout=60)


def render(fixture, topo, fmt):
    args = ["--format", fmt, os.path.join(FIX, fixture + ".jsonl")]
    if topo:
        args += ["--topo", topo]
    r = run(*args)
    check(r.returncode == 0, "%s %s: exit %d: %s" % (fixture, fmt, r.returncode, r.stderr))
    return r.stdout


def data_part(text):
    return [json.loads(l[2:]) for l in text.splitlines() if l.startswith("@ ")]


def check_text():
    for fixture, topo in CASES:
        name = "%s%s" % (fixture, " +topo" if topo else "")
        ref = reference.compute(os.path.join(FIX, fixture + ".jsonl"), topo)
        recs = data_part(render(fixture, topo, "text"))
        run_ = [r for r in recs if r["record"] == "run"][0]
        check(run_["mode"] == ref["header"].get("mode"), name + ": mode")
        check(run_["cupti"] == ref["header"].get("cupti"), name + ": cupti")
        check(run_["cut_short"] == ref["cut_short"], name + ": cut_short")
        check(run_["torn_tail"] == ref["torn"], name + ": torn tail")
        check(run_["footer"] == ref["footer"], name + ": footer")
        check(run_["dropped"] == ref["dropped"], name + ": dropped")
        check(run_["segments"] == ref["segments"], name + ": segments")
        check(run_["runs"] == ref["runs"], name + ": runs")
        check(run_["processes"] == ref["processes"], name + ": processes")
        check(run_["records"] == ref["records"], "%s: records %s, reference %s" % (
            name, run_["records"], ref["records"]))
        check(run_["decisions"] == ref["decisions"], name + ": decisions")
        pairs = {(r["src"], r["dst"]): r for r in recs if r["record"] == "pair"}
        check(set(pairs) == set(ref["pairs"]), "%s: pairs %s vs %s" % (
            name, sorted(pairs), sorted(ref["pairs"])))
        for key, p in ref["pairs"].items():
            r = pairs.get(key, {})
            for k in ("copies", "bytes", "peer", "staged", "other", "peer_bytes",
                      "staged_bytes", "by_activity", "candidates", "estimated",
                      "unestimated"):
                check(r.get(k) == p[k], "%s %s %s: report %r, reference %r" % (
                    name, key, k, r.get(k), p[k]))
            close(r.get("peer_gbps"), reference.gbps(p["act"]["peer"]), "%s %s peer GB/s" % (name, key))
            close(r.get("staged_gbps"), reference.gbps(p["act"]["staged"]), "%s %s staged GB/s" % (name, key))
            close(r.get("saved_ns"), p["saved_ns"], "%s %s saved" % (name, key))
            reasons = {x["reason"]: x["count"] for x in recs if x["record"] == "reason"
                       and (x["src"], x["dst"]) == key}
            check(reasons == p["reasons"], "%s %s reasons %s vs %s" % (name, key, reasons, p["reasons"]))
        tot = [r for r in recs if r["record"] == "total"][0]
        t = reference.totals(ref)
        for k in ("copies", "bytes", "peer", "staged", "other", "candidates",
                  "estimated", "unestimated"):
            check(tot[k] == t[k], "%s total %s: %r vs %r" % (name, k, tot[k], t[k]))
        close(tot["peer_gbps"], t["peer_gbps"], name + " total peer GB/s")
        close(tot["saved_ns"] or 0.0, t["saved_ns"], name + " total saved")
        loc = [r for r in recs if r["record"] == "local"][0]
        check(loc["copies"] == ref["local"]["copies"] and loc["bytes"] == ref["local"]["bytes"],
              name + ": local row")
        acts = {x["action"]: x["count"] for x in recs if x["record"] == "action"}
        check(acts == ref["actions"], "%s: actions %s vs %s" % (name, acts, ref["actions"]))
    # What the fixtures were written to show, beyond agreeing with the reference.
    ref = reference.compute(os.path.join(FIX, "upgrade_4gpu.jsonl"), TOPO)
    check(ref["pairs"][(0, 3)]["unestimated"] == 2, "0->3: topo says cannot peer")
    check(ref["pairs"][(1, 2)]["estimated"] == 3, "1->2: estimate from the log's PTOP")
    check(ref["pairs"][(0, 1)]["bytes"] == 7 * 256 * 2**20 - 128 * 2**20,
          "bytes taken from the records when the decision has none")
    out = render("cut_short", None, "text")
    check("cut short" in out, "cut_short: the note on the missing footer")
    # A reused path: the last run only (4 decisions, each image's last
    # footer), its exec'd image and the child sharing the path named as such.
    out = render("reused", None, "text")
    run_ = [r for r in data_part(out) if r["record"] == "run"][0]
    check((run_["decisions"], run_["records"], run_["dropped"], run_["runs"], run_["segments"],
           run_["pid"]) == (4, 4, 1, 2, 3, 200), "reused: run record %s" % run_)
    check("holds 2 runs" in out and "2 process images (exec)" in out
          and "2 processes (forked children" in out, "reused: the notes")
    check("program   /opt/app/second (pid 200)" in out, "reused: the run's first header")


def check_extremes():
    """Figures past 64 bits stop at the limit, with a note, in every format
    (a sanitizer build of an unchecked report stops on the overflow)."""
    limit = 2**63 - 1
    for topo in (TOPO, None):
        out = render("extreme", topo, "text")
        recs = data_part(out)
        run_ = ([r for r in recs if r["record"] == "run"] or [{}])[0]
        check(run_.get("saturated") is True and run_.get("records") == limit
              and run_.get("dropped") == limit, "extreme: run record %s" % run_)
        pair = {(r["src"], r["dst"]): r for r in recs if r["record"] == "pair"}
        check(pair.get((0, 1), {}).get("bytes") == limit
              and pair.get((0, 1), {}).get("peer_bytes") == limit,
              "extreme: 0->1 bytes %s" % pair.get((0, 1)))
        tot = ([r for r in recs if r["record"] == "total"] or [{}])[0]
        loc = ([r for r in recs if r["record"] == "local"] or [{}])[0]
        check(tot.get("bytes") == limit and loc.get("bytes") == limit,
              "extreme: total %s, local %s" % (tot.get("bytes"), loc.get("bytes")))
        ev = ([r for r in recs if r["record"] == "events"] or [{}])[0]
        bo = ([r for r in recs if r["record"] == "bounces"] or [{}])[0]
        check(ev.get("enable_ns") == limit and bo.get("bytes") == limit,
              "extreme: events %s, bounces %s" % (ev, bo))
        negative = [v for r in recs for k, v in r.items()
                    if isinstance(v, int) and not isinstance(v, bool) and v < 0
                    and k not in ("src", "dst")]
        check(not negative, "extreme: negative figures %s" % negative)
        check("64-bit limit" in out, "extreme: the text note")
        page = render("extreme", topo, "html")
        check('id="saturated"' in page, "extreme: the page's note")
    doc = render("extreme", None, "trace")
    try:
        other = json.loads(doc)["otherData"]
        check("64-bit limit" in other.get("note", ""), "extreme: the trace's note")
    except ValueError as e:
        check(False, "extreme: trace is not JSON: %s" % e)
    ref = reference.compute(os.path.join(FIX, "observe_nocupti.jsonl"), None)
    check(ref["pairs"][(0, 1)]["unestimated"] == 5, "observe without CUPTI or topo: no estimate")


def check_trace():
    for fixture in ("upgrade_4gpu", "observe_staged", "cut_short", "exec"):
        out = render(fixture, None, "trace")
        try:
            doc = json.loads(out)
        except ValueError as e:
            check(False, "%s: trace is not JSON: %s" % (fixture, e))
            continue
        ev = doc["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "process_name"}
        threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
                   if e["ph"] == "M" and e["name"] == "thread_name"}
        exp = reference.trace_expect(os.path.join(FIX, fixture + ".jsonl"))
        host = {}
        gpu = {}
        for e in ev:
            if e["ph"] != "X":
                continue
            pname, tname = procs.get(e["pid"]), threads.get((e["pid"], e["tid"]))
            if e["cat"] == "decision":
                check(pname == "host", "%s: decision on %s" % (fixture, pname))
                host.setdefault(e["tid"], []).append((e["args"].get("decision"), e["ts"]))
            else:
                d = int(pname.split()[1]) if pname and not pname.startswith("GPU ?") else None
                gpu.setdefault((d, tname), []).append(
                    (e["args"].get("decision"), e["name"], e["ts"], e["dur"]))
        check(sorted(host) == sorted(exp["host"]), "%s: host tracks %s vs %s" % (
            fixture, sorted(host), sorted(exp["host"])))
        for tid, want in exp["host"].items():
            got = host.get(tid, [])
            check(len(got) == len(want), "%s: thread %s: %d decisions, want %d" % (
                fixture, tid, len(got), len(want)))
            for (gi, gts), (wi, wts) in zip(sorted(got), sorted(want)):
                check(gi == wi and math.isclose(gts, wts, abs_tol=1e-6),
                      "%s: decision %s at %s, want %s" % (fixture, gi, gts, wts))
        check(sorted(gpu) == sorted(exp["gpu"]), "%s: GPU tracks %s vs %s" % (
            fixture, sorted(gpu), sorted(exp["gpu"])))
        for key, want in exp["gpu"].items():
            got = sorted(gpu.get(key, []), key=lambda x: (x[0], x[1], x[2]))
            want = sorted(want, key=lambda x: (x[0], x[1], x[2]))
            check(len(got) == len(want), "%s: %s: %d slices, want %d" % (
                fixture, key, len(got), len(want)))
            for g, w in zip(got, want):
                check(g[0] == w[0] and g[1] == w[1] and math.isclose(g[2], w[2], abs_tol=1e-6)
                      and math.isclose(g[3], w[3], abs_tol=1e-6),
                      "%s: %s: slice %s, want %s" % (fixture, key, g, w))
        starts = {e["id"]: e for e in ev if e["ph"] == "s"}
        ends = {e["id"]: e for e in ev if e["ph"] == "f"}
        check(len(starts) == exp["flows"] and set(starts) == set(ends),
              "%s: %d flows, want %d" % (fixture, len(starts), exp["flows"]))
        check(all(e.get("bp") == "e" for e in ends.values()), fixture + ": flow binding")
    # Alignment: the fixture's copies start on the GPU 6 us after their
    # decision, with CUPTI's clock 1.234567 ms ahead of the shim's.
    doc = json.loads(render("upgrade_4gpu", None, "trace"))
    dec = {e["args"]["decision"]: e["ts"] for e in doc["traceEvents"]
           if e["ph"] == "X" and e["cat"] == "decision"}
    act = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "activity"
           and e["args"].get("decision") == 1]
    check(len(act) == 1 and math.isclose(act[0]["ts"] - dec[1], 6.0, abs_tol=1e-6),
          "decision 1 and its PTOP are not 6 us apart: %s" % act)
    check("<b>train</b>" in doc["otherData"]["exe"], "otherData keeps the exe")


class Page(html.parser.HTMLParser):
    """Rows (by id) as lists of cell texts; all text."""
    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.text = {}, None, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("id"):
            self.row = a["id"]
            self.rows[self.row] = []
        elif tag == "td" and self.row:
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag):
        if tag == "td" and self.row and self.cell is not None:
            self.rows[self.row].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr":
            self.row = None

    def handle_data(self, data):
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)


def html_figures(page_text, fixture, topo):
    """Checks the page's rows against the reference."""
    p = Page()
    p.feed(page_text)
    ref = reference.compute(os.path.join(FIX, fixture + ".jsonl"), topo)
    for (s, d), r in ref["pairs"].items():
        row = p.rows.get("pair-%d-%d" % (s, d))
        check(row is not None, "%s: no row for %d->%d" % (fixture, s, d))
        if row is None:
            continue
        g = lambda a: "%.1f" % reference.gbps(a) if reference.gbps(a) else "-"
        want = [str(r["copies"]), "%s %d B" % (reference.fmt_bytes(r["bytes"]), r["bytes"]),
                str(r["peer"]), str(r["staged"]), str(r["other"]),
                g(r["act"]["peer"]), g(r["act"]["staged"]),
                "-" if not r["candidates"] else
                "no estimate" if not r["estimated"] else reference.fmt_ns(r["saved_ns"])]
        check(row[1:] == want, "%s %d->%d: page %s, reference %s" % (fixture, s, d, row[1:], want))
    t = reference.totals(ref)
    row = p.rows.get("pair-total", [])
    check(row[1:3] == [str(t["copies"]), "%s %d B" % (reference.fmt_bytes(t["bytes"]), t["bytes"])],
          "%s: total row %s" % (fixture, row))
    return p


def check_html():
    for fixture, topo in CASES:
        page = render(fixture, topo, "html")
        p = html_figures(page, fixture, topo)
        check(page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"),
              fixture + ": not a whole page")
        low = page.lower()
        check("<script" not in low and " src=" not in low and " href=" not in low
              and "@import" not in low, fixture + ": external resource or script")
        check("default-src 'none'" in page, fixture + ": no CSP")
        check("\x1b" not in page, fixture + ": control character in the page")
        if fixture == "upgrade_4gpu":
            check("<b>train</b>" not in page and "&lt;b&gt;train&lt;/b&gt; &quot;x&quot; &amp; y"
                  in page, "exe not escaped")
            check('id="heatmap"' in page and 'id="bandwidth"' in page, "charts missing")
            check('id="cell-0-1"' in page and "GPU 0 to GPU 1: 7 copies" in page, "heatmap cell")
        if fixture == "cut_short":
            check('id="cut-short"' in page, "cut_short: no note")
        check_timeline(page, fixture, topo)


def check_timeline(page, fixture, topo):
    """The traffic-over-time chart: one line per GPU pair (up to 8, most
    bytes first), each carrying every byte of its pair's copies across
    its bins (bins merged as the axis widens must lose none)."""
    ref = reference.compute(os.path.join(FIX, fixture + ".jsonl"), topo)
    want = {"%d-%d" % k: r["bytes"] for k, r in ref["pairs"].items() if r["bytes"] > 0}
    got = {m[0]: int(m[1]) for m in
           re.findall(r'<g class="series" data-pair="(\d+-\d+)">.*?data-bytes="(\d+)"', page)}
    check('id="timeline"' in page, fixture + ": no timeline")
    drawn = sorted(want, key=lambda k: -want[k])[:8]
    check(sorted(got) == sorted(drawn), "%s: timeline pairs %s, want %s" % (fixture, sorted(got),
                                                                          sorted(drawn)))
    for k in drawn:
        check(got.get(k) == want[k], "%s: timeline %s carries %s bytes, want %d"
              % (fixture, k, got.get(k), want[k]))


def check_cli():
    log = os.path.join(FIX, "upgrade_4gpu.jsonl")
    r = run("--help")
    check(r.returncode == 0 and "--format" in r.stdout and "--topo" in r.stdout
          and "Exit status" in r.stdout, "--help")
    for args in ([], ["--format"], ["--bogus", log], ["--format", "pdf", log]):
        r = run(*args)
        check(r.returncode == 2, "usage %s: exit %d" % (args, r.returncode))
    # A bad line in the middle is skipped and named once (check_lines.py
    # has the rest).
    r = run(os.path.join(FIX, "malformed.jsonl"))
    check(r.returncode == 0 and "malformed.jsonl: 1 unreadable line(s) skipped (the first: "
          "line 4: invalid JSON" in r.stderr and r.stderr.count("\n") == 1,
          "malformed: exit %d, %r" % (r.returncode, r.stderr))
    r = run(os.path.join(FIX, "missing.jsonl"))
    check(r.returncode == 1 and "missing.jsonl" in r.stderr, "missing log")
    with tempfile.TemporaryDirectory() as tmp:
        bad = {"empty.jsonl": "", "array.jsonl": "[1,2]\n",
               "noheader.jsonl": '{"type":"decision","id":1}\n',
               "v3.jsonl": '{"type":"header","format":"p2pshim-log","version":3}\n'}
        for name, content in bad.items():
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(content)
            r = run(path)
            check(r.returncode == 1 and name in r.stderr, "%s: exit %d, %r" % (name, r.returncode, r.stderr))
        # Standard input, a gzip file, a folder and a glob read as the file:
        # the same data lines.
        data = lambda text: [l for l in text.splitlines() if l.startswith("@ ")]
        want = data(run(log).stdout)
        check(len(want) > 3, "no data lines")
        r = subprocess.run([DRIVER, "-"], stdin=open(log, "rb"), capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0 and data(r.stdout) == want, "stdin: %r" % r.stderr)
        r = subprocess.run("cat '%s' | '%s' -" % (log, DRIVER), shell=True,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and data(r.stdout) == want, "pipe: %r" % r.stderr)
        os.mkdir(os.path.join(tmp, "run"))
        gz = os.path.join(tmp, "run", "one.jsonl.gz")
        with open(log, "rb") as f, gzip.open(gz, "wb") as g:
            g.write(f.read())
        for arg in (gz, os.path.join(tmp, "run"), os.path.join(tmp, "run", "*.gz")):
            r = run(arg)
            check(r.returncode == 0 and data(r.stdout) == want, "%s: %r" % (arg, r.stderr))
        r = subprocess.run("'%s' - <'%s'" % (DRIVER, gz), shell=True, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0 and data(r.stdout) == want, "gzip on stdin: %r" % r.stderr)
        os.mkdir(os.path.join(tmp, "empty"))
        r = run(os.path.join(tmp, "empty"))
        check(r.returncode == 1 and "no run log" in r.stderr, "empty folder: %r" % r.stderr)
        # The name of -o picks the format; a failed run leaves no file.
        for ext, start in ((".html", "<!DOCTYPE html>"), (".trace.json", '{"traceEvents":['),
                           (".pftrace", '{"traceEvents":['), (".txt", "p2pshim report: "),
                           (".json", '{\n "schema": "p2pshim-report"'),
                           (".csv", "host,src_gpu,")):
            out = os.path.join(tmp, "r" + ext)
            r = run("-o", out, log)
            check(r.returncode == 0 and open(out).read().startswith(start), "-o " + ext)
        out = os.path.join(tmp, "bad.html")
        r = run("-o", out, os.path.join(tmp, "v3.jsonl"))
        check(r.returncode == 1 and not os.path.exists(out), "failed run left " + out)
        check(not [f for f in os.listdir(tmp) if ".html." in f], "temporary file left")
        # The table's default places.
        obs = os.path.join(FIX, "observe_nocupti.jsonl")
        def saved(env):
            recs = data_part(run(obs, env=env).stdout)
            return [r for r in recs if r["record"] == "total"][0]["estimated"]
        check(saved({}) == 0, "no table: no estimate")
        check(saved({"P2PSHIM_TOPO_FILE": TOPO}) == 7, "P2PSHIM_TOPO_FILE")
        os.makedirs(os.path.join(tmp, "xdg", "p2pshim"))
        with open(os.path.join(tmp, "xdg", "p2pshim", "topo.json"), "w") as f:
            f.write(open(TOPO).read())
        check(saved({"P2PSHIM_TOPO_FILE": "", "XDG_CACHE_HOME": os.path.join(tmp, "xdg")}) == 7,
              "XDG_CACHE_HOME")
        r = run("--topo", os.path.join(tmp, "none.json"), obs)
        check(r.returncode == 1 and "none.json" in r.stderr, "--topo of a missing file")
        with open(os.path.join(tmp, "broken.json"), "w") as f:
            f.write("{")
        r = run(obs, env={"P2PSHIM_TOPO_FILE": os.path.join(tmp, "broken.json")})
        check(r.returncode == 0 and "warning" in r.stderr, "a broken default table warns")


def chromium_dom(path, profile):
    """(DOM, console lines) of path rendered by headless Chromium."""
    r = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
                        "--enable-logging=stderr", "--v=0", "--user-data-dir=" + profile,
                        "--dump-dom", "file://" + os.path.abspath(path)],
                       capture_output=True, text=True, timeout=120)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    check(r.returncode == 0, "chromium exit %d on %s" % (r.returncode, path))
    return r.stdout, console


def check_chromium():
    with tempfile.TemporaryDirectory() as tmp:
        # The control: a page with an error must show one, or this test
        # could not see ours.
        bad = os.path.join(tmp, "bad.html")
        with open(bad, "w") as f:
            f.write("<!DOCTYPE html><html><body><script>undefined_fn();</script></body></html>")
        _, console = chromium_dom(bad, os.path.join(tmp, "profile"))
        check(any("Uncaught" in l for l in console), "chromium showed no console error "
              "for the control page: cannot check ours")
        for fixture, topo in (("upgrade_4gpu", TOPO), ("observe_staged", None), ("cut_short", None)):
            out = os.path.join(tmp, fixture + ".html")
            args = ["-o", out, os.path.join(FIX, fixture + ".jsonl")] + (["--topo", topo] if topo else [])
            r = run(*args)
            check(r.returncode == 0, "%s: exit %d: %s" % (fixture, r.returncode, r.stderr))
            dom, console = chromium_dom(out, os.path.join(tmp, "profile"))
            check(not console, "%s: console messages: %s" % (fixture, console))
            check('id="heatmap"' in dom and 'id="bandwidth"' in dom or fixture != "upgrade_4gpu",
                  fixture + ": charts missing from the DOM")
            check('id="timeline"' in dom, fixture + ": timeline missing from the DOM")
            html_figures(dom, fixture, topo)


def check_bounce():
    """Bounce candidates (observe mode's would-bounce events) in the verdict
    and the JSON report: the time a peer copy would save, at the topo
    table's staged and peer GB/s; none without a table or for a pair that
    cannot peer."""
    topo = os.path.join(FIX, "topo_4gpu.json")
    links = {(l["src"], l["dst"]): l for l in json.load(open(topo))["links"]}
    events = [(0, 1, 64 << 20), (0, 1, 32 << 20), (0, 3, 1 << 20)]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "bounce.jsonl")
        with open(os.path.join(FIX, "observe_staged.jsonl")) as f, open(log, "w") as out:
            out.write(f.readline())
            for i, (a, b, n) in enumerate(events):
                out.write(json.dumps({"type": "event", "t_ns": 9000000000 + i, "what":
                                      "would-bounce", "from": a, "to": b, "detail": str(n)}) + "\n")
        for with_topo in (True, False):
            args = ["--format", "json", log] + (["--topo", topo] if with_topo else [])
            r = run(*args)
            check(r.returncode == 0, "bounce json: exit %d: %s" % (r.returncode, r.stderr))
            doc = json.loads(r.stdout or "{}")
            got = {(b["src"]["index"], b["dst"]["index"]): b for b in doc.get("bounces", [])}
            check(set(got) == {(0, 1), (0, 3)}, "bounce pairs %s" % sorted(got))
            b01, b03 = got.get((0, 1), {}), got.get((0, 3), {})
            n01 = sum(n for a, b, n in events if (a, b) == (0, 1))
            check(b01.get("pairs") == 2 and b01.get("bytes") == n01, "0->1: %s" % b01)
            l = links[(0, 1)]
            want = n01 / l["staged_gbps"] - n01 / l["peer_gbps"] if with_topo else None
            if want is None:
                check(b01.get("saved_ns") is None and b01.get("no_estimate"), "no topo: %s" % b01)
            else:
                close(b01.get("saved_ns") or 0, want, "0->1 saving")
                check(b01.get("peer_from") == "topo", "0->1 from %s" % b01.get("peer_from"))
            check(b03.get("saved_ns") is None and "cannot peer" in (b03.get("no_estimate") or "")
                  or not with_topo, "0->3 (cannot peer): %s" % b03)
            lines = doc.get("verdict", {}).get("lines", [])
            said = [x for x in lines if x.startswith("GPU 0 -> GPU 1 through host memory")]
            check(len(said) == 1 and ("a peer copy would save about" in said[0]) == with_topo,
                  "verdict lines %s" % lines)
            if with_topo:
                close(doc["verdict"]["bounce_saved_ns"], want, "verdict bounce_saved_ns")
        r = run("--format", "text", "--topo", topo, log)
        check("GPU 0 -> GPU 1 through host memory: 2 D2H-then-H2D candidates, 96.0 MiB; "
              "a peer copy would save about" in r.stdout, "text verdict: %s" % r.stdout[:600])


if CHECK == "chromium":
    BROWSER = next((b for b in ("chromium", "chromium-browser")
                    if any(os.access(os.path.join(d, b), os.X_OK)
                           for d in os.environ.get("PATH", "").split(os.pathsep))), None)
    if not BROWSER:
        print("chromium: not installed (tools/dev/setup.sh installs it): skipped")
        sys.exit(77)
{"text": check_text, "trace": check_trace, "html": check_html, "cli": check_cli,
 "chromium": check_chromium, "extremes": check_extremes, "bounce": check_bounce}[CHECK]()
for f in failures:
    print("FAIL:", f)
print("%s: %s" % (CHECK, "%d failures" % len(failures) if failures else "ok"))
sys.exit(1 if failures else 0)
