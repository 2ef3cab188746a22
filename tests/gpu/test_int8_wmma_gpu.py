"""i8 `dot_t` on its three paths and `@tensorcore(wmma)` on the card: the kernels of
tests/lower/test_lower_int8.py and tests/lower/test_lower_wmma.py against the tile
interpreter and numpy at ragged sizes, on fresh random inputs, outputs poisoned first.
The i8 sums are exact, so they are compared bit for bit.

The kernels are the CPU tests' own `.ph` sources, put in the Python spelling by `ph2py`
and imported, so the card runs exactly what the threads interpreter ran.
"""

from __future__ import annotations

import gpukit
import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_int8 as int8  # noqa: E402
import test_lower_wmma as wmma  # noqa: E402
from lowerkit import python_kernel  # noqa: E402

rng = np.random.default_rng()


def both(kernel, grid, arrays: dict, scalars=()):
    return gpukit.both(torch, kernel, grid, arrays, scalars)


def i8(*shape):
    return torch.randint(-8, 8, shape, dtype=torch.int8).numpy()


@pytest.mark.parametrize("form", ["mma", "dp4a", "scalar"])
@pytest.mark.parametrize("m, n, k", [(76, 44, 100), (200, 132, 256)])
def test_int8_gemm_form(form, m, n, k, tmp_path):
    kern = python_kernel(int8.FORMS[form], tmp_path, f"int8_{form}")
    a, b = i8(m, k), i8(n, k)
    c = np.full((m, n), -123456789, np.int32)
    got, want = both(kern, (-(-m // 64), -(-n // 32)), {"A": a, "B": b, "C": c})
    np.testing.assert_array_equal(got["C"], want["C"])
    ref = a.astype(np.int64) @ b.T.astype(np.int64)
    np.testing.assert_array_equal(got["C"], ref.astype(np.int32))


def test_int8_single_form(tmp_path):
    kern = python_kernel(int8.SINGLE, tmp_path, "int8_single")
    a, b = i8(36, 52), i8(20, 52)
    c = rng.integers(-1000, 1000, (36, 20)).astype(np.int32)
    got, want = both(kern, (1,), {"A": a, "B": b, "C": c})
    np.testing.assert_array_equal(got["C"], want["C"])
    ref = c.astype(np.int64)
    ref[:32, :16] -= a[:32, :48].astype(np.int64) @ b[:16, :48].T.astype(np.int64)
    np.testing.assert_array_equal(got["C"], ref.astype(np.int32))


def f16(*shape):
    return torch.randn(*shape).half().numpy()


def nan(*shape):
    return np.full(shape, np.nan, np.float32)


def close(got, want):
    assert not np.isnan(got).any(), "elements never written"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, n, k", [(76, 52, 100), (200, 148, 256)])
def test_wmma_gemm_form(m, n, k, tmp_path):
    kern = python_kernel(wmma.GEMM, tmp_path, "wmma_gemm")
    a, b = f16(m, k), f16(k, n)
    got, want = both(kern, (-(-m // 64), -(-n // 48)), {"A": a, "B": b, "C": nan(m, n)})
    close(got["C"], want["C"])
    close(got["C"], a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("m, n, k", [(52, 20, 36), (100, 52, 96)])
def test_wmma_update_form(m, n, k, tmp_path):
    kern = python_kernel(wmma.UPDATE, tmp_path, "wmma_update")
    a, b = f16(m, k), f16(n, k)
    got, want = both(kern, (-(-m // 48), -(-n // 16)), {"A": a, "B": b, "C": nan(m, n)},
                     (0.75,))  # fmt: skip
    close(got["C"], want["C"])


def test_wmma_single_form(tmp_path):
    kern = python_kernel(wmma.SINGLE, tmp_path, "wmma_single")
    a, b = f16(36, 84), f16(84, 20)
    c = rng.standard_normal((36, 20)).astype(np.float32)
    got, want = both(kern, (1,), {"A": a, "B": b, "C": c})
    close(got["C"], want["C"])
