"""Integer tile division by zero: quiet in the padding a ragged slice reads, a fault elsewhere."""

import numpy as np
import pytest

from phobos.interp import InterpError, run_kernel
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse


def checked(source: str):
    program, diags = parse(SourceFile("div.ph", source))
    assert not diags, diags
    kernel, diags = check_kernel(program, "k")
    assert kernel is not None, diags
    return kernel


DIVIDE = """
kernel k(A: tensor<i32>[N], B: tensor<i32>[N], Q: tensor<i32>[N], R: tensor<i32>[N]) {
  Q[0 :+ 16] = A[0 :+ 16] / (B[0 :+ 16] * 2)
  let b = B[0 :+ 16]
  R[0 :+ 16] = A[0 :+ 16] % b
}"""

NAMED = """
kernel k(A: tensor<i32>[N], B: tensor<i32>[N], Q: tensor<i32>[N]) {
  var b: tile<i32>[16] = B[0 :+ 16]
  Q[0 :+ 16] = A[0 :+ 16] / b
}"""


def c_divmod(a, b):
    q = np.abs(a) // np.abs(b) * np.where((a < 0) != (b < 0), -1, 1)
    return q, a - b * q


def test_a_ragged_tile_divides_by_its_padding_quietly():
    rng = np.random.default_rng()
    n = int(rng.integers(3, 16))
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = (rng.integers(1, 50, n) * rng.choice([-1, 1], n)).astype(np.int32)
    q, r = np.full(n, 7, np.int32), np.full(n, 7, np.int32)
    run_kernel(checked(DIVIDE), (1,), {"A": a, "B": b, "Q": q, "R": r})
    assert (q == c_divmod(a, 2 * b)[0]).all() and (r == c_divmod(a, b)[1]).all()


def test_a_real_zero_divisor_in_a_tile_faults():
    a, b = np.arange(1, 11, dtype=np.int32), np.ones(10, np.int32)
    b[int(np.random.default_rng().integers(0, 10))] = 0
    q, r = np.zeros(10, np.int32), np.zeros(10, np.int32)
    with pytest.raises(InterpError, match="integer division by zero") as info:
        run_kernel(checked(DIVIDE), (1,), {"A": a, "B": b, "Q": q, "R": r})
    assert info.value.span.source.line_col(info.value.span.start) == (3, 3)


def test_a_var_tiles_zeros_count_as_real():
    a, b, q = np.ones(10, np.int32), np.ones(10, np.int32), np.zeros(10, np.int32)
    with pytest.raises(InterpError, match="integer division by zero"):
        run_kernel(checked(NAMED), (1,), {"A": a, "B": b, "Q": q})
