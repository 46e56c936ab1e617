#!/usr/bin/env python3
"""log_vocab_doc.py LOG_FORMAT.md PROGRAM

docs/LOG_FORMAT.md's tables of actions, end kinds, reasons (with their
class) and events against the lists the shim expands (PROGRAM is
print_log_vocab): the same names, in the same order, each reason with the
same class. Fails when either side has a name the other lacks."""
import re
import subprocess
import sys

# The first header cell of each table and the word PROGRAM prints.
TABLES = {"action": "action", "end kind": "end-kind", "reason": "reason", "event": "event"}


def doc_rows(path):
    rows, table = [], None
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line.startswith("|"):
            table = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if table is None:
            table = TABLES.get(cells[0], "")  # "" : a table not checked here
            continue
        if not table or set(cells[0]) <= set("-: "):
            continue
        name = cells[0].strip("`")
        if table == "reason":
            rows.append(f"reason {name} {cells[1].strip('`')}")
        else:
            rows.append(f"{table} {name}")
    return rows


def main():
    doc = doc_rows(sys.argv[1])
    lists = subprocess.run([sys.argv[2]], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    for kind in TABLES.values():
        if not any(r.startswith(kind + " ") for r in doc):
            print(f"FAIL: no {kind} table in {sys.argv[1]}")
            return 1
    # Each table in its list's order (the tables may come in any order).
    doc = [r for kind in TABLES.values() for r in doc if r.startswith(kind + " ")]
    lists = [r for kind in TABLES.values() for r in lists if r.startswith(kind + " ")]
    if doc != lists:
        print("FAIL: LOG_FORMAT.md's tables and the shim's lists differ")
        for r in doc:
            if r not in lists:
                print(f"  only in the document: {r}")
        for r in lists:
            if r not in doc:
                print(f"  only in the lists: {r}")
        if sorted(doc) == sorted(lists):
            print("  (the same names in another order)")
        return 1
    print(f"ok: {len(lists)} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
