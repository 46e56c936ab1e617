#!/usr/bin/env python3
"""Unit tests of tools/dev/md2man.py: each Markdown construct the docs use, to
the exact roff it must give."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "dev"))
import md2man  # noqa: E402


def convert(md, version="1.2.3"):
    return md2man.Converter(version, "").convert(md).splitlines()


class Md2Man(unittest.TestCase):
    def test_title_gives_th_and_name(self):
        out = convert("# tool(1) \u2014 does things\n")
        self.assertEqual(out[0], '.TH TOOL 1 "" "tool 1.2.3"')
        self.assertIn(".SH NAME", out)
        self.assertIn("tool \\- does things", out)

    def test_title_without_section_is_refused(self):
        with self.assertRaises(ValueError):
            convert("# just a title\n")

    def test_headings(self):
        out = convert("# t(1) - x\n\n## Exit status\n\ntext\n\n### A sub part\n\nmore\n")
        self.assertIn(".SH EXIT STATUS", out)
        self.assertIn(".SS A sub part", out)
        # No empty paragraph right after or before a heading.
        for i, line in enumerate(out[:-1]):
            if line.startswith((".SH", ".SS")):
                self.assertNotIn(out[i + 1], (".PP", ".IP"))
                self.assertNotIn(out[i - 1], (".PP", ".IP"))

    def test_paragraphs_are_joined_and_separated(self):
        out = convert("# t(1) - x\n\n## A\n\none\ntwo\n\nthree\n")
        self.assertEqual(out[out.index(".SH A") + 1:], ["one two", ".PP", "three"])

    def test_inline_markup_and_escapes(self):
        out = convert("# t(1) - x\n\n## A\n\nuse `--opt a\\b` with **care** and *this*, "
                      "see [the docs](https://example.org/d) or [here](LOCAL.md)\n")
        line = out[-1]
        self.assertIn("\\fB\\-\\-opt a\\eb\\fR", line)
        self.assertIn("\\fBcare\\fR", line)
        self.assertIn("\\fIthis\\fR", line)
        self.assertIn("the docs (https://example.org/d)", line)
        self.assertIn("or here", line)
        self.assertNotIn("LOCAL.md", line)

    def test_markup_inside_code_is_literal(self):
        line = convert("# t(1) - x\n\n## A\n\nthe `**not bold**` and `*`\n")[-1]
        self.assertEqual(line, "the \\fB**not bold**\\fR and \\fB*\\fR")

    def test_a_line_starting_with_a_dot_is_not_a_request(self):
        out = convert("# t(1) - x\n\n## A\n\n.hidden file\n\n```\n.so evil\n'x\n```\n")
        self.assertIn("\\&.hidden file", out)
        self.assertIn("\\&.so evil", out)
        self.assertIn("\\&'x", out)

    def test_code_block_verbatim(self):
        out = convert("# t(1) - x\n\n## A\n\n```sh\nrun  -x   *y*  `z`\n```\n")
        i = out.index(".nf")
        self.assertEqual(out[i + 1], "run  \\-x   *y*  `z`")
        self.assertEqual(out[i + 2], ".fi")

    def test_lists_and_nesting(self):
        out = convert("# t(1) - x\n\n## A\n\n- one\n  continued\n- two\n  - inner\n- three\n\nafter\n")
        self.assertEqual(out[out.index(".SH A") + 1:], [
            ".IP \\(bu 2", "one continued", ".IP \\(bu 2", "two", ".RS 2", ".IP \\(bu 2",
            "inner", ".RE", ".IP \\(bu 2", "three", ".PP", "after"])

    def test_table_rows_become_tagged_paragraphs(self):
        # The header row names the columns of a grid the page does not draw.
        out = convert("# t(1) - x\n\n## A\n\n| opt | what |\n| --- | --- |\n"
                      "| `-a` | all |\n| `-b` | both | ways |\n")
        self.assertEqual(out[out.index(".SH A") + 1:], [
            ".TP", "\\fB\\-a\\fR", "all", ".TP", "\\fB\\-b\\fR",
            "both; ways"])

    def test_symbols(self):
        line = convert("# t(1) - x\n\n## A\n\n2\u00d7 faster \u2014 a\u2192b\n")[-1]
        self.assertEqual(line, "2\\(mu faster \\(em a\\(->b")

    def test_environment_goes_before_examples_or_last(self):
        env = "## Environment\n\nE\n"
        with_examples = md2man.with_section("# t(1) - x\n\n## A\n\na\n\n## Examples\n\nx\n",
                                            env, "Examples")
        self.assertEqual(with_examples,
                         "# t(1) - x\n\n## A\n\na\n\n## Environment\n\nE\n\n## Examples\n\nx\n")
        self.assertEqual(md2man.with_section("# t(1) - x\n\n## A\n\na\n", env, "Examples"),
                         "# t(1) - x\n\n## A\n\na\n\n## Environment\n\nE\n")


if __name__ == "__main__":
    unittest.main()
