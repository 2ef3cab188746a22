"""Per-thread code: scalar expressions, control flow and point accesses, lowered and run
on the threads interpreter against the tile interpreter."""

import numpy as np
import pytest
from lowerkit import lowered, ops, ptxas, run_both

rng = np.random.default_rng(7)

INTS = """
kernel k(A: tensor<i32>[N], B: tensor<i32>[N], O: tensor<i32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    let a = A[i]
    let b = B[i]
    var acc = a / b + a % b - (a << 3) + (a >> 2)
    acc = acc ^ (b & 255) | 1
    if a > b && b != 0 { acc += 7 } else { acc -= min(a, b) }
    O[i] = acc + max(a, b) * 3
  }
}
"""

LOOPS = """
kernel k(A: tensor<f32>[N], O: tensor<f32>[N], n: i32) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i >= N { return }
  var s: f32 = 0.0
  for j in range(0, n, 2) {
    if j == 6 { continue }
    if j > 12 { break }
    s += A[(i + j) % N]
  }
  var w = 0
  while w < 5 { w += 1; s = s * 0.5 }
  O[i] = s + f32(w)
}
"""

MATH = """
kernel k(A: tensor<f32>[N], O: tensor<f32>[N], H: tensor<f16>[N], I: tensor<i32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    let x = abs(A[i]) + 0.5
    O[i] = exp(x) + log(x) + sqrt(x) + rsqrt(x) + tanh(x) + sin(x) + cos(x) + pow(x, 1.5)
    H[i] = f16(x * 3.0) + H[i]
    I[i] = i32(floor(x * 10.0)) + i32(round(x)) + i32(ceil(x)) + i32(where(x > 1.0, 1.0, 2.0))
  }
}
"""


def test_integer_operators_match_the_tile_interpreter():
    hk, k = lowered(INTS)
    n = 300
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[b == 0] = 3
    ref, got = run_both(hk, k, (2,), {"A": a, "B": b, "O": np.zeros(n, np.int32)})
    assert np.array_equal(ref["O"], got["O"])
    assert ops(k, "div", type="s32") and ops(k, "rem", type="s32")
    assert ops(k, "shr", type="s32") and ops(k, "setp")
    ptxas(k)


def test_loops_break_continue_and_while():
    hk, k = lowered(LOOPS)
    n = 200
    a = rng.standard_normal(n).astype(np.float32)
    ref, got = run_both(hk, k, (1,), {"A": a, "O": np.zeros(n, np.float32)}, {"n": np.int32(20)})
    np.testing.assert_allclose(got["O"], ref["O"], rtol=1e-6)
    ptxas(k)


def test_math_built_ins_on_the_approximate_instructions():
    hk, k = lowered(MATH)
    n = 256
    arrays = {
        "A": rng.uniform(-2, 2, n).astype(np.float32),
        "O": np.zeros(n, np.float32),
        "H": rng.uniform(-1, 1, n).astype(np.float16),
        "I": np.zeros(n, np.int32),
    }
    ref, got = run_both(hk, k, (1,), arrays)
    np.testing.assert_allclose(got["O"], ref["O"], rtol=1e-4)
    np.testing.assert_allclose(got["H"].astype(np.float32), ref["H"].astype(np.float32), rtol=2e-3)
    assert np.abs(got["I"] - ref["I"]).max() <= 1
    for op in ("ex2", "lg2", "sqrt", "rsqrt", "tanh", "sin", "cos"):
        assert ops(k, op, rounding="approx"), op
    assert ops(k, "cvt", rounding="rmi") and ops(k, "selp")
    ptxas(k)


@pytest.mark.parametrize("width", [32, 64])
def test_params_follow_the_slot_convention(width):
    src = """
kernel k(A: tensor<f32>[N, K], h: f16, b: bool, c: u8, d: i64) {
  if b { A[0, 0] = f32(h) + f32(d) }
}"""
    _, k = lowered(src, index_width=width)
    idx = "s32" if width == 32 else "s64"
    assert [(p.name, p.type) for p in k.params] == [
        ("A", "u64"), ("h", "b16"), ("b", "u32"), ("c", "u32"), ("d", "s64"),
        ("N", idx), ("K", idx),
    ]  # fmt: skip
    ptxas(k)
