"""`generate(f)`: a statement fn's last bare expression as a value, its statements spliced."""

from __future__ import annotations

import numpy as np
import pytest
from sema_check_helpers import assert_clean, assert_refused, dump

from phobos.interp.tiles import run_kernel

PH = """
fn three() {
  let a = 1 + 2
  let b = a * x
  b + 1
}
fn pair() {
  let z = generate(three)
  z * generate(three)
}
kernel k(O: tensor<i32>[N], x: i32) {
  let a = 5
  O[0] = generate(three) + a
  O[1] = generate(pair)
  for i in range(0, 2) {
    O[2 + i] = generate(three) * i
  }
}
"""
PY = """
@ph.fn(uses=("x",))
def three():
    a: ph.let = 1 + 2
    b: ph.let = a * x
    b + 1

@ph.fn
def pair():
    z: ph.let = ph.generate(three)
    z * ph.generate(three)

@ph.kernel
def k(O: ph.tensor[ph.i32][N], x: ph.i32):
    a: ph.let = 5
    O[0] = ph.generate(three) + a
    O[1] = ph.generate(pair)
    for i in range(0, 2):
        O[2 + i] = ph.generate(three) * i
"""


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_generate_runs_the_statements_and_takes_the_value(spelling):
    source, name = (PH, "k.ph") if spelling == "ph" else (PY, "k.py")
    (k,) = assert_clean(source, name)
    text = dump([k])
    # f's statements come before the statement holding the generate, with fresh bindings
    assert text.index("let b: i32 = (a * x: i32)") < text.index("O[0] = ((b + 1: i32) + a: i32)")
    x = int(np.random.default_rng().integers(2, 50))
    out = np.zeros(4, np.int32)
    run_kernel(k, (1,), {"O": out, "x": x}, {"N": 4})
    v = 3 * x + 1
    assert out.tolist() == [v + 5, v * v, 0, v]


REFUSED = [
    (
        "expression_fn",
        "fn f(a) = a\nkernel k(O: tensor<f32>[N]) {\n  O[0] = generate(f) // <-\n}\n",
        "@ph.fn\ndef f(a):\n    return a\n\n@ph.kernel\ndef k(O: ph.tensor[ph.f32][N]):\n"
        "    O[0] = ph.generate(f)  # <-\n",
        "`generate` takes a statement fn, and `f` is an expression fn",
    ),
    (
        "parameters",
        "fn f(a) {\n  a\n}\nkernel k(O: tensor<f32>[N]) {\n  O[0] = generate(f) // <-\n}\n",
        "@ph.fn\ndef f(a):\n    a\n\n@ph.kernel\ndef k(O: ph.tensor[ph.f32][N]):\n"
        "    O[0] = ph.generate(f)  # <-\n",
        "`generate` takes a fn with no parameters, and `f` has 1",
    ),
    (
        "no_last_expression",
        "fn f() {\n  let q = 1\n}\nkernel k(O: tensor<i32>[N]) {\n  O[0] = generate(f) // <-\n}\n",
        "@ph.fn\ndef f():\n    q: ph.let = 1\n\n@ph.kernel\ndef k(O: ph.tensor[ph.i32][N]):\n"
        "    O[0] = ph.generate(f)  # <-\n",
        "fn `f` does not end in a bare expression",
    ),
    (
        "not_a_fn",
        "kernel k(O: tensor<i32>[N], x: i32) {\n  O[0] = generate(x) // <-\n}\n",
        "@ph.kernel\ndef k(O: ph.tensor[ph.i32][N], x: ph.i32):\n    O[0] = ph.generate(x)  # <-\n",
        "`generate` takes a fn of this module",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph, py, fragment = case
    source, name = (ph, "k.ph") if spelling == "ph" else (py, "k.py")
    diags = assert_refused(source, "E0326", fragment, name)
    if case[0] == "expression_fn":
        assert diags[0].help == ("call it directly: `f(a)`",)


def test_generate_of_itself_is_recursion():
    source = "fn f() {\n  let a = generate(f) // <-\n  a\n}\nkernel k(O: tensor<i32>[N]) {\n  O[0] = generate(f)\n}\n"
    assert_refused(source, "E0256", "fn `f` calls itself")
