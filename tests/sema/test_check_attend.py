"""`attend(q, K, V, start, stop, WM, WL, WACC)`: the forms the checker takes, and each rule."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check

from phobos.sema import hir

PARAMS = (
    "Q: tensor<f16>[H, 128], K: tensor<f16>[NK, 128], V: tensor<f16>[NK, 128], "
    "K32: tensor<f32>[NK, 128], K64: tensor<f16>[NK, 64], V2: tensor<f16>[NV, 128], "
    "KS: tensor<f16>[96, 128], VS: tensor<f16>[96, 128], n: i32"
)
# name: (elem, dims) of the tiles every case declares; W = 4 at @launch(128)
TILES = {
    "q": ("f32", (4, 128)),
    "q16": ("f16", (4, 128)),
    "q1": ("f32", (1, 128)),
    "qi": ("i32", (4, 128)),
    "q48": ("f32", (4, 48)),
    "q64": ("f32", (16, 128)),
    "qbig": ("f32", (32, 128)),
    "wm": ("f32", (4, 4)),
    "wl": ("f32", (4, 4)),
    "wacc": ("f32", (16, 128)),
    "wm1": ("f32", (1, 4)),
    "wl1": ("f32", (1, 4)),
    "wacc1": ("f32", (4, 128)),
    "wm8": ("f32", (4, 8)),
    "wm16": ("f16", (4, 4)),
}


def kernel(body: str, threads: int | None = 128, attrs: str = "") -> str:
    decls = "".join(
        f"  var {n}: tile<{e}>[{', '.join(map(str, d))}]\n" for n, (e, d) in TILES.items()
    )
    launch = f"@launch({threads})\n" if threads is not None else ""
    return f"{attrs}{launch}kernel k({PARAMS}) {{\n{decls}{body}\n}}\n"


def attend_of(kernel_: hir.Kernel) -> hir.Builtin:
    (stmt,) = [s for s in kernel_.body.stmts if isinstance(s, hir.ExprStmt)]
    return stmt.expr


# -- accepted ------------------------------------------------------------------------------


ACCEPTED = [
    "  attend(q, K, V, 0, n, wm, wl, wacc)",  # f32 q, Nk bound at launch
    "  attend(q16, K, V, 0, n, wm, wl, wacc)",  # f16 q
    "  attend(q1, K, V, 8, n - 3, wm1, wl1, wacc1)",  # QG = 1
    "  attend(q, KS, VS, n, n + 64, wm, wl, wacc)",  # Nk static
    "  attend(q, KS, V, 0, n, wm, wl, wacc)",  # 96 rows against NK: the launch binds NK
    # QG * D = 2048, the most a warp's lanes keep
    "  var a: tile<f32>[16, 4]\n  var b: tile<f32>[16, 4]\n  var c: tile<f32>[64, 128]\n"
    "  attend(q64, K, V, 0, n, a, b, c)",
    "  let qs = q * 0.125\n  attend(qs, K, V, 0, n, wm, wl, wacc)",  # a `let` tile of its own
    "  if n > 0 {\n    attend(q, K, V, 0, n, wm, wl, wacc)\n  }",  # uniform control
    "  for t in range(0, n, 64) {\n    attend(q, K, V, t, t + 64, wm, wl, wacc)\n  }",
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_accepted_forms_are_one_statement(body):
    (k,) = assert_clean(kernel(body))
    (stmt,) = [n for n in _walk(k.body) if isinstance(n, hir.ExprStmt)]
    e = stmt.expr
    assert isinstance(e, hir.Builtin) and e.name == "attend" and len(e.args) == 8
    assert e.type == hir.Scalar("i32") and e.uni == hir.UNIFORM
    q, k_, v, start, stop, wm, wl, wacc = e.args
    assert isinstance(q, hir.Ref) and q.sym.kind in ("var", "let")
    assert k_.sym.kind == v.sym.kind == "param"
    assert start.type == stop.type == hir.Scalar("i32")
    assert all(isinstance(x, hir.Ref) and x.sym.kind == "var" for x in (wm, wl, wacc))


def _walk(node):
    yield node
    for child in getattr(node, "stmts", ()) or ():
        yield from _walk(child)
    for name in ("body", "then", "orelse"):
        inner = getattr(node, name, None)
        if isinstance(inner, hir.Block):
            yield from _walk(inner)


def test_the_arguments_keep_their_order():
    (k,) = assert_clean(kernel("  attend(q, K, V, 3, n, wm, wl, wacc)"))
    e = attend_of(k)
    names = [a.sym.name if isinstance(a, hir.Ref) else a.value for a in e.args]
    assert names == ["q", "K", "V", 3, "n", "wm", "wl", "wacc"]
    assert hir.dump(k).count("attend(q, K, V, 3, n, wm, wl, wacc): i32") == 1


def test_start_and_stop_are_indices_at_64_bits():
    (k,) = assert_clean(kernel("  attend(q, K, V, 0, n, wm, wl, wacc)"), index_width=64)
    e = attend_of(k)
    assert e.type == e.args[3].type == e.args[4].type == hir.Scalar("i64")


def test_w_follows_the_launch_of_each_variant():
    body = "  var a: tile<f32>[4, W]\n  var b: tile<f32>[4, W]\n  var c: tile<f32>[QW, 128]\n"
    attrs = "@autotune(T in [64, 256, 512], W in [2, 8, 16], QW in [8, 32, 64])\n@launch(T)\n"
    source = kernel(body + "  attend(q, K, V, 0, n, a, b, c) // <-", threads=None, attrs=attrs)
    for t in (64, 256, 512):
        kernels, diags = check(source, variant={"T": t, "W": t // 32, "QW": 4 * (t // 32)})
        assert not diags and len(kernels) == 1, [d.message for d in diags]
    assert_refused(
        source,
        "E0328",
        "takes `WM` of shape [QG, W] = [4, 8], here [4, 2]",
        variant={"T": 256, "W": 2, "QW": 32},
    )


def test_without_launch_the_cta_is_256_threads():
    body = "  var a: tile<f32>[4, 8]\n  var b: tile<f32>[4, 8]\n  var c: tile<f32>[32, 128]\n"
    assert_clean(kernel(body + "  attend(q, K, V, 0, n, a, b, c)", threads=None))
    assert_refused(
        kernel("  attend(q, K, V, 0, n, wm, wl, wacc) // <-", threads=None),
        "E0328",
        "takes `WM` of shape [QG, W] = [4, 8], here [4, 4]",
    )


def test_python_spelling():
    source = (
        "@ph.kernel\n@ph.launch(64)\n"
        "def k(K: ph.tensor[ph.f16][NK, 64], V: ph.tensor[ph.f16][NK, 64], n: ph.i32):\n"
        "    q: ph.var[ph.tile[ph.f16][2, 64]] = 0.0\n"
        "    wm: ph.var[ph.tile[ph.f32][2, 2]]\n"
        "    wl: ph.var[ph.tile[ph.f32][2, 2]]\n"
        "    wacc: ph.var[ph.tile[ph.f32][4, 64]]\n"
        "    ph.attend(q, K, V, 0, n, wm, wl, wacc)\n"
    )
    (k,) = assert_clean(source, "k.py")
    assert attend_of(k).name == "attend"
    bad = source.replace(
        "ph.attend(q, K, V, 0, n, wm, wl, wacc)", "ph.attend(q, K, V, 0, n, wm, wl, wm)  # <-"
    )
    assert_refused(bad, "E0328", "takes `WACC` of shape [QG * W, D] = [4, 64], here [2, 2]", "k.py")


# -- refused: one rule a case ----------------------------------------------------------------


REFUSED = [
    ("attend(Q[0 :+ 4, :], K, V, 0, n, wm, wl, wacc)", "E0328", "takes `q` as a declared tile"),
    ("attend(q + 1.0, K, V, 0, n, wm, wl, wacc)", "E0328", "takes `q` as a declared tile"),
    ("attend(Q, K, V, 0, n, wm, wl, wacc)", "E0328", "takes `q` as a declared tile"),
    ("attend(qi, K, V, 0, n, wm, wl, wacc)", "E0328", "takes `q` of `f16` or `f32`, not `i32`"),
    ("attend(q48, K, V, 0, n, wm, wl, wacc)", "E0328", "with D a multiple of 32, not 48"),
    ("attend(qbig, K, V, 0, n, wm, wl, wacc)", "E0328", "keeps QG * D = 4096 sums"),
    ("attend(q, wacc, V, 0, n, wm, wl, wacc)", "E0328", "takes `K` as a named tensor parameter"),
    ("attend(q, K, K[0 :+ 8, :], 0, n, wm, wl, wacc)", "E0328", "takes `V` as a named tensor"),
    ("attend(q, K32, V, 0, n, wm, wl, wacc)", "E0328", "takes `K` of `f16`, not `f32`"),
    ("attend(q, K64, V, 0, n, wm, wl, wacc)", "E0328", "with `q`'s D = 128, here [NK, 64]"),
    ("attend(q, K, K64, 0, n, wm, wl, wacc)", "E0328", "takes `V` of shape [Nk, D]"),
    ("attend(q, K, V2, 0, n, wm, wl, wacc)", "E0328", "with the same rows, not NK and NV"),
    ("attend(q, K, V, 1.5, n, wm, wl, wacc)", "E0307", "`attend`'s `start` must be an index"),
    ("attend(q, K, V, 0, q, wm, wl, wacc)", "E0307", "`attend`'s `stop` must be an index"),
    (
        "attend(q, K, V, 0, n, wm8, wl, wacc)",
        "E0328",
        "`WM` of shape [QG, W] = [4, 4], here [4, 8]",
    ),
    (
        "attend(q, K, V, 0, n, wm, wm8, wacc)",
        "E0328",
        "`WL` of shape [QG, W] = [4, 4], here [4, 8]",
    ),
    ("attend(q, K, V, 0, n, wm, wl, q)", "E0328", "`WACC` of shape [QG * W, D] = [16, 128]"),
    ("attend(q, K, V, 0, n, wm16, wl, wacc)", "E0328", "writes `WM` in `f32`, not `f16`"),
    ("attend(q, K, V, 0, n, wm, wl, wacc[0 :+ 16, :])", "E0328", "takes a declared `var` tile"),
    ("attend(q, K, V, 0, n, wm, 0.0, wacc)", "E0328", "writes `WL`, so it takes a declared"),
    ("attend(q, K, V, 0, n, wm, wm, wacc)", "E0328", "`WM` and `WL` as two tiles"),
    ("attend(q, K, V, ctx.thread, n, wm, wl, wacc)", "E0401", "`attend` takes `ctx.thread`"),
    ("attend(q, K, V, 0, n + ctx.lane, wm, wl, wacc)", "E0401", "`attend` takes `n + ctx.lane`"),
    ("attend(q, K, V, 0, n, wm, wl)", "E0310", "`attend` takes 8 arguments but 7 were given"),
    ("let r = attend(q, K, V, 0, n, wm, wl, wacc)", "E0263", "`attend` is a statement"),
    ("n + attend(q, K, V, 0, n, wm, wl, wacc)", "E0263", "so it has no value"),
]


@pytest.mark.parametrize(("stmt", "code", "fragment"), REFUSED, ids=[s for s, _, _ in REFUSED])
def test_each_rule_is_refused_at_its_line(stmt, code, fragment):
    diags = assert_refused(kernel(f"  {stmt} // <-"), code, fragment)
    assert len([d for d in diags if d.severity == "error"]) == 1, [d.message for d in diags]


def test_refused_at_the_offending_argument():
    _, (d,) = check(kernel("  attend(q, K, V, 0, n, wm, wl, wm8)"))
    assert d.code == "E0328" and d.primary.span.text == "wm8"
    assert d.primary.message == "should be [16, 128]"
    assert d.help == ("W = 128 threads / 32 = 4 warps, each writing its own rows",)


def test_under_control_that_differs_between_threads():
    body = "  if ctx.warp == 0 {\n    attend(q, K, V, 0, n, wm, wl, wacc) // <-\n  }"
    assert_refused(kernel(body), "E0400", "`attend` runs once per CTA")


def test_a_cta_of_part_warps():
    q = "  var p: tile<f32>[1, 128]\n  var a: tile<f32>[1, 1]\n  var c: tile<f32>[1, 128]\n"
    source = kernel(q + "  attend(p, K, V, 0, n, a, a, c) // <-", threads=48)
    assert_refused(source, "E0328", "splits its keys over whole warps, but the CTA has 48")


def test_q_read_after_per_thread_stores():
    body = "  if ctx.thread < 4 {\n    q[ctx.thread, 0] = 1.0\n  }\n"
    assert_refused(kernel(body + "  attend(q, K, V, 0, n, wm, wl, wacc) // <-"), "E0402", "`q`")
    assert_clean(kernel(body + "  barrier()\n  attend(q, K, V, 0, n, wm, wl, wacc)"))


def test_a_let_view_is_no_tile_of_its_own():
    body = "  let qv = q[0 :+ 2, :]\n  attend(qv, K, V, 0, n, wm, wl, wacc) // <-"
    (d,) = [
        d
        for d in assert_refused(kernel(body), "E0328", "takes `q` as a declared tile")
        if d.severity == "error"
    ]
    assert d.primary.message == "a view of a slice"
