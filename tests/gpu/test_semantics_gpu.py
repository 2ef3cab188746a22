# ruff: noqa: F821, E741  (N is the kernels' extent, O an output tensor, as the spec names them)
"""The rows of PYTHON.md "Where Phobos and Python differ" that compute, computed at run
time on the card (tests/test_semantics.py checks the same rows on the constants the
compiler folds): integer `//` truncates and `%` takes the dividend's sign, as C's; an
integer sum wraps at the index width; `a < b < c` is `a < b && b < c`; a float literal
is an f32, widened where it meets an f64. Each kernel runs on fresh random inputs (the
edges of i32 among them) on the card and on the tile interpreter, both against
references that share no code with Phobos: Python's own integers and numpy's f32."""

from __future__ import annotations

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

import phobos.lang as ph

torch = torch_on_a_gpu()

T = 128


@ph.kernel
@ph.launch(128)
def divide(A: ph.tensor[ph.i32][N], B: ph.tensor[ph.i32][N], Q: ph.tensor[ph.i32][N],
           R: ph.tensor[ph.i32][N]):  # fmt: skip
    i: ph.let = ph.ctx.block.x * 128 + ph.ctx.thread
    if i < N:
        Q[i] = A[i] // B[i]
        R[i] = A[i] % B[i]


@ph.kernel
@ph.launch(128)
def wrap(A: ph.tensor[ph.i32][N], W: ph.tensor[ph.i32][N], n: ph.i32):
    i: ph.let = ph.ctx.block.x * 128 + ph.ctx.thread
    if i < N:
        W[i] = A[i] + n


@ph.kernel
@ph.launch(128)
def chained(A: ph.tensor[ph.i32][N], B: ph.tensor[ph.i32][N], C: ph.tensor[ph.i32][N],
            O: ph.tensor[ph.i32][N]):  # fmt: skip
    i: ph.let = ph.ctx.block.x * 128 + ph.ctx.thread
    if i < N:
        O[i] = ph.where(A[i] < B[i] < C[i], 1, 0)


@ph.kernel
@ph.launch(128)
def widened(X: ph.tensor[ph.f64][N], Y: ph.tensor[ph.f64][N]):
    i: ph.let = ph.ctx.block.x * 128 + ph.ctx.thread
    if i < N:
        Y[i] = X[i] + 0.1


def ints(rng, n, lo=-(2**31), hi=2**31 - 1):
    """Random i32s with the type's edges and small values mixed in."""
    edge = np.array([lo, lo + 1, -7, -3, -1, 0, 1, 3, 7, hi - 1, hi], np.int64)
    x = rng.integers(lo, hi, n, endpoint=True)
    x[: len(edge)] = edge[: min(n, len(edge))]
    return rng.permutation(x).astype(np.int32)


def on_both(kernel, arrays: dict, scalars=(), n=0):
    """The kernel's outputs from the card and from the tile interpreter, each launched on
    its own copies of `arrays` (outputs poisoned first)."""
    grid = (-(-n // T),)
    dev = {k: torch.from_numpy(a.copy()).cuda() for k, a in arrays.items()}
    kernel[grid](*dev.values(), *scalars)
    torch.cuda.synchronize()
    host = {k: a.copy() for k, a in arrays.items()}
    kernel[grid](*host.values(), *scalars)
    return {k: v.cpu().numpy() for k, v in dev.items()}, host


def truncated(a: int, b: int) -> tuple[int, int]:
    """C's quotient (toward zero) and remainder (the dividend's sign), from Python's
    exact integers, wrapped to i32 as the card's division is (-2^31 / -1)."""
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    r = a - q * b
    return ((q + 2**31) % 2**32) - 2**31, r


@pytest.mark.parametrize("n", [1000, 4100])
def test_integer_division_truncates_and_the_remainder_takes_the_dividends_sign(n):
    rng = np.random.default_rng(n)
    a, b = ints(rng, n), ints(rng, n)
    b[b == 0] = 1
    assert -7 // 2 == -4 and -7 % 3 == 2  # Python's, which Phobos does not follow
    poison = np.full(n, 12345, np.int32)
    card, interp = on_both(divide, {"A": a, "B": b, "Q": poison, "R": poison}, n=n)
    want = np.array([truncated(int(x), int(y)) for x, y in zip(a, b, strict=True)])
    for got in (card, interp):
        np.testing.assert_array_equal(got["Q"], want[:, 0].astype(np.int32))
        np.testing.assert_array_equal(got["R"], want[:, 1].astype(np.int32))
    assert (want[:, 0] != [int(x) // int(y) for x, y in zip(a, b, strict=True)]).any()


@pytest.mark.parametrize("step", [1, 7, -(2**31)])
def test_an_integer_sum_wraps_at_the_index_width(step):
    rng = np.random.default_rng(abs(step))
    n = 2052
    a = ints(rng, n)
    a[0] = 2**31 - 1  # 2147483647 + 1 is -2147483648 at 32 bits
    card, interp = on_both(wrap, {"A": a, "W": np.zeros(n, np.int32)}, (step,), n=n)
    want = np.array([((int(x) + step + 2**31) % 2**32) - 2**31 for x in a], np.int32)
    for got in (card, interp):
        np.testing.assert_array_equal(got["W"], want)
    if step == 1:
        assert card["W"][0] == -(2**31)


def test_a_chained_comparison_is_both_comparisons():
    rng = np.random.default_rng(3)
    n = 1500
    a, b, c = (rng.integers(-4, 4, n).astype(np.int32) for _ in range(3))
    card, interp = on_both(chained, {"A": a, "B": b, "C": c, "O": np.full(n, 9, np.int32)},
                           n=n)  # fmt: skip
    want = np.array([int(x < y < z) for x, y, z in zip(a, b, c, strict=True)], np.int32)
    left_first = np.array([int(int(x < y) < z) for x, y, z in zip(a, b, c, strict=True)])
    assert (want != left_first).any()  # the inputs tell the two readings apart
    for got in (card, interp):
        np.testing.assert_array_equal(got["O"], want)


def test_a_float_literal_is_an_f32_widened_into_an_f64():
    rng = np.random.default_rng(5)
    n = 776
    x = rng.standard_normal(n)
    card, interp = on_both(widened, {"X": x, "Y": np.full(n, np.nan)}, n=n)
    want = x + float(np.float32(0.1))  # 0.10000000149011612, not 0.1
    for got in (card, interp):
        np.testing.assert_array_equal(got["Y"], want)
    assert not np.array_equal(card["Y"], x + 0.1)
