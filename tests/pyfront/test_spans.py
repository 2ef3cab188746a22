"""Spans are byte ranges of the `.py` file: every node points at what the user wrote."""

from __future__ import annotations

from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax import ast

TEXT = """\
import phobos.lang as ph

# π: a comment with a character of two bytes, before the kernel
@ph.kernel
@ph.autotune(BLOCK=[16, 256])
def saxpy(x: ph.tensor[ph.f32][N], alpha: ph.f32):
    \"\"\"Scale x in place. é\"\"\"
    base: ph.let = ph.ctx.block.x * BLOCK
    x[base:+BLOCK] = alpha * x[base:+BLOCK]  # ünïcode
    note: ph.let = 'é' ; y: ph.let = x ** 2
"""


def _translate():
    source = SourceFile("saxpy.py", TEXT)
    return source, translate_module(source)


def _at(source, span):
    line, col = source.line_col(span.start)
    return line, col, span.text


def test_spans_point_at_the_python_text():
    source, (program, _) = _translate()
    kernel = program.items[0]
    assert _at(source, kernel.name.span) == (6, 5, "saxpy")
    assert kernel.span.text.startswith("@ph.kernel") and kernel.span.text.endswith("x ** 2")
    attr = kernel.attrs[0]
    assert _at(source, attr.span) == (5, 1, "@ph.autotune(BLOCK=[16, 256])")
    assert attr.name.span.text == "autotune"
    assert attr.args[0].span.text == "BLOCK=[16, 256]"
    assert attr.args[0].name.span.text == "BLOCK"
    x, alpha = kernel.params
    assert _at(source, x.span) == (6, 11, "x: ph.tensor[ph.f32][N]")
    assert x.name.span.text == "x"
    assert x.type.span.text == "ph.tensor[ph.f32][N]"
    assert x.type.elem.span.text == "ph.f32"
    assert x.type.dims[0].span.text == "N"
    assert alpha.type.span.text == "ph.f32"
    let = kernel.body.stmts[0]
    assert _at(source, let.span) == (8, 5, "base: ph.let = ph.ctx.block.x * BLOCK")
    assert let.value.left.span.text == "ph.ctx.block.x"
    assign = kernel.body.stmts[1]
    assert _at(source, assign.span)[:2] == (9, 5)
    target = assign.target
    assert target.subscripts[0].span.text == "base:+BLOCK"
    assert target.subscripts[0].length.span.text == "BLOCK"
    assert assign.value.span.text == "alpha * x[base:+BLOCK]"


def test_spans_after_multibyte_characters_are_bytes():
    source, (_, diags) = _translate()
    string, power = diags
    # `'é'` sits after no wide character on its line, `**` after one two-byte one.
    assert string.code == "E0104" and string.span.text == "'é'"
    assert _at(source, string.span)[:2] == (10, 20)
    assert power.code == "E0101" and power.span.text == "**"
    line, col = source.line_col(power.span.start)
    assert (line, col) == (10, 40)  # characters: the two-byte `é` is one column


def test_every_span_lies_inside_the_file():
    source, (program, diags) = _translate()
    for node in ast.walk(program):
        assert 0 <= node.span.start <= node.span.end <= len(source.data), node
        assert node.span.source is source
    for d in diags:
        assert 0 <= d.span.start < d.span.end <= len(source.data)


def test_operator_spans_skip_comments_and_parentheses():
    text = "import phobos.lang as ph\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = (x  # **\n        ) ** 2\n"
    source = SourceFile("m.py", text)
    _, diags = translate_module(source)
    assert [d.span.text for d in diags] == ["**"]
    assert source.line_col(diags[0].span.start) == (5, 11)


def test_byte_order_mark():
    text = "\ufeffimport phobos.lang as ph\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = x ** 2\n"
    source = SourceFile("m.py", text)
    program, diags = translate_module(source)
    assert program.items[0].name.span.text == "k"
    assert [d.span.text for d in diags] == ["**"]


def test_python_syntax_error_is_a_diagnostic():
    text = "import phobos.lang as ph\n\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = (x +\n"
    source = SourceFile("bad.py", text)
    program, diags = translate_module(source)
    assert program.items == ()
    (d,) = diags
    assert d.code == "E0100" and d.severity == "error"
    assert "never closed" in d.message
    assert source.line_col(d.span.start) == (5, 17)
    assert d.span.text == "("


def test_syntax_error_message_and_help_are_split():
    text = (
        "import phobos.lang as ph\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = ph.min(x 1.0)\n"
    )
    source = SourceFile("bad.py", text)
    _, (d,) = translate_module(source)
    assert d.message == "invalid syntax"
    assert d.help == ("perhaps you forgot a comma?",)
    assert source.line_col(d.span.start)[0] == 4


def test_syntax_error_column_counts_characters_not_bytes():
    text = "x = 'ééé' $\n"
    source = SourceFile("bad.py", text)
    _, (d,) = translate_module(source)
    assert d.span.text == "$"


def test_indentation_error():
    source = SourceFile("bad.py", "def k():\nreturn\n")
    _, (d,) = translate_module(source)
    assert d.code == "E0100" and "indented block" in d.message
    assert source.line_col(d.span.start)[0] == 2


def test_null_byte_is_a_diagnostic():
    _, (d,) = translate_module(SourceFile("bad.py", "x = 1\x00\n"))
    assert d.code == "E0100"


def test_syntax_error_renders_like_any_other():
    from phobos.diagnostics.render import render_human

    text = "import phobos.lang as ph\n@ph.kernel\ndef k(:\n    pass\n"
    source = SourceFile("bad.py", text)
    _, diags = translate_module(source)
    report = render_human(diags)
    assert report.startswith("error[E0100]: ")
    assert "--> bad.py:3:" in report
    assert "def k(:" in report


def test_windows_and_old_mac_line_endings():
    for newline in ("\r\n", "\r"):
        lines = [
            "import phobos.lang as ph",
            "@ph.kernel",
            "def k(x: ph.f32):",
            "    y: ph.let = x ** 2",
        ]
        source = SourceFile("m.py", newline.join(lines) + newline)
        program, diags = translate_module(source)
        assert program.items[0].name.span.text == "k"
        assert [d.span.text for d in diags] == ["**"]
