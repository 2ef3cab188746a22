"""The kernels the benchmarks time compute what their peers compute (tile interpreter, CPU).

Ragged sizes, fresh random inputs, outputs poisoned first; float64 references.
"""

import numpy as np
import pytest

from benchmarks import kernels

# Extents are multiples of 4; N is not a multiple of the tile, so the last block is masked.
M, N = 8, 1000


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_vector_add(rng):
    n = 4096 + 1000
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    kernels.vector_add[lambda m: (-(-m["N"] // m["BLOCK"]),)](x, y, out)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)


def test_softmax_rows(rng):
    x = rng.standard_normal((M, N), dtype=np.float32) * 4
    y = np.full_like(x, np.nan)
    kernels.softmax_rows[(M,)](x, y)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7)


def test_layer_norm(rng):
    x = rng.standard_normal((M, N)).astype(np.float16)
    w = rng.random((1, N)).astype(np.float16)
    b = rng.random((1, N)).astype(np.float16)
    y = np.full_like(x, np.nan)
    kernels.layer_norm[(M,)](x, y, w, b, 1e-5)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    ref = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_rms_norm(rng):
    x = rng.standard_normal((M, N)).astype(np.float16)
    w = rng.random((1, N)).astype(np.float16)
    y = np.full_like(x, np.nan)
    kernels.rms_norm[(M,)](x, y, w, 1e-5)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


ROW_KERNELS = [kernels.softmax_rows, kernels.layer_norm, kernels.rms_norm]


@pytest.mark.parametrize("kernel", ROW_KERNELS, ids=lambda k: k.name)
def test_row_kernels_search_their_cta_size(kernel):
    # benchmarks/run.py times each T of this list: each variant compiles for its own CTA size
    assert kernel.checked().attrs.autotune["T"] == (256, 128, 512, 64, 32, 1024)
    for t in (256, 128, 512, 64, 32, 1024):
        built = kernel.compile(variant={"BLOCK": 1024, "T": t})
        assert built.hir.threads == built.lir.threads == built.contract.threads == t
        assert f".maxntid {t}, 1, 1" in built.ptx


@pytest.mark.parametrize("kernel", ROW_KERNELS, ids=lambda k: k.name)
def test_a_one_warp_cta_reduces_its_rows_without_a_barrier(kernel):
    # 32 threads: both reductions are shuffles within the warp, nothing crosses warps
    ptx = kernel.compile(variant={"BLOCK": 1024, "T": 32}).ptx
    assert "shfl.sync.bfly" in ptx
    assert "bar.sync" not in ptx and "barrier.sync" not in ptx


@pytest.mark.parametrize("t", [128, 512, 64, 32, 1024])
def test_softmax_rows_at_another_cta_size(rng, t):
    x = rng.standard_normal((M, N), dtype=np.float32) * 4
    y = np.full_like(x, np.nan)
    kernels.softmax_rows.variant(T=t)[(M,)](x, y)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7)
