#!/usr/bin/env python3
"""Size limits of the shim's sources: no function longer than 80 lines,
no .c file longer than 800 (both adjustable).

A function's length runs from the line that names it in its definition to
the line of its closing brace, both counted; the scan is check_layers.py's
(comments and strings removed, a definition is `name ( ... ) {` at the top
level). A file's length is its number of lines.

Usage: check_size.py [--function-lines=N] [--file-lines=N] [--exclude=DIR]... DIR...

Every .c file under each DIR is read, folders below included. --exclude=DIR
(repeatable) skips DIR and everything under it: for a fixture kept over the
limits on purpose. It names a folder as the DIRs do (relative to the
current directory or absolute), and must exist: a misspelt exclude is a
usage error, not a silent no-op; so is an option it does not know (as
`--exclude DIR`, without the "=").
Exit status: 0 when every file and function is within the limits, 1 when
one is not (listed on stderr, longest first), 2 on bad usage.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layers import KEYWORDS, strip  # noqa: E402

HEAD = re.compile(r"([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*"
                  r"(__attribute__\s*\(\(.*\)\)\s*)?$", re.S)


def functions(code):
    """(name, first line, last line) of each function defined at the top
    level of code (comments, strings and preprocessor lines removed)."""
    out, depth, start, head_at = [], 0, 0, None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[start:i]
                m = HEAD.search(head)
                if m and m.group(1) not in KEYWORDS and "=" not in head:
                    pos = start + m.start(1)
                    head_at = (m.group(1), code.count("\n", 0, pos) + 1)
                else:
                    head_at = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if head_at:
                    out.append((head_at[0], head_at[1], code.count("\n", 0, i) + 1))
                head_at = None
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1
    return out


def blank_preprocessor(text):
    """Preprocessor lines (with their continuations) emptied, every newline
    kept: line numbers hold."""
    out, cont = [], False
    for line in text.split("\n"):
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.endswith("\\")
        out.append("" if directive else line)
    return "\n".join(out)


def option(argv, name, default):
    for a in argv:
        if a.startswith(name + "="):
            return int(a[len(name) + 1:])
    return default


def excluded_dirs(argv):
    """The real paths of the --exclude=DIR options."""
    return {os.path.realpath(a[len("--exclude="):])
            for a in argv if a.startswith("--exclude=")}


def main(argv):
    dirs = [a for a in argv[1:] if not a.startswith("--")]
    skip = excluded_dirs(argv[1:])
    known = ("--function-lines=", "--file-lines=", "--exclude=")
    unknown = [a for a in argv[1:] if a.startswith("--") and not a.startswith(known)]
    if unknown or not dirs or not all(os.path.isdir(d) for d in dirs + list(skip)):
        print("usage: check_size.py [--function-lines=N] [--file-lines=N] "
              "[--exclude=DIR]... DIR...", file=sys.stderr)
        return 2
    fn_max = option(argv, "--function-lines", 80)
    file_max = option(argv, "--file-lines", 800)
    over, nfiles, nfuncs = [], 0, 0
    for d in dirs:
        for dirpath, subdirs, files in os.walk(d):
            if os.path.realpath(dirpath) in skip:
                subdirs[:] = []
                continue
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                text = open(path).read()
                nfiles += 1
                lines = text.count("\n")
                if lines > file_max:
                    over.append((lines, f"{path}: {lines} lines (limit {file_max})"))
                code = blank_preprocessor(strip(text))
                for name, first, last in functions(code):
                    nfuncs += 1
                    n = last - first + 1
                    if n > fn_max:
                        over.append((n, f"{path}:{first}: {name}: {n} lines (limit {fn_max})"))
    for _, line in sorted(over, reverse=True):
        print(line, file=sys.stderr)
    if over:
        return 1
    print(f"check_size: {nfiles} files, {nfuncs} functions, within {file_max} and {fn_max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
