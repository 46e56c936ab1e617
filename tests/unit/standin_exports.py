#!/usr/bin/env python3
"""standin_exports.py SD_EXPORTS_DEF CUDA_TYPEDEFS_H

The stand-in driver's export list (tests/standin/sd_exports.def) against
CUDA's own. Rows for the shim's hooked variants (SD_HOOKED) take their
values from interpose/driver/hooks.def when the stand-in compiles; this checks the
rows whose values are written by hand (SD_EXPORT): each one's `since` and
`per_thread` must name a typedef cudaTypedefs.h has, PFN_<base>_v<since>
(with _ptds or _ptsz for a per-thread variant), its name must start with
its base, and a per-thread flag must match a _ptds/_ptsz name."""
import re
import sys


def main():
    exports_def, typedefs_h = sys.argv[1], sys.argv[2]
    text = open(exports_def).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    pfns = set(re.findall(r"\bPFN_(\w+)", open(typedefs_h).read()))
    rows = re.findall(r'SD_EXPORT\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\d+)\s*,\s*(\d)\s*\)', text)
    hooked = re.findall(r"SD_HOOKED\(\s*(\w+)\s*\)", text)
    calls = len(re.findall(r"\bSD_(?:EXPORT|HOOKED)\(", text))
    failures = []
    if calls != len(rows) + len(hooked):
        failures.append("%d rows, %d of them readable" % (calls, len(rows) + len(hooked)))
    if not rows or not hooked:
        failures.append("no SD_EXPORT or no SD_HOOKED rows")
    for name, base, since, pt in rows:
        per_thread_name = name.endswith("_ptds") or name.endswith("_ptsz")
        if (pt == "1") != per_thread_name:
            failures.append("%s: per_thread %s" % (name, pt))
        if not name.startswith(base):
            failures.append("%s: base %s" % (name, base))
        suffixes = ["_ptds", "_ptsz"] if pt == "1" else [""]
        if not any("%s_v%s%s" % (base, since, s) in pfns for s in suffixes):
            failures.append("%s: no PFN_%s_v%s%s in cudaTypedefs.h"
                            % (name, base, since, "_pt*" if pt == "1" else ""))
    for f in failures:
        print("FAIL " + f)
    print("%d hand-valued rows, %d from hooks.def, %d failures"
          % (len(rows), len(hooked), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
