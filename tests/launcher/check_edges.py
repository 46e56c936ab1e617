"""check_edges.py WHAT ARGS...: checks of edges_test.sh's reports.

  schema FILE SCHEMA N BYTES  FILE is the JSON report (not a trace): valid
                              against SCHEMA, N process rows, BYTES moved
                              between GPUs in all
  csv CSV JSON                the CSV table of the same logs as the JSON
                              report: the documented columns, one row per
                              GPU pair and path that has copies, the same
                              copies and bytes as the JSON report's pairs
"""
import csv
import json
import sys

fails = []


def check(ok, what):
    if not ok:
        fails.append(what)


def check_schema(path, schema_path, n, nbytes):
    import jsonschema
    doc = json.load(open(path))
    check(isinstance(doc, dict) and doc.get("schema") == "p2pshim-report",
          "%s is not the JSON report: %.80r" % (path, doc))
    if fails:
        return
    schema = json.load(open(schema_path))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    for e in errors[:5]:
        check(False, "schema: %s at %s" % (e.message, "/".join(map(str, e.absolute_path))))
    check(len(doc["processes"]) == n, "%d process rows, want %d" % (len(doc["processes"]), n))
    check(doc["verdict"]["bytes"] == nbytes,
          "verdict bytes %s, want %d" % (doc["verdict"]["bytes"], nbytes))


COLUMNS = ["host", "src_gpu", "src_uuid", "src_pci", "dst_gpu", "dst_uuid", "dst_pci", "path",
           "copies", "bytes", "timed_copies", "timed_bytes", "timed_ns", "gbps",
           "est_saved_ns"]


def check_csv(path, json_path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    check(rows and rows[0] == COLUMNS, "header %s" % (rows[:1],))
    doc = json.load(open(json_path))
    want = {}
    for p in doc["pairs"]:
        for k in ("peer", "staged", "other"):
            if p[k + "_copies"]:
                want[(p["src"]["uuid"], p["dst"]["uuid"], k)] = (p[k + "_copies"],
                                                                 p[k + "_bytes"])
    got = {}
    for r in rows[1:]:
        check(len(r) == len(COLUMNS), "row of %d fields: %s" % (len(r), r))
        if len(r) == len(COLUMNS):
            c = dict(zip(COLUMNS, r))
            got[(c["src_uuid"], c["dst_uuid"], c["path"])] = (int(c["copies"]), int(c["bytes"]))
    check(got == want and want, "csv rows %s, want %s" % (got, want))


what = sys.argv[1]
if what == "schema":
    check_schema(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif what == "csv":
    check_csv(sys.argv[2], sys.argv[3])
else:
    check(False, "unknown check " + what)
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
