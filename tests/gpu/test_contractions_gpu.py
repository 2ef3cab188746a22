"""`dot`/`dot_t` on the card: every form of tests/lower/test_lower_contractions.py and the
spec's three examples agree with the tile interpreter at ragged sizes, on fresh random
inputs, with outputs poisoned first; the examples also against a float64 reference.

The forms' kernels are the CPU tests' own `.ph` sources, put in the Python spelling by
`ph2py` and imported, so the card runs exactly what the threads interpreter ran.
"""

from __future__ import annotations

import gpukit
import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_contractions as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402

from examples.flash_attention import flash_attention  # noqa: E402
from examples.kda import kda  # noqa: E402
from examples.sgemm import matmul  # noqa: E402

rng = np.random.default_rng()


def both(kernel, grid, arrays: dict, scalars=()):
    """The outputs on the card and on the tile interpreter (numpy)."""
    return gpukit.both(torch, kernel, grid, arrays, scalars)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def close(got, want, rtol, atol):
    assert not np.isnan(got).any(), "elements never written"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("m, n, k", [(32, 32, 16), (20, 28, 12), (100, 36, 44)])
def test_gemm_form(m, n, k, tmp_path):
    kern = python_kernel(forms.GEMM, tmp_path, "gemm")
    got, want = both(kern, (-(-m // 16), -(-n // 16)), {"A": f32(m, k), "B": f32(k, n),
                                                         "C": nan(m, n)})  # fmt: skip
    close(got["C"], want["C"], 2e-5, 2e-5)


@pytest.mark.parametrize("nq, nk", [(32, 48), (20, 36), (100, 300)])
def test_attention_form(nq, nk, tmp_path):
    kern = python_kernel(forms.ATTENTION, tmp_path, "attention")
    arrays = {"Q": f32(nq, 16), "K": f32(nk, 16), "V": f32(nk, 16), "O": nan(nq, 16)}
    got, want = both(kern, (-(-nq // 16),), arrays, (0.25,))
    close(got["O"], want["O"], 1e-4, 1e-5)


def test_f16_form(tmp_path):
    kern = python_kernel(forms.HALF, tmp_path, "half")
    a = rng.standard_normal((40, 32)).astype(np.float16)
    b = rng.standard_normal((32, 28)).astype(np.float16)
    got, want = both(kern, (2,), {"A": a, "B": b, "C": nan(40, 28, dtype=np.float16)})
    close(got["C"].astype(np.float32), want["C"].astype(np.float32), 2e-3, 2e-3)


def test_reduced_and_small_forms(tmp_path):
    kern = python_kernel(forms.REDUCED, tmp_path, "reduced")
    got, want = both(kern, (1,), {"X": f32(64, 16), "Y": f32(64, 16), "R": nan(64, 1)})
    close(got["R"], want["R"], 2e-5, 2e-5)
    kern = python_kernel(forms.SMALL, tmp_path, "small")
    arrays = {"X": f32(8, 4), "Y": f32(4, 8), "Z": nan(8, 8), "W": nan(1, 1)}
    got, want = both(kern, (1,), arrays)
    close(got["Z"], want["Z"], 2e-5, 2e-5)
    close(got["W"], want["W"], 2e-5, 2e-5)


def test_i8_and_padded_forms(tmp_path):
    kern = python_kernel(forms.INT8, tmp_path, "int8")
    a, b = (rng.integers(-128, 128, (16, 12)).astype(np.int8) for _ in range(2))
    got, want = both(kern, (1,), {"A": a, "B": b, "C": np.full((16, 16), -7, np.int32)})
    np.testing.assert_array_equal(got["C"], want["C"])
    kern = python_kernel(forms.PADDED, tmp_path, "padded")
    got, want = both(kern, (2,), {"A": f32(24, 32), "B": f32(32, 16), "C": nan(24, 16)})
    close(got["C"], want["C"], 2e-5, 2e-5)


@pytest.mark.parametrize("tiles", [(32, 32, 8), (64, 64, 16), (128, 128, 8)])
def test_sgemm_example(tiles):
    tm, tn, tk = tiles
    kern = matmul.variant(TILE_M=tm, TILE_N=tn, TILE_K=tk)
    m, n, k = 2 * tm, 3 * tn, 5 * tk  # @aligned: whole tiles
    arrays = {"A": f32(m, k), "B": f32(k, n), "C": f32(m, n)}
    got, want = both(kern, (m // tm, n // tn), arrays, (1.5, -0.5))
    ref = 1.5 * (arrays["A"].astype(np.float64) @ arrays["B"]) - 0.5 * arrays["C"]
    close(got["C"], want["C"], 1e-4, 1e-4)
    close(got["C"], ref, 1e-4, 1e-4)


@pytest.mark.parametrize("br, bc", [(32, 32), (32, 64)])
@pytest.mark.parametrize("nq, nk", [(200, 300), (64, 36)])
def test_flash_attention_example(br, bc, nq, nk):
    kern = flash_attention.variant(D=64, BR=br, BC=bc)
    arrays = {"Q": f32(nq, 64), "K": f32(nk, 64), "V": f32(nk, 64), "O": nan(nq, 64)}
    got, want = both(kern, (-(-nq // br),), arrays, (0.125,))
    close(got["O"], want["O"], 1e-4, 1e-5)
    q, k, v = (arrays[n].astype(np.float64) for n in "QKV")
    s = q @ k.T * 0.125
    p = np.exp(s - s.max(axis=1, keepdims=True))
    close(got["O"], p @ v / p.sum(axis=1, keepdims=True), 1e-4, 1e-5)


@pytest.mark.parametrize("n", [100, 256])
def test_kda_example(n):
    kern = kda.variant(D=64, C=32)
    arrays = {"Q": f32(n, 64), "K": f32(n, 64), "V": f32(n, 64),
              "G": -np.abs(f32(n, 1)) * 0.1, "O": nan(n, 64)}  # fmt: skip
    got, want = both(kern, (1,), arrays, (0.125,))
    close(got["O"], want["O"], 1e-3, 2e-4)
