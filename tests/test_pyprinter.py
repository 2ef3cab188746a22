"""The Python printer on hand-built trees: every node kind, and Python's precedence.

Each case asserts the exact text and that Python's own parser reads it. The
precedence cases also check the shape Python parses against the tree printed, so a
missing parenthesis fails even where the text is valid Python.
"""

from __future__ import annotations

import ast as pyast
import random

import pytest

from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.pyprinter import HEADER, PySpellingError, print_python, print_python_expr

SPAN = SourceFile("test.ph", "").span(0, 0)

# -- builders ----------------------------------------------------------------


def n(ident):
    return ast.Name(ident, span=SPAN)


def i(value):
    return ast.Int(value, span=SPAN)


def f(value, text=""):
    return ast.Float(value, text, span=SPAN)


def b(l, op, r, spelling=None):  # noqa: E741
    return ast.Binary(op, _e(l), _e(r), spelling=spelling, span=SPAN)


def u(op, e):
    return ast.Unary(op, _e(e), span=SPAN)


def call(func, *args, config=()):
    items = tuple(ast.ConfigItem(k, _e(v), span=SPAN) for k, v in config)
    return ast.Call(_e(func), tuple(_e(a) for a in args), items, span=SPAN)


def ctx(field, axis=None):
    return ast.Ctx(field, axis, span=SPAN)


def index(base, *subs):
    return ast.Index(_e(base), tuple(subs), span=SPAN)


def point(e):
    return ast.Point(_e(e), span=SPAN)


def sl(start=None, stop=None):
    return ast.Slice(_opt(start), _opt(stop), span=SPAN)


def slen(start, length):
    return ast.SliceLen(_e(start), _e(length), span=SPAN)


def _e(x):
    """Shorthand: a str is a name, an int an Int, a bool a Bool, a float a Float."""
    if isinstance(x, bool):
        return ast.Bool(x, span=SPAN)
    if isinstance(x, int):
        return i(x)
    if isinstance(x, float):
        return f(x)
    if isinstance(x, str):
        return n(x)
    return x


def _opt(x):
    return None if x is None else _e(x)


def block(*stmts):
    return ast.Block(tuple(stmts), span=SPAN)


def scalar(name):
    return ast.ScalarType(name, span=SPAN)


def tensor(elem, *dims):
    return ast.TensorType(scalar(elem), tuple(_e(d) for d in dims), span=SPAN)


def tile(elem, *dims):
    return ast.TileType(scalar(elem), tuple(_e(d) for d in dims), span=SPAN)


def kernel(name, body, params=(), attrs=()):
    return ast.Kernel(tuple(attrs), n(name), tuple(params), body, span=SPAN)


def param(name, type_):
    return ast.Param(n(name), type_, span=SPAN)


def attr(name, *args, parens=True):
    return ast.Attribute(n(name), tuple(args) if parens else None, span=SPAN)


def program(*items):
    return ast.Program(tuple(items), span=SPAN)


def body_of(*stmts, fns=()):
    """The printed statements of a kernel `k()` holding `stmts`, dedented."""
    text = print_python(program(*fns, kernel("k", block(*stmts))))
    pyast.parse(text)
    tail = text.split("def k():\n", 1)[1]
    return "\n".join(line[4:] for line in tail.splitlines())


def expr_text(e, own_fns=()):
    text = print_python_expr(_e(e), set(own_fns))
    pyast.parse(text, mode="eval")
    return text


# -- modules and items ---------------------------------------------------------


def test_empty_program_is_the_header():
    assert print_python(program()) == HEADER
    assert HEADER == "from __future__ import annotations\n\nimport phobos.lang as ph\n"


def test_kernel_with_every_attribute_form():
    attrs = [
        attr("autotune", ast.SearchDim(n("X"), (i(32), i(256)), span=SPAN)),
        attr("launch", ast.PositionalArg(i(256), span=SPAN)),
        attr("pipeline", parens=False),
        attr("aligned", ast.KeywordArg(n("M"), n("TILE_M"), span=SPAN)),
        attr("tensorcore", ast.PositionalArg(n("wmma"), span=SPAN)),
        attr(
            "x",
            ast.PositionalArg(f(1.5, "1.5"), span=SPAN),
            ast.PositionalArg(_e(True), span=SPAN),
            ast.KeywordArg(n("k"), i(2), span=SPAN),
            ast.KeywordArg(n("on"), _e(False), span=SPAN),
        ),
        attr("dynshared"),
    ]
    params = [
        param("A", tensor("f32", "M", "K")),
        param("t", tile("f16", 16, "C")),
        param("alpha", scalar("f32")),
    ]
    text = print_python(program(kernel("k", block(), params, attrs)))
    pyast.parse(text)
    assert text == HEADER + (
        "\n\n"
        "@ph.kernel\n"
        "@ph.autotune(X=[32, 256])\n"
        "@ph.launch(256)\n"
        "@ph.pipeline\n"
        '@ph.aligned(M="TILE_M")\n'
        '@ph.tensorcore("wmma")\n'
        "@ph.x(1.5, True, k=2, on=False)\n"
        "@ph.dynshared()\n"
        "def k(A: ph.tensor[ph.f32][M, K], t: ph.tile[ph.f16][16, C], alpha: ph.f32):\n"
        "    pass\n"
    )


def test_long_parameter_lists_wrap_one_per_line():
    params = [param(f"Tensor{j}", tensor("f32", "ROWS", "COLUMNS")) for j in range(4)]
    text = print_python(program(kernel("wide", block(), params)))
    pyast.parse(text)
    assert "def wide(\n    Tensor0: ph.tensor[ph.f32][ROWS, COLUMNS],\n" in text
    assert "    Tensor3: ph.tensor[ph.f32][ROWS, COLUMNS],\n):\n    pass\n" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_items_are_separated_by_two_blank_lines():
    fn = ast.Function(n("twice"), (n("a"),), b("a", "*", 2), span=SPAN)
    text = print_python(program(fn, kernel("k", block())))
    assert text == HEADER + (
        "\n\n@ph.fn\ndef twice(a):\n    return a * 2\n\n\n@ph.kernel\ndef k():\n    pass\n"
    )


def test_function_with_a_block_body_and_uses():
    fn = ast.Function(
        n("bump"),
        (n("t"), n("v")),
        block(
            ast.Assign(n("t"), "+=", b("v", "*", "W"), span=SPAN), ast.ExprStmt(n("t"), span=SPAN)
        ),
        uses=("W", "C"),
        span=SPAN,
    )
    text = print_python(program(fn))
    pyast.parse(text)
    assert text.endswith('@ph.fn(uses=("W", "C"))\ndef bump(t, v):\n    t += v * W\n    t\n')


@pytest.mark.parametrize(
    ("uses", "decorator"),
    [(("W",), '@ph.fn(uses=("W",))'), ((), "@ph.fn(uses=())"), (None, "@ph.fn")],
)
def test_uses_spellings(uses, decorator):
    fn = ast.Function(n("g"), (), block(), uses=uses, span=SPAN)
    text = print_python(program(fn))
    pyast.parse(text)
    assert f"\n{decorator}\ndef g():\n    pass\n" in text


def test_a_ph_functions_free_names_become_its_uses():
    loop = ast.For(
        n("i"),
        i(0),
        n("N"),
        None,
        None,
        block(
            ast.Assign(n("acc"), "+=", b(b("t", "*", "i"), "+", call("exp", "C")), span=SPAN),
            ast.Let(n("late"), None, i(1), span=SPAN),
        ),
        span=SPAN,
    )
    body = block(
        ast.Let(n("t"), tile("f32", "R", 4), b("a", "*", "W"), span=SPAN),
        loop,
        ast.ExprStmt(call("helper", "late", call("mystery", "t")), span=SPAN),
    )
    helper = ast.Function(n("helper"), (n("x"), n("y")), b("x", "+", "y"), span=SPAN)
    fn = ast.Function(n("g"), (n("a"),), body, span=SPAN)
    text = print_python(program(helper, fn))
    pyast.parse(text)
    assert '@ph.fn(uses=("R", "W", "N", "acc", "C", "late", "mystery"))\ndef g(a):\n' in text
    assert "@ph.fn\ndef helper(x, y):\n" in text


def test_own_functions_are_called_by_bare_name_even_when_named_like_a_builtin():
    fn = ast.Function(n("exp"), (n("x"),), b("x", "+", 1), span=SPAN)
    text = body_of(ast.ExprStmt(call("exp", call("sqrt", "x")), span=SPAN), fns=[fn])
    assert text == "exp(ph.sqrt(x))"


def test_a_program_naming_ph_imports_the_module_under_another_name():
    fn = ast.Function(n("ph"), (n("a"),), n("a"), span=SPAN)
    k = kernel(
        "k",
        block(ast.Let(n("x"), None, b(call("ph", 1), "+", call("exp", "ph_")), span=SPAN)),
        params=[param("A", tensor("f32", "N"))],
    )
    text = print_python(program(fn, k))
    pyast.parse(text)
    assert text == (
        "from __future__ import annotations\n\nimport phobos.lang as ph__\n"
        "\n\n@ph__.fn\ndef ph(a):\n    return a\n"
        "\n\n@ph__.kernel\ndef k(A: ph__.tensor[ph__.f32][N]):\n"
        "    x: ph__.let = ph(1) + ph__.exp(ph_)\n"
    )


# -- statements ----------------------------------------------------------------


def test_declarations():
    t = tile("f32", "R", "C")
    stmts = [
        ast.Let(n("x"), None, i(1), span=SPAN),
        ast.Let(n("y"), t, f(0.0, "0.0"), span=SPAN),
        ast.Var(n("z"), None, n("x"), span=SPAN),
        ast.Var(n("w"), t, f(0.0, "0.0"), span=SPAN),
        ast.Var(n("v"), t, None, span=SPAN),
        ast.Let(n("s"), scalar("i32"), i(3), span=SPAN),
    ]
    assert body_of(*stmts) == "\n".join(
        [
            "x: ph.let = 1",
            "y: ph.let[ph.tile[ph.f32][R, C]] = 0.0",
            "z: ph.var = x",
            "w: ph.var[ph.tile[ph.f32][R, C]] = 0.0",
            "v: ph.var[ph.tile[ph.f32][R, C]]",
            "s: ph.let[ph.i32] = 3",
        ]
    )


@pytest.mark.parametrize("op", ast.ASSIGN_OPS)
def test_every_assignment_operator(op):
    target = index("A", point("i"), slen("j", 4))
    assert body_of(ast.Assign(target, op, n("e"), span=SPAN)) == f"A[i, j:+4] {op} e"


def test_for_loops():
    plain = ast.For(n("i"), i(0), n("N"), None, None, block(), span=SPAN)
    step = ast.For(n("i"), n("lo"), n("hi"), n("s"), None, block(ast.Break(span=SPAN)), span=SPAN)
    unroll = ast.For(n("i"), i(0), n("N"), None, i(4), block(ast.Continue(span=SPAN)), span=SPAN)
    both = ast.For(n("i"), i(0), n("N"), i(2), n("U"), block(ast.Return(span=SPAN)), span=SPAN)
    assert body_of(plain, step, unroll, both) == "\n".join(
        [
            "for i in range(0, N):",
            "    pass",
            "for i in range(lo, hi, s):",
            "    break",
            "for i in ph.unroll(4, range(0, N)):",
            "    continue",
            "for i in ph.unroll(U, range(0, N, 2)):",
            "    return",
        ]
    )


def test_while_and_if_chains():
    x1 = ast.Assign(n("x"), "=", i(1), span=SPAN)
    x2 = ast.Assign(n("x"), "=", i(2), span=SPAN)
    x3 = ast.Assign(n("x"), "=", i(3), span=SPAN)
    chain = ast.If(
        b("a", "&&", u("!", "c")),
        block(x1),
        ast.If(n("d"), block(x2), block(x3), span=SPAN),
        span=SPAN,
    )
    nested_else = ast.If(
        n("a"), block(), block(ast.If(n("b"), block(x1), None, span=SPAN)), span=SPAN
    )
    loop = ast.While(b("i", "<", "n"), block(ast.Assign(n("i"), "+=", i(1), span=SPAN)), span=SPAN)
    assert body_of(chain, nested_else, loop) == "\n".join(
        [
            "if a and not c:",
            "    x = 1",
            "elif d:",
            "    x = 2",
            "else:",
            "    x = 3",
            "if a:",
            "    pass",
            "else:",
            "    if b:",
            "        x = 1",
            "while i < n:",
            "    i += 1",
        ]
    )


def test_expression_statements_and_collectives():
    stmts = [
        ast.ExprStmt(call("barrier"), span=SPAN),
        ast.Let(
            n("s"), None, call("sum", "x", config=[("over", ctx("lane")), ("width", 8)]), span=SPAN
        ),
        ast.Let(
            n("r"), None, call("reduce", "x", "f", config=[("over", ctx("thread"))]), span=SPAN
        ),
        ast.Let(n("a"), None, call("shfl", "v", config=[("xor", 16)]), span=SPAN),
        ast.Let(n("c"), None, call("shfl", "v", config=[("from", "s")]), span=SPAN),
        ast.Let(n("d"), None, call("shfl", "v", config=[("down", 1), ("width", 16)]), span=SPAN),
        ast.Let(n("g"), None, call("generate", "f"), span=SPAN),
    ]
    assert body_of(*stmts) == "\n".join(
        [
            "ph.barrier()",
            "s: ph.let = ph.sum(x, over=ph.ctx.lane, width=8)",
            "r: ph.let = ph.reduce(x, f, over=ph.ctx.thread)",
            "a: ph.let = ph.shfl(v, xor=16)",
            "c: ph.let = ph.shfl(v, from_=s)",
            "d: ph.let = ph.shfl(v, down=1, width=16)",
            "g: ph.let = ph.generate(f)",
        ]
    )


# -- expressions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (i(0), "0"),
        (i(4294967295), "4294967295"),
        (f(0.5, "0.5"), "0.5"),
        (f(1e30, "1.0e30"), "1.0e30"),
        (f(3.0, "3."), "3."),
        (f(100.0, "1e2"), "1e2"),
        (f(0.1), "0.1"),  # no text: repr
        (f(2.0, "2"), "2.0"),  # text that Python would read as an int
        (f(2.5, "1_0.0"), "2.5"),  # text that does not spell the value
        (f(float("inf"), "1e999"), "1e999"),
        (f(float("inf")), "1e999"),
        (_e(True), "True"),
        (_e(False), "False"),
        (ctx("block", "x"), "ph.ctx.block.x"),
        (ctx("lanes"), "ph.ctx.lanes"),
        (call("f32", "x"), "ph.f32(x)"),
        (call("u8", "x"), "ph.u8(x)"),
        (call("iq2xs_qgemm_t", "a", "s", "q", "d", "g", "m"), "ph.iq2xs_qgemm_t(a, s, q, d, g, m)"),
        (call("mystery", 1), "mystery(1)"),
        (call(index("F", point(0)), 1), "F[0](1)"),
        (index("A", sl()), "A[:]"),
        (index("A", sl("s")), "A[s:]"),
        (index("A", sl(None, "e")), "A[:e]"),
        (index("A", sl("s", "e"), point("i")), "A[s:e, i]"),
        (index("A", slen(b("pm", "*", "T"), "T"), sl()), "A[pm * T:+T, :]"),
        (index("A", slen("s", b("a", "+", "b"))), "A[s:+(a + b)]"),
        (index("A", slen("s", b("a", "*", "b"))), "A[s:+(a * b)]"),
        (index("A", slen("s", u("-", "n"))), "A[s:+-n]"),
        (index("A", slen("s", call("f32", "n"))), "A[s:+ph.f32(n)]"),
        (index(b("a", "+", "b"), point(0)), "(a + b)[0]"),
        (index(index("A", point(0)), point(1)), "A[0][1]"),
    ],
)
def test_expression_forms(tree, text):
    assert expr_text(tree) == text


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        # Python chains comparisons; Phobos nests them left to right.
        (b(b("a", "<", "b"), "<", "c"), "(a < b) < c"),
        (b("a", "==", b("b", "<", "c")), "a == (b < c)"),
        (b(b("a", "==", "b"), "!=", "c"), "(a == b) != c"),
        (b(b("a", "<", "b"), "&&", b("b", "<", "c")), "a < b and b < c"),
        # `!` binds tightest in Phobos, `not` looser than comparisons in Python.
        (b(u("!", "a"), "==", "b"), "(not a) == b"),
        (u("!", b("a", "==", "b")), "not a == b"),
        (u("!", b("a", "&&", "b")), "not (a and b)"),
        (u("!", u("!", "a")), "not not a"),
        (b(u("!", "a"), "&&", u("!", "b")), "not a and not b"),
        (b("a", "+", u("!", "b")), "a + (not b)"),
        (b(u("!", "a"), "|", "b"), "(not a) | b"),
        (u("-", u("!", "a")), "-(not a)"),
        (u("!", u("-", "a")), "not -a"),
        # Unary minus and bitwise not.
        (u("-", 1), "-1"),
        (u("-", b("a", "+", "b")), "-(a + b)"),
        (u("-", u("-", "a")), "-(-a)"),
        (u("~", index("q", point(0))), "~q[0]"),
        (b(u("-", "a"), "*", "b"), "-a * b"),
        # && and || against each other and against bitwise operators.
        (b(b("a", "||", "b"), "&&", "c"), "(a or b) and c"),
        (b("a", "||", b("b", "&&", "c")), "a or b and c"),
        (b(b("a", "||", "b"), "||", "c"), "a or b or c"),
        (b("a", "||", b("b", "||", "c")), "a or (b or c)"),
        (b(b("x", "&", 15), "==", 3), "x & 15 == 3"),
        (b(b("q", ">>", 4), "&", 15), "q >> 4 & 15"),
        (b("q", ">>", b(4, "&", 15)), "q >> (4 & 15)"),
        (b(b("a", "|", "b"), "^", "c"), "(a | b) ^ c"),
        # Left associativity.
        (b(b("a", "-", "b"), "-", "c"), "a - b - c"),
        (b("a", "-", b("b", "-", "c")), "a - (b - c)"),
        (b("a", "*", b("b", "+", "c")), "a * (b + c)"),
        (b(b("a", "*", "b"), "+", "c"), "a * b + c"),
        (b("a", "%", b("b", "*", "c")), "a % (b * c)"),
    ],
)
def test_precedence(tree, text):
    assert expr_text(tree) == text
    assert _py_shape(pyast.parse(text, mode="eval").body) == _ph_shape(tree)


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (b(7, "/", 2), "7 // 2"),
        (b(ctx("thread"), "/", ctx("lanes")), "ph.ctx.thread // ph.ctx.lanes"),
        (b(call("i32", "x"), "/", 16), "ph.i32(x) // 16"),
        (b(b(1, "+", 2), "/", u("-", 3)), "(1 + 2) // -3"),
        (b("x", "/", 2), "x / 2"),
        (b(1.0, "/", 2), "1.0 / 2"),
        (b(call("f32", "x"), "/", 16), "ph.f32(x) / 16"),
        (b(7, "/", 2, spelling="/"), "7 / 2"),
        (b("x", "/", "y", spelling="//"), "x // y"),
    ],
)
def test_division_spelling(tree, text):
    assert expr_text(tree) == text


def test_division_reads_integer_names_from_the_kernel():
    loop = ast.For(
        n("i"),
        i(0),
        n("N"),
        None,
        None,
        block(
            ast.Let(n("half"), None, b("i", "/", 2), span=SPAN),
            ast.Let(n("tile_row"), None, b("half", "/", "BLOCK"), span=SPAN),
            ast.Let(n("x"), None, b("A", "/", 2), span=SPAN),
            ast.Let(n("y"), None, b("alpha", "/", 2), span=SPAN),
            ast.Let(n("z"), None, b("n", "/", 2), span=SPAN),
        ),
        span=SPAN,
    )
    k = kernel(
        "k",
        block(loop),
        params=[
            param("A", tensor("f32", "N")),
            param("alpha", scalar("f32")),
            param("n", scalar("i32")),
        ],
        attrs=[attr("autotune", ast.SearchDim(n("BLOCK"), (i(1), i(2)), span=SPAN))],
    )
    text = print_python(program(k))
    assert "half: ph.let = i // 2\n" in text
    assert "tile_row: ph.let = half // BLOCK\n" in text
    assert "x: ph.let = A / 2\n" in text
    assert "y: ph.let = alpha / 2\n" in text
    assert "z: ph.let = n // 2\n" in text


# -- what Python cannot spell --------------------------------------------------


@pytest.mark.parametrize(
    "prog",
    [
        program(kernel("k", block(ast.Let(n("lambda"), None, i(1), span=SPAN)))),
        program(kernel("class", block())),
        program(kernel("k", block(ast.ExprStmt(n("None"), span=SPAN)))),
        program(ast.Function(n("f"), (n("from"),), n("x"), span=SPAN)),
        program(
            kernel(
                "k",
                block(),
                attrs=[
                    attr(
                        "launch",
                        ast.KeywordArg(n("threads"), i(1), span=SPAN),
                        ast.PositionalArg(i(2), span=SPAN),
                    )
                ],
            )
        ),
        program(
            kernel(
                "k",
                block(),
                attrs=[
                    attr(
                        "autotune",
                        ast.SearchDim(n("X"), (i(1), i(2)), span=SPAN),
                        ast.SearchDim(n("X"), (i(4), i(8)), span=SPAN),
                    )
                ],
            )
        ),
        program(
            kernel(
                "k",
                block(ast.ExprStmt(call("shfl", "v", config=[("xor", 1), ("xor", 2)]), span=SPAN)),
            )
        ),
    ],
    ids=[
        "keyword-binding",
        "keyword-kernel",
        "keyword-name",
        "keyword-param",
        "positional-after-keyword",
        "search-dim-twice",
        "config-twice",
    ],
)
def test_unspellable_programs_raise_with_a_span(prog):
    with pytest.raises(PySpellingError) as info:
        print_python(prog)
    assert info.value.span is SPAN
    diagnostic = info.value.to_diagnostic("E0999")
    assert diagnostic.severity == "error" and diagnostic.code == "E0999"
    assert diagnostic.primary.span is SPAN
    assert diagnostic.message == str(info.value) and diagnostic.help


# -- random expressions: Python parses the text to the tree printed -------------

_LEAVES = [lambda r: n(r.choice("abcxyz")), lambda r: i(r.randrange(100)), lambda r: ctx("lane")]


def _random_expr(rng: random.Random, depth: int) -> ast.Expr:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(_LEAVES)(rng)
    roll = rng.random()
    if roll < 0.2:
        return u(rng.choice(ast.UNARY_OPS), _random_expr(rng, depth - 1))
    if roll < 0.28:
        return call("max", _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))
    if roll < 0.34:
        return index("A", slen(_random_expr(rng, depth - 1), _random_expr(rng, depth - 1)))
    op = rng.choice(ast.BINARY_OPS)
    return b(_random_expr(rng, depth - 1), op, _random_expr(rng, depth - 1))


def test_random_expressions_parse_back_to_their_shape():
    rng = random.Random(20240611)
    for case in range(2000):
        tree = _random_expr(rng, 5)
        text = print_python_expr(tree)
        parsed = pyast.parse(text, mode="eval").body
        assert _py_shape(parsed) == _ph_shape(tree), f"case {case}: {text}"


# -- shapes: the operator tree of an expression, from either side ---------------

_PY_OPS = {
    pyast.Add: "+", pyast.Sub: "-", pyast.Mult: "*", pyast.Div: "/", pyast.FloorDiv: "/",
    pyast.Mod: "%", pyast.BitAnd: "&", pyast.BitOr: "|", pyast.BitXor: "^",
    pyast.LShift: "<<", pyast.RShift: ">>", pyast.Eq: "==", pyast.NotEq: "!=",
    pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">", pyast.GtE: ">=",
    pyast.Not: "!", pyast.USub: "-", pyast.Invert: "~", pyast.UAdd: "+",
}  # fmt: skip


def _py_shape(node: pyast.AST):
    if isinstance(node, pyast.BoolOp):
        op = "&&" if isinstance(node.op, pyast.And) else "||"
        shape = _py_shape(node.values[0])
        for value in node.values[1:]:
            shape = (op, shape, _py_shape(value))
        return shape
    if isinstance(node, pyast.BinOp):
        return (_PY_OPS[type(node.op)], _py_shape(node.left), _py_shape(node.right))
    if isinstance(node, pyast.UnaryOp):
        return (_PY_OPS[type(node.op)], _py_shape(node.operand))
    if isinstance(node, pyast.Compare):
        if len(node.ops) != 1:
            return ("chained", pyast.dump(node))
        return (_PY_OPS[type(node.ops[0])], _py_shape(node.left), _py_shape(node.comparators[0]))
    if isinstance(node, pyast.Constant):
        return node.value
    if isinstance(node, pyast.Name):
        return node.id
    if isinstance(node, pyast.Attribute):
        return f"{_py_shape(node.value)}.{node.attr}"
    if isinstance(node, pyast.Call):
        return ("call", _py_shape(node.func), *[_py_shape(a) for a in node.args])
    if isinstance(node, pyast.Subscript):
        elts = node.slice.elts if isinstance(node.slice, pyast.Tuple) else [node.slice]
        return ("index", _py_shape(node.value), *[_py_slice(s) for s in elts])
    raise AssertionError(f"unexpected Python node {pyast.dump(node)}")


def _py_slice(node: pyast.AST):
    if not isinstance(node, pyast.Slice):
        return _py_shape(node)
    upper = node.upper
    if isinstance(upper, pyast.UnaryOp) and isinstance(upper.op, pyast.UAdd):
        return (":+", _py_shape(node.lower), _py_shape(upper.operand))
    lower = None if node.lower is None else _py_shape(node.lower)
    return (":", lower, None if upper is None else _py_shape(upper))


def _ph_shape(e: ast.Expr):
    if isinstance(e, ast.Binary):
        return (e.op, _ph_shape(e.left), _ph_shape(e.right))
    if isinstance(e, ast.Unary):
        return (e.op, _ph_shape(e.operand))
    if isinstance(e, (ast.Int, ast.Float, ast.Bool)):
        return e.value
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Ctx):
        return "ph.ctx." + e.field + (f".{e.axis}" if e.axis else "")
    if isinstance(e, ast.Call):
        name = _ph_shape(e.func)
        return ("call", f"ph.{name}" if name == "max" else name, *[_ph_shape(a) for a in e.args])
    if isinstance(e, ast.Index):
        return ("index", _ph_shape(e.base), *[_ph_sub(s) for s in e.subscripts])
    raise AssertionError(f"unexpected node {e!r}")


def _ph_sub(s):
    if isinstance(s, ast.Point):
        return _ph_shape(s.index)
    if isinstance(s, ast.SliceLen):
        return (":+", _ph_shape(s.start), _ph_shape(s.length))
    return (
        ":",
        None if s.start is None else _ph_shape(s.start),
        None if s.stop is None else _ph_shape(s.stop),
    )
