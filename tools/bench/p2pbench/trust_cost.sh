#!/bin/sh
# trust_cost.sh BUILD_DIR [OUT.jsonl]
# The link check's cost per pair (docs/TRUST.md): trust_cost under the
# shim with the check skipped, forced and cached, one cache file of its
# own. Prints the JSON lines (and appends them to OUT), then per pair the
# first copy's extra time over the skipped run: checked (the check's cost)
# and cached (should be ~0).
set -eu
build=$1 out=${2:-/dev/null}
lib=$build/interpose/libp2pshim.so
prog=$build/tools/bench/p2pbench/trust_cost_shared
cache=$(mktemp -d "${TMPDIR:-/tmp}/trust-cost.XXXXXX")
trap 'rm -rf "$cache"' EXIT
for mode in skip recheck check; do
    P2PSHIM_TRUST=$mode P2PSHIM_TRUST_FILE=$cache/trust P2PSHIM_LOG=info \
        LD_PRELOAD=$lib "$prog" "$mode" | tee -a "$out" >"$cache/$mode.jsonl"
    cat "$cache/$mode.jsonl"
done
python3 - "$cache" <<'PY'
import json, sys, os
d = sys.argv[1]
runs = {}
for mode in ("skip", "recheck", "check"):
    for line in open(os.path.join(d, mode + ".jsonl")):
        if line.startswith("{"):
            r = json.loads(line)
            runs.setdefault((r["src"], r["dst"]), {})[mode] = r
for (a, b), r in sorted(runs.items()):
    if len(r) == 3:
        base = r["skip"]["first_ms"]
        print("pair %d->%d: check +%.3f ms, cached +%.3f ms, bytes ok: %s" % (
            a, b, r["recheck"]["first_ms"] - base, r["check"]["first_ms"] - base,
            all(x["ok"] for x in r.values())))
PY
