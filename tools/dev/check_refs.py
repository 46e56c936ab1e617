#!/usr/bin/env python3
"""Files and folders named in comments that do not exist.

For every source file under the folders given (.c .h .cu .cuh .def .py .sh,
CMakeLists.txt and .cmake files), the comments (/* */ and // in C and CUDA
sources, # in scripts and CMake, and Python's docstrings) are read for
two kinds of words:

A path from the repository's root: a word that starts with one of its top
folders (interpose/, tools/, tests/, docs/, cmake/, kernels/, python/),
whatever it ends with (tests/standin/, docs/report-schema.json,
tools/bench/p2pbench/p2pbench.cu). It must name that very file or folder.
A word followed by a pattern character (tools/launcher/report*.c), one
with a placeholder (docs/NAME.md, tools/bench/results/DATE/)
and a trailing "..." or sentence full stop are taken as written: the
pattern and the placeholder (a single capital, or FILE, NAME, DATE, DIR
and the like) count as existing, the dots are dropped.

A file name: a name ending .c .h .py .sh .md or .def. Each must
exist in the repository:

- a name with a folder (bounce/pages.h, tools/dev/test.sh, ../check.h) is
  found relative to the file's own folder, to the repository root, or as
  the end of a path in the repository;
- a bare name (copy.c) is found when a file of that name is in the same
  top folder as the commenting file (interpose/, tools/, tests/), in
  interpose/ or tools/ (the shim's and the tools' files, named bare
  everywhere), in docs/ or at the root (README.md).

Names of headers a file includes with <...> (system and library headers:
cuda.h, stdio.h), those of EXTERNAL and those listed with
--external=NAME,... count as existing; so do placeholders in capitals
(INPUT.md: PLACEHOLDERS) and, in Python docstrings, example lines (indented four spaces
or more). Each miss is reported as FILE:LINE: NAME (a path from the root as
FILE:LINE: NAME (no such path)).

The repository is the folder that holds .git (a file in a worktree), or
--root=DIR. --exclude=DIR (repeatable) skips the files below DIR (a
fixture that names a missing file on purpose). Exit status: 0 when every name exists, 1 with a miss, 2 on
bad usage.
"""
import os
import re
import sys

NAME = re.compile(r"(?<![\w./-])((?:\.\.?/)*[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)*"
                  r"\.(?:c|h|py|sh|md|def))(?![\w/])")
C_LIKE = (".c", ".h", ".cu", ".cuh", ".def", ".map.in")
SCRIPT = (".py", ".sh", ".cmake")
SKIP_DIRS = {".git", "__pycache__", "corpus"}
# Headers of other projects that comments name without including them:
# NVML's, whose ABI the shim and the launcher declare themselves.
EXTERNAL = {"nvml.h"}
# Stems that stand for any file in a usage line (md2man.py INPUT.md).
PLACEHOLDERS = {"FILE", "INPUT", "OUTPUT", "OUT", "NAME", "PATH"}
BARE_AREAS = ("interpose", "tools", "docs", "")
# The top folders a path from the root starts with.
TOPS = ("interpose", "tools", "tests", "docs", "cmake", "kernels", "python")
ROOT_PATH = re.compile(r"(?<![\w./$%{-])((?:" + "|".join(TOPS) + r")/[\w.+-]*(?:/[\w.+-]+)*/?)")
PATTERN_NEXT = "*?[{<%$"
# Placeholders in a path from the root (tools/bench/results/DATE/), and
# any single capital (tests/X/).
PATH_PLACEHOLDERS = {"DATE", "DIR", "TIME", "STAMP", "BUILD", "TARGET"}


def comments_c(text):
    """(line number, comment text) for each /* */ and // comment."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((line, text[i:j]))
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            j = i + 1
        line += text.count("\n", i, j)
        i = j
    return out


def comments_script(text, python):
    """(line number, comment text): # comments, and docstrings in Python."""
    out = []
    lines = text.split("\n")
    in_doc = None
    for k, raw in enumerate(lines, 1):
        s = raw.strip()
        if in_doc:
            if in_doc in raw:
                in_doc = None
            if not raw.startswith(" " * 4):
                out.append((k, raw))
            continue
        if python and (s.startswith('"""') or s.startswith("'''")):
            quote = s[:3]
            out.append((k, raw))
            if s.count(quote) == 1:
                in_doc = quote
            continue
        m = re.search(r"(^|\s)#(?!!)(.*)$", raw)
        if m:
            out.append((k, m.group(2)))
    return out


def walk(top):
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            yield os.path.join(dirpath, f)


def repository(root):
    """(every path relative to root, every base name, every <...> include)."""
    paths, bases, external = set(), set(), set(EXTERNAL)
    for path in walk(root):
        rel = os.path.relpath(path, root)
        paths.add(rel)
        top = rel.split("/", 1)[0] if "/" in rel else ""
        bases.add((top, os.path.basename(rel)))
        if rel.endswith(C_LIKE):
            with open(path, errors="replace") as f:
                for m in re.finditer(r"#\s*include\s*<([^>]+)>", f.read()):
                    external.add(m.group(1))
                    external.add(os.path.basename(m.group(1)))
    return paths, bases, external


def exists(name, here, root, paths, bases, external):
    if name in external or os.path.basename(name).split(".")[0] in PLACEHOLDERS:
        return True
    if "/" not in name:
        rel = os.path.relpath(here, root)
        area = rel.split("/", 1)[0] if rel != "." else ""
        return any((a, name) in bases for a in (area,) + BARE_AREAS)
    for base in (here, root):
        if os.path.exists(os.path.normpath(os.path.join(base, name))):
            return True
    tail = "/" + name.lstrip("./")
    return any(p.endswith(tail) or p == name for p in paths)


def root_path_misses(part, root):
    """The paths from the root in one line of a comment that name nothing."""
    out = []
    for m in ROOT_PATH.finditer(part):
        word = m.group(1)
        if m.end() < len(part) and part[m.end()] in PATTERN_NEXT:
            continue
        word = word.rstrip(".") if word.endswith("...") or word.endswith(".") else word
        stems = [c.split(".")[0] for c in word.split("/")]
        if any(s in PLACEHOLDERS or s in PATH_PLACEHOLDERS or re.fullmatch("[A-Z]", s)
               for s in stems):
            continue
        if not os.path.exists(os.path.join(root, word)):
            out.append(word)
    return out


def comments_of(path):
    with open(path, errors="replace") as f:
        text = f.read()
    base = os.path.basename(path)
    if path.endswith(C_LIKE):
        return comments_c(text)
    if path.endswith(SCRIPT) or base == "CMakeLists.txt":
        return comments_script(text, path.endswith(".py"))
    return []


def find_root(start):
    d = os.path.abspath(start)
    while d != os.path.dirname(d):
        if os.path.exists(os.path.join(d, ".git")):
            return d
        d = os.path.dirname(d)
    return None


def main(argv):
    tops = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
    excluded = [os.path.abspath(a.split("=", 1)[1]) for a in argv[1:]
                if a.startswith("--exclude=")]
    root = opts.get("root") or (find_root(tops[0]) if tops else None)
    if not tops or root is None or not all(os.path.isdir(t) for t in tops):
        print("usage: check_refs.py [--root=DIR] [--external=NAME,...] [--exclude=DIR]... DIR...",
              file=sys.stderr)
        return 2
    paths, bases, external = repository(root)
    external |= set(x for x in opts.get("external", "").split(",") if x)
    misses, names = [], 0
    for top in tops:
        for path in walk(top):
            if any(os.path.abspath(path).startswith(x + os.sep) for x in excluded):
                continue
            here = os.path.dirname(path)
            for line, comment in comments_of(path):
                for k, part in enumerate(comment.split("\n")):
                    missed = root_path_misses(part, root)
                    for word in missed:
                        misses.append(f"{os.path.relpath(path, root)}:{line + k}: {word} "
                                      "(no such path)")
                    for m in NAME.finditer(part):
                        if m.group(1) in missed:
                            continue
                        names += 1
                        if not exists(m.group(1), here, root, paths, bases, external):
                            misses.append(f"{os.path.relpath(path, root)}:{line + k}: {m.group(1)}")
    for miss in misses:
        print(miss, file=sys.stderr)
    if misses:
        print(f"check_refs: {len(misses)} name(s) in comments name no file", file=sys.stderr)
        return 1
    print(f"check_refs: {names} names in comments, each names a file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
