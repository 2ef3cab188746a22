"""`argmax<over ..>` and `reduce<over ..>`: their types, how far they vary, and their fn."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check_one, dump

from phobos.sema import hir

FOLDS = """fn add(a, b) = a + b
kernel k(A: tensor<f16>[N], B: tensor<i8>[N]) {
  let v = A[ctx.thread]
  let lane = argmax<over ctx.lane>(v)
  let piece = argmax<over ctx.lane, width 8>(B[ctx.thread])
  let who = argmax<over ctx.thread>(v)
  let s = reduce<over ctx.lane, width 4>(v, add)
  let t = reduce<over ctx.thread>(v + v, add)
}
"""


def _lets(kernel):
    return {s.sym.name: s.sym for s in kernel.body.stmts if isinstance(s, hir.Let)}


@pytest.mark.parametrize(("width", "index"), [(32, "i32"), (64, "i64")])
def test_argmax_is_an_index_and_reduce_keeps_the_type(width, index):
    kernel, diags = check_one(FOLDS, "k", index_width=width)
    assert kernel is not None, [d.message for d in diags]
    lets = _lets(kernel)
    assert {str(lets[n].type) for n in ("lane", "piece", "who")} == {index}
    assert str(lets["s"].type) == str(lets["t"].type) == "f16"
    # the whole warp's fold is the same in its lanes; a piece's differs; the CTA's is uniform
    assert lets["lane"].uni == hir.WARP
    assert lets["piece"].uni == lets["s"].uni == hir.VARYING
    assert lets["who"].uni == lets["t"].uni == hir.UNIFORM


def test_reduce_inlines_its_fn_over_two_fresh_operands():
    (kernel,) = assert_clean(FOLDS)
    fold = next(s.value for s in kernel.body.stmts if isinstance(s, hir.Let) and s.sym.name == "s")
    a, b = fold.fn_params
    assert (a.name, b.name) == ("a", "b") and a is not b
    assert str(a.type) == str(b.type) == "f16"
    assert "reduce<over lane, width 4>(v): f16" in dump([kernel])


def test_a_fn_that_folds_by_itself_is_refused_as_recursion():
    source = (
        "fn f(a, b) = reduce<over ctx.lane>(a, f) // <-\n"
        "kernel k(x: f32) {\n  let y = reduce<over ctx.lane>(x, f)\n}\n"
    )
    assert_refused(source, "E0256", "fn `f` calls itself")


def test_a_python_fn_reduce_folds_by_lists_what_it_reads():
    source = (
        "@ph.fn\ndef scaled(a, b):\n    return a + b * s  # <-\n\n"
        "@ph.kernel\ndef k(x: ph.f32):\n    s: ph.let = 3.0\n"
        "    y: ph.let = ph.reduce(x, scaled, over=ph.ctx.lane)\n"
    )
    assert_refused(source, "E0260", "reads `s` from its caller", "k.py")
    listed = source.replace("@ph.fn\n", '@ph.fn(uses=("s",))\n').replace("  # <-", "")
    assert_clean(listed, "k.py")


@pytest.mark.parametrize(
    ("call", "code", "fragment"),
    [
        ("reduce<over ctx.lane>(x, g)", "E0327", "and `g` has a statement body"),
        ("reduce<over ctx.lane>(x, x)", "E0327", "and `x` is not a fn"),
        ("argmax<over ctx.lane>(x > 0.0)", "E0311", "`argmax` compares numbers, not `bool`"),
        ("argmax<over ctx.lane, width 0>(x)", "E0320", "a `width` is a constant power of two"),
        ("argmax<over ctx.thread, width 32>(x)", "E0320", "takes no `width`"),
    ],
)
def test_misuse(call, code, fragment):
    source = f"fn g(a, b) {{\n  let c = a\n}}\nkernel k(x: f32) {{\n  let y = {call} // <-\n}}\n"
    assert_refused(source, code, fragment)
