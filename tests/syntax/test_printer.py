"""The printer: canonical `.ph` that parses back to an equal AST, and its span map."""

from __future__ import annotations

import itertools

import pytest
from syntax_helpers import (
    B,
    F,
    I,
    N,
    U,
    block,
    call,
    ctx,
    fixture_text,
    idx,
    mk,
    parse_ok,
    pt,
    scalar,
    sl,
    source,
    span_len,
    tensor,
    tile,
)

from phobos.syntax import ast
from phobos.syntax.parser import parse
from phobos.syntax.printer import print_mapped, print_program


def round_trip(program: ast.Program) -> str:
    text = print_program(program)
    again, diags = parse(source(text))
    assert diags == [], (text, [d.message for d in diags])
    assert again == program, text
    # Canonical: printing the reparsed tree gives the same text.
    assert print_program(again) == text
    return text


def expr_round_trip(node) -> str:
    program = mk(ast.Program, (mk(ast.Function, N("f"), (), node),))
    text = round_trip(program)
    return text[len("fn f() = ") : -1]


# ---------------------------------------------------------------------------
# Every production, from text

PROGRAMS = [
    "fn f(a, b) = a + b\n",
    "fn g() = 1\n",
    "fn h(t) {\n  t += 1\n}\n",
    "fn e() {}\n",
    "kernel k() {}\n",
    "@pipeline\n@launch(256, 2)\n@aligned(M = TILE_M, K = 16)\n@autotune(T in [32, 256], U in [1, 2, 4])\n"
    "@tensorcore(wmma)\n@flags(x = 1.5, on = true, off = false)\n@empty()\nkernel k() {}\n",
    "kernel k(A: tensor<f16>[M, 64], t: i32, b: bool, u: u8) {\n  return\n}\n",
    """\
kernel k(A: tensor<f32>[N, N]) {
  let x = 1
  let y: f32 = 2.0
  var z = x
  var t: tile<f32>[16, 16] = 0.0
  var u: tile<bf16>[16, 1]
  x = 1
  A[i, j :+ 4] += 2
  x -= 1; x *= 2; x /= 3; x %= 4; x &= 5; x |= 6; x ^= 7; x <<= 8; x >>= 9
  for i in range(0, N) {
    continue
  }
  for i in range(0, N, 4) {
    break
  }
  for<unroll 4> i in range(0, N) {}
  for<unroll U + 1> i in range(a, b, s) {}
  while i < N {
    i += 1
  }
  if a {
    x = 1
  } else if b {
    x = 2
  } else {
    x = 3
  }
  if c {}
  barrier()
  return
}
""",
    """\
kernel k(A: tensor<f32>[N, N]) {
  let a = A[i]
  let b = A[s : e, s:, :e, :, s :+ n]
  let c = sum<over ctx.lane, width 8>(x) + reduce<over ctx.thread>(x, f)
  let d = shfl<xor 16>(v) + shfl<from s>(v) + shfl<down d>(v) + shfl<up 1>(v)
  let e = ctx.block.x * ctx.threads + ctx.lane
  let f = -x + !y + ~z
  let g = (a + b) * (c - d) / (e % f)
  let h = a - (b - c) - d
  let i = -(a + b)
  let j = f(x)[0] + A[i][j]
  let k = 1. + 1.0e30 + 2.5e-4 + 3e0 + true + false
  let from = shfl<xor (a > b)>(v)
}
""",
]


@pytest.mark.parametrize("text", PROGRAMS)
def test_every_production_round_trips(text):
    program = parse_ok(text)
    assert round_trip(program)


@pytest.mark.parametrize("name", ["sgemm", "flash_attention", "kda"])
def test_spec_examples_round_trip(name):
    program = parse_ok(fixture_text(name))
    round_trip(program)


def test_canonical_text():
    program = parse_ok(
        """\
        @launch(256)   @pipeline
        kernel k(A:tensor<f32>[M,K],
                 n:i32){
          let x=((a+b))*c;var t:tile<f32>[4,4]
          if x>0{x=-(x)}else if x<0 {x=1}
          for<unroll 2>i in range(0,n,2){A[i:+4,:]=A[:4,i:]}
        }
        fn f(a,b)=a*(b+1)
        """
    )
    assert print_program(program) == (
        "@launch(256)\n"
        "@pipeline\n"
        "kernel k(A: tensor<f32>[M, K], n: i32) {\n"
        "  let x = (a + b) * c\n"
        "  var t: tile<f32>[4, 4]\n"
        "  if x > 0 {\n"
        "    x = -x\n"
        "  } else if x < 0 {\n"
        "    x = 1\n"
        "  }\n"
        "  for<unroll 2> i in range(0, n, 2) {\n"
        "    A[i :+ 4, :] = A[:4, i:]\n"
        "  }\n"
        "}\n"
        "\n"
        "fn f(a, b) = a * (b + 1)\n"
    )


# ---------------------------------------------------------------------------
# Minimal parentheses, from trees built directly

OPS = list(ast.BINARY_OPS)


@pytest.mark.parametrize("outer, inner", list(itertools.product(OPS, OPS)))
def test_binary_nesting_round_trips_with_minimal_parentheses(outer, inner):
    a, b, c = N("a"), N("b"), N("c")
    left = B(outer, B(inner, a, b), c)
    right = B(outer, a, B(inner, b, c))
    left_text = expr_round_trip(left)
    right_text = expr_round_trip(right)
    po, pi = ast.PRECEDENCE[outer], ast.PRECEDENCE[inner]
    assert left_text == (f"a {inner} b {outer} c" if pi >= po else f"(a {inner} b) {outer} c")
    assert right_text == (f"a {outer} b {inner} c" if pi > po else f"a {outer} (b {inner} c)")


def test_unary_parentheses():
    assert expr_round_trip(U("-", B("+", N("a"), N("b")))) == "-(a + b)"
    assert expr_round_trip(U("-", U("-", N("a")))) == "-(-a)"
    assert expr_round_trip(U("!", call("f", N("x")))) == "!f(x)"
    assert expr_round_trip(U("~", idx("A", pt(I(0))))) == "~A[0]"
    assert expr_round_trip(B("*", U("-", N("a")), N("b"))) == "-a * b"
    assert expr_round_trip(B("-", N("a"), U("-", I(1)))) == "a - -1"


def test_postfix_bases_get_parentheses():
    assert expr_round_trip(idx(B("+", N("a"), N("b")), pt(I(0)))) == "(a + b)[0]"
    assert expr_round_trip(call(U("-", N("f")), N("x"))) == "(-f)(x)"
    assert expr_round_trip(idx(call("f", N("x")), sl())) == "f(x)[:]"


def test_config_values_below_bit_or_get_parentheses():
    node = call("shfl", N("v"), config=[("xor", B("<", N("a"), N("b")))])
    assert expr_round_trip(node) == "shfl<xor (a < b)>(v)"
    node = call("shfl", N("v"), config=[("xor", B("|", N("a"), I(1)))])
    assert expr_round_trip(node) == "shfl<xor a | 1>(v)"


def test_every_subscript_form_prints():
    node = idx(
        "A",
        pt(N("i")),
        sl(N("s"), N("e")),
        span_len(N("s"), N("n")),
        sl(),
        sl(N("s"), None),
        sl(None, N("e")),
    )
    assert expr_round_trip(node) == "A[i, s : e, s :+ n, :, s:, :e]"


def test_floats_print_their_text_or_a_readable_repr():
    assert expr_round_trip(F(1.0, "1.")) == "1."
    assert expr_round_trip(F(1e30, "1.0e30")) == "1.0e30"
    assert expr_round_trip(F(0.5)) == "0.5"
    assert expr_round_trip(F(1e-07)) == "1e-07"
    assert expr_round_trip(F(2.0, "2.0f")) == "2.0"  # a spelling the lexer refuses is not kept
    assert print_program(F(float("inf"))) == "1e999"


# ---------------------------------------------------------------------------
# Lone nodes, as a message quotes them


def test_any_node_prints_alone():
    assert print_program(B("+", N("a"), I(1))) == "a + 1"
    assert print_program(ctx("block", "x")) == "ctx.block.x"
    assert print_program(mk(ast.Bool, True)) == "true"
    assert print_program(tensor("f16", "M", 64)) == "tensor<f16>[M, 64]"
    assert print_program(tile("f32", "R", "C")) == "tile<f32>[R, C]"
    assert print_program(scalar("bf16")) == "bf16"
    assert print_program(span_len(N("s"), I(4))) == "s :+ 4"
    assert print_program(sl()) == ":"
    assert print_program(mk(ast.ConfigItem, "over", ctx("lane"))) == "over ctx.lane"
    assert print_program(mk(ast.Param, N("A"), scalar("f32"))) == "A: f32"
    assert print_program(mk(ast.Let, N("x"), None, I(1))) == "let x = 1"
    assert print_program(mk(ast.Var, N("t"), tile("f32", 4), None)) == "var t: tile<f32>[4]"
    assert print_program(mk(ast.Assign, N("x"), "<<=", I(1))) == "x <<= 1"
    assert print_program(mk(ast.Break)) == "break"
    assert print_program(block()) == "{}"
    assert print_program(block(mk(ast.Return))) == "{\n  return\n}"
    assert print_program(mk(ast.Attribute, N("pipeline"), None)) == "@pipeline"
    assert print_program(mk(ast.Attribute, N("x"), ())) == "@x()"
    search = mk(ast.SearchDim, N("T"), (I(32), I(64)))
    assert print_program(search) == "T in [32, 64]"
    assert print_program(mk(ast.KeywordArg, N("M"), N("TM"))) == "M = TM"
    assert print_program(mk(ast.PositionalArg, I(256))) == "256"
    loop = mk(ast.For, N("i"), I(0), N("n"), None, I(2), block())
    assert print_program(loop) == "for<unroll 2> i in range(0, n) {}"
    assert print_program(mk(ast.While, N("c"), block())) == "while c {}"


# ---------------------------------------------------------------------------
# The span map


def _nodes_by_span(program):
    return {(n.span.start, n.span.end, type(n)): n for n in ast.walk(program)}


@pytest.mark.parametrize("name", ["sgemm", "flash_attention", "kda"])
def test_print_mapped_covers_every_node(name):
    src = source(fixture_text(name))
    program, diags = parse(src)
    assert diags == []
    text, entries = print_mapped(program)
    assert text == print_program(program)
    size = len(text.encode("utf-8"))
    for start, end, span in entries:
        assert 0 <= start <= end <= size
        assert span.source is src
    # Every node printed once, and the Program itself covers the whole text.
    assert len(entries) == sum(1 for _ in ast.walk(program))
    assert entries[-1] == (0, size, program.span)
    spans = {(span.start, span.end) for _, _, span in entries}
    for node in ast.walk(program):
        assert (node.span.start, node.span.end) in spans


def test_print_mapped_ranges_hold_each_node_text():
    src = source(fixture_text("sgemm"))
    program, _ = parse(src)
    text, entries = print_mapped(program)
    data = text.encode("utf-8")
    by_span = {}
    for node in ast.walk(program):
        by_span.setdefault((node.span.start, node.span.end), []).append(node)
    checked = 0
    for start, end, span in entries:
        printed = data[start:end].decode("utf-8")
        if "\n" in printed:
            continue  # a block prints at its own depth of indentation
        candidates = by_span[(span.start, span.end)]
        assert any(print_program(n) == printed for n in candidates), printed
        checked += 1
    assert checked > 100


def test_print_mapped_maps_back_to_the_original_text():
    src = source("fn f(a,b)=a*(b+1)\n")
    program, _ = parse(src)
    text, entries = print_mapped(program)
    assert text == "fn f(a, b) = a * (b + 1)\n"
    pairs = {text[s:e]: span.text for s, e, span in entries}
    assert pairs["a * (b + 1)"] == "a*(b+1)"
    assert pairs["b + 1"] == "(b+1)"  # a node's span takes in its parentheses
    assert pairs["1"] == "1"
