"""The rustc layout of `render_human`, character for character, and `render_json`."""

from __future__ import annotations

import json

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.diagnostics.render import render_human, render_json, summary
from phobos.source import SourceFile


def at(src: SourceFile, needle: str, nth: int = 0, length: int | None = None):
    """The span of the `nth` occurrence of `needle` (or its first `length` characters)."""
    index = -1
    for _ in range(nth + 1):
        index = src.text.index(needle, index + 1)
    start = src.byte_offset(index)
    end = src.byte_offset(index + (len(needle) if length is None else length))
    return src.span(start, end)


def lines(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)


KERNEL = SourceFile("kernels/k.ph", "kernel k() {\n  let y = x + 1\n}\n")


def test_single_line_with_help():
    d = Diagnostic.error(
        "E0012",
        "cannot find value `x` in this scope",
        Label(at(KERNEL, "x"), "not found in this scope"),
        help="declare it with `let x = ...`",
    )
    assert render_human([d]) == lines(
        "error[E0012]: cannot find value `x` in this scope",
        " --> kernels/k.ph:2:11",
        "  |",
        "2 |   let y = x + 1",
        "  |           ^ not found in this scope",
        "  |",
        "  = help: declare it with `let x = ...`",
        "",
    )


def test_no_code_no_label_message_and_notes_then_help():
    d = Diagnostic.error(
        None, "bad", Label(at(KERNEL, "let"), ""), notes=["first", "second"], help="fix it"
    )
    assert render_human([d]) == lines(
        "error: bad",
        " --> kernels/k.ph:2:3",
        "  |",
        "2 |   let y = x + 1",
        "  |   ^^^",
        "  |",
        "  = note: first",
        "  = note: second",
        "  = help: fix it",
        "",
    )


def test_multiline_note_is_indented_under_its_text():
    d = Diagnostic.error(None, "bad", None, notes=["one\ntwo"])
    assert render_human([d]) == lines("error: bad", "  |", "  = note: one", "          two", "")


def test_warning_header():
    d = Diagnostic.warning("E0050", "unused", Label(at(KERNEL, "y"), "never read"))
    assert render_human([d]).splitlines()[0] == "warning[E0050]: unused"


def test_without_span_only_the_header():
    d = Diagnostic.error("E0901", "cannot read `a.ph`: no such file or directory", None)
    assert render_human([d]) == lines(
        "error[E0901]: cannot read `a.ph`: no such file or directory", ""
    )


def test_diagnostics_are_separated_by_blank_lines():
    a = Diagnostic.error(None, "first", Label(at(KERNEL, "kernel"), ""))
    b = Diagnostic.error(None, "second", Label(at(KERNEL, "}"), ""))
    text = render_human([a, b])
    assert text.count("\n\n") == 2
    assert text.index("error: first") < text.index("error: second")
    assert text.endswith("  | ^\n\n")


def test_secondary_labels_in_line_order_with_gap_elided():
    text = "fn f() {\n" + "".join(f"  let a{i} = {i}\n" for i in range(1, 12)) + "}\n"
    src = SourceFile("a.ph", text)
    d = Diagnostic.error(
        "E0002",
        "duplicate binding `a10`",
        Label(at(src, "a10"), "redefined here"),
        secondary=[Label(at(src, "a1 "), "first defined here"), Label(at(src, "a8"), "")],
    )
    assert render_human([d]) == lines(
        "error[E0002]: duplicate binding `a10`",
        "  --> a.ph:11:7",
        "   |",
        "2  |   let a1 = 1",
        "   |       --- first defined here",
        "...",
        "9  |   let a8 = 8",
        "   |       --",
        "10 |   let a9 = 9",
        "11 |   let a10 = 10",
        "   |       ^^^ redefined here",
        "",
    )


def test_several_labels_on_one_line_hang_below():
    src = SourceFile("b.ph", "  let x: i32 = foo(a, b)\n")
    d = Diagnostic.error(
        None,
        "mismatched types",
        Label(at(src, "foo"), "expected `i32`"),
        secondary=[Label(at(src, "x"), "first"), Label(at(src, "i32"), "expected due to this")],
    )
    assert render_human([d]) == lines(
        "error: mismatched types",
        " --> b.ph:1:16",
        "  |",
        "1 |   let x: i32 = foo(a, b)",
        "  |       -  ---   ^^^ expected `i32`",
        "  |       |  |",
        "  |       |  expected due to this",
        "  |       first",
        "",
    )


def test_secondary_label_in_another_file():
    other = SourceFile("lib.ph", "fn g(a) = a\n")
    d = Diagnostic.error(
        None,
        "wrong number of arguments",
        Label(at(KERNEL, "x + 1"), "two given"),
        secondary=[Label(at(other, "fn g"), "defined here")],
    )
    assert render_human([d]) == lines(
        "error: wrong number of arguments",
        " --> kernels/k.ph:2:11",
        "  |",
        "2 |   let y = x + 1",
        "  |           ^^^^^ two given",
        "  |",
        " ::: lib.ph:1:1",
        "  |",
        "1 | fn g(a) = a",
        "  | ---- defined here",
        "",
    )


MULTI = SourceFile("c.ph", "kernel k() {\n  let y = foo(\n    1,\n  )\n  if c {\n    a\n  }\n}\n")


def test_multiline_span_starting_mid_line():
    start = at(MULTI, "foo")
    end = at(MULTI, "  )")
    d = Diagnostic.error("E0003", "bad call", Label(MULTI.span(start.start, end.end), "this call"))
    assert render_human([d]) == lines(
        "error[E0003]: bad call",
        " --> c.ph:2:11",
        "  |",
        "2 |     let y = foo(",
        "  |  ___________^",
        "3 | |     1,",
        "4 | |   )",
        "  | |___^ this call",
        "",
    )


def test_multiline_span_starting_at_indentation_uses_slash():
    start = at(MULTI, "if c")
    end = at(MULTI, "  }")
    d = Diagnostic.error(
        None,
        "bad if",
        Label(MULTI.span(start.start, end.end), "this if"),
        secondary=[Label(at(MULTI, "kernel"), "in this kernel")],
    )
    assert render_human([d]) == lines(
        "error: bad if",
        " --> c.ph:5:3",
        "  |",
        "1 |   kernel k() {",
        "  |   ------ in this kernel",
        "...",
        "5 | /   if c {",
        "6 | |     a",
        "7 | |   }",
        "  | |___^ this if",
        "",
    )


def test_nested_multiline_spans_take_their_own_columns():
    start = at(MULTI, "if c")
    end = at(MULTI, "  }")
    whole = MULTI.span(0, len(MULTI.data))
    d = Diagnostic.error(
        None,
        "nested",
        Label(MULTI.span(start.start, end.end), "inner"),
        secondary=[Label(whole, "outer")],
    )
    assert render_human([d]) == lines(
        "error: nested",
        " --> c.ph:5:3",
        "  |",
        "1 | /   kernel k() {",
        "2 | |     let y = foo(",
        "3 | |       1,",
        "4 | |     )",
        "5 | | /   if c {",
        "6 | | |     a",
        "7 | | |   }",
        "  | | |___^ inner",
        "8 | |   }",
        "  | |____- outer",
        "",
    )


def test_long_multiline_span_is_elided():
    text = "kernel k() {\n" + "".join(f"  s{i}\n" for i in range(20)) + "}\n"
    src = SourceFile("long.ph", text)
    d = Diagnostic.error(None, "long", Label(src.span(0, len(src.data)), "whole kernel"))
    assert render_human([d]) == lines(
        "error: long",
        "  --> long.ph:1:1",
        "   |",
        "1  | / kernel k() {",
        "2  | |   s0",
        "3  | |   s1",
        "...  |",
        "21 | |   s19",
        "22 | | }",
        "   | |__^ whole kernel",
        "",
    )


def gutter_of(line_number: int) -> list[str]:
    text = "".join(f"l{i}\n" for i in range(1, line_number + 1))
    src = SourceFile("g.ph", text)
    d = Diagnostic.error(None, "here", Label(at(src, f"l{line_number}\n", length=1), "this"))
    return render_human([d]).splitlines()


def test_gutter_width_follows_the_largest_line_number():
    assert gutter_of(9)[1:5] == [" --> g.ph:9:1", "  |", "9 | l9", "  | ^ this"]
    assert gutter_of(10)[1:5] == ["  --> g.ph:10:1", "   |", "10 | l10", "   | ^ this"]
    assert gutter_of(100)[1:5] == ["   --> g.ph:100:1", "    |", "100 | l100", "    | ^ this"]


def test_gutter_width_counts_secondary_lines_too():
    text = "".join(f"l{i}\n" for i in range(1, 13))
    src = SourceFile("g.ph", text)
    d = Diagnostic.error(
        None, "x", Label(at(src, "l2\n", length=2), "a"), secondary=[Label(at(src, "l12"), "b")]
    )
    out = render_human([d]).splitlines()
    assert out[1] == "  --> g.ph:2:1"
    assert out[3] == "2  | l2"
    assert out[6] == "12 | l12"


def test_non_ascii_columns_are_characters_and_wide_glyphs_take_two_cells():
    src = SourceFile("u.ph", "let é = 日本 + x\n")
    d = Diagnostic.error(
        None, "x", Label(at(src, "x"), "here"), secondary=[Label(at(src, "日本"), "wide")]
    )
    out = render_human([d]).splitlines()
    # Column 14 in characters: `let é = 日本 + ` is 13 characters.
    assert out[1] == " --> u.ph:1:14"
    assert out[3] == "1 | let é = 日本 + x"
    assert out[4] == "  |         ----   ^ here"


def test_tabs_are_expanded_the_same_in_text_and_carets():
    src = SourceFile("t.ph", "\tlet\ty = x\n")
    d = Diagnostic.error(None, "x", Label(at(src, "x"), "here"))
    out = render_human([d]).splitlines()
    assert out[1] == " --> t.ph:1:10"
    assert out[3] == "1 |     let    y = x"
    assert out[4] == "  |                ^ here"
    assert "\t" not in "".join(out)


def test_empty_span_gets_one_caret_past_the_end_of_the_line():
    src = SourceFile("e.ph", "let x =\n")
    d = Diagnostic.error(None, "expected expression", Label(src.span(7, 7), "here"))
    assert render_human([d]).splitlines()[3:5] == ["1 | let x =", "  |        ^ here"]


def test_no_trailing_spaces_for_empty_lines():
    src = SourceFile("e.ph", "a\n\nb\n")
    d = Diagnostic.error(None, "x", Label(at(src, "b"), "b"), secondary=[Label(at(src, "a"), "a")])
    out = render_human([d])
    assert "2 |\n" in out
    assert not any(line.endswith(" ") for line in out.splitlines())


def test_color_only_when_asked():
    d = Diagnostic.error("E0012", "msg", Label(at(KERNEL, "x"), "lbl"), help="h")
    plain = render_human([d])
    colored = render_human([d], color=True)
    assert "\x1b[" not in plain
    assert "\x1b[1m\x1b[31merror[E0012]\x1b[0m" in colored
    assert "\x1b[1m\x1b[34m" in colored  # the blue gutter
    stripped = colored
    for code in ("\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[34m"):
        stripped = stripped.replace(code, "")
    assert stripped == plain


def test_summary_lines():
    e = Diagnostic.error(None, "e", None)
    w = Diagnostic.warning(None, "w", None)
    assert summary([e]) == "error: aborting due to 1 previous error\n"
    assert summary([e, e]) == "error: aborting due to 2 previous errors\n"
    assert summary([e, w]) == "error: aborting due to 1 previous error; 1 warning emitted\n"
    assert summary([w, w]) == "warning: 2 warnings emitted\n"
    assert summary([]) == ""


def test_json_fields():
    src = SourceFile("u.ph", "let é = x\nlet z = q\n")
    d = Diagnostic.error(
        "E0012",
        "cannot find value `x` in this scope",
        Label(at(src, "x"), "not found"),
        secondary=[Label(at(src, "q"), "also")],
        notes=["n"],
        help="h",
    )
    nospan = Diagnostic.warning(None, "w", None)
    rows = render_json([d, nospan]).splitlines()
    assert len(rows) == 2
    first = json.loads(rows[0])
    assert first == {
        "version": 1,
        "severity": "error",
        "code": "E0012",
        "message": "cannot find value `x` in this scope",
        "file": "u.ph",
        "line": 1,
        "column": 9,
        "end_line": 1,
        "end_column": 10,
        "byte_start": 9,  # `é` is two bytes, so byte 9 is column 9
        "byte_end": 10,
        "labels": [
            {
                "file": "u.ph",
                "line": 1,
                "column": 9,
                "end_line": 1,
                "end_column": 10,
                "message": "not found",
                "primary": True,
            },
            {
                "file": "u.ph",
                "line": 2,
                "column": 9,
                "end_line": 2,
                "end_column": 10,
                "message": "also",
                "primary": False,
            },
        ],
        "notes": ["n"],
        "help": ["h"],
    }
    second = json.loads(rows[1])
    assert second["severity"] == "warning"
    assert second["file"] is None and second["line"] is None and second["labels"] == []
