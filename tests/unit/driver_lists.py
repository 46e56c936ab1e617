#!/usr/bin/env python3
"""driver_lists.py [--self-test] DRIVER_DEF CUDA_API_DEF SD_EXPORTS_DEF HOOKS_DEF

The driver functions p2pshim calls for itself, in its two lists (the shim's
interpose/driver/driver.def, exact symbols typed PFN_<base>_v<version>; the
launcher's tools/launcher/cuda_api.def, a base and a version asked of
cuGetProcAddress), against what the stand-in driver exports
(tests/standin/sd_exports.def, its hooked rows' values taken from
interpose/driver/hooks.def), so that the CPU tests reach every one:

- each symbol of driver.def is a stand-in export with the same base and
  version;
- each base of cuda_api.def has a stand-in export of that base (not a
  per-thread variant) introduced at or before the version asked, the one
  cuGetProcAddress answers.

A row of any list that the parse does not read is a failure too, so a
changed syntax cannot make the check pass by reading nothing.
--self-test: the same check on copies planted in a temporary folder, one
with a symbol the stand-in lacks added to each list: it must report
exactly those two. Exit status: 0 when all agree, 1 otherwise."""
import os
import re
import shutil
import sys
import tempfile


def text(path):
    return re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)


def rows(body, macro, pattern, failures, where):
    found = re.findall(pattern, body)
    calls = len(re.findall(r"\b%s\(" % macro, body))
    if calls != len(found) or not found:
        failures.append("%s: %d %s rows, %d read" % (where, calls, macro, len(found)))
    return found


def exports(sd_def, hooks_def, failures):
    hooks = {}
    for name, base, since in re.findall(r'P2PSHIM_HOOK\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\d+)',
                                        text(hooks_def)):
        hooks[name] = (base, int(since))
    body = text(sd_def)
    out = {}
    for name, base, since, _ in rows(body, "SD_EXPORT",
                                     r'SD_EXPORT\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\d+)\s*,\s*(\d)\s*\)',
                                     failures, sd_def):
        out[name] = (base, int(since))
    for name in re.findall(r"SD_HOOKED\(\s*(\w+)\s*\)", body):
        if name in hooks:  # the memset family is generated: not driver.def's
            out[name] = hooks[name]
    return out


def check(driver_def, cuda_api_def, sd_def, hooks_def):
    failures = []
    exp = exports(sd_def, hooks_def, failures)
    body = text(driver_def)
    plain = rows(body, "P2PSHIM_DRIVER",
                 r"P2PSHIM_DRIVER\(\s*\w+\s*,\s*(\w+)\s*,\s*PFN_(\w+?)_v(\d+)\s*\)",
                 failures, driver_def)
    flav = rows(body, "P2PSHIM_DRIVER_FLAVOURED",
                r"P2PSHIM_DRIVER_FLAVOURED\(\s*\w+\s*,\s*(\w+)\s*,\s*PFN_(\w+?)_v(\d+)\s*,"
                r"\s*(\w+)\s*,\s*PFN_(\w+?)_v(\d+)_ptsz\s*\)", failures, driver_def)
    symbols = list(plain) + [f[:3] for f in flav] + [f[3:] for f in flav]
    for sym, base, version in symbols:
        if exp.get(sym) != (base, int(version)):
            failures.append("driver.def: %s (%s, %s): the stand-in exports %s"
                            % (sym, base, version, exp.get(sym, "no such symbol")))
    launcher = rows(text(cuda_api_def), "LAUNCHER_CUDA",
                    r"LAUNCHER_CUDA\(\s*\w+\s*,\s*(\w+)\s*,\s*(\d+)\s*,\s*(REQUIRED|OPTIONAL)\s*\)",
                    failures, cuda_api_def)
    for base, version, _ in launcher:
        if not any(b == base and since <= int(version) and not n.endswith(("_ptds", "_ptsz"))
                   for n, (b, since) in exp.items()):
            failures.append("cuda_api.def: %s at %s: no stand-in export answers it"
                            % (base, version))
    print("driver_lists: %d shim symbols, %d launcher functions, %d stand-in exports"
          % (len(symbols), len(launcher), len(exp)))
    return failures


def self_test(paths):
    with tempfile.TemporaryDirectory() as d:
        copies = []
        for p in paths:
            copies.append(os.path.join(d, os.path.basename(p)))
            shutil.copy(p, copies[-1])
        with open(copies[0], "a") as f:
            f.write("P2PSHIM_DRIVER(planted, cuPlantedGone, PFN_cuPlantedGone_v2000)\n")
        with open(copies[1], "a") as f:
            f.write("LAUNCHER_CUDA(planted, cuPlantedGoneToo, 4000, OPTIONAL)\n")
        failures = check(*copies)
    want = ["driver.def: cuPlantedGone (cuPlantedGone, 2000): the stand-in exports no such symbol",
            "cuda_api.def: cuPlantedGoneToo at 4000: no stand-in export answers it"]
    for line in failures:
        print(line)
    return 0 if failures == want else 1


def main(argv):
    args = [a for a in argv[1:] if a != "--self-test"]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    if "--self-test" in argv:
        return self_test(args)
    failures = check(*args)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
