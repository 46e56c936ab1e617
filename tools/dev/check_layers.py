#!/usr/bin/env python3
"""Import circles in a C source folder (the shim's interpose/).

For every .c file it reads the functions the file defines (static ones
stay the file's own), the names it uses inside its code (calls, and
functions named as values: callbacks in tables), and, through the macros
of the headers it includes, the names those macros use. A use of a
function that another .c file defines is an edge "user -> definer".

A circle is a set of files that reach one another through such edges (a
strongly connected component of more than one file). Each is reported
with the edges that close it, and each edge with the header that declares
the function, e.g.

    circle: a.c -> b.c -> a.c
      a.c uses b_go (b.c, declared in b.h)
      b.c uses a_done (a.c, declared in a.h)

This includes the simplest case, a file calling a function of a file that
includes its header and calls back. A function reached only through a
pointer registered at run time is no edge: that is how a lower module
hands work to the one above it.

The parse is simple on purpose: comments, strings and preprocessor lines
are removed; a definition is `name ( ... ) {` at the top level. It does not
evaluate #if; a name used only in one branch still counts.

Folders in order: when DIR holds a file LAYERS (one folder name a line,
bottom first; `#` starts a comment), every .c file must be in one of its
folders, and no file may use a function of a folder listed after its own
(above it). A file uses its own folder and those below; work handed up
goes through a pointer registered at run time, which is no edge. Each use
upward is reported with the folders, e.g.

    upward: memory/a.c uses b_go (observe/b.c, declared in b.h): observe is above memory

A folder listed with the word `headers` after its name (`include headers`)
is a folder of contracts that the shim and other programs read: it holds
headers and lists (.h, .def) only, no .c file. Every folder's headers and
lists include headers of their own folder and those below only, e.g.

    headers only: include/a.c is a source file in include/
    upward include: include/a.h includes core/b.h: core is above include
    upward include: bounce/a.h includes copy/b.h: copy is above bounce

Options: `--module=DIR` makes the files of the subfolder DIR one node (a
module with an internal header of its own: circles inside it are its own
business; its edges to and from the rest still count); `--ignore=NAME`
drops uses of NAME (a libc function the shim overrides, while the shim's
own calls of it still reach the override); `--graph` prints every edge.

Exit status: 0 with no circle and no use upward, 1 with one (the report
on stderr), 2 on bad usage.
"""
import os
import re
import sys

KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "_Alignof", "alignof",
    "_Static_assert", "static_assert", "__attribute__", "__typeof__", "typeof",
    "_Generic", "asm", "__asm__", "defined", "do", "else", "case", "goto",
}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip(text):
    """Removes comments, string and character literals; keeps newlines."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append('""' if c == '"' else "0")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def logical_lines(text):
    """Joins backslash continuations."""
    return text.replace("\\\n", " ").split("\n")


def split_preprocessor(text):
    """(code without preprocessor lines, includes, {macro: body})."""
    code, includes, macros = [], [], {}
    for line in logical_lines(text):
        s = line.strip()
        if not s.startswith("#"):
            code.append(line)
            continue
        code.append("")
        m = re.match(r'#\s*include\s*"([^"]+)"', s)
        if m:
            includes.append(m.group(1))
        m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)", s)
        if m:
            macros[m.group(1)] = m.group(3)
    return "\n".join(code), includes, macros


def definitions(code):
    """{name: is_static} for the functions defined at the top level, and
    the code inside the bodies and initialisers (where uses are)."""
    defs, depth, i, n = {}, 0, 0, len(code)
    statement_start = 0
    while i < n:
        c = code[i]
        if c == "{":
            if depth == 0:
                head = code[statement_start:i]
                m = re.search(r"([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*"
                              r"(__attribute__\s*\(\(.*\)\)\s*)?$", head, re.S)
                if m and m.group(1) not in KEYWORDS and "=" not in head:
                    defs[m.group(1)] = bool(re.search(r"\bstatic\b", head))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                statement_start = i + 1
        elif c == ";" and depth == 0:
            statement_start = i + 1
        i += 1
    return defs


def declarations(code):
    """Function names declared (prototypes) at the top level of a header."""
    names = set()
    for stmt in re.split(r"[;{}]", code):
        m = re.search(r"([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*"
                      r"(__attribute__\s*\(\(.*\)\)\s*)?$", stmt.strip(), re.S)
        if m and m.group(1) not in KEYWORDS and not re.search(r"\(\s*\*", stmt):
            names.add(m.group(1))
    return names


def scan(root):
    sources, headers = {}, {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if f.endswith(".c"):
                sources[rel] = path
            elif f.endswith(".h"):
                headers[rel] = path
    return sources, headers


def resolve_include(root, from_rel, name, headers):
    """The header an #include "name" in from_rel means, relative to root:
    beside the file, else in root, else in any folder of root (the build
    puts every module folder on the include path)."""
    folders = sorted({os.path.dirname(h) for h in headers})
    for base in [os.path.dirname(from_rel), ""] + folders:
        cand = os.path.normpath(os.path.join(base, name))
        if cand in headers:
            return cand
    return None


def analyse(root, ignore=(), groups=()):
    sources, headers = scan(root)
    header_info = {}
    for rel, path in headers.items():
        code, includes, macros = split_preprocessor(strip(open(path).read()))
        header_info[rel] = (declarations(code), includes, macros)
    defined_in, file_uses, file_statics = {}, {}, {}
    for rel, path in sources.items():
        code, includes, macros = split_preprocessor(strip(open(path).read()))
        defs = definitions(code)
        file_statics[rel] = {k for k, s in defs.items() if s}
        for name, is_static in defs.items():
            if not is_static:
                defined_in.setdefault(name, rel)
        uses = set(IDENT.findall(code))
        # Macros of the included headers (one level of their own includes).
        seen, todo = set(), [resolve_include(root, rel, h, headers) for h in includes]
        all_macros = dict(macros)
        while todo:
            h = todo.pop()
            if h is None or h in seen:
                continue
            seen.add(h)
            _, hinc, hmac = header_info[h]
            all_macros.update(hmac)
            todo += [resolve_include(root, h, x, headers) for x in hinc]
        for _ in range(3):  # macros that use macros
            for name in list(uses):
                if name in all_macros:
                    uses |= set(IDENT.findall(all_macros[name]))
        file_uses[rel] = uses - set(defs)
    declared_in = {}
    for h, (decls, _, _) in header_info.items():
        for name in decls:
            declared_in.setdefault(name, h)
    edges = {}
    for rel, uses in file_uses.items():
        for name in sorted(uses):
            target = defined_in.get(name)
            if not target or name in ignore or name in file_statics[rel]:
                continue
            a, b = node_of(rel, groups), node_of(target, groups)
            names = edges.setdefault(a, {}).setdefault(b, []) if a != b else None
            if names is not None and name not in names:
                names.append(name)
    return sorted({node_of(r, groups) for r in sources}), edges, declared_in


def node_of(rel, groups):
    """A file, or the folder it is in when that folder is a module (--module)."""
    folder = os.path.dirname(rel)
    return folder + "/" if folder in groups else rel


def circles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def read_layers_flags(root):
    """[(folder, {flag words})] as DIR/LAYERS lists them, bottom first;
    None without the file."""
    path = os.path.join(root, "LAYERS")
    if not os.path.isfile(path):
        return None
    out = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                out.append((words[0].rstrip("/"), set(words[1:])))
    return out


def read_layers(root):
    """The folders DIR/LAYERS lists, bottom first; None without the file."""
    flagged = read_layers_flags(root)
    return None if flagged is None else [name for name, _ in flagged]


def quoted_includes(text):
    """The names of the #include "..." lines, comments removed first (strip
    would empty the quoted names too)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, flags=re.M)


def include_problems(root, flagged):
    """Report lines for a .c file in a `headers` folder and for each
    include, by a file of such a folder or by any header (.h, .def), of a
    header of a folder above it."""
    rank = {name: i for i, (name, _) in enumerate(flagged)}
    headers_only = {name for name, flags in flagged if "headers" in flags}
    files = {}
    for dirpath, _, names in os.walk(root):
        for f in sorted(names):
            if f.endswith((".c", ".h", ".def")):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                files[rel] = os.path.join(dirpath, f)
    listed = {rel: None for rel in files if not rel.endswith(".c")}
    out = []
    for rel in sorted(files):
        folder = folder_of(rel)
        if rel.endswith(".c") and folder in headers_only:
            out.append(f"headers only: {rel} is a source file in {folder}/")
        if folder not in headers_only and not rel.endswith((".h", ".def")):
            continue
        for name in quoted_includes(open(files[rel]).read()):
            target = resolve_include(root, rel, name, listed)
            ft = folder_of(target) if target else None
            if ft in rank and rank[ft] > rank[folder]:
                out.append(f"upward include: {rel} includes {target}: {ft} is above {folder}")
    return out


def folder_of(node):
    """The top folder a file (or a --module folder node) is in; "" at the root."""
    path = node.rstrip("/") if node.endswith("/") else os.path.dirname(node)
    return path.split("/", 1)[0] if path else ""


def upward_uses(nodes, edges, declared_in, layers):
    """Report lines for files outside the listed folders and for each use
    of a function of a folder above the user's own."""
    rank = {name: i for i, name in enumerate(layers)}
    out = []
    for node in nodes:
        if folder_of(node) not in rank:
            out.append(f"outside the folders of LAYERS: {node}")
    for a in sorted(edges):
        fa = folder_of(a)
        for b in sorted(edges[a]):
            fb = folder_of(b)
            if fa in rank and fb in rank and rank[fb] > rank[fa]:
                for n in edges[a][b]:
                    out.append(f"upward: {a} uses {n} ({b}, declared in "
                               f"{declared_in.get(n, 'no header')}): {fb} is above {fa}")
    return out


def report_circles(found, edges, declared_in):
    for comp in found:
        members = set(comp)
        print(f"circle of {len(comp)} files: {' '.join(comp)}", file=sys.stderr)
        for a in comp:
            for b in sorted(edges.get(a, {})):
                if b in members:
                    names = ", ".join(
                        f"{n} ({declared_in.get(n, 'no header')})" for n in edges[a][b])
                    print(f"  {a} uses {b}: {names}", file=sys.stderr)


def option_list(argv, name):
    out = []
    for a in argv:
        if a.startswith(name + "="):
            out += [x for x in a[len(name) + 1:].split(",") if x]
    return out


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: check_layers.py [--graph] [--module=DIR,...] [--ignore=NAME,...] DIR",
              file=sys.stderr)
        return 2
    root = args[0]
    nodes, edges, declared_in = analyse(root, set(option_list(argv, "--ignore")),
                                        set(option_list(argv, "--module")))
    if "--graph" in argv:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"{a} -> {b}: {', '.join(edges[a][b])}")
    found = circles(nodes, edges)
    report_circles(found, edges, declared_in)
    layers = read_layers(root)
    upward = upward_uses(nodes, edges, declared_in, layers) if layers is not None else []
    if layers is not None:
        upward += include_problems(root, read_layers_flags(root))
    for line in upward:
        print(line, file=sys.stderr)
    if found or upward:
        return 1
    folders = f"; folders {' < '.join(layers)}: no use upward" if layers is not None else ""
    print(f"check_layers: {len(nodes)} files, "
          f"{sum(len(v) for v in edges.values())} file-to-file uses, no circle{folders}")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
