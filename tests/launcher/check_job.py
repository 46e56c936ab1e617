"""check_job.py WHAT ARGS...: checks of a multi-process run on the stand-in
(launcher_test.sh's job cases). Each worker of rank r ran `p2pdemo r+1 2`:
three copies of r+1 MiB from device 0 to device 1 (a warm-up and two), so
its cross-GPU bytes are 3 * (r + 1) MiB. Standard library only.

  logs DIR N            DIR holds N run logs, one per rank, whose headers
                        name rank, local rank, world size, the devices
                        (UUID, PCI, name) and the p2pshim version
  text FILE N           the text report: a process record per rank with
                        its bytes; the pair total is their sum
  html FILE N           the page: the verdict before the evidence, a row
                        per rank with its bytes
  trace FILE N          the trace: N host processes with distinct real pids,
                        named by rank; no negative time
  prefix FILE N         stderr lines of N ranks: host:pid rRANK p2pshim:

The srun case (tasks of `p2pdemo 1 2`, each 3 MiB from its device 0 to its
device 1, under its own CUDA_VISIBLE_DEVICES):
  logs-as-seen DIR N    N logs, ranks 0..N-1 (SLURM_PROCID), each header's
                        devices in the order its CUDA_VISIBLE_DEVICES gives
  json FILE N SCHEMA    `report --format json`: valid against SCHEMA, a row
                        per rank, traffic merged on the right UUID pairs
  matrix-text FILE N    the text report's matrix (data part and the page
  matrix-html FILE N    table), by UUID, the same traffic
"""
import glob
import json
import os
import re
import socket
import sys

MIB = 1 << 20
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)


def want_bytes(rank):
    return 3 * (rank + 1) * MIB


def check_logs(folder, n):
    logs = sorted(glob.glob(os.path.join(folder, "*.jsonl")))
    check(len(logs) == n, "%d logs in %s, want %d: %s" % (len(logs), folder, n, logs))
    ranks = set()
    for path in logs:
        with open(path) as f:
            h = json.loads(f.readline())
        r = h.get("rank")
        ranks.add(r)
        host = socket.gethostname()
        check(os.path.basename(path) == "%s-pid%d-rank%s.jsonl" % (host, h["pid"], r),
              "%s: name does not follow host, pid and rank %s" % (path, r))
        check(h.get("local_rank") == r and h.get("world_size") == n,
              "%s: local_rank %s world_size %s" % (path, h.get("local_rank"),
                                                   h.get("world_size")))
        check(isinstance(h.get("p2pshim"), str) and h["p2pshim"] == os.environ["LT_VERSION"],
              "%s: version %r" % (path, h.get("p2pshim")))
        devs = h.get("devices") or []
        check(len(devs) >= 2, "%s: devices %r" % (path, devs))
        for i, d in enumerate(devs):
            # The stand-in's UUIDs: "SDIN" and the ordinal.
            check(d.get("ordinal") == i and
                  d.get("uuid") == "GPU-5344494e-0000-0000-0000-0000000000%02x" % i and
                  re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0$", d.get("pci", "")) and
                  d.get("name") == "Stand-in GPU %d" % i, "%s: device %r" % (path, d))
    check(ranks == set(range(n)), "ranks %s" % sorted(ranks, key=str))


def check_text(path, n):
    recs = [json.loads(l[2:]) for l in open(path) if l.startswith("@ ")]
    procs = [r for r in recs if r.get("record") == "process"]
    check(sorted(p["rank"] for p in procs) == list(range(n)),
          "process records: %s" % [p.get("rank") for p in procs])
    for p in procs:
        check(p["cross_bytes"] == want_bytes(p["rank"]),
              "rank %s: %s cross-GPU bytes, want %d" % (p["rank"], p["cross_bytes"],
                                                       want_bytes(p["rank"])))
    pairs = [r for r in recs if r.get("record") == "pair"]
    total = sum(want_bytes(r) for r in range(n))
    check(len(pairs) == 1 and pairs[0]["src"] == 0 and pairs[0]["dst"] == 1 and
          pairs[0]["bytes"] == total, "pairs %s, want one 0->1 of %d bytes" % (pairs, total))
    text = open(path).read()
    check("verdict: %d processes" % n in text, "no verdict naming %d processes" % n)


def check_html(path, n):
    page = open(path).read()
    v, t = page.find('id="verdict"'), page.find('id="pairs"')
    check(0 <= v < t, "verdict at %d, traffic at %d" % (v, t))
    rows = re.findall(r'<tr id="proc-\d+"><td>(\d+)</td>.*?<br><small>(\d+) B</small>', page)
    got = sorted((int(r), int(b)) for r, b in rows)
    check(got == [(r, want_bytes(r)) for r in range(n)], "process rows %s" % got)


def check_trace(path, n):
    doc = json.load(open(path))
    ev = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    hosts = {p: nm for p, nm in names.items() if nm.startswith("host")}
    check(len(hosts) == n, "%d host processes, want %d: %s" % (len(hosts), n, hosts))
    for pid, nm in hosts.items():
        check(re.search(r"rank \d+ .*\(pid %d\)" % pid, nm) is not None,
              "host process %d named %r" % (pid, nm))
    neg = [e for e in ev if "ts" in e and e["ts"] < 0]
    check(not neg, "negative times: %s" % neg[:3])
    check(sum(1 for e in ev if e.get("cat") == "decision") > 0, "no decisions")


def check_prefix(path, n):
    host = socket.gethostname()
    seen = set()
    for line in open(path):
        m = re.match(r"^(\S+):(\d+) r(\d+) p2pshim: summary total ", line)
        if m:
            check(m.group(1) == host, "host %s" % m.group(1))
            seen.add((int(m.group(2)), int(m.group(3))))
    check(sorted(r for _, r in seen) == list(range(n)) and len({p for p, _ in seen}) == n,
          "summary lines of ranks/pids %s" % sorted(seen))


def uuid(k):
    # The stand-in's UUIDs: "SDIN" and the device's index on the machine.
    return "GPU-5344494e-0000-0000-0000-0000000000%02x" % k


def headers(folder):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        with open(path) as f:
            out.append(json.loads(f.readline()))
    return out


def visible(h):
    return [int(x) for x in h["cuda_visible_devices"].split(",")]


def check_logs_as_seen(folder, n):
    hs = headers(folder)
    check(sorted(h.get("rank") for h in hs) == list(range(n)),
          "ranks %s" % [h.get("rank") for h in hs])
    for h in hs:
        seen = [d.get("uuid") for d in h.get("devices") or []]
        check(seen == [uuid(k) for k in visible(h)],
              "rank %s: devices %s under CUDA_VISIBLE_DEVICES=%s" %
              (h.get("rank"), seen, h.get("cuda_visible_devices")))


def want_traffic(folder):
    """(src uuid, dst uuid) -> bytes: each task's 3 MiB, device 0 to 1 as it saw them."""
    want = {}
    for h in headers(folder):
        v = visible(h)
        key = (uuid(v[0]), uuid(v[1]))
        want[key] = want.get(key, 0) + 3 * MIB
    return want


def matrix_traffic(gpu_uuid, matrices):
    got = {}
    for m in matrices:
        for i, a in enumerate(m["gpus"]):
            for j, b in enumerate(m["gpus"]):
                if m["bytes"][i][j]:
                    got[(gpu_uuid(a), gpu_uuid(b))] = m["bytes"][i][j]
    return got


def check_json(path, n, schema_path):
    import jsonschema
    doc = json.load(open(path))
    schema = json.load(open(schema_path))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    for e in errors[:5]:
        check(False, "schema: %s at %s" % (e.message, "/".join(map(str, e.absolute_path))))
    folder = os.path.join(os.path.dirname(path), "job")
    want = want_traffic(folder)
    procs = doc.get("processes", [])
    check(sorted(p.get("rank") for p in procs) == list(range(n)), "process rows %s" % procs)
    for p in procs:
        check(p.get("cross_bytes") == 3 * MIB and
              p.get("bytes_by_reason_class", {}).get("staged") == 3 * MIB and
              p.get("bytes_by_action", {}).get("would-upgrade") == 3 * MIB,
              "rank %s: bytes %s" % (p.get("rank"), p))
    gpus = {g["index"]: g["uuid"] for g in doc.get("gpus", [])}
    pairs = {(p["src"]["uuid"], p["dst"]["uuid"]): p["bytes"] for p in doc.get("pairs", [])}
    check(pairs == want, "pairs %s, want %s" % (pairs, want))
    got = matrix_traffic(lambda i: gpus.get(i), doc.get("matrix", []))
    check(got == want, "matrix %s, want %s" % (got, want))
    check(doc.get("verdict", {}).get("bytes") == sum(want.values()),
          "verdict bytes %s" % doc.get("verdict"))


def check_matrix_text(path, n):
    recs = [json.loads(l[2:]) for l in open(path) if l.startswith("@ ")]
    mats = [r for r in recs if r.get("record") == "matrix"]
    want = want_traffic(os.path.join(os.path.dirname(path), "job"))
    got = matrix_traffic(lambda u: u, mats)
    check(got == want, "text matrix %s, want %s" % (got, want))
    text = open(path).read()
    for a, b in want:
        check(a in text and b in text, "the text names no %s or %s" % (a, b))


def check_matrix_html(path, n):
    page = open(path).read()
    want = want_traffic(os.path.join(os.path.dirname(path), "job"))
    cells = re.findall(r'<td data-src="([^"]+)" data-dst="([^"]+)" data-bytes="(\d+)"', page)
    got = {(a, b): int(v) for a, b, v in cells if int(v)}
    check(got == want, "html matrix %s, want %s" % (got, want))


what, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if what == "json":
    check_json(path, n, sys.argv[4])
else:
    {"logs": check_logs, "text": check_text, "html": check_html, "trace": check_trace,
     "prefix": check_prefix, "logs-as-seen": check_logs_as_seen,
     "matrix-text": check_matrix_text, "matrix-html": check_matrix_html}[what](path, n)
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
