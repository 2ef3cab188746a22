"""Names and scopes: params, let, var, loop variables, blocks, constants, ctx."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check, dump, syms

from phobos.sema import hir

REFUSED = [
    (
        "assign_let",
        "kernel k(x: f32) {\n  let y = x\n  y = 2.0 // <-\n}\n",
        "@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = x\n    y = 2.0  # <-\n",
        "E0252",
        "cannot assign twice to immutable `y`",
    ),
    (
        "assign_undeclared",
        "kernel k(x: f32) {\n  z = x // <-\n}\n",
        "@ph.kernel\ndef k(x: ph.f32):\n    z = x  # <-\n",
        "E0251",
        "cannot assign to `z`: it is not declared",
    ),
    (
        "undefined",
        "kernel k(alpha: f32) {\n  let y = alpah * 2.0 // <-\n}\n",
        "@ph.kernel\ndef k(alpha: ph.f32):\n    y: ph.let = alpah * 2.0  # <-\n",
        "E0250",
        "cannot find `alpah` in this scope",
    ),
    (
        "assign_param",
        "kernel k(x: f32) {\n  x = 1.0 // <-\n}\n",
        "@ph.kernel\ndef k(x: ph.f32):\n    x = 1.0  # <-\n",
        "E0252",
        "cannot assign to parameter `x`",
    ),
    (
        "assign_loop_var",
        "kernel k(n: i32) {\n  for i in range(0, n) {\n    i = 3 // <-\n  }\n}\n",
        "@ph.kernel\ndef k(n: ph.i32):\n    for i in range(0, n):\n        i = 3  # <-\n",
        "E0254",
        "cannot assign to loop variable `i`",
    ),
    (
        "out_of_block",
        "kernel k(n: i32) {\n  if n > 0 {\n    let t = 1\n  }\n  let u = t // <-\n}\n",
        "@ph.kernel\ndef k(n: ph.i32):\n    if n > 0:\n        t: ph.let = 1\n    u: ph.let = t  # <-\n",
        "E0250",
        "cannot find `t`",
    ),
    (
        "assign_autotune",
        "@autotune(B in [16, 64])\nkernel k(n: i32) {\n  B = 3 // <-\n}\n",
        "@ph.kernel\n@ph.autotune(B=[16, 64])\ndef k(n: ph.i32):\n    B = 3  # <-\n",
        "E0264",
        "cannot assign to `B`",
    ),
    (
        "break_outside",
        "kernel k(n: i32) {\n  break // <-\n}\n",
        "@ph.kernel\ndef k(n: ph.i32):\n    break  # <-\n",
        "E0258",
        "`break` outside of a loop",
    ),
    (
        "builtin_as_value",
        "kernel k(n: i32) {\n  let e = exp // <-\n}\n",
        "@ph.kernel\ndef k(n: ph.i32):\n    e: ph.let = ph.exp  # <-\n",
        "E0262",
        "`exp` is a built-in, not a value",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph, py, code, fragment = case
    source, name = (ph, "k.ph") if spelling == "ph" else (py, "k.py")
    assert_refused(source, code, fragment, name)


def test_undefined_name_suggests_close_one():
    _, diags = check("kernel k(alpha: f32) {\n  let y = alpah\n}\n")
    assert diags[0].help == ("a name with a similar name exists: `alpha`",)


def test_undeclared_assignment_help_names_the_declaration_in_each_spelling():
    _, diags = check("kernel k(x: f32) {\n  z = x\n}\n")
    assert "var z = ..." in diags[0].help[0]
    _, diags = check("@ph.kernel\ndef k(x: ph.f32):\n    z = x\n", "k.py")
    assert "z: ph.var = ..." in diags[0].help[0]


def test_let_view_may_be_written_through():
    assert_clean(
        "kernel k(A: tensor<f32>[64, 64]) {\n"
        "  let v = A[0 :+ 16, :]\n"
        "  v[0, 0] = 1.0\n"
        "  v[0 :+ 1, :] = 2.0\n"
        "}\n"
    )


def test_shadowing_gives_fresh_syms():
    (kernel,) = assert_clean(
        "kernel k(n: i32) {\n  let x = 1\n  if n > 0 {\n    let x = 2.0\n    var y = x\n  }\n  var z = x\n}\n"
    )
    found = {(s.name, str(s.type)) for s in syms(kernel)}
    assert ("x", "i32") in found and ("x", "f32") in found
    xs = [s for s in syms(kernel) if s.name == "x"]
    assert xs[0] is not xs[1] and xs[0].id != xs[1].id
    assert "var z: i32 = x" in dump([kernel])


def test_var_and_loop_variable():
    (kernel,) = assert_clean(
        "kernel k(A: tensor<f32>[N], n: i32) {\n"
        "  var s: f32 = 0.0\n"
        "  for i in range(0, n, 2) {\n    s += A[i]\n  }\n"
        "  A[0] = s\n"
        "}\n"
    )
    text = dump([kernel])
    assert "for i in range(0, n, 2)" in text
    assert "s += A[i]" in text
    loop = [s for s in syms(kernel) if s.kind == "loop"]
    assert loop and loop[0].type == hir.Scalar("i32")


def test_autotune_constants_and_dims_are_values():
    (kernel,) = assert_clean(
        "@autotune(B in [16, 64])\n"
        "kernel k(A: tensor<f32>[M, 8]) {\n"
        "  let a = B * 2\n"
        "  let b = M - 1\n"
        "}\n"
    )
    text = dump([kernel])
    assert "let a: i32 = 32" in text
    assert "let b: i32 = (M - 1: i32)" in text
    assert kernel.dyn_dims == ("M",)
    assert kernel.params[0].type == hir.TensorT(hir.Scalar("f32"), (hir.Dyn("M"), 8))


def test_ctx_counts_fold():
    (kernel,) = assert_clean(
        "@launch(128)\nkernel k(n: i32) {\n"
        "  let a = ctx.threads\n  let b = ctx.warps\n  let c = ctx.lanes\n  let d = ctx.block.x\n}\n"
    )
    text = dump([kernel])
    for want in (
        "let a: i32 = 128",
        "let b: i32 = 4",
        "let c: i32 = 32",
        "let d: i32 = ctx.block.x",
    ):
        assert want in text
    assert kernel.threads == 128


def test_default_threads():
    (kernel,) = assert_clean("kernel k(n: i32) {\n  let a = ctx.threads\n}\n")
    assert "let a: i32 = 256" in dump([kernel])


def test_index_width_64():
    (kernel,) = assert_clean("kernel k(n: i64) {\n  let a = n + 1\n}\n", index_width=64)
    assert "let a: i64 = (n + 1: i64)" in dump([kernel])
