#!/usr/bin/env python3
"""GPU tier, issue 3's "done when": `p2pshim run --observe --report` on an
unmodified static-cudart program gives a report whose traffic, paths and
estimated savings match what the program did.

observe_report.py LAUNCHER PROGRAM KEEP_DIR
1. `p2pshim topo --measure` writes this machine's bandwidth table;
2. `p2pshim run --observe --log L --report out.html -- PROGRAM` (and the
   program alone: its output must be the same, observe changes nothing);
3. the report's data section (`p2pshim report --format text L`) is checked
   against an independent reading of the log: bytes and copies exact, every
   cross-GPU copy seen staged by CUPTI (DTOH + HTOD), the estimated saving
   within 10 % of bytes / staged GB/s - bytes / peer GB/s (the measured
   table: CUPTI's staged records time one staging chunk, not the copy);
4. the same program in upgrade mode, reported: the pair's peer GB/s within
   10 % of CUPTI's PTOP records, and (for information) the time the link
   really took against the estimate.
KEEP_DIR receives report-example.html and run-example.jsonl.
Exit 77 when the program says it needs two GPUs."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True,
                       text=True, timeout=600)
    if check and p.returncode not in (0, 77):
        print("FAIL: %s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:],
                                               p.stderr[-2000:]))
        sys.exit(1)
    return p


def log_figures(path):
    """Per ordered pair: copies, bytes, CUPTI staged ns, staged bytes."""
    lines = [json.loads(l) for l in open(path)]
    acts = collections.defaultdict(list)
    for l in lines:
        if l["type"] == "activity":
            acts[l["decision"]].append(l)
    pairs = collections.defaultdict(lambda: {"copies": 0, "bytes": 0, "staged_ns": 0,
                                             "staged_bytes": 0, "peer_ns": 0})
    for d in (l for l in lines if l["type"] == "decision"):
        s, t = d["src"]["dev"], d["dst"]["dev"]
        if s < 0 or t < 0 or s == t:
            continue
        p = pairs[(s, t)]
        p["copies"] += 1
        p["bytes"] += d["bytes"]
        a = acts.get(d["id"], [])
        kinds = {x["kind"] for x in a}
        if a:
            span = max(x["end_ns"] for x in a) - min(x["start_ns"] for x in a)
            if kinds == {"DTOH", "HTOD"}:
                p["staged_ns"] += span
                p["staged_bytes"] += d["bytes"]
            elif kinds == {"PTOP"}:
                p["peer_ns"] += span
    return pairs


def main():
    launcher, program, keep = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="p2p-observe-")
    topo = os.path.join(tmp, "topo.json")
    env = {"P2PSHIM_TOPO_FILE": topo}
    alone = run([program])
    if alone.returncode == 77:
        print(alone.stdout.strip())
        return 77
    run([launcher, "topo", "--measure"], env)
    table = json.load(open(topo))
    links = {(l["src"], l["dst"]): l for l in table["links"]}
    log = os.path.join(tmp, "run.jsonl")
    html = os.path.join(tmp, "out.html")
    obs = run([launcher, "run", "--observe", "--log", log, "--report", html, "--", program], env)
    fails = []
    if obs.stdout != alone.stdout:
        fails.append("observe changed the program's output:\n%s\nvs\n%s" % (obs.stdout, alone.stdout))
    text = run([launcher, "report", "--format", "text", "--topo", topo, log], env).stdout
    data = [json.loads(l[2:]) for l in text.splitlines() if l.startswith("@ ")]
    rep = {(r["src"], r["dst"]): r for r in data if r.get("record") == "pair"}
    figures = log_figures(log)
    if not figures:
        fails.append("no cross-GPU copies in the log")
    for key, f in sorted(figures.items()):
        r = rep.get(key)
        if r is None:
            fails.append("pair %s missing from the report" % (key,))
            continue
        if r["copies"] != f["copies"] or r["bytes"] != f["bytes"]:
            fails.append("pair %s: report %d copies %d B, log %d copies %d B"
                         % (key, r["copies"], r["bytes"], f["copies"], f["bytes"]))
        if r["staged"] != f["copies"]:
            fails.append("pair %s: %d staged in the report, %d copies" % (key, r["staged"], f["copies"]))
        if f["staged_bytes"] != f["bytes"]:
            fails.append("pair %s: CUPTI saw %d of %d bytes staged" % (key, f["staged_bytes"], f["bytes"]))
        link = links.get(key, {})
        sg, pg = link.get("staged_gbps"), link.get("peer_gbps")
        want = f["bytes"] / sg - f["bytes"] / pg if sg and pg else None
        if want is None or r["saved_ns"] is None or abs(r["saved_ns"] - want) > 0.1 * want:
            fails.append("pair %s: saving %s ns in the report, %s from the table"
                         % (key, r["saved_ns"], want))
        print("pair %d->%d: %d copies, %d bytes, all staged: %s; estimated saving %.2f ms "
              "(independent %.2f ms; table %.1f / %.1f GB/s)"
              % (key[0], key[1], r["copies"], r["bytes"], f["staged_bytes"] == f["bytes"],
                 (r["saved_ns"] or 0) / 1e6, (want or 0) / 1e6, sg or 0, pg or 0))
    # Upgrade mode: the report's peer GB/s against CUPTI's PTOP records.
    up_log = os.path.join(tmp, "up.jsonl")
    run([launcher, "run", "--set", "P2PSHIM_CUPTI=1", "--log", up_log, "--", program], env)
    up_text = run([launcher, "report", "--format", "text", "--topo", topo, up_log], env).stdout
    up_rep = {(r["src"], r["dst"]): r for r in
              (json.loads(l[2:]) for l in up_text.splitlines() if l.startswith("@ "))
              if r.get("record") == "pair"}
    for key, f in sorted(log_figures(up_log).items()):
        r, o = up_rep.get(key), figures.get(key)
        cupti = f["bytes"] / f["peer_ns"] if f["peer_ns"] else None
        if r is None or not cupti or not r.get("peer_gbps") or \
                abs(r["peer_gbps"] - cupti) > 0.1 * cupti:
            fails.append("upgrade pair %s: report peer GB/s %s, CUPTI PTOP %s"
                         % (key, r and r.get("peer_gbps"), cupti))
            continue
        est = o["bytes"] / links[key]["peer_gbps"] if o and links.get(key, {}).get("peer_gbps") else 0
        print("pair %d->%d upgraded: %.1f GB/s in the report, %.1f from PTOP records; the link "
              "took %.3f ms, the table's estimate %.3f ms"
              % (key[0], key[1], r["peer_gbps"], cupti, f["peer_ns"] / 1e6, est / 1e6))
    os.makedirs(keep, exist_ok=True)
    shutil.copy(html, os.path.join(keep, "report-example.html"))
    shutil.copy(log, os.path.join(keep, "run-example.jsonl"))
    shutil.copy(topo, os.path.join(keep, "topo-example.json"))
    for f in fails:
        print("FAIL:", f)
    print("observe_report: %s" % ("FAILED" if fails else "ok"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
