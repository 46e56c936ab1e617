#!/usr/bin/env python3
"""GPU tier: relayed pool copies in a run log written with real CUPTI
(P2PSHIM_CUPTI=1). relay_join_check.py LOG

Each decision with action `relay` must have exactly one activity line:
kind PTOP, bytes equal to the decision's, its devices, start before end.
No activity line may be left unjoined (decision 0 or an id no decision
has) when every copy of the program went through the shim. Prints one
line per relay and a summary; exit 1 on a failed check, 2 when the log
holds no relay."""
import json
import sys


def main():
    lines = [json.loads(l) for l in open(sys.argv[1], "rb") if l.strip()]
    decisions = {l["id"]: l for l in lines if l.get("type") == "decision"}
    acts = [l for l in lines if l.get("type") == "activity"]
    relays = [d for d in decisions.values() if d.get("action") == "relay"]
    bad = []
    for d in relays:
        mine = [a for a in acts if a["decision"] == d["id"]]
        ok = (len(mine) == 1 and mine[0]["kind"] == "PTOP" and mine[0]["bytes"] == d["bytes"]
              and (mine[0]["src_dev"], mine[0]["dst_dev"]) == (d["src"]["dev"], d["dst"]["dev"])
              and mine[0]["start_ns"] < mine[0]["end_ns"])
        span = mine[0]["end_ns"] - mine[0]["start_ns"] if mine else 0
        print(f"relay {d['id']}: {d['bytes']} B {d['src']['dev']}->{d['dst']['dev']}: "
              f"{len(mine)} line(s) {[a['kind'] for a in mine]} "
              f"{span / 1e3:.1f} us{'' if ok else '  FAIL'}")
        if not ok:
            bad.append(d["id"])
    orphans = [a for a in acts if a["decision"] not in decisions]
    print(f"{len(relays)} relays, {len(bad)} failed; {len(acts)} activity lines, "
          f"{len(orphans)} unjoined {sorted({a['kind'] for a in orphans})}")
    if not relays:
        return 2
    return 1 if bad or orphans else 0


if __name__ == "__main__":
    sys.exit(main())
