#!/usr/bin/env python3
"""harm_run.py: what the shim costs programs that never bounce, and what it
gains in loops that do: harmbench (static and shared cudart) and
harm_torch.py, run without and with the shim (LD_PRELOAD), processes
alternating.

Each group (a row of harmbench at its sizes in one process, a bounce loop,
a PyTorch group) runs in three arms: noshim, shim, and noshim2 (a second
set without the shim: the A/A comparison that gives the spread). A cycle
runs every group once in each arm, the arms' order rotated from cycle to
cycle; --procs cycles for the rows that never bounce, --bounce-procs for
the loops, --torch-procs for PyTorch. A figure is the median over an arm's
processes of each process's figure; ratio = shim / no shim, A/A = noshim2
/ noshim. Targets (harm_stats.py): every row that never bounces <= 1.03;
loops from round 2 on: pageable untouched 256 MiB across GPUs >= 50x,
x.cpu().cuda() shape (fresh buffers, same GPU) >= 100x, pinned >= 1.6x,
the CPU reading in between <= 1.03; free device memory at exit equal and
no userfaultfd range held by the shim in rows that never bounce.

Prints the table of every measurement, the memory held at exit, then
"== harm summary" and the short table. Writes every process's lines and
the aggregates to --json. Standard library only. Exit: 0 every target
met and every byte right; 1 otherwise; 2 nothing could run.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harm_stats  # noqa: E402

HARM_ROWS = ("fresh_pinned", "pinned_write", "malloc_read", "fresh_read", "first_page",
             "small")
BOUNCE_CONFIGS = (("pageable", "none"), ("pageable", "read"), ("pinned", "none"),
                  ("pinned", "read"), ("fresh", "none"))
SKIP = 77


def repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(os.path.dirname(here)))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(repo_root(), "build-gpu"))
    p.add_argument("--shim", help="libp2pshim.so (default: BUILD/interpose/libp2pshim.so)")
    p.add_argument("--json", default=os.path.join(repo_root(), "results", "harm-results.json"),
                   help="results file (default: results/, which git ignores)")
    p.add_argument("--quick", action="store_true",
                   help="static cudart only, sizes 1M,16M,256M, 3/2/2 processes per arm")
    p.add_argument("--sizes", help="sizes of the rows that never bounce (default "
                   "1M,4M,16M,64M,256M)")
    p.add_argument("--bounce-sizes", default="256M", help="sizes of the bounce loops")
    p.add_argument("--cudart", help="builds for the rows that never bounce (default "
                   "static,shared)")
    p.add_argument("--bounce-cudart", default="static", help="builds for the loops")
    p.add_argument("--rows", default=",".join(HARM_ROWS) + ",bounce,torch",
                   help="groups to run: harmbench rows, bounce, torch (or only "
                   "torch.harm, torch.train, torch.loops)")
    p.add_argument("--procs", type=int, help="processes per arm, rows that never bounce "
                   "(default 5)")
    p.add_argument("--bounce-procs", type=int, help="processes per arm, loops (default 3)")
    p.add_argument("--torch-procs", type=int, help="processes per arm, PyTorch (default 2)")
    p.add_argument("--shim-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the shim arm (e.g. P2PSHIM_BOUNCE=off)")
    p.add_argument("--max-seconds", type=float, default=330,
                   help="start no process after this many seconds (0: no limit)")
    p.add_argument("--timeout", type=int, default=180, help="seconds per process")
    p.add_argument("--cpus", default="gpu",
                   help="CPUs every process of every arm runs on: gpu (those local to "
                   "GPU 0, as sysfs lists them; all when unknown), all, or a list "
                   "such as 0-7,16")
    p.add_argument("--rejudge", metavar="RESULTS",
                   help="run nothing: judge a results file again (its processes' lines) with "
                   "these statistics, the table and summary printed and written to --json")
    p.add_argument("--self-test", action="store_true",
                   help="check the statistics on synthetic results (no GPU) and exit")
    a = p.parse_args(argv)
    q = a.quick
    a.sizes = a.sizes or ("1M,16M,256M" if q else "1M,4M,16M,64M,256M")
    a.cudart = a.cudart or ("static" if q else "static,shared")
    a.procs = a.procs or (3 if q else 5)
    a.bounce_procs = a.bounce_procs or (2 if q else 3)
    a.torch_procs = a.torch_procs or 2
    return a


def groups_for(a, ndev, torch_devices):
    """What to run: a list of (name, kind, procs, argv)."""
    here = os.path.dirname(os.path.abspath(__file__))
    rows = a.rows.split(",")
    binary = lambda cudart: os.path.join(a.build_dir, "tools", "bench", "p2pbench",
                                         "harmbench_" + cudart)
    out = []
    for cudart in a.cudart.split(","):
        for row in HARM_ROWS:
            if row in rows:
                out.append(("%s %s" % (cudart, row), "harm", a.procs,
                            [binary(cudart), "--row", row, "--sizes", a.sizes]))
    pairs = ["0,0"] + (["0,1"] if ndev >= 2 else [])
    if "bounce" in rows:
        for cudart in a.bounce_cudart.split(","):
            for pair in pairs:
                for memory, touch in BOUNCE_CONFIGS:
                    out.append(("%s bounce %s %s %s" % (cudart, memory, touch, pair), "bounce",
                                a.bounce_procs,
                                [binary(cudart), "--row", "bounce", "--memory", memory,
                                 "--touch", touch, "--pair", pair, "--sizes", a.bounce_sizes]))
    script = [sys.executable, os.path.join(here, "harm_torch.py")]
    if torch_devices and ("torch" in rows or "torch.harm" in rows):
        out.append(("torch harm", "torch", a.torch_procs, script + ["--rows",
                                                                   "cpu_sum,pinned_copy"]))
    if torch_devices and ("torch" in rows or "torch.train" in rows):
        out.append(("torch train", "torch", a.torch_procs, script + ["--rows", "train"]))
    if torch_devices and ("torch" in rows or "torch.loops" in rows):
        loops = "cpu_read_cuda,cpu_cuda" + (",cpu_to1" if torch_devices >= 2 else "")
        out.append(("torch loops", "torch", a.torch_procs, script + ["--rows", loops]))
    return out


def parse_cpulist(text):
    """The CPU numbers of a sysfs-style list ("0-7,16"); ValueError if malformed."""
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    if not cpus:
        raise ValueError(text)
    return sorted(cpus)


def choose_cpus(spec, bus0):
    """(cpus or None for no pinning, how they were chosen). Pinning every arm
    to the CPUs local to the GPU takes the NUMA placement of host buffers
    out of the spread between processes; it is the same for every arm."""
    if spec == "all":
        return None, "all CPUs"
    if spec != "gpu":
        return parse_cpulist(spec), "--cpus " + spec
    path = "/sys/bus/pci/devices/%s/local_cpulist" % bus0.lower()
    try:
        with open(path) as f:
            cpus = parse_cpulist(f.read())
    except (OSError, ValueError):
        return None, "all CPUs (%s unreadable)" % path
    usable = sorted(set(cpus) & os.sched_getaffinity(0))
    if not usable:
        return None, "all CPUs (none of %s usable)" % path
    return usable, "local to GPU 0 (%s)" % path


def arm_env(arm, shim, shim_env):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONUNBUFFERED"] = "1"
    if arm == "shim":
        env["LD_PRELOAD"] = shim
        for kv in shim_env:
            k, _, v = kv.partition("=")
            env[k] = v
    return env


def run_one(group, arm, cycle, a, shim):
    """Runs one process; returns its record (lines tagged with arm and proc)."""
    name, kind, _, argv = group
    argv = argv + ["--label", arm]
    t0 = time.monotonic()
    try:
        pin = (lambda: os.sched_setaffinity(0, a.cpu_set)) if a.cpu_set else None
        p = subprocess.run(argv, env=arm_env(arm, shim, a.shim_env), capture_output=True,
                           text=True, timeout=a.timeout, preexec_fn=pin)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:  # its output comes as bytes, or None
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        rc, stdout, stderr = 124, text(e.stdout), text(e.stderr) + "\ntimed out"
    lines = []
    for text in stdout.splitlines():
        if text.startswith("{"):
            try:
                line = json.loads(text)
            except ValueError:
                continue
            line.update(arm=arm, proc="%s/%s/%d" % (name, arm, cycle))
            lines.append(line)
    if rc not in (0, SKIP):
        tail = [l for l in stderr.splitlines() if l.strip()][-3:]
        print("FAIL: %s (%s, cycle %d) exit %d: %s" % (name, arm, cycle + 1, rc,
                                                      " | ".join(tail) or "no output"))
    return {"group": name, "kind": kind, "arm": arm, "cycle": cycle, "argv": argv, "rc": rc,
            "wall_s": round(time.monotonic() - t0, 3), "lines": lines,
            "stderr_tail": stderr[-2000:]}


def probe(argv, what):
    """Runs a probe that prints one JSON line with "count"; (that line, note)."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                           env=arm_env("noshim", "", []))
    except (OSError, subprocess.TimeoutExpired) as e:
        return {}, "%s: %s" % (what, e)
    for text in p.stdout.splitlines():
        if text.startswith("{"):
            return json.loads(text), ""
    return {}, "%s: exit %d: %s" % (what, p.returncode,
                                   (p.stdout + p.stderr).strip().splitlines()[-1:] or "")


def run_all(a, shim, groups):
    records, t0, stopped = [], time.monotonic(), 0
    cycles = max(g[2] for g in groups)
    for c in range(cycles):
        for g in groups:
            if c >= g[2]:
                continue
            for i in range(len(harm_stats.ARMS)):
                arm = harm_stats.ARMS[(i + c) % len(harm_stats.ARMS)]
                if a.max_seconds and time.monotonic() - t0 > a.max_seconds:
                    stopped += 1
                    continue
                records.append(run_one(g, arm, c, a, shim))
        print("cycle %d/%d done: %d processes, %.1f s" % (c + 1, cycles, len(records),
                                                         time.monotonic() - t0))
        sys.stdout.flush()
    if stopped:
        print("time limit (--max-seconds %g): %d processes not started" % (a.max_seconds,
                                                                           stopped))
    return records, time.monotonic() - t0, stopped


def report(records, elapsed, stopped, out_json, meta):
    lines = [l for r in records for l in r["lines"]]
    failed = [r for r in records if r["rc"] not in (0, SKIP)]
    measures, helds = harm_stats.aggregate(lines), harm_stats.held(lines)
    print("\n== harm measurements (medians over processes; ms, or us per call)")
    for l in harm_stats.row_table(measures):
        print(l)
    print("\n== held at exit (free device memory summed over the devices used, bytes; "
          "userfaultfd ranges of the shim)")
    for l in harm_stats.held_table(helds):
        print(l)
    by_kind = {}
    for r in records:
        by_kind.setdefault(r["kind"], []).append(r["wall_s"])
    summary = harm_stats.summary(measures, helds, len(lines))
    summary.append("%-4s every process exited cleanly (%d of %d)" % (
        "ok" if not failed else "FAIL", len(records) - len(failed), len(records)))
    if stopped:
        summary.append("FAIL %d processes not started: time limit" % stopped)
    summary.append("time: %.0f s, %s" % (elapsed, ", ".join(
        "%s %d processes %.0f s" % (k, len(v), sum(v)) for k, v in sorted(by_kind.items()))))
    print("\n== harm summary")
    for l in summary:
        print(l)
    meta.update(elapsed_s=round(elapsed, 1), processes_not_started=stopped)
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    with open(out_json, "w") as f:
        json.dump({"meta": meta, "summary": summary, "measurements": measures,
                   "held": helds, "processes": records}, f, indent=1)
    print("results: %s" % out_json)
    return 0 if harm_stats.passed(measures, helds) and not failed and not stopped else 1


def main(argv):
    a = parse_args(argv)
    if a.self_test:
        import harm_selftest
        return harm_selftest.run()
    if a.rejudge:
        with open(a.rejudge) as f:
            saved = json.load(f)
        meta = dict(saved.get("meta", {}), rejudged_from=a.rejudge)
        return report(saved["processes"], meta.get("elapsed_s", 0.0),
                      meta.get("processes_not_started", 0), a.json, meta)
    shim = os.path.abspath(a.shim or os.path.join(a.build_dir, "interpose", "libp2pshim.so"))
    static = os.path.join(a.build_dir, "tools", "bench", "p2pbench", "harmbench_static")
    for path in (shim, static):
        if not os.path.exists(path):
            print("harm_run: %s not found (build first, or --build-dir)" % path)
            return 2
    devices, note = probe([static, "--row", "devices"], "harmbench devices")
    ndev = int(devices.get("count", 0))
    if ndev < 1:
        print("harm_run: no GPU (%s)" % note)
        return 2
    torch_devices = 0
    if any(r.startswith("torch") for r in a.rows.split(",")):
        here = os.path.dirname(os.path.abspath(__file__))
        found, note = probe([sys.executable, os.path.join(here, "harm_torch.py"),
                             "--probe"], "harm_torch")
        torch_devices = int(found.get("count", 0))
        if not torch_devices:
            print("torch: skipped (%s)" % note)
    try:
        a.cpu_set, pinning = choose_cpus(a.cpus, devices.get("bus0", ""))
    except ValueError:
        print("harm_run: --cpus %s: not a CPU list" % a.cpus)
        return 2
    groups = groups_for(a, ndev, torch_devices)
    print("harm_run: %d GPUs, shim %s, %d groups, arms %s rotated per cycle, CPUs: %s" % (
        ndev, shim, len(groups), "/".join(harm_stats.ARMS), pinning))
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "host": platform.node(), "devices": ndev, "torch_devices": torch_devices,
            "shim": shim, "shim_env": a.shim_env, "cpus": pinning, "args": vars(a)}
    records, elapsed, stopped = run_all(a, shim, groups)
    return report(records, elapsed, stopped, a.json, meta)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
