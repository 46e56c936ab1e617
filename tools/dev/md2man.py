#!/usr/bin/env python3
"""md2man.py: turns the Markdown of docs/LAUNCHER.md into a man page (roff,
man(7) macros). Standard library only; it knows the Markdown those docs use:

  # name(N) — what it is      the title: .TH and the NAME section
  ## Heading / ### Heading    .SH (upper case) / .SS
  paragraphs                  filled text, .PP between them
  ``` fenced code ```         verbatim, indented (.nf/.fi)
  - item / 1. item            .IP, nested lists indented with .RS/.RE
  | a | b | tables            one tagged paragraph (.TP) per row: the first
                              cell is the tag, the others its text (the
                              header row is dropped)
  `code` **bold** *italic*    \\fB \\fB \\fI;  [text](url) is text (url)

Usage: md2man.py [--version V] [--date D] INPUT.md [-o OUTPUT]
"""
import argparse
import re
import sys

SYMBOLS = {"\u2014": "\\(em", "\u2013": "\\(en", "\u00d7": "\\(mu", "\u2192": "\\(->",
           "\u2026": "...", "\u2019": "'", "\u201c": "\\(lq", "\u201d": "\\(rq"}


def escape(text):
    """Roff-safe text: backslashes, hyphens (\\- keeps options copy-pasteable
    as ASCII), and the few non-ASCII symbols the docs use."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    for sym, roff in SYMBOLS.items():
        out = out.replace(sym, roff)
    return out


def _emphasis(text):
    text = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\\fI\1\\fR", text)


def _links(text):
    def link(m):
        label, url = m.group(1), m.group(2)
        return f"{label} ({url})" if re.match(r"https?://", url) else label
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", link, text)


def inline(text):
    """Inline Markdown to roff: `code` verbatim in bold, then emphasis and
    links outside code spans."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if len(part) >= 2 and part.startswith("`") and part.endswith("`"):
            out.append("\\fB" + escape(part[1:-1]) + "\\fR")
        else:
            out.append(_emphasis(escape(_links(part))))
    return "".join(out)


def text_line(roff):
    """A line of running text: one starting with . or ' would be a request."""
    return "\\&" + roff if roff[:1] in (".", "'") else roff


def table_cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def is_table_rule(line):
    return re.fullmatch(r"\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?(-{3,}:?)?\s*", line) is not None


LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+(.*)$")


class Converter:
    def __init__(self, version, date):
        self.version, self.date = version, date
        self.out = []
        self.para = []        # lines of the paragraph being filled
        self.list_depth = []  # indents of the open lists, outermost first

    def emit(self, line):
        self.out.append(line)

    def flush(self):
        if self.para:
            self.emit(text_line(inline(" ".join(self.para))))
            self.para = []

    def close_lists(self, indent=-1):
        """Ends the lists indented deeper than indent (-1: all)."""
        while self.list_depth and self.list_depth[-1] > indent:
            self.list_depth.pop()
            if self.list_depth:
                self.emit(".RE")

    def title(self, text):
        m = re.match(r"(\S+)\((\w+)\)\s*(?:[\u2014\u2013-]+\s*)?(.*)", text)
        if not m:
            raise ValueError(f"the title must read 'name(section) - what': {text!r}")
        name, section, what = m.groups()
        extra = f' "{self.date}"' if self.date else ' ""'
        extra += f' "{name} {self.version}"' if self.version else ""
        self.emit(f".TH {name.upper()} {section}{extra}")
        # Ragged right, no hyphenation: options and paths stay whole.
        self.emit(".ad l")
        self.emit(".nh")
        self.emit(".SH NAME")
        self.emit(f"{escape(name)} \\- {inline(what) if what else escape(name)}")

    def code_block(self, lines, indent):
        self.flush()
        self.emit(".PP" if not self.list_depth else ".IP")
        self.emit(".RS 4")
        self.emit(".nf")
        for line in lines:
            self.emit(text_line(escape(line[indent:] if line[:indent].isspace() else line)))
        self.emit(".fi")
        self.emit(".RE")

    def table(self, rows):
        self.flush()
        if self.list_depth:  # inside a list item: indented as its text
            self.emit(".RS 2")
        for cells in rows:
            self.emit(".TP")
            self.emit(text_line(inline(cells[0])))
            rest = [c for c in cells[1:] if c]
            self.emit(text_line(inline("; ".join(rest))) if rest else "\\&")
        if self.list_depth:
            self.emit(".RE")

    def list_item(self, indent, marker, text):
        self.flush()
        if not self.list_depth or indent > self.list_depth[-1]:
            if self.list_depth:
                self.emit(".RS 2")
            self.list_depth.append(indent)
        else:
            self.close_lists(indent)
        tag = "\\(bu" if marker in "-*+" else marker
        self.emit(f".IP {tag} {max(2, len(marker) + 1)}")
        self.para = [text]

    def convert(self, text):
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            if stripped.startswith("```"):
                end = i + 1
                while end < len(lines) and not lines[end].strip().startswith("```"):
                    end += 1
                self.code_block(lines[i + 1:end], indent)
                i = end + 1
                continue
            if stripped.startswith("<!--"):
                while i < len(lines) and "-->" not in lines[i]:
                    i += 1
                i += 1
                continue
            if stripped.startswith("|") and i + 1 < len(lines) and is_table_rule(lines[i + 1]):
                rows, i = [], i + 2
                while i < len(lines) and lines[i].strip().startswith("|"):
                    rows.append(table_cells(lines[i]))
                    i += 1
                self.table(rows)
                continue
            heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*$", line)
            item = LIST_ITEM.match(line)
            if heading:
                self.flush()
                self.close_lists()
                level, words = len(heading.group(1)), heading.group(2)
                if level == 1 and not self.out:
                    self.title(words)
                elif level <= 2:
                    self.emit(".SH " + text_line(inline(words.upper())))
                else:
                    self.emit(".SS " + text_line(inline(words)))
            elif item:
                self.list_item(len(item.group(1)), item.group(2), item.group(3))
            elif not stripped:
                self.flush()
                # A blank line ends a list unless the next line goes on with it.
                nxt = next((l for l in lines[i + 1:] if l.strip()), "")
                nxt_indent = len(nxt) - len(nxt.lstrip())
                if self.list_depth and nxt_indent <= self.list_depth[0] and \
                        not LIST_ITEM.match(nxt):
                    self.close_lists()
                    self.emit(".PP")
                elif self.list_depth:
                    if not LIST_ITEM.match(nxt):
                        self.emit(".IP")
                else:
                    self.emit(".PP")
            else:
                self.para.append(stripped)
            i += 1
        self.flush()
        self.close_lists()
        return self.tidy()

    def tidy(self):
        """Drops paragraph requests that separate nothing (a .PP right after
        or before a heading, doubled, or last)."""
        out = []
        for line in self.out:
            if line in (".PP", ".IP") and (not out or out[-1].startswith((".SH", ".SS", ".PP",
                                                                         ".TH", ".IP", ".nh"))):
                continue
            if line.startswith((".SH", ".SS")):
                while out and out[-1] in (".PP", ".IP"):
                    out.pop()
            out.append(line)
        while out and out[-1] in (".PP", ".IP"):
            out.pop()
        return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Markdown to a man page (roff)")
    ap.add_argument("input")
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument("--version", default="", help="the program's version, in the footer")
    ap.add_argument("--date", default="", help="the date in the footer")
    args = ap.parse_args(argv)
    with open(args.input, encoding="utf-8") as f:
        try:
            roff = Converter(args.version, args.date).convert(f.read())
        except ValueError as e:
            print(f"md2man: {args.input}: {e}", file=sys.stderr)
            return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(roff)
    else:
        sys.stdout.write(roff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
