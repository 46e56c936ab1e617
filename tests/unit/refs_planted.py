#!/usr/bin/env python3
"""unit.check_refs_sees_planted: tools/dev/check_refs.py on a file planted
in a fresh temporary folder. The file's comments name two paths from the
root that do not exist (one in capitals, as docs/ names its pages) and
two that do: the check must fail and list exactly the missing ones; with
those words taken out the same file must pass.

Usage: refs_planted.py CHECK_REFS ROOT
"""
import os
import subprocess
import sys
import tempfile

GOOD = ("tools/dev/check_refs.py", "interpose/include/")
BAD = ("interpose/bounce/planted_gone.c", "docs/planted_gone.json", "docs/PLANTED_GONE.md")


def run(check, root, words):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "planted.c"), "w") as f:
            f.write("/* names: %s */\nint planted;\n" % ", ".join(words))
        p = subprocess.run([sys.executable, check, "--root=" + root, d],
                           capture_output=True, text=True)
        return p.returncode, p.stderr


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    check, root = argv[1], argv[2]
    rc, err = run(check, root, GOOD + BAD)
    missed = [line.split(": ", 1)[1] for line in err.splitlines() if "(no such path)" in line]
    want = ["%s (no such path)" % w for w in BAD]
    ok = rc == 1 and missed == want
    print("with the bad names: rc %d, reported %s" % (rc, missed))
    rc_good, err_good = run(check, root, GOOD)
    print("without them: rc %d %s" % (rc_good, err_good.strip()))
    ok = ok and rc_good == 0
    print("refs_planted: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
