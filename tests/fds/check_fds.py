#!/usr/bin/env python3
"""Runs fd_probe under the shim and checks the program's files, the run
log and the log file (docs/SECURITY.md "The shim's descriptors",
docs/LOG_FORMAT.md).

check_fds.py CASE PROBE PRELOAD STANDIN_DIR
CASE: close_all.HOW (HOW: close, closefrom, close_range, sys_close, raw) |
      exec.HOW (execveat, fexecve, sys_execve, sys_execveat) |
      disk_full (a 64 KiB tmpfs; skipped, 77, where none can be mounted) |
      file_size (RLIMIT_FSIZE)"""
import json
import os
import subprocess
import sys
import tempfile

failures = []
OWN_LINE = b"the program's own line\n"


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(probe, args, env_extra, preload, standin):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": standin, "LD_PRELOAD": preload, "P2PSHIM_TRUST": "skip"})
    env.update(env_extra)
    p = subprocess.run([probe] + args, env=env, capture_output=True, timeout=100)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def log_lines(path):
    """Every line of a run log, each a whole JSON object ending in a newline."""
    with open(path, "rb") as f:
        data = f.read()
    expect(not data or data.endswith(b"\n"), f"{path} ends with a whole line")
    lines = []
    for i, raw in enumerate(data.splitlines()):
        try:
            lines.append(json.loads(raw))
        except ValueError:
            expect(False, f"{path} line {i + 1} is not a whole JSON line: {raw[:80]!r}")
    return lines


def decisions(lines):
    return [l for l in lines if l.get("type") == "decision"]


def warnings(err, text):
    return [l for l in err.splitlines() if "p2pshim: warning:" in l and text in l]


def check_footed(lines, n, what):
    expect(lines and lines[0].get("type") == "header", f"{what}: the header first")
    expect(len(decisions(lines)) == n, f"{what}: {n} decisions, found {len(decisions(lines))}")
    foot = lines[-1] if lines else {}
    expect(foot.get("type") == "footer" and foot.get("records") == n,
           f"{what}: a footer counting {n} records last: {foot}")


def close_all(how, probe, preload, standin, tmp):
    own, rlog, log = (os.path.join(tmp, n) for n in ("own.txt", "run.jsonl", "log.txt"))
    env = {"P2PSHIM_RUN_LOG": rlog, "P2PSHIM_LOG_FILE": log, "P2PSHIM_LOG": "info"}
    rc, out, err = run(probe, ["close_all", how, own], env, preload, standin)
    expect(rc == 0 and "done" in out, f"the probe ran: {rc} {out!r} {err}")
    with open(own, "rb") as f:
        data = f.read()
    expect(data == OWN_LINE * 100,
           f"the program's file holds its own bytes only: {len(data)} bytes, "
           f"{data.replace(OWN_LINE, b'')[:200]!r} besides its lines")
    lines = log_lines(rlog)
    with open(log, "rb") as f:
        logged = f.read().decode("utf-8", "replace")
    if how != "raw":
        check_footed(lines, 6, "the run log")
        expect("p2pshim: summary" in logged, f"the exit summary in the log file: {logged!r}")
        expect("p2pshim: warning" not in err, f"no warning: {err}")
        return
    # The instruction itself: the shim's descriptors are gone, and the
    # program's file sits at every number. Nothing of the shim's reaches
    # it; what stops is said on stderr, once for each file.
    expect(not lines or lines[-1].get("type") != "footer", "no footer after the loss")
    expect(len(warnings(err, "the run log")) == 1 and "no longer open" in err,
           f"one warning about the run log on stderr: {err}")
    expect(len(warnings(err, "the log file")) == 1, f"one warning about the log file: {err}")
    expect("p2pshim: summary" in err, f"the summary on stderr instead: {err}")


def exec_by(how, probe, preload, standin, tmp):
    rlog = os.path.join(tmp, "run.jsonl")
    rc, out, err = run(probe, ["exec", how], {"P2PSHIM_RUN_LOG": rlog}, preload, standin)
    expect(rc == 0, f"the probe exec'd /bin/true: {rc} {err}")
    check_footed(log_lines(rlog), 50, f"the run log before {how}")


def cut(case, probe, preload, standin, tmp):
    """A full disk (tmpfs) or the file size limit: the run log ends with
    whole lines and a log-cut event; said once on stderr."""
    env = {"P2PSHIM_LOG": "info"}
    where = tmp
    if case == "disk_full":
        where = os.path.join(tmp, "mnt")
        os.mkdir(where)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", where],
                           capture_output=True)
        if m.returncode != 0:
            print("SKIP: cannot mount a tmpfs:", m.stderr.decode().strip())
            return 77
    else:
        env["FD_PROBE_FSIZE"] = str(64 << 10)
    rlog, log = os.path.join(where, "run.jsonl"), os.path.join(where, "log.txt")
    env.update({"P2PSHIM_RUN_LOG": rlog, "P2PSHIM_LOG_FILE": log})
    try:
        rc, out, err = run(probe, ["many", "3000"], env, preload, standin)
        expect(rc == 0 and "done" in out, f"the probe ran: {rc} {out!r} {err}")
        lines = log_lines(rlog)
        reason = "disk-full" if case == "disk_full" else "file-too-big"
        last = lines[-1] if lines else {}
        expect(last.get("type") == "event" and last.get("what") == "log-cut" and
               last.get("detail") == reason, f"a last log-cut event ({reason}): {last}")
        expect(0 < len(decisions(lines)) < 3000, f"some records: {len(decisions(lines))}")
        expect(len(warnings(err, "cannot write the run log")) == 1,
               f"one warning about the run log on stderr: {err}")
        with open(log, "rb") as f:
            logged = f.read()
        expect(not logged or logged.endswith(b"\n"), f"the log file's lines whole: {logged!r}")
        expect(b"p2pshim: summary" in logged or "p2pshim: summary" in err,
               f"the exit summary somewhere: {logged!r} {err}")
    finally:
        if case == "disk_full":
            subprocess.run(["umount", where])
    return 0


def main():
    case, probe, preload, standin = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        kind, _, how = case.partition(".")
        rc = 0
        if kind == "close_all":
            close_all(how, probe, preload, standin, tmp)
        elif kind == "exec":
            exec_by(how, probe, preload, standin, tmp)
        elif kind in ("disk_full", "file_size"):
            rc = cut(kind, probe, preload, standin, tmp)
        else:
            print("unknown case", case)
            return 2
    if rc:
        return rc
    print("FAILED" if failures else "ok", case)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
