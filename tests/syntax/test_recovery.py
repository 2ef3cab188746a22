"""Syntax errors: a precise diagnostic for each common mistake, and recovery, so one
run reports every independent error and never raises."""

from __future__ import annotations

import random

import pytest
from syntax_helpers import errors, fixture_text, source

from phobos.syntax import ast
from phobos.syntax.lexer import tokenize
from phobos.syntax.parser import parse


def _one(text: str):
    diags = errors(text)
    assert len(diags) == 1, [d.message for d in diags]
    return diags[0]


def _line(diag) -> int:
    return diag.span.source.line_col(diag.span.start)[0]


def kernel(body: str) -> str:
    return "kernel k(A: tensor<f32>[N]) {\n" + body + "\n}\n"


@pytest.mark.parametrize(
    "body, code, message",
    [
        ("  let x", "E0008", "`let x` has no value"),
        ("  let x: f32", "E0008", "`let x` has no value"),
        ("  var x", "E0009", "`var x` needs a type or a value"),
        ("  for i in 0..n {\n  }", "E0010", "expected `range(...)`, found `0.`"),
        ("  for i in n {\n  }", "E0010", "expected `range(...)`, found `n`"),
        ("  for i in range(n) {\n  }", "E0010", "`range` takes 2 or 3 arguments, found 1"),
        ("  for i range(0, n) {\n  }", "E0003", "expected `in`, found `range`"),
        ("  for<step 2> i in range(0, n) {}", "E0003", "expected `unroll`, found `step`"),
        ("  if x = 1 {\n  }", "E0007", "`=` in a condition"),
        ("  while x = 1 {\n  }", "E0007", "`=` in a condition"),
        ("  let ctx = 1", "E0011", "`ctx` is reserved and cannot be bound"),
        ("  var ctx = 1", "E0011", "`ctx` is reserved and cannot be bound"),
        ("  for ctx in range(0, 4) {}", "E0011", "`ctx` is reserved and cannot be bound"),
        ("  let y = ctx", "E0011", "`ctx` cannot be used as a value"),
        ("  let y = ctx.", "E0003", "expected a field name after `ctx.`, found newline"),
        ("  ctx.lane = 1", "E0012", "cannot assign to a `ctx` field"),
        ("  f(x) = 1", "E0012", "invalid left-hand side of assignment"),
        ("  A[i][j] = 1", "E0012", "invalid left-hand side of assignment"),
        ("  x = sum<over ctx.lane, wide 8>(y)", "E0013", "expected a configuration word"),
        ("  x = A.shape", "E0018", "unexpected `.` after an expression"),
        ("  let t: float = 1", "E0014", "unknown type `float`"),
        ("  var t: tile<f32> = 1", "E0014", "expected `[` and the dimensions of the tile"),
        ("  var t: tile<f32>[2 * N]", "E0014", "expected a literal, found an expression"),
        ("  x = (a + b", "E0005", "expected `)`, found `}`"),
        ("  x = f(a, b", "E0005", "expected `,` or `)`, found `}`"),
        ("  x = A[i", "E0005", "expected `,` or `]`, found `}`"),
        ("  x = a +", "E0004", "expected expression, found `}`"),
        ("  x = A[]", "E0004", "expected a subscript, found `]`"),
        ("  x = A[:+ 4]", "E0004", "expected expression, found `:+`"),
        ("  x = 1 y = 2", "E0003", "expected `;` or newline, found `y`"),
        ("  x: f32 = 1", "E0003", "expected `;` or newline, found `:`"),
        ("  if a {\n  }\n  else {\n  }", "E0006", "`else` must be on the same line"),
        ("  x = 1\n  else {\n  }", "E0006", "`else` without an `if`"),
        ("  if a {\n  } else {\n  }\n  else {\n  }", "E0006", "`else` without an `if`"),
    ],
)
def test_precise_diagnostics(body, code, message):
    diag = _one(kernel(body))
    assert diag.code == code
    assert message in diag.message
    assert diag.severity == "error"


def test_help_for_common_mistakes():
    assert "`==`" in _one(kernel("  if x = 1 {}")).help[0]
    assert "range(0, n)" in _one(kernel("  for i in range(n) {}")).help[0]
    assert "var x: tile<T>[R, C]" in _one(kernel("  let x")).help[0]
    assert "} else {" in _one(kernel("  if a {\n  }\n  else {}")).help[0]
    assert "let x: T" in _one(kernel("  x: f32 = 1")).help[0]
    assert "takes no value" in _one(kernel("  return 0")).help[0]


def test_unclosed_delimiter_points_at_its_opener():
    text = kernel("  let x = f(a,\n    b\n  let y = 2")
    diag = _one(text)
    assert diag.code == "E0005"
    (opener,) = diag.secondary
    assert opener.message == "unclosed delimiter"
    assert opener.span.text == "("
    # The closer belongs at the end of the line that lacks it, not at `let`.
    assert _line(diag) == 3 and diag.span.start == diag.span.end


def test_unclosed_blocks_at_the_end_of_the_file_are_one_diagnostic():
    diag = _one("kernel k() {\n  if a {\n    x = 1\n")
    assert diag.message == "this file contains an unclosed delimiter"
    assert [label.span.text for label in diag.secondary] == ["{", "{"]
    assert _line(diag) == 3


def test_an_unclosed_block_ends_at_the_next_item():
    program, diags = parse(source("kernel a() {\n  x = 1\nkernel b() {\n  y = 2\n}\n"))
    assert [d.message for d in diags] == ["expected `}`, found keyword `kernel`"]
    assert [item.name.id for item in program.items] == ["a", "b"]


def test_top_level_errors():
    d = _one("let x = 1\nkernel k() {}\n")
    assert (d.code, d.message) == ("E0016", "expected `kernel` or `fn`, found keyword `let`")
    d = _one("@launch(256)\nfn f(a) = a\n")
    assert (d.code, d.message) == ("E0015", "attributes apply only to kernels")
    d = _one("kernel k() {}\n}\n")
    assert (d.code, d.message) == ("E0016", "expected `kernel` or `fn`, found `}`")
    d = _one("@launch(1 + 1)\nkernel k() {}\n")
    assert d.code == "E0015"
    d = _one("@autotune(B in [])\nkernel k() {}\n")
    assert d.message == "the search dimension `B` lists no values"
    d = _one("@autotune(B in [x])\nkernel k() {}\n")
    assert d.message == "expected an integer, found `x`"
    d = _one("fn ctx(a) = a\n")
    assert d.code == "E0011"
    d = _one("@launch(256)\n")
    assert d.message == "expected `kernel` after the attributes, found end of file"


def test_lexer_errors_are_not_reported_twice():
    diags = errors(kernel("  x = 1 $ 2\n  y = $"))
    assert [d.code for d in diags] == ["E0001", "E0001"]


def test_diagnostics_come_in_source_order():
    diags = errors(kernel("  let a\n  x = 1.5f\n  var b"))
    assert [d.code for d in diags] == ["E0008", "E0002", "E0009"]


MANY_ERRORS = """\
@autotune(T in [32, 128])
kernel first(A: tensr<f32>[N], B: tensor<f32>[N]) {
  let i = ctx.block.x * T
  let x = A[i :+ T] + )
  for j in range(0, T) {
    let z = (j + )
    B[j] = 2.0 $
  }
  if x = 1 {
    let y
  }
  else {
    B[0] = 1.0
  }
  B[i :+ T] = x
}

fn bad(a, b) = a b

kernel second(A: tensor<f32>[N]) {
  var s
  s = sum<over ctx.lane, widht 8>(s)
  for i in 0..N {
    A[i] = s.x
  }
  let ctx = 2
}
"""


def test_one_run_reports_every_independent_error():
    diags = errors(MANY_ERRORS)
    got = [(_line(d), d.code) for d in diags]
    assert got == [
        (2, "E0014"),  # tensr
        (4, "E0004"),  # `+ )`
        (6, "E0004"),  # `(j + )`
        (7, "E0001"),  # `$`
        (9, "E0007"),  # `x = 1` in a condition
        (10, "E0008"),  # let without value
        (12, "E0006"),  # else on the next line
        (18, "E0003"),  # `a b`
        (21, "E0009"),  # var without type or value
        (22, "E0013"),  # widht
        (23, "E0010"),  # 0..N
        (24, "E0018"),  # s.x, inside the broken loop's block
        (26, "E0011"),  # let ctx
    ]


def test_good_items_around_broken_ones_survive():
    program, diags = parse(source(MANY_ERRORS))
    assert diags
    names = [item.name.id for item in program.items]
    # A missing terminator keeps what came before it: `bad` is `fn bad(a, b) = a`.
    assert names == ["first", "bad", "second"]
    assert program.items[1].body == ast.Name("a", span=program.span)
    first = program.items[0]
    # The broken parameter is skipped; the good one and the body's good statements stay.
    assert [p.name.id for p in first.params] == ["B"]
    assert any(isinstance(s, ast.Assign) for s in first.body.stmts)


def _check_spans(src, diags):
    size = len(src.data)
    for d in diags:
        assert d.primary is not None and d.code and d.message
        for label in (d.primary, *d.secondary):
            assert label.span.source is src
            assert 0 <= label.span.start <= label.span.end <= size


@pytest.mark.parametrize("name", ["sgemm", "flash_attention", "kda"])
def test_truncations_of_the_examples_never_raise(name):
    text = fixture_text(name)
    tokens, _ = tokenize(source(text))
    cuts = {t.span.start for t in tokens} | {t.span.end for t in tokens}
    for cut in sorted(cuts):
        src = source(text[:cut])
        program, diags = parse(src)
        assert isinstance(program, ast.Program)
        _check_spans(src, diags)


@pytest.mark.parametrize("name", ["sgemm", "flash_attention", "kda"])
def test_token_mutations_never_raise(name):
    text = fixture_text(name)
    tokens, _ = tokenize(source(text))
    pieces = [t.text if t.kind != "newline" else "\n" for t in tokens[:-1]]
    extra = ["{", "}", "(", ")", "[", "]", "=", "else", "let", ":", ":+", "<", ">", "ctx", "@"]
    rng = random.Random(name)
    for _ in range(150):
        mutant = list(pieces)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(mutant))
            action = rng.randrange(3)
            if action == 0:
                del mutant[k]
            elif action == 1:
                mutant.insert(k, rng.choice(extra))
            else:
                j = rng.randrange(len(mutant))
                mutant[k], mutant[j] = mutant[j], mutant[k]
        src = source(" ".join(mutant))
        _, diags = parse(src)
        _check_spans(src, diags)


def test_deep_nesting_is_refused_not_a_crash():
    for text in ("(" * 5000 + "1" + ")" * 5000, "-" * 5000 + "1", "A[" * 3000 + "0"):
        diags = errors(f"fn f() = {text}\n")
        assert "E0017" in [d.code for d in diags]
    blocks = "kernel k() {\n" + "if a {\n" * 500 + "}\n" * 501
    assert "E0017" in [d.code for d in errors(blocks)]


def test_unterminated_and_odd_inputs():
    for text in ["kernel", "kernel k(", "kernel k(A:", "@", "@x(", "fn", "fn f(a) =", "{", "}}}"]:
        src = source(text)
        program, diags = parse(src)
        assert diags, text
        _check_spans(src, diags)
