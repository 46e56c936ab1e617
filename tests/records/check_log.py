#!/usr/bin/env python3
"""Runs rec_probe under the shim with a run log and checks the log.

check_log.py CASE PROBE PRELOAD STANDIN_DIR [LAUNCHER]
CASE: paths | observe | fork | fork_exit | fork_exit_few | fork_quiet | exec | exec_fail |
      exec_self | reuse | odd_exe | many | many_capped | bounce | observe_bounce | relay
The checks read the log as any consumer would (docs/LOG_FORMAT.md) and
compare it with what the probe did and what the stand-in counted."""
import json
import re
import os
import subprocess
import sys
import tempfile

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(probe, scenario, env_extra, preload, standin):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = standin
    env.update(env_extra)
    if preload:
        env["LD_PRELOAD"] = preload
    with subprocess.Popen([probe, scenario], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        out, err = proc.communicate(timeout=120)
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    p.pid = proc.pid
    return p


def read_lines(path):
    """The log's lines as JSON (strict UTF-8, as JSON requires)."""
    with open(path, "rb") as f:
        return [json.loads(l) for l in f if l.strip()]


def report(launcher, path):
    """`p2pshim report` of path: (exit status, stdout, its data records)."""
    rep = subprocess.run([launcher, "report", path], capture_output=True, timeout=60)
    out = rep.stdout.decode("utf-8", "replace")
    data = [json.loads(l[2:]) for l in out.splitlines() if l.startswith("@ ")]
    return rep.returncode, out, data


def read_log(path):
    lines = read_lines(path)
    expect(lines and lines[0].get("type") == "header", f"{path}: first line is the header")
    expect(lines and lines[-1].get("type") == "footer", f"{path}: last line is a footer")
    if lines and lines[0].get("type") == "header":
        h = lines[0]
        expect(h.get("format") == "p2pshim-log" and h.get("version") == 2, "header format v2")
        expect(h.get("process", "").count("/") == 2 and isinstance(h.get("ppid"), int),
               f"header names its process and parent: {h}")
    decisions = [l for l in lines if l.get("type") == "decision"]
    ids = [d["id"] for d in decisions]
    expect(len(ids) == len(set(ids)), "decision ids unique")
    footer = lines[-1] if lines else {}
    expect(footer.get("records") == len(decisions),
           f"footer records {footer.get('records')} == {len(decisions)} decisions")
    return lines, decisions, footer


def cross(decisions):
    return [d for d in decisions if d["src"]["dev"] >= 0 and d["dst"]["dev"] >= 0
            and d["src"]["dev"] != d["dst"]["dev"]]


def check_relay(path, out, launcher):
    """A relayed copy is one copy in the profile: one activity line joined
    to its decision (the link's kind, the program's bytes), nothing of the
    shim's own copies as lines of their own, and the report's totals are
    the program's bytes."""
    lines, decisions, footer = read_log(path)
    relayed = int(out.split("relayed=")[1].split()[0])
    relays = [d for d in decisions if d["action"] == "relay"]
    expect(len(relays) == 2 and all(d["reason"] == "upgraded-relay" for d in relays),
           f"two relay decisions, reason upgraded-relay: {relays}")
    expect(sum(d["bytes"] for d in relays) == relayed,
           f"relay decisions' bytes {[d['bytes'] for d in relays]} sum to {relayed}")
    acts = [l for l in lines if l.get("type") == "activity"]
    by_id = {d["id"]: d for d in decisions}
    expect(all(a["decision"] in by_id for a in acts),
           f"every activity line joins a decision: {[a['decision'] for a in acts]}")
    for d in relays:
        mine = [a for a in acts if a["decision"] == d["id"]]
        expect(len(mine) == 1, f"relay {d['id']}: one activity line, found {len(mine)}")
        for a in mine:
            expect(a["kind"] == "PTOP" and a["bytes"] == d["bytes"] and
                   (a["src_dev"], a["dst_dev"]) == (d["src"]["dev"], d["dst"]["dev"]) and
                   0 < a["start_ns"] < a["end_ns"],
                   f"relay {d['id']}: PTOP of its bytes across its devices: {a}")
    total = sum(d["bytes"] for d in decisions)
    expect(sum(a["bytes"] for a in acts) == total,
           f"activity bytes {sum(a['bytes'] for a in acts)} == program bytes {total}")
    expect(footer.get("unjoined", 0) == 0, f"nothing unjoined: {footer}")
    if launcher:
        rc, text, data = report(launcher, path)
        tot = [r for r in data if r.get("record") == "total"]
        expect(rc == 0 and tot and tot[0]["bytes"] == total and tot[0]["peer_bytes"] == total
               and tot[0]["copies"] == len(decisions) and tot[0]["by_activity"] == len(decisions),
               f"report total: {tot} (exit {rc}), want {total} bytes peer, timed by CUPTI")
        run_ = [r for r in data if r.get("record") == "run"]
        expect(run_ and run_[0]["orphan_activities"] == 0, f"report: no orphan activity {run_}")


def main():
    case, probe, preload, standin = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="p2p-records-")
    pattern = os.path.join(tmp, "run-%p.jsonl")
    env = {"P2PSHIM_RUN_LOG": pattern}
    scenario = {"observe": "paths", "many_capped": "many", "observe_bounce": "bounce",
                "reuse": "paths", "odd_exe": "paths", "cupti_bounded": "lots"}.get(case, case)
    if case == "observe_bounce":
        env["P2PSHIM_MODE"] = "observe"
        env["P2PSHIM_CUPTI"] = "0"
        env["P2PSHIM_LOG"] = "info"
    if case == "bounce":
        # The probe's 2 MiB buffer is reused: under the default minimums
        # only a reused pageable buffer of 4 MiB or more is bounced.
        env["P2PSHIM_BOUNCE_MIN"] = "64K"
    if case == "observe":
        env["P2PSHIM_MODE"] = "observe"
        env["P2PSHIM_CUPTI"] = "0"
    if case == "cupti_bounded":
        cupti = os.path.join(os.path.dirname(standin.rstrip("/")), "standin-cupti")
        env["LD_LIBRARY_PATH"] = cupti + ":" + standin
        env["P2PSHIM_CUPTI"] = "1"
        env["P2PSHIM_LOG"] = "debug"
    if case == "relay":
        # CUPTI from the stand-in's libcupti.so (STANDIN_DIR/../standin-cupti)
        cupti = os.path.join(os.path.dirname(standin.rstrip("/")), "standin-cupti")
        env["LD_LIBRARY_PATH"] = cupti + ":" + standin
        env["P2PSHIM_CUPTI"] = "1"
        env["P2PSHIM_POOL_RELAY"] = "3M"
    if case in ("many_capped", "fork_exit"):
        env["P2PSHIM_RECORD_LIMIT"] = "1K"
    p = run(probe, scenario, env, preload, standin)
    expect(p.returncode == 0, f"probe exited {p.returncode}: {p.stderr.strip()}")
    logs = sorted(os.listdir(tmp))
    parent_log = os.path.join(tmp, "run-%d.jsonl" % p.pid) if hasattr(p, "pid") else None
    out = p.stdout

    if case in ("paths", "observe"):
        expect(len(logs) == 1, f"one log file, found {logs}")
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        by_api = {}
        for d in decisions:
            by_api.setdefault(d["api"], []).append(d)
        expect(len(decisions) == 5, f"5 decisions, found {len(decisions)}")
        h2d = by_api.get("cuMemcpyHtoD_v2", [{}])[0]
        expect(h2d.get("reason") == "host-memory" and h2d.get("src", {}).get("kind") == "unknown",
               "host-to-device from pageable memory: host-memory, kind unknown")
        peer = by_api.get("cuMemcpyPeer", [{}])[0]
        want = "would-upgrade" if case == "observe" else "enable-then-pass"
        want_reason = "observe-would-upgrade" if case == "observe" else "upgraded"
        expect(peer.get("action") == want and peer.get("reason") == want_reason,
               f"cuMemcpyPeer: action {peer.get('action')} reason {peer.get('reason')}, want {want} {want_reason}")
        dtod = by_api.get("cuMemcpyDtoD_v2", [{}])[0]
        expect(dtod.get("reason") == "same-device", "same-device copy")
        dtoh = by_api.get("cuMemcpyDtoH_v2", [{}])[0]
        expect(dtoh.get("reason") == "host-memory" and dtoh.get("src", {}).get("dev") == 1,
               "device-to-host from device 1")
        pool = by_api.get("cuMemcpyPeerAsync", [{}])[0]
        expect(pool.get("reason") == "pool-memory" and pool.get("src", {}).get("kind") == "pool",
               f"pool copy: reason {pool.get('reason')}")
        events = [l for l in lines if l.get("type") == "event" and l.get("what") == "peer-enable"]
        header = lines[0]
        if case == "observe":
            expect(header.get("mode") == "observe", "header mode observe")
            expect(not events, "observe mode enabled nothing")
            ref = run(probe, "paths", {}, None, standin)
            expect(ref.stdout == out, f"observe changed what the program sees: "
                   f"{out.strip()} vs without the shim {ref.stdout.strip()}")
            expect("peer=0" in out, "observe: nothing went peer")
        else:
            expect(len(events) == 1 and events[0]["from"] == 0 and events[0]["to"] == 1,
                   "one peer-enable event 0->1")
            # the cross copy (and the pool copy, which the stand-in lets ride
            # the context link) went peer; nothing was staged
            expect("staged=0" in out and "peer=0" not in out,
                   f"upgrade: cross copies went peer ({out.strip()})")
    elif case == "fork":
        child = int(out.split("child=")[1].split()[0])
        expect(len(logs) == 2, f"two logs (parent and child), found {logs}")
        for name in logs:
            lines, decisions, footer = read_log(os.path.join(tmp, name))
            n = len(cross(decisions))
            if name == "run-%d.jsonl" % child:
                expect(n == 2, f"child log: 2 cross decisions, found {n}")
                expect(lines[0].get("pid") == child, "child header names the child")
            else:
                expect(n == 1, f"parent log: 1 cross decision, found {n}")
    elif case in ("fork_exit", "fork_exit_few"):
        # The child has no writer thread: each record is written by the copy
        # that made it; _exit writes no footer, and loses nothing else.
        want = 600 if case == "fork_exit" else 2
        child = int(out.split("child=")[1].split()[0])
        expect(len(logs) == 2, f"two logs (parent and child), found {logs}")
        name = "run-%d.jsonl" % child
        lines = read_lines(os.path.join(tmp, name)) if name in logs else []
        n = len(cross([l for l in lines if l.get("type") == "decision"]))
        expect(lines and lines[0].get("type") == "header" and lines[0].get("pid") == child,
               "child log starts with its header")
        expect(lines and lines[0].get("ppid") == p.pid, "child header names its parent")
        expect(n == want, f"child log: all {want} decisions, found {n}")
        expect(not any(l.get("type") == "footer" for l in lines), "no footer after _exit")
        if len(sys.argv) > 5 and name in logs:
            rc, text, data = report(sys.argv[5], os.path.join(tmp, name))
            run_ = [r for r in data if r.get("record") == "run"]
            expect(rc == 0 and run_ and run_[0]["decisions"] == want and run_[0]["cut_short"],
                   f"report of the child's log: exit {rc}, {run_}")
        parent = [l for l in logs if l != name]
        if parent:
            _, decisions, _ = read_log(os.path.join(tmp, parent[0]))
            expect(len(cross(decisions)) == 1, "parent log: 1 cross decision")
    elif case == "fork_quiet":
        # A child that records nothing leaves no log (and no empty file).
        expect(len(logs) == 1, f"only the parent's log, found {logs}")
        for name in logs:
            expect(os.path.getsize(os.path.join(tmp, name)) > 0, f"{name} is empty")
            _, decisions, _ = read_log(os.path.join(tmp, name))
            expect(len(cross(decisions)) == 1, "parent log: 1 cross decision")
    elif case == "exec":
        expect(len(logs) == 1, f"one log, found {logs}")
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        expect(len(cross(decisions)) == 1, "the copy before exec is in the log")
    elif case in ("exec_fail", "exec_self"):
        # exec_fail: the footer written before the exec counts the image so
        # far; the one at exit counts it all. exec_self: two images, one
        # process, one run.
        expect(len(logs) == 1, f"one log, found {logs}")
        path = os.path.join(tmp, logs[0])
        if case == "exec_fail":
            lines, decisions, footer = read_log(path)
        else:  # two images: ids restart, each image has its footer
            lines = read_lines(path)
            decisions = [l for l in lines if l.get("type") == "decision"]
        headers = [l for l in lines if l.get("type") == "header"]
        footers = [l for l in lines if l.get("type") == "footer"]
        want_headers = 1 if case == "exec_fail" else 2
        expect(len(headers) == want_headers and len(footers) == 2,
               f"{len(headers)} headers, {len(footers)} footers")
        expect(len({h.get("process") for h in headers}) == 1, "one process in every header")
        expect(len(cross(decisions)) == 3 if case == "exec_fail" else 2,
               f"cross decisions: {len(cross(decisions))}")
        if len(sys.argv) > 5:
            rc, text, data = report(sys.argv[5], path)
            run_ = [r for r in data if r.get("record") == "run"]
            r = run_[0] if run_ else {}
            expect(rc == 0 and r.get("records") == len(decisions) == r.get("decisions"),
                   f"report: {r.get('records')} records for {len(decisions)} decisions")
            expect(r.get("segments") == want_headers and r.get("runs") == 1,
                   f"report: segments {r.get('segments')}, runs {r.get('runs')}")
            exec_note = "process images (exec)" in text
            expect(exec_note == (case == "exec_self"), f"exec note: {exec_note}")
    elif case == "reuse":
        # A second run with the same path (no %p): the report reads the last.
        path = os.path.join(tmp, "fixed.jsonl")
        p2 = run(probe, "paths", {"P2PSHIM_RUN_LOG": path}, preload, standin)
        p3 = run(probe, "paths", {"P2PSHIM_RUN_LOG": path}, preload, standin)
        expect(p2.returncode == 0 and p3.returncode == 0, "both runs exited 0")
        lines = read_lines(path)
        headers = [l for l in lines if l.get("type") == "header"]
        expect(len(headers) == 2 and headers[0].get("process") != headers[1].get("process"),
               f"two runs, two processes: {headers}")
        if len(sys.argv) > 5:
            rc, text, data = report(sys.argv[5], path)
            r = ([x for x in data if x.get("record") == "run"] or [{}])[0]
            expect(rc == 0 and r.get("decisions") == 5 and r.get("records") == 5,
                   f"report: the last run's 5 decisions: {r}")
            expect(r.get("runs") == 2 and r.get("segments") == 1 and r.get("pid") == p3.pid,
                   f"report: runs {r.get('runs')}, segments {r.get('segments')}")
            expect("process images (exec)" not in text and "holds 2 runs" in text,
                   "report notes: a reused path, no exec")
    elif case == "odd_exe":
        # A program path that is not UTF-8 (a stray byte, a character cut
        # short): the log stays JSON, the exact bytes are in exe_hex.
        odd = os.path.join(tmp.encode(), b"rec\xff\xe2\x82probe")
        with open(probe, "rb") as src, open(odd, "wb") as dst:
            dst.write(src.read())
        os.chmod(odd, 0o755)
        p = run(odd, "paths", env, preload, standin)
        expect(p.returncode == 0, f"odd probe exited {p.returncode}")
        path = os.path.join(tmp, "run-%d.jsonl" % p.pid)
        lines, decisions, footer = read_log(path)
        h = lines[0] if lines else {}
        expect(bytes.fromhex(h.get("exe_hex", "")) == odd,
               f"exe_hex gives the exact path: {h.get('exe_hex')}")
        expect(h.get("exe", "").endswith("rec\ufffd\ufffd\ufffdprobe"),
               f"exe shows each stray byte as U+FFFD: {h.get('exe')!r}")
        if len(sys.argv) > 5:
            rc, text, data = report(sys.argv[5], path)
            expect(rc == 0 and "rec\ufffd\ufffd\ufffdprobe" in text, f"report: exit {rc}")
    elif case == "bounce":
        expect(len(logs) == 1, f"one log, found {logs}")
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        by_api = {d["api"]: d for d in decisions}  # the last round's: the bounced one
        dtoh, htod = by_api.get("cuMemcpyDtoH_v2", {}), by_api.get("cuMemcpyHtoD_v2", {})
        expect(dtoh.get("action") == "bounce-snapshot" and dtoh.get("src", {}).get("dev") == 0
               and dtoh.get("dst", {}).get("kind") == "unknown",
               f"the D2H: bounce-snapshot from device 0 to pageable memory: {dtoh}")
        expect(htod.get("action") == "bounce-served" and htod.get("dst", {}).get("dev") == 1
               and htod.get("bytes") == 2 << 20,
               f"the H2D: bounce-served to device 1, 2 MiB: {htod}")
        ev = [l for l in lines if l.get("type") == "event" and l.get("what") == "bounce"]
        served = sum(int(e.get("detail", "0")) for e in ev)
        # the malloc'd buffer's partial head and tail pages come from the host
        expect(ev and all(e.get("from") == 0 and e.get("to") == 1 for e in ev)
               and (2 << 20) - 8192 <= served <= 2 << 20,
               f"bounce events 0->1 covering the snapshot's pages: {ev}")
        if len(sys.argv) > 5:
            rep = subprocess.run([sys.argv[5], "report", os.path.join(tmp, logs[0])],
                                 capture_output=True, text=True, timeout=60)
            data = [json.loads(l[2:]) for l in rep.stdout.splitlines() if l.startswith("@ ")]
            bc = [r for r in data if r.get("record") == "bounces"]
            expect(rep.returncode == 0 and len(bc) == 1 and bc[0]["bytes"] == served
                   and bc[0]["src"] == 0 and bc[0]["dst"] == 1,
                   f"report: bounces {bc} (exit {rep.returncode})")
    elif case == "observe_bounce":
        expect(len(logs) == 1, f"one log, found {logs}")
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        expect(decisions and not any(d["action"].startswith("bounce") for d in decisions),
               f"observe mode: nothing bounced: {[d['action'] for d in decisions]}")
        ev = [l for l in lines if l.get("type") == "event" and l.get("what") == "would-bounce"]
        expect(len(ev) == 1 and ev[0].get("from") == 0 and ev[0].get("to") == 1
               and ev[0].get("detail") == str(2 << 20),
               f"one would-bounce event 0->1 of 2 MiB: {ev}")
        expect("summary bounce-candidates pair=0->1 pairs=1 bytes=2097152" in p.stderr,
               f"the exit summary names the candidate: {p.stderr.strip()}")
        expect("summary bounce snapshots" not in p.stderr, "observe mode bounced nothing")
        if len(sys.argv) > 5:  # the launcher: its report counts the candidate
            rep = subprocess.run([sys.argv[5], "report", os.path.join(tmp, logs[0])],
                                 capture_output=True, text=True, timeout=60)
            data = [json.loads(l[2:]) for l in rep.stdout.splitlines() if l.startswith("@ ")]
            bc = [r for r in data if r.get("record") == "bounce-candidates"]
            expect(rep.returncode == 0 and bc == [{"record": "bounce-candidates", "src": 0,
                                                   "dst": 1, "pairs": 1, "bytes": 2 << 20}],
                   f"report: bounce-candidates {bc} (exit {rep.returncode})")
            expect("0->1  1 pairs, 2.0 MiB  candidates" in rep.stdout,
                   "report text names the pair")
            html = os.path.join(tmp, "report.html")
            rh = subprocess.run([sys.argv[5], "report", "--format", "html", "-o", html,
                                 os.path.join(tmp, logs[0])], capture_output=True, text=True,
                                timeout=60)
            page = open(html).read() if rh.returncode == 0 and os.path.exists(html) else ""
            expect('<table id="bounces">' in page and "<td>0&rarr;1</td><td>1</td>" in page,
                   f"html report: the bounces table (exit {rh.returncode})")
    elif case == "relay":
        expect(len(logs) == 1, f"one log, found {logs}")
        check_relay(os.path.join(tmp, logs[0]), out, sys.argv[5] if len(sys.argv) > 5 else None)
    elif case == "cupti_bounded":
        # 80000 copies, each one decision and one activity line joined to
        # it, while the join held at most the 65536 calls it keeps.
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        ids = {d["id"] for d in decisions}
        acts = [l for l in lines if l.get("type") == "activity"]
        expect(footer.get("records") == 80000 and footer.get("dropped") == 0,
               f"80000 decisions, none dropped: {footer}")
        expect(len(acts) == 80000 and all(a["decision"] in ids for a in acts),
               f"80000 activity lines, all joined: {len(acts)}, "
               f"{sum(a['decision'] not in ids for a in acts)} not")
        m = re.search(r"(\d+) calls held, (\d+) given back", p.stderr)
        expect(m is not None and int(m.group(1)) <= 65536 and int(m.group(2)) >= 80000 - 65536,
               f"the join's map bounded: {m.group(0) if m else 'no line'}")
    elif case in ("many", "many_capped"):
        lines, decisions, footer = read_log(os.path.join(tmp, logs[0]))
        total = footer.get("records", 0) + footer.get("dropped", 0)
        # 20000 copies plus nothing else: every one written or counted dropped
        expect(total == 20000, f"records + dropped = {total}, want 20000")
        if case == "many":
            expect(footer.get("dropped") == 0, "no drop with the default limit")
        tids = {d["tid"] for d in decisions}
        expect(len(tids) >= 2 or case == "many_capped", f"several threads recorded: {len(tids)}")
    else:
        print("unknown case", case)
        return 2
    for name in os.listdir(tmp.encode()):
        os.unlink(os.path.join(tmp.encode(), name))
    os.rmdir(tmp)
    print(f"{case}: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
