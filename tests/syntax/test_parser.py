"""The parser: every production of SPEC.md "Grammar" to the exact AST, and spans."""

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
    expr,
    idx,
    mk,
    parse_ok,
    pt,
    scalar,
    sl,
    source,
    span_len,
    stmt,
    stmts,
    tensor,
    tile,
)

from phobos.syntax import ast
from phobos.syntax.parser import parse

# ---------------------------------------------------------------------------
# Expressions: literals and atoms


def test_literals():
    assert expr("42") == I(42)
    assert expr("1.5") == F(1.5)
    assert expr("true") == mk(ast.Bool, True)
    assert expr("false") == mk(ast.Bool, False)
    assert expr("x") == N("x")


@pytest.mark.parametrize("text", ["1.", "1.0", "1e3", "2.5e-4", "1.0e30", "0.0"])
def test_float_keeps_its_spelling(text):
    node = expr(text)
    assert isinstance(node, ast.Float)
    assert node.value == float(text)
    assert node.text == text


def test_ctx_fields():
    assert expr("ctx.thread") == ctx("thread")
    assert expr("ctx.block.x") == ctx("block", "x")
    assert expr("ctx.blocks.z") == ctx("blocks", "z")
    assert expr("ctx.lane + 1") == B("+", ctx("lane"), I(1))


def test_parentheses_group_and_leave_no_node():
    assert expr("(a)") == N("a")
    assert expr("(a + b) * c") == B("*", B("+", N("a"), N("b")), N("c"))
    assert expr("((a))") == N("a")


# ---------------------------------------------------------------------------
# Operators: every precedence level, all left-associative

OPS = list(ast.BINARY_OPS)


@pytest.mark.parametrize("op", OPS)
def test_each_binary_operator_is_left_associative(op):
    assert expr(f"a {op} b {op} c") == B(op, B(op, N("a"), N("b")), N("c"))


@pytest.mark.parametrize("op1, op2", list(itertools.product(OPS, OPS)))
def test_every_pair_of_operators_by_precedence(op1, op2):
    got = expr(f"a {op1} b {op2} c")
    if ast.PRECEDENCE[op1] >= ast.PRECEDENCE[op2]:
        want = B(op2, B(op1, N("a"), N("b")), N("c"))
    else:
        want = B(op1, N("a"), B(op2, N("b"), N("c")))
    assert got == want


def test_precedence_examples_from_the_spec():
    # "Bitwise operators bind tighter than comparisons, so x & 15 == 3 tests the masked value."
    assert expr("x & 15 == 3") == B("==", B("&", N("x"), I(15)), I(3))
    assert expr("(q >> 4) & 15") == B("&", B(">>", N("q"), I(4)), I(15))
    assert expr("a || b && c") == B("||", N("a"), B("&&", N("b"), N("c")))


@pytest.mark.parametrize("op", ast.UNARY_OPS)
def test_unary_operators(op):
    assert expr(f"{op}x") == U(op, N("x"))
    # Unary binds tighter than `*`, looser than a subscript or a call.
    assert expr(f"{op}a * b") == B("*", U(op, N("a")), N("b"))
    assert expr(f"{op}a[i]") == U(op, idx("a", pt(N("i"))))
    assert expr(f"{op}f(x)") == U(op, call("f", N("x")))


def test_negative_literals_are_unary():
    assert expr("-1.0e30") == U("-", F(1.0e30))
    assert expr("a - -1") == B("-", N("a"), U("-", I(1)))
    assert expr("-(-x)") == U("-", U("-", N("x")))


# ---------------------------------------------------------------------------
# Postfix: calls and subscripts


def test_calls():
    assert expr("f()") == call("f")
    assert expr("dot(a, b)") == call("dot", N("a"), N("b"))
    assert expr("f(a)(b)") == call(call("f", N("a")), N("b"))
    assert expr("exp(s - m)") == call("exp", B("-", N("s"), N("m")))


def test_call_then_subscript_and_back():
    assert expr("f(x)[0]") == idx(call("f", N("x")), pt(I(0)))
    assert expr("A[i][j]") == idx(idx("A", pt(N("i"))), pt(N("j")))


@pytest.mark.parametrize(
    "text, want",
    [
        ("A[i]", pt(N("i"))),
        ("A[s : e]", sl(N("s"), N("e"))),
        ("A[s:e]", sl(N("s"), N("e"))),
        ("A[s :+ n]", span_len(N("s"), N("n"))),
        ("A[s:+n]", span_len(N("s"), N("n"))),
        ("A[:]", sl()),
        ("A[s:]", sl(N("s"), None)),
        ("A[:e]", sl(None, N("e"))),
        ("A[pm * TM :+ TM]", span_len(B("*", N("pm"), N("TM")), N("TM"))),
        ("A[i + 1 : n - 1]", sl(B("+", N("i"), I(1)), B("-", N("n"), I(1)))),
    ],
)
def test_every_subscript_form(text, want):
    assert expr(text) == idx("A", want)


def test_several_subscripts():
    assert expr("A[r, c]") == idx("A", pt(N("r")), pt(N("c")))
    assert expr("Q[row :+ BR, :]") == idx("Q", span_len(N("row"), N("BR")), sl())
    assert expr("A[0 : 64, :, i, 16:, :e]") == idx(
        "A", sl(I(0), I(64)), sl(), pt(N("i")), sl(I(16), None), sl(None, N("e"))
    )


# ---------------------------------------------------------------------------
# Configured calls: collectives and shuffles


@pytest.mark.parametrize("name", ast.CONFIGURED_CALLS)
def test_every_configured_call(name):
    assert expr(f"{name}<over ctx.lane>(x)") == call(name, N("x"), config=[("over", ctx("lane"))])


def test_configured_call_forms_of_the_spec():
    assert expr("sum<over ctx.lane, width 8>(x)") == call(
        "sum", N("x"), config=[("over", ctx("lane")), ("width", I(8))]
    )
    assert expr("reduce<over ctx.thread>(x, f)") == call(
        "reduce", N("x"), N("f"), config=[("over", ctx("thread"))]
    )
    assert expr("shfl<xor 16>(v)") == call("shfl", N("v"), config=[("xor", I(16))])
    assert expr("shfl<from s>(v)") == call("shfl", N("v"), config=[("from", N("s"))])
    assert expr("shfl<down d>(v)") == call("shfl", N("v"), config=[("down", N("d"))])
    assert expr("shfl<up d * 2>(v)") == call("shfl", N("v"), config=[("up", B("*", N("d"), I(2)))])


def test_config_value_stops_before_the_closing_bracket():
    # The value is read above the comparisons, so `>` closes the brackets.
    assert expr("shfl<xor m | 1>(v) > 0") == B(
        ">", call("shfl", N("v"), config=[("xor", B("|", N("m"), I(1)))]), I(0)
    )
    assert expr("shfl<xor (a > b)>(v)") == call(
        "shfl", N("v"), config=[("xor", B(">", N("a"), N("b")))]
    )


def test_config_words_are_names_elsewhere():
    assert expr("from + over") == B("+", N("from"), N("over"))
    assert expr("sum(x)") == call("sum", N("x"))
    # Not followed by a configuration word: an ordinary comparison.
    assert expr("sum < x") == B("<", N("sum"), N("x"))
    assert expr("max < x") == B("<", N("max"), N("x"))


def test_a_configured_name_before_a_config_word_is_always_a_configured_call():
    # `max < over` reads as the start of `max<over ...>(...)`: the rule is lexical.
    _, diags = parse(source("fn f() = max < over\n"))
    assert [d.code for d in diags] == ["E0004"]


def test_a_name_that_is_not_configured_is_compared():
    assert expr("f < over") == B("<", N("f"), N("over"))


# ---------------------------------------------------------------------------
# Types


def test_every_type():
    (param,) = parse_ok("kernel k(A: tensor<f16>[M, 64]) {}\n").items[0].params
    assert param == mk(ast.Param, N("A"), tensor("f16", "M", 64))
    for name in ast.SCALAR_TYPES:
        (param,) = parse_ok(f"kernel k(x: {name}) {{}}\n").items[0].params
        assert param.type == scalar(name)
    assert stmt("var t: tile<f32>[R, C]") == mk(ast.Var, N("t"), tile("f32", "R", "C"), None)
    assert stmt("var t: tile<u8>[1]") == mk(ast.Var, N("t"), tile("u8", 1), None)


# ---------------------------------------------------------------------------
# Statements


def test_let():
    assert stmt("let x = 1") == mk(ast.Let, N("x"), None, I(1))
    assert stmt("let x: f32 = 1.0") == mk(ast.Let, N("x"), scalar("f32"), F(1.0))
    assert stmt("let q = Q[row :+ BR, :]") == mk(
        ast.Let, N("q"), None, idx("Q", span_len(N("row"), N("BR")), sl())
    )


def test_var_in_all_three_forms():
    assert stmt("var x = 0") == mk(ast.Var, N("x"), None, I(0))
    assert stmt("var acc: tile<f32>[M, N] = 0.0") == mk(
        ast.Var, N("acc"), tile("f32", "M", "N"), F(0.0)
    )
    assert stmt("var t: tile<f32>[M, N]") == mk(ast.Var, N("t"), tile("f32", "M", "N"), None)


@pytest.mark.parametrize("op", ast.ASSIGN_OPS)
def test_every_assignment_operator(op):
    assert stmt(f"x {op} y") == mk(ast.Assign, N("x"), op, N("y"))
    assert stmt(f"A[i, j :+ 4] {op} y") == mk(
        ast.Assign, idx("A", pt(N("i")), span_len(N("j"), I(4))), op, N("y")
    )


def test_for_loops():
    body = block(mk(ast.ExprStmt, call("f", N("i"))))
    assert stmt("for i in range(0, n) { f(i) }") == mk(
        ast.For, N("i"), I(0), N("n"), None, None, body
    )
    assert stmt("for i in range(0, n, 4) { f(i) }") == mk(
        ast.For, N("i"), I(0), N("n"), I(4), None, body
    )
    assert stmt("for<unroll 4> i in range(0, n) { f(i) }") == mk(
        ast.For, N("i"), I(0), N("n"), None, I(4), body
    )
    assert stmt("for<unroll U> i in range(a, b, s) {\n  f(i)\n}") == mk(
        ast.For, N("i"), N("a"), N("b"), N("s"), N("U"), body
    )


def test_range_is_an_ordinary_name_outside_for():
    assert stmt("let range = 3") == mk(ast.Let, N("range"), None, I(3))


def test_while():
    assert stmt("while i < n {\n  i += 1\n}") == mk(
        ast.While, B("<", N("i"), N("n")), block(mk(ast.Assign, N("i"), "+=", I(1)))
    )
    assert stmt("while load_acquire(F, 0) == 0 {}") == mk(
        ast.While, B("==", call("load_acquire", N("F"), I(0)), I(0)), block()
    )


def _assign(name, value):
    return mk(ast.Assign, N(name), "=", value)


def test_if_else_if_else_chain():
    got = stmt(
        """\
        if a {
          x = 1
        } else if b {
          x = 2
        } else if c {
          x = 3
        } else {
          x = 4
        }"""
    )
    want = mk(
        ast.If,
        N("a"),
        block(_assign("x", I(1))),
        mk(
            ast.If,
            N("b"),
            block(_assign("x", I(2))),
            mk(ast.If, N("c"), block(_assign("x", I(3))), block(_assign("x", I(4)))),
        ),
    )
    assert got == want


def test_if_without_else():
    assert stmt("if a { x = 1 }") == mk(ast.If, N("a"), block(_assign("x", I(1))), None)


def test_a_newline_after_the_brace_ends_the_if():
    program, diags = parse(source("kernel k() {\n  if a {\n  }\n  else {\n  }\n}\n"))
    assert [d.code for d in diags] == ["E0006"]
    assert "same line" in diags[0].message
    # Recovery hangs the `else` where it was meant.
    (if_stmt,) = program.items[0].body.stmts
    assert if_stmt.orelse == block()


def test_jumps_and_expression_statements():
    assert stmts("break\ncontinue\nreturn\nbarrier()") == (
        mk(ast.Break),
        mk(ast.Continue),
        mk(ast.Return),
        mk(ast.ExprStmt, call("barrier")),
    )


def test_semicolons_and_newlines_end_statements():
    a, b = _assign("a", I(1)), _assign("b", I(2))
    assert stmts("a = 1; b = 2") == (a, b)
    assert stmts("a = 1;\nb = 2;") == (a, b)
    assert stmts("\n\na = 1\n\n\nb = 2\n\n") == (a, b)
    assert stmts("break; continue; return") == (mk(ast.Break), mk(ast.Continue), mk(ast.Return))


def test_terminator_is_optional_before_a_brace_and_at_the_end():
    assert parse_ok("kernel k() { return }").items[0].body == block(mk(ast.Return))
    assert parse_ok("fn f(a) = a").items[0].body == N("a")
    assert stmt("if a { x = 1; y = 2 }") == mk(
        ast.If, N("a"), block(_assign("x", I(1)), _assign("y", I(2))), None
    )


def test_two_statements_on_one_line_need_a_separator():
    program, diags = parse(source("kernel k() {\n  a = 1 b = 2\n}\n"))
    assert [d.message for d in diags] == ["expected `;` or newline, found `b`"]
    # The statement before the missing separator is kept.
    assert program.items[0].body.stmts == (_assign("a", I(1)),)


def test_newlines_inside_brackets_and_after_operators_do_not_end_statements():
    assert stmt("x = f(a,\n      b)") == _assign("x", call("f", N("a"), N("b")))
    assert stmt("x = A[i,\n      j]") == _assign("x", idx("A", pt(N("i")), pt(N("j"))))
    assert stmt("x = a +\n    b") == _assign("x", B("+", N("a"), N("b")))
    assert stmt("x =\n  b") == _assign("x", N("b"))
    assert stmt("x = (a\n  + b)") == _assign("x", B("+", N("a"), N("b")))
    assert stmt("let y = sum<over ctx.lane,\n  width 8>(v)") == mk(
        ast.Let,
        N("y"),
        None,
        call("sum", N("v"), config=[("over", ctx("lane")), ("width", I(8))]),
    )


def test_a_line_starting_with_an_operator_starts_a_statement():
    _, diags = parse(source("kernel k() {\n  x = a\n    + b\n}\n"))
    assert [d.code for d in diags] == ["E0004"]


def test_a_block_may_open_on_the_next_line():
    assert stmt("while a\n{\n  break\n}") == mk(ast.While, N("a"), block(mk(ast.Break)))


# ---------------------------------------------------------------------------
# Items and attributes


def test_kernel_signature_spans_lines():
    (kernel,) = parse_ok(
        """\
        kernel matmul(A: tensor<f32>[M, K],
                      alpha: f32) {
        }
        """
    ).items
    assert kernel == mk(
        ast.Kernel,
        (),
        N("matmul"),
        (
            mk(ast.Param, N("A"), tensor("f32", "M", "K")),
            mk(ast.Param, N("alpha"), scalar("f32")),
        ),
        block(),
    )


def test_kernel_without_parameters():
    assert parse_ok("kernel k() {}").items[0] == mk(ast.Kernel, (), N("k"), (), block())


def test_functions_in_both_forms():
    f, g = parse_ok("fn f(a, b) = a + b\nfn g(t) {\n  t += 1\n}\n").items
    assert f == mk(ast.Function, N("f"), (N("a"), N("b")), B("+", N("a"), N("b")))
    assert g == mk(ast.Function, N("g"), (N("t"),), block(mk(ast.Assign, N("t"), "+=", I(1))))
    assert parse_ok("fn h() = 1; fn z() {}").items[0] == mk(ast.Function, N("h"), (), I(1))


def test_attributes_of_every_argument_kind():
    (kernel,) = parse_ok(
        """\
        @autotune(TILE_M in [32, 256], U in [1, 2, 4])
        @launch(256, 2)
        @aligned(M = TILE_M, K = 16)
        @tensorcore(wmma) @flags(x = 1.5, on = true, off = false)
        @pipeline
        @empty()
        kernel k() {}
        """
    ).items

    def attr(name, args):
        return mk(ast.Attribute, N(name), args)

    def search(name, *values):
        return mk(ast.SearchDim, N(name), tuple(I(v) for v in values))

    def kw(name, value):
        return mk(ast.KeywordArg, N(name), value)

    def pos(value):
        return mk(ast.PositionalArg, value)

    assert kernel.attrs == (
        attr("autotune", (search("TILE_M", 32, 256), search("U", 1, 2, 4))),
        attr("launch", (pos(I(256)), pos(I(2)))),
        attr("aligned", (kw("M", N("TILE_M")), kw("K", I(16)))),
        attr("tensorcore", (pos(N("wmma")),)),
        attr(
            "flags",
            (kw("x", F(1.5)), kw("on", mk(ast.Bool, True)), kw("off", mk(ast.Bool, False))),
        ),
        attr("pipeline", None),
        attr("empty", ()),
    )


def test_empty_and_comment_only_files():
    assert parse_ok("") == mk(ast.Program, ())
    assert parse_ok("// nothing\n\n") == mk(ast.Program, ())


# ---------------------------------------------------------------------------
# Spans


def _find(program, cls, text):
    for node in ast.walk(program):
        if isinstance(node, cls) and node.span.text == text:
            return node
    raise AssertionError(f"no {cls.__name__} spanning {text!r}")


def test_spans_cover_the_source_text_of_each_node():
    text = (
        "@launch(256)\n"
        "kernel k(A: tensor<f32>[M, K], n: i32) {\n"
        "  let x = (a + b) * -c[i :+ 4]\n"
        "  for<unroll 2> i in range(0, n) { A[i, :] += sum<over ctx.lane>(x) }\n"
        "  if x > 0 {\n  } else if x < 0 {\n  } else {\n  }\n"
        "}\n"
    )
    src = source(text)
    program, diags = parse(src)
    assert diags == []
    kernel = program.items[0]
    assert kernel.span.text == text.rstrip("\n")
    assert program.span.start == 0 and program.span.end == len(src.data)
    assert kernel.attrs[0].span.text == "@launch(256)"
    assert kernel.params[0].span.text == "A: tensor<f32>[M, K]"
    assert kernel.params[0].type.span.text == "tensor<f32>[M, K]"
    let = kernel.body.stmts[0]
    assert let.span.text == "let x = (a + b) * -c[i :+ 4]"
    assert let.value.left.span.text == "(a + b)"
    assert let.value.right.span.text == "-c[i :+ 4]"
    _find(program, ast.SliceLen, "i :+ 4")
    _find(program, ast.Ctx, "ctx.lane")
    _find(program, ast.ConfigItem, "over ctx.lane")
    _find(program, ast.Call, "sum<over ctx.lane>(x)")
    _find(program, ast.Assign, "A[i, :] += sum<over ctx.lane>(x)")
    _find(program, ast.Slice, ":")
    loop = kernel.body.stmts[1]
    assert loop.span.text.startswith("for<unroll 2>") and loop.span.text.endswith("}")
    chain = kernel.body.stmts[2]
    assert chain.span.text == "if x > 0 {\n  } else if x < 0 {\n  } else {\n  }"
    assert chain.orelse.span.text == "if x < 0 {\n  } else {\n  }"


def test_every_node_has_a_span_inside_its_parent():
    from syntax_helpers import fixture_text

    src = source(fixture_text("flash_attention"))
    program, _ = parse(src)

    def check(node, parent):
        assert parent.span.start <= node.span.start <= node.span.end <= parent.span.end
        for child in ast.children(node):
            check(child, node)

    for item in program.items:
        check(item, program)
