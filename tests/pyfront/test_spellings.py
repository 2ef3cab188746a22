"""Every row of PYTHON.md "Spellings": the Python spelling translates to the AST its
`.ph` form parses to (spans aside)."""

from __future__ import annotations

import pytest
from pyfront_helpers import ph_ok, py_ok

from phobos.source import SourceFile
from phobos.syntax import ast

# (Python module body, the same program in `.ph`)
ITEMS = [
    # kernel k(A: tensor<f32>[M, K], alpha: f32) { .. }
    (
        """
        @ph.kernel
        def k(A: ph.tensor[ph.f32][M, K], alpha: ph.f32):
            pass
        """,
        "kernel k(A: tensor<f32>[M, K], alpha: f32) { }",
    ),
    # types: tensor<f16>[M, 64], tile<f32>[R, C], every scalar
    (
        """
        @ph.kernel
        def k(A: ph.tensor[ph.f16][M, 64], t: ph.tile[ph.f32][R, C], b: ph.bf16, c: ph.u8, d: ph.bool):
            pass
        """,
        "kernel k(A: tensor<f16>[M, 64], t: tile<f32>[R, C], b: bf16, c: u8, d: bool) { }",
    ),
    # one-dimensional tensor, a literal dimension alone
    (
        """
        @ph.kernel
        def k(A: ph.tensor[ph.i32][16]):
            pass
        """,
        "kernel k(A: tensor<i32>[16]) { }",
    ),
    # fn f(a, b) = e
    (
        """
        @ph.fn
        def f(a, b):
            return a * b + 1
        """,
        "fn f(a, b) = a * b + 1",
    ),
    # fn f(a, b) { .. } with a last bare expression (the value generate takes)
    (
        """
        @ph.fn
        def f(a, b):
            x: ph.let = a + b
            x * 2
        """,
        "fn f(a, b) {\n  let x = a + b\n  x * 2\n}",
    ),
    # a docstring is skipped; a one-`return` body after it is still an expression fn
    (
        '''
        @ph.fn
        def f(a):
            """Twice a."""
            return a + a
        ''',
        "fn f(a) = a + a",
    ),
    # @name, @name(1, k = v, x): a name is a string
    (
        """
        @ph.kernel
        @ph.pipeline
        @ph.launch(256, 2)
        @ph.aligned(M="TILE_M", N=64)
        @ph.tensorcore("wmma")
        @ph.registers()
        @ph.cluster(BR=[1024, 4096], flag=True, ratio=0.5)
        def k():
            pass
        """,
        "@pipeline\n@launch(256, 2)\n@aligned(M = TILE_M, N = 64)\n@tensorcore(wmma)\n"
        "@registers()\n@cluster(BR in [1024, 4096], flag = true, ratio = 0.5)\nkernel k() { }",
    ),
    # @autotune(X in [32, 256]), three values list; @ph.kernel(key=...) is no attribute
    (
        """
        @ph.kernel(key=("M", "N"))
        @ph.autotune(X=[32, 256], Y=[1, 2, 4])
        def k():
            pass
        """,
        "@autotune(X in [32, 256], Y in [1, 2, 4])\nkernel k() { }",
    ),
    # the fn and the kernel, in source order
    (
        """
        @ph.fn
        def g(a):
            return a

        @ph.kernel
        def k():
            pass

        @ph.fn(uses=("W",))
        def h(a):
            W[a] = 0
        """,
        "fn g(a) = a\nkernel k() { }\nfn h(a) {\n  W[a] = 0\n}",
    ),
]


@pytest.mark.parametrize("python, phobos", ITEMS)
def test_item_spellings(python, phobos):
    assert py_ok(python) == ph_ok(phobos)


# (statements in Python, the same statements in `.ph`), each inside
# `kernel k(A: tensor<f32>[N, N], x: f32, n: i32)`.
STATEMENTS = [
    ("y: ph.let = x", "let y = x"),
    ("y: ph.let[ph.f32] = x", "let y: f32 = x"),
    ("y: ph.var = x", "var y = x"),
    ("t: ph.var[ph.tile[ph.f32][64, 64]] = 0.0", "var t: tile<f32>[64, 64] = 0.0"),
    ("t: ph.var[ph.tile[ph.f32][R, C]]", "var t: tile<f32>[R, C]"),
    ("y: ph.let[ph.tensor[ph.f32][N]] = A[0, :]", "let y: tensor<f32>[N] = A[0, :]"),
    ("x = 1.0", "x = 1.0"),
    ("A[0, 1] = x", "A[0, 1] = x"),
    ("x += 1.0", "x += 1.0"),
    (
        "x -= 1\nx *= 2\nx /= 3\nx //= 3\nx %= 4\nx &= 1\nx |= 2\nx ^= 3\nx <<= 1\nx >>= 1",
        "x -= 1\nx *= 2\nx /= 3\nx /= 3\nx %= 4\nx &= 1\nx |= 2\nx ^= 3\nx <<= 1\nx >>= 1",
    ),
    ("for i in range(10):\n    x += 1.0", "for i in range(0, 10) {\n  x += 1.0\n}"),
    ("for i in range(2, n):\n    pass", "for i in range(2, n) { }"),
    ("for i in range(2, n, 4):\n    pass", "for i in range(2, n, 4) { }"),
    (
        "for i in ph.unroll(4, range(0, n)):\n    pass",
        "for<unroll 4> i in range(0, n) { }",
    ),
    ("for i in ph.unroll(U, range(n)):\n    pass", "for<unroll U> i in range(0, n) { }"),
    ("while x < 1.0:\n    x += 1.0", "while x < 1.0 {\n  x += 1.0\n}"),
    (
        "if n < 1:\n    x = 1.0\nelif n < 2:\n    x = 2.0\nelse:\n    x = 3.0",
        "if n < 1 {\n  x = 1.0\n} else if n < 2 {\n  x = 2.0\n} else {\n  x = 3.0\n}",
    ),
    # `else:` holding an `if` is a block with an `if` in it, not `else if`
    (
        "if n < 1:\n    x = 1.0\nelse:\n    if n < 2:\n        x = 2.0",
        "if n < 1 {\n  x = 1.0\n} else {\n  if n < 2 {\n    x = 2.0\n  }\n}",
    ),
    ("if n < 1:\n    pass", "if n < 1 { }"),
    (
        "for i in range(n):\n    if i == 3:\n        break\n    continue",
        "for i in range(0, n) {\n  if i == 3 {\n    break\n  }\n  continue\n}",
    ),
    ("return", "return"),
    ("b: ph.let = True\nc: ph.let = False", "let b = true\nlet c = false"),
    ("b: ph.let = not (n < 1)", "let b = !(n < 1)"),
    ("b: ph.let = n < 1 and n > 0", "let b = n < 1 && n > 0"),
    ("b: ph.let = n < 1 or n > 0 or n == 5", "let b = n < 1 || n > 0 || n == 5"),
    ("b: ph.let = n < 1 and n > 0 or n == 5", "let b = n < 1 && n > 0 || n == 5"),
    ("b: ph.let = n < 1 or n > 0 and n == 5", "let b = n < 1 || n > 0 && n == 5"),
    ("y: ph.let = -x", "let y = -x"),
    ("y: ph.let = ~n", "let y = ~n"),
    ("y: ph.let = -1", "let y = -1"),
    ("y: ph.let = -1.5", "let y = -1.5"),
    (
        "y: ph.let = n + 1 - 2 * 3 % 4\nz: ph.let = n & 1 | 2 ^ 3\nw: ph.let = n << 1 >> 2",
        "let y = n + 1 - 2 * 3 % 4\nlet z = n & 1 | 2 ^ 3\nlet w = n << 1 >> 2",
    ),
    (
        "b: ph.let = n == 1\nc: ph.let = n != 1\nd: ph.let = n <= 1\ne: ph.let = n >= 1",
        "let b = n == 1\nlet c = n != 1\nlet d = n <= 1\nlet e = n >= 1",
    ),
    ("y: ph.let = (n + 1) * 2", "let y = (n + 1) * 2"),
    ("y: ph.let = x / 2.0", "let y = x / 2.0"),
    ("y: ph.let = n // 2", "let y = n / 2"),
    ("b: ph.let = 0 < n < 10", "let b = 0 < n && n < 10"),
    ("b: ph.let = 0 < n <= 10 != n", "let b = 0 < n && n <= 10 && 10 != n"),
    ("y: ph.let = ph.ctx.block.x", "let y = ctx.block.x"),
    ("y: ph.let = ph.ctx.blocks.z + ph.ctx.lane", "let y = ctx.blocks.z + ctx.lane"),
    ("y: ph.let = ph.ctx.threads * ph.ctx.warp", "let y = ctx.threads * ctx.warp"),
    ("y: ph.let = ph.exp(x)", "let y = exp(x)"),
    ("y: ph.let = ph.min(x, 1.0)", "let y = min(x, 1.0)"),
    ("y: ph.let = ph.f32(n)", "let y = f32(n)"),
    ("y: ph.let = ph.softmax(x)", None),  # not a built-in: refused, tested elsewhere
    ("y: ph.let = ph.where(n < 1, x, 0.0)", "let y = where(n < 1, x, 0.0)"),
    ("ph.barrier()", "barrier()"),
    ("y: ph.let = twice(x)", "let y = twice(x)"),
    (
        "y: ph.let = ph.sum(x, over=ph.ctx.lane, width=8)",
        "let y = sum<over ctx.lane, width 8>(x)",
    ),
    (
        "y: ph.let = ph.sum(x, width=8, over=ph.ctx.lane)",
        "let y = sum<width 8, over ctx.lane>(x)",
    ),
    ("y: ph.let = ph.sum(A[0, n:+16])", "let y = sum(A[0, n :+ 16])"),
    (
        "y: ph.let = ph.reduce(x, f, over=ph.ctx.thread)",
        "let y = reduce<over ctx.thread>(x, f)",
    ),
    ("y: ph.let = ph.shfl(x, xor=16)", "let y = shfl<xor 16>(x)"),
    ("y: ph.let = ph.shfl(x, from_=n)", "let y = shfl<from n>(x)"),
    ("y: ph.let = ph.shfl(x, down=1, width=16)", "let y = shfl<down 1, width 16>(x)"),
    ("y: ph.let = ph.argmax(x, over=ph.ctx.lane)", "let y = argmax<over ctx.lane>(x)"),
    ("ph.generate(f)", "generate(f)"),
    ("y: ph.let = A[n, 1]", "let y = A[n, 1]"),
    ("y: ph.let = A[0:n, :]", "let y = A[0 : n, :]"),
    ("y: ph.let = A[n:+16, 2:]", "let y = A[n :+ 16, 2:]"),
    ("y: ph.let = A[:n, n * 2:+(n + 1)]", "let y = A[:n, n * 2 :+ (n + 1)]"),
    ("y: ph.let = A[n][1]", "let y = A[n][1]"),
    ("y: ph.let = 1e-3 + 2.5e10 + 0.5", "let y = 1e-3 + 2.5e10 + 0.5"),
    ("y: ph.let = x * 1.0e30", "let y = x * 1.0e30"),
]


def _kernel_py(body: str) -> str:
    indented = "\n".join("    " + line for line in body.splitlines())
    return "@ph.kernel\ndef k(A: ph.tensor[ph.f32][N, N], x: ph.f32, n: ph.i32):\n" + indented


def _kernel_ph(body: str) -> str:
    return "kernel k(A: tensor<f32>[N, N], x: f32, n: i32) {\n" + body + "\n}\n"


@pytest.mark.parametrize(
    "python, phobos", [row for row in STATEMENTS if row[1] is not None], ids=lambda v: v
)
def test_statement_spellings(python, phobos):
    assert py_ok(_kernel_py(python)) == ph_ok(_kernel_ph(phobos))


def test_division_keeps_its_python_spelling():
    program = py_ok(_kernel_py("y: ph.let = x / 2.0\nz: ph.let = n // 2"))
    let_y, let_z = program.items[0].body.stmts
    assert let_y.value.op == let_z.value.op == "/"
    assert let_y.value.spelling == "/"
    assert let_z.value.spelling == "//"


def test_chained_comparison_reads_the_middle_operand_twice():
    program = py_ok(_kernel_py("b: ph.let = 0 < n < 10"))
    cond = program.items[0].body.stmts[0].value
    assert cond.op == "&&"
    assert cond.left.right == ast.Name("n", span=cond.span) == cond.right.left


def test_expected_tree_by_hand():
    """The same rows checked without the parser: the tree written out node by node."""
    s = SourceFile("x", "").span(0, 0)

    def n(i):
        return ast.Name(i, span=s)

    program = py_ok(
        _kernel_py(
            "for i in ph.unroll(2, range(n)):\n"
            "    A[i:+4, :] = ph.sum(x, over=ph.ctx.lane, width=8)\n"
            "y: ph.let = 0 < n < 4"
        )
    )
    loop, decl = program.items[0].body.stmts
    config = (
        ast.ConfigItem("over", ast.Ctx("lane", span=s), span=s),
        ast.ConfigItem("width", ast.Int(8, span=s), span=s),
    )
    target = ast.Index(
        n("A"),
        (ast.SliceLen(n("i"), ast.Int(4, span=s), span=s), ast.Slice(None, None, span=s)),
        span=s,
    )
    assign = ast.Assign(target, "=", ast.Call(n("sum"), (n("x"),), config, span=s), span=s)
    body = ast.Block((assign,), span=s)
    assert loop == ast.For(
        n("i"), ast.Int(0, span=s), n("n"), None, ast.Int(2, span=s), body, span=s
    )
    lt = ast.Binary("<", ast.Int(0, span=s), n("n"), span=s)
    lt2 = ast.Binary("<", n("n"), ast.Int(4, span=s), span=s)
    assert decl == ast.Let(n("y"), None, ast.Binary("&&", lt, lt2, span=s), span=s)


def test_statement_fn_keeps_last_bare_expression():
    program = py_ok("@ph.fn\ndef f(a):\n    b: ph.var = a\n    b += 1\n    b\n")
    fn = program.items[0]
    assert isinstance(fn.body, ast.Block)
    assert isinstance(fn.body.stmts[-1], ast.ExprStmt)
    assert fn.body.stmts[-1].expr == ast.Name("b", span=fn.span)


def test_fn_uses_and_kernel_key():
    from phobos.pyfront.translate import translate

    text = (
        "import phobos.lang as ph\n"
        "@ph.fn(uses=('W', 'C'))\ndef f(a):\n    W[a] = C\n"
        "@ph.kernel(key=('M', 'N', 'K'))\ndef k():\n    pass\n"
    )
    result = translate(SourceFile("m.py", text))
    assert result.diagnostics == []
    fn, kern = result.items
    assert fn.node.uses == ("W", "C")
    assert kern.key == ("M", "N", "K")
    assert (fn.kind, kern.kind) == ("fn", "kernel")


def test_other_python_is_ignored():
    program = py_ok(
        """
        import math

        def helper(x):
            return x ** 2 if x else [i for i in x]

        class Thing:
            pass

        @ph.kernel
        def k():
            pass

        print(helper(3))
        """
    )
    assert [item.name.id for item in program.items] == ["k"]
