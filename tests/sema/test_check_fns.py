"""Functions: inlining with fresh bindings, aliasing, uses, recursion, jumps, counts."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check, dump, syms

REFUSED = [
    (
        "recursion",
        "fn f(a) = g(a)\nfn g(a) = f(a) // <-\nkernel k(x: f32) {\n  let y = f(x)\n}\n",
        "@ph.fn\ndef f(a):\n    return g(a)\n\n@ph.fn\ndef g(a):\n    return f(a)  # <-\n\n"
        "@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = f(x)\n",
        "E0256",
        "fn `f` calls itself",
    ),
    (
        "argument_count",
        "fn f(a, b) = a + b\nkernel k(x: f32) {\n  let y = f(x) // <-\n}\n",
        "@ph.fn\ndef f(a, b):\n    return a + b\n\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = f(x)  # <-\n",
        "E0255",
        "fn `f` takes 2 arguments but 1 was given",
    ),
    (
        "return_in_statement_fn",
        "fn f(a) {\n  return // <-\n}\nkernel k(x: f32) {\n  f(x)\n}\n",
        "@ph.fn\ndef f(a):\n    return  # <-\n\n@ph.kernel\ndef k(x: ph.f32):\n    f(x)\n",
        "E0257",
        "`return` in the statement body of fn `f`",
    ),
    (
        "break_outside_fn_loops",
        "fn f(a) {\n  break // <-\n}\nkernel k(n: i32) {\n  for i in range(0, n) {\n    f(i)\n  }\n}\n",
        "@ph.fn\ndef f(a):\n    break  # <-\n\n@ph.kernel\ndef k(n: ph.i32):\n    for i in range(0, n):\n        f(i)\n",
        "E0258",
        "`break` outside the loops of the body of fn `f`",
    ),
    (
        "written_param_needs_name",
        "fn f(t, v) {\n  t[0] = v\n}\nkernel k(A: tensor<f32>[N], x: f32) {\n  f(A[0 :+ 4], x) // <-\n}\n",
        "@ph.fn\ndef f(t, v):\n    t[0] = v\n\n@ph.kernel\ndef k(A: ph.tensor[ph.f32][N], x: ph.f32):\n"
        "    f(A[0:+4], x)  # <-\n",
        "E0259",
        "must be passed a name",
    ),
    (
        "statement_fn_as_value",
        "fn f(a) {\n  let b = a\n}\nkernel k(x: f32) {\n  let y = f(x) // <-\n}\n",
        "@ph.fn\ndef f(a):\n    b: ph.let = a\n\n@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = f(x)  # <-\n",
        "E0263",
        "has a statement body",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph, py, code, fragment = case
    source, name = (ph, "k.ph") if spelling == "ph" else (py, "k.py")
    assert_refused(source, code, fragment, name)


def test_recursion_note_names_the_chain():
    _, diags = check("fn f(a) = g(a)\nfn g(a) = f(a)\nkernel k(x: f32) {\n  let y = f(x)\n}\n")
    assert diags[0].notes == ("the call chain: `f` -> `g` -> `f`",)


def test_expression_fn_substitutes_arguments():
    (kernel,) = assert_clean("fn sq(a) = a * a\nkernel k(x: f32) {\n  let y = sq(x + 1.0)\n}\n")
    assert "let y: f32 = ((x + 1.0: f32) * (x + 1.0: f32): f32)" in dump([kernel])


def test_statement_fn_bindings_are_fresh_and_aliases_write_the_callers_tile():
    source = (
        "fn fill(t, v) {\n  let x = v * 2.0\n  t[0, 0] = x\n}\n"
        "kernel k(a: f32) {\n"
        "  let x = 1.0\n"
        "  var t: tile<f32>[4, 4] = 0.0\n"
        "  fill(t, a)\n"
        "  fill(t, x)\n"
        "  var z = x\n"
        "}\n"
    )
    (kernel,) = assert_clean(source)
    xs = [s for s in syms(kernel) if s.name == "x"]
    assert len(xs) == 3 and len({id(s) for s in xs}) == 3
    tiles = [s for s in syms(kernel) if s.name == "t"]
    assert len(tiles) == 1  # the parameter `t` aliases the caller's tile
    text = dump([kernel])
    assert text.count("t[0, 0] = x") == 2
    assert "var z: f32 = x" in text


def test_free_names_resolve_at_the_call():
    source = "fn scaled(a) = a * s\nkernel k(x: f32) {\n  let s = 3.0\n  let y = scaled(x)\n}\n"
    (kernel,) = assert_clean(source)
    assert "let y: f32 = (x * s: f32)" in dump([kernel])


PY_USES = (
    "@ph.fn{deco}\ndef scaled(a):\n    return a * s{mark}\n\n"
    "@ph.kernel\ndef k(x: ph.f32):\n    s: ph.let = 3.0\n    y: ph.let = scaled(x)\n"
)


def test_python_fn_must_list_free_names_in_uses():
    assert_refused(
        PY_USES.format(deco="", mark="  # <-"), "E0260", "reads `s` from its caller", "k.py"
    )
    assert_refused(
        PY_USES.format(deco='(uses=("W",))', mark="  # <-"),
        "E0260",
        "`uses` does not list it",
        "k.py",
    )
    assert_clean(PY_USES.format(deco='(uses=("s",))', mark=""), "k.py")


def test_uses_may_not_name_a_module_fn():
    source = (
        '@ph.fn\ndef g(a):\n    return a\n\n@ph.fn(uses=("g",))\ndef f(a):  # <-\n    return g(a)\n\n'
        "@ph.kernel\ndef k(x: ph.f32):\n    y: ph.let = f(x)\n"
    )
    assert_refused(source, "E0261", "`g` in `uses` of fn `f` is a fn of this module", "k.py")


def test_fn_loop_may_break_its_own_loop():
    assert_clean(
        "fn f(n) {\n  for i in range(0, n) {\n    break\n  }\n}\nkernel k(n: i32) {\n  f(n)\n}\n"
    )
