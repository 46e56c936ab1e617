"""package.logs: p2pshim.logs (python/p2pshim/logs.py) reads what the
launcher's report reads. Run logs are made by p2pdemo under the built shim
on the stand-in driver, then damaged in the ways docs/LOG_FORMAT.md names;
each reading is compared with `p2pshim report --format json` of the same
file: copies, bytes, bytes by action and reason class, cut short, skipped
lines. The module is read from the source tree in a fresh venv (no pip, no
network, no pandas: to_frame's ImportError); to_frame itself is checked
with PT_PYTHON when that imports pandas, and said to be skipped otherwise.

    logs_test.py            (PT_* variables as package_test.sh's)
    logs_test.py check DIR  (inside the venv) / frame DIR (with pandas)
Exit 0 passed, 1 failed, 77 skipped.
"""
import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile
import warnings

failures = []


def bad(what):
    print(f"FAIL: {what}")
    failures.append(what)


def launcher(*args, env=None, check=True):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([os.environ["PT_LAUNCHER"], *args], env=e, capture_output=True, text=True)
    if check and p.returncode != 0:
        bad(f"p2pshim {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def report(path):
    """The JSON report of path, or (None, stderr) when it refuses it."""
    p = launcher("report", "--format", "json", path, check=False)
    if p.returncode != 0:
        return None, p.stderr
    return json.loads(p.stdout), p.stderr


def make_logs(d):
    """The logs the checks read, in d."""
    run_env = {"LD_LIBRARY_PATH": os.environ["PT_STANDIN"],
               "P2PSHIM_LIBRARY": os.environ["PT_SHIM"], "P2PSHIM_TRUST": "skip"}
    demo = os.environ["PT_DEMO"]
    launcher("run", "--log", f"{d}/upgrade.jsonl", "--", demo, "4", "3", env=run_env)
    launcher("run", "--observe", "--log", f"{d}/observe.jsonl", "--", demo, "3", "2", env=run_env)
    # A job: 4 ranks, one log each, as torchrun starts them.
    torchrun = os.path.join(os.environ["PT_SRC"], "tests/launcher/fake_torchrun.sh")
    p = subprocess.run(["sh", torchrun, "4", os.environ["PT_LAUNCHER"], "run", "--observe",
                        "--log-dir", f"{d}/job", "--", "sh", "-c",
                        'exec "$0" $((RANK + 1)) 2', demo],
                       env={**os.environ, **run_env}, capture_output=True, text=True)
    if p.returncode != 0:
        bad(f"job: exit {p.returncode}: {p.stderr}")
    with open(f"{d}/upgrade.jsonl", "rb") as f:
        lines = f.read().splitlines(keepends=True)
    # Damage: a line that is not JSON, one that is no object, blank lines,
    # a later header of an unknown version, a line type nobody knows, a
    # last line torn mid-way; and no footer.
    mid = len(lines) // 2
    damaged = (lines[:mid] + [b"{not json\n", b"[1,2]\n", b"\n", b"  \t\n",
               b'{"type":"header","format":"p2pshim-log","version":9}\n',
               b'{"type":"novel","x":{"y":1}}\n'] + lines[mid:-1] + [lines[-2][:15]])
    with open(f"{d}/damaged.jsonl", "wb") as f:
        f.writelines(damaged)
    blob = b"".join(damaged)
    with open(f"{d}/damaged.jsonl.gz", "wb") as f:   # two members and trailing bytes
        f.write(gzip.compress(blob[:len(blob) // 3]) + gzip.compress(blob[len(blob) // 3:]) +
                b"trailing bytes")
    whole = gzip.compress(b"".join(lines))
    with open(f"{d}/cut.jsonl.gz", "wb") as f:
        f.write(whole[:len(whole) // 2])
    with open(f"{d}/notes.jsonl", "w") as f:
        f.write('{"type":"note"}\n')
    os.makedirs(f"{d}/mixed")
    for name in ("observe.jsonl", "damaged.jsonl.gz", "notes.jsonl"):   # two processes
        os.link(f"{d}/{name}", f"{d}/mixed/{name}")


def compare(log, row, what):
    """A Log against its process row of the JSON report."""
    from p2pshim import logs as L
    cs = L.copies(log)
    cross = L.copies(log, cross=True)
    by_action = collections.Counter()
    by_class = collections.Counter({k: 0 for k in ("local", "upgrade", "app-peer", "staged",
                                                   "other")})
    for c in cs:
        by_action[c["action"]] += c["bytes"]
        by_class[L.REASON_CLASS.get(c["reason"], "other")] += c["bytes"]
    got = {"copies": len(cs), "bytes": sum(c["bytes"] for c in cs), "cross_copies": len(cross),
           "cross_bytes": sum(c["bytes"] for c in cross), "bytes_by_action": dict(by_action),
           "bytes_by_reason_class": dict(by_class), "cut_short": log.cut_short,
           "bad_lines": log.bad_lines, "pid": log.header.get("pid")}
    want = {k: row.get(k, 0 if k == "bad_lines" else False if k == "cut_short" else None)
            for k in got}
    if got != want:
        bad(f"{what}: reader {got}\n      report {want}")
    if row["copies"] == 0:
        bad(f"{what}: the run logged no copy")
    # The footer's own count, where the log has one.
    if log.footer and log.footer["records"] != len(cs):
        bad(f"{what}: {len(cs)} decisions, the footer says {log.footer['records']}")


def check(d):
    from p2pshim import logs as L
    where = os.path.dirname(os.path.abspath(L.__file__))
    if where != os.path.join(os.environ["PT_SRC"], "python", "p2pshim"):
        bad(f"p2pshim.logs came from {where}, not the source tree")
    for name in ("upgrade.jsonl", "observe.jsonl", "damaged.jsonl", "damaged.jsonl.gz"):
        rep, err = report(f"{d}/{name}")
        if rep is None:
            bad(f"{name}: the report refused it: {err}")
            continue
        log = L.read(f"{d}/{name}")
        compare(log, rep["processes"][0], name)
        if name.startswith("damaged"):
            if not log.torn_tail or log.bad_lines != 3 or log.first_bad[1][:13] != "invalid JSON:":
                bad(f"{name}: torn {log.torn_tail}, bad {log.bad_lines}, first {log.first_bad}")
            if not [r for r in log if r.get("type") == "novel" and r["x"] == {"y": 1}]:
                bad(f"{name}: the unknown line type was not kept")
    observe = {c["action"] for c in L.copies(f"{d}/observe.jsonl", cross=True)}
    upgrade = {c["action"] for c in L.copies(f"{d}/upgrade.jsonl", cross=True)}
    if observe & upgrade or not observe or not upgrade:
        bad(f"the two modes' actions are not apart: {observe} {upgrade}")
    # A cut gzip file: refused by both, with the same words.
    try:
        L.read(f"{d}/cut.jsonl.gz")
        bad("cut.jsonl.gz: read without an error")
    except L.LogError as e:
        if str(e) != f"{d}/cut.jsonl.gz: truncated gzip file":
            bad(f"cut.jsonl.gz: {e}")
    rep, err = report(f"{d}/cut.jsonl.gz")
    if rep is not None or "truncated gzip file" not in err:
        bad(f"cut.jsonl.gz: the report said {err!r}")
    # Run folders: every process, by pid, as the report has them.
    for folder, n in (("job", 4), ("mixed", 2)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            logs = L.read_dir(f"{d}/{folder}")
        rep, err = report(f"{d}/{folder}")
        if rep is None:
            bad(f"{folder}: the report refused it: {err}")
            continue
        rows = {r["pid"]: r for r in rep["processes"]}
        if len(logs) != n or len(rows) != n:
            bad(f"{folder}: {len(logs)} logs read, {len(rows)} in the report, want {n}")
        for log in logs:
            compare(log, rows.get(log.header["pid"], {}), f"{folder}/{os.path.basename(log.path)}")
        skipped = [os.path.basename(p) for p, _ in logs.skipped]
        if skipped != (["notes.jsonl"] if folder == "mixed" else []) or len(w) != len(skipped):
            bad(f"{folder}: skipped {skipped}, warned {[str(x.message) for x in w]}")
        if folder == "mixed" and "skipping" not in err:
            bad(f"mixed: the report did not skip notes.jsonl: {err}")
        if folder == "job" and sorted(log.header.get("rank") for log in logs) != [0, 1, 2, 3]:
            bad(f"job: ranks {[log.header.get('rank') for log in logs]}")
    try:
        import pandas  # noqa: F401
        print("pandas importable in the venv: its ImportError is not checked")
    except ImportError:
        try:
            L.to_frame(L.read(f"{d}/upgrade.jsonl"))
            bad("to_frame without pandas: no ImportError")
        except ImportError as e:
            if "needs pandas" not in str(e):
                bad(f"to_frame without pandas: {e}")


def frame(d):
    from p2pshim import logs as L
    logs = L.read_dir(f"{d}/job")
    df = L.to_frame(logs, type="decision")
    if len(df) != sum(len(L.copies(log)) for log in logs):
        bad(f"to_frame: {len(df)} rows")
    by_pid = df.groupby("pid")["bytes"].sum().to_dict()
    rep, _ = report(f"{d}/job")
    want = {r["pid"]: r["bytes"] for r in rep["processes"]}
    if by_pid != want:
        bad(f"to_frame: bytes by pid {by_pid}, report {want}")
    if "src_dev" not in df.columns or sorted(set(df["rank"])) != [0, 1, 2, 3]:
        bad(f"to_frame: columns {list(df.columns)}")


def main():
    if len(sys.argv) == 3:
        {"check": check, "frame": frame}[sys.argv[1]](sys.argv[2])
        return 1 if failures else 0
    with tempfile.TemporaryDirectory(prefix="pt-logs.") as d:
        v = subprocess.run([sys.executable, "-m", "venv", "--without-pip", f"{d}/venv"],
                           capture_output=True, text=True)
        if v.returncode != 0:
            why = f"python3 -m venv failed (Debian: python3-venv): {v.stderr.strip()}"
            if os.environ.get("CI") == "true":
                bad(why)
                return 1
            print(f"SKIP: {why}")
            return 77
        py = f"{d}/venv/bin/python"
        site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True).stdout.strip()
        with open(os.path.join(site, "p2pshim-src.pth"), "w") as f:
            f.write(os.path.join(os.environ["PT_SRC"], "python") + "\n")
        make_logs(d)
        if subprocess.run([py, __file__, "check", d]).returncode != 0:
            bad("the checks in the venv")
        if subprocess.run([sys.executable, "-c", "import pandas"],
                          capture_output=True).returncode == 0:
            env = {**os.environ, "PYTHONPATH": os.path.join(os.environ["PT_SRC"], "python")}
            if subprocess.run([sys.executable, __file__, "frame", d], env=env).returncode != 0:
                bad("to_frame with pandas")
        else:
            print(f"SKIP (part): pandas is not importable by {sys.executable}: "
                  "to_frame's DataFrame is not checked")
    print("package logs: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
