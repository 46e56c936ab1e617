"""The report against logs that are not whole: check_lines.py DRIVER FIXTURES
  - bad lines in the middle (not JSON, not an object, a header of no
    version read here) are skipped: the report is the one of the log
    without them, says how many and names the first, once on stderr;
  - sizes written as unsigned 64-bit numbers (a refused copy's SIZE_MAX,
    as older shims logged them) read, clamped to the signed limit and
    flagged, instead of failing the whole log;
  - a line of 256 MiB, plain or in a gzip log, is skipped with the
    reader's memory bounded by its line limit (64 MiB), not the line's
    length;
  - a log the shim marked log-cut (a full disk) is "cut short: disk full",
    in either form of the marker, also after the torn line the failed
    write left; a log cut mid-line still reports its whole lines.
Exit 0 passes."""
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile

DRIVER, FIX = sys.argv[1], sys.argv[2]
LOG = os.path.join(FIX, "upgrade_4gpu.jsonl")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    env = dict(os.environ, P2PSHIM_TOPO_FILE=os.path.join(FIX, "no-such-topo.json"))
    return subprocess.run([DRIVER, *args], capture_output=True, text=True, env=env,
                          timeout=240)


def data(text):
    return [json.loads(l[2:]) for l in text.splitlines() if l.startswith("@ ")]


def record(text, name):
    recs = [r for r in data(text) if r["record"] == name]
    return recs[0] if recs else {}


def run_record(text):
    return record(text, "run")


def without_run(text):
    """The data records but the run's own (which counts lines)."""
    return [r for r in data(text) if r["record"] != "run"]


def write(path, lines, end="\n"):
    with open(path, "w") as f:
        f.write("\n".join(lines) + end)
    return path


def check_bad_lines(tmp):
    lines = open(LOG).read().splitlines()
    want = run(LOG)
    check(want.returncode == 0, "the fixture renders")
    mid = len(lines) // 2
    bad = ["garbage{", "[1,2,3]", '"a string"',
           '{"type":"header","format":"p2pshim-log","version":9}']
    mixed = lines[:mid] + bad[:1] + lines[mid:mid + 2] + bad[1:] + lines[mid + 2:]
    r = run(write(os.path.join(tmp, "bad.jsonl"), mixed))
    check(r.returncode == 0, "bad lines: exit %d: %s" % (r.returncode, r.stderr))
    check(without_run(r.stdout) == without_run(want.stdout),
          "bad lines: the figures differ from the log's without them")
    rr = run_record(r.stdout)
    check(rr.get("bad_lines") == 4 and rr.get("first_bad_line") == mid + 1,
          "bad lines: run record %r" % rr)
    check("4 unreadable line(s) skipped (the first: line %d: invalid JSON" % (mid + 1)
          in r.stdout, "bad lines: no note in the text")
    warn = [l for l in r.stderr.splitlines() if "unreadable" in l]
    check(len(warn) == 1 and "bad.jsonl: 4 unreadable line(s)" in warn[0],
          "bad lines: stderr %r" % r.stderr)
    page = run("--format", "html", os.path.join(tmp, "bad.jsonl"))
    check(page.returncode == 0 and 'id="bad-lines"' in page.stdout, "bad lines: html note")
    # A file with no header at all is no run log: refused, not read as one
    # made of bad lines.
    r = run(write(os.path.join(tmp, "nohead.jsonl"), ["garbage{"] + lines[1:]))
    check(r.returncode == 1 and "nohead.jsonl:1:" in r.stderr, "no header: %r" % r.stderr)


def check_unsigned(tmp):
    lines = open(LOG).read().splitlines()
    dec = json.loads([l for l in lines if '"type":"decision"' in l][0])
    big = json.dumps(dict(dec, id=900, bytes=1)).replace('"bytes": 1', '"bytes": 18446744073709551615')
    neg = json.dumps(dict(dec, id=901, t_ns=5)).replace('"t_ns": 5', '"t_ns": -99999999999999999999')
    r = run(write(os.path.join(tmp, "unsigned.jsonl"), lines[:2] + [big, neg] + lines[2:]))
    check(r.returncode == 0, "unsigned sizes: exit %d: %s" % (r.returncode, r.stderr))
    rr = run_record(r.stdout)
    check(rr.get("saturated") is True and rr.get("bad_lines") == 0,
          "unsigned sizes: run record %r" % rr)
    base = record(run(LOG).stdout, "total")
    total = record(r.stdout, "total")
    check(total.get("copies") == base["copies"] + 2 and total.get("bytes") == 2 ** 63 - 1,
          "unsigned sizes: total %r" % total)


def max_rss_kib(args):
    """The report's peak memory (KiB), run from a fresh interpreter so that
    no other child's peak counts."""
    code = ("import resource,subprocess,sys;"
            "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.PIPE,"
            "timeout=240);"
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
            "sys.stderr.write(r.stderr.decode(errors='replace'))")
    p = subprocess.run([sys.executable, "-c", code, DRIVER, *args], capture_output=True,
                       text=True, timeout=300)
    rc, kib = p.stdout.split()
    return int(rc), int(kib), p.stderr


def check_long_line(tmp):
    lines = open(LOG).read().splitlines()
    plain = os.path.join(tmp, "long.jsonl")
    pad = b"x" * (1 << 20)
    with open(plain, "wb") as f, gzip.open(plain + ".gz", "wb", compresslevel=1) as g:
        head = ("\n".join(lines[:3]) + "\n").encode()
        tail = ("\n".join(lines[3:]) + "\n").encode()
        for out in (f, g):
            out.write(head + b'{"type":"decision","pad":"')
            for _ in range(256):
                out.write(pad)
            out.write(b'"}\n' + tail)
    want = without_run(run(LOG).stdout)
    for path in (plain, plain + ".gz"):
        rc, kib, err = max_rss_kib([path])
        check(rc == 0, "%s: exit %d: %s" % (path, rc, err))
        check(kib < 160 * 1024, "%s: the reader peaked at %d MiB for a 256 MiB line"
              % (os.path.basename(path), kib // 1024))
        r = run(path)
        check(without_run(r.stdout) == want, "%s: figures differ" % path)
        check(run_record(r.stdout).get("first_bad_line") == 4 and
              "line longer than 67108864 bytes" in r.stdout, "%s: no note" % path)


def check_cut(tmp):
    lines = open(LOG).read().splitlines()
    body = [l for l in lines if '"type":"footer"' not in l]
    markers = ['{"type":"event","t_ns":99999999,"what":"log-cut","detail":"disk-full"}',
               '{"event":"log-cut","reason":"disk-full"}']
    for i, marker in enumerate(markers):
        # The failed write left half a line; the marker follows on its own.
        torn = body[-1][:len(body[-1]) // 2]
        r = run(write(os.path.join(tmp, "cut%d.jsonl" % i), body + [torn, marker]))
        check(r.returncode == 0, "log-cut %d: exit %d: %s" % (i, r.returncode, r.stderr))
        check("cut short: disk full" in r.stdout and "crash" not in r.stdout,
              "log-cut %d: the text says %r" % (i, [l for l in r.stdout.splitlines()
                                                   if "note" in l]))
        rr = run_record(r.stdout)
        check(rr.get("cut_reason") == "disk-full" and rr.get("cut_short") is True and
              rr.get("bad_lines") == 1, "log-cut %d: run record %r" % (i, rr))
        page = run("--format", "html", os.path.join(tmp, "cut%d.jsonl" % i)).stdout
        check('id="cut-short">Cut short: disk full' in page, "log-cut %d: html" % i)
    # A crash mid-line: every whole line counts, the torn one does not.
    r = run(write(os.path.join(tmp, "crash.jsonl"), body[:-1] + [body[-1][:40]], end=""))
    rr = run_record(r.stdout)
    check(r.returncode == 0 and rr.get("torn_tail") is True and rr.get("cut_short") is True
          and rr.get("cut_reason") is None and rr.get("bad_lines") == 0,
          "crash mid-line: %r %s" % (rr, r.stderr))
    check(rr.get("decisions") == sum('"type":"decision"' in l for l in body[:-1]),
          "crash mid-line: decisions %r" % rr.get("decisions"))


with tempfile.TemporaryDirectory() as tmp:
    check_bad_lines(tmp)
    check_unsigned(tmp)
    check_cut(tmp)
    check_long_line(tmp)
for f in failures:
    print("FAIL:", f)
print("lines: %d failures" % len(failures))
sys.exit(1 if failures else 0)
