"""Every kernel that lowers runs on the GPU and agrees with the tile interpreter.

Fresh random inputs (never zeros) at ragged sizes, outputs poisoned with NaN first so an
unwritten element shows; the same launch runs on `interp.tiles` on host copies.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phobos.runtime import cuda

try:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch", allow_module_level=True)
    cuda.device(0)
except cuda.DriverUnavailable as exc:  # pragma: no cover - machines without a GPU
    pytest.skip(str(exc), allow_module_level=True)

from benchmarks import kernels as K  # noqa: E402
from examples.saxpy import saxpy  # noqa: E402

rng = np.random.default_rng()


def on_gpu(*arrays):
    return [torch.from_numpy(a.copy()).cuda() for a in arrays]


def run_both(kernel, grid, arrays, scalars=(), out_index=-1):
    """Launch on the GPU (torch arrays) and on the interpreter (numpy); return both outputs."""
    host = [a.copy() for a in arrays]
    dev = on_gpu(*arrays)
    kernel[grid](*dev, *scalars)
    torch.cuda.synchronize()
    kernel[grid](*host, *scalars)
    return dev[out_index].cpu().numpy(), host[out_index]


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


@pytest.mark.parametrize("n", [1000, 4096 + 1000, 64])
def test_saxpy(n):
    x, y = rng.standard_normal((2, n), dtype=np.float32)
    got, want = run_both(
        saxpy, lambda m: (-(-m["N"] // m["BLOCK"]),), [x, y, poisoned(n, np.float32)], (2.5,)
    )
    # The card may round alpha * x + y once, as an fma (SPEC.md allows it); the
    # interpreter rounds twice: they differ by at most an ulp of the terms, whatever the
    # cancellation between them.
    terms = np.abs(2.5 * x) + np.abs(y)
    assert (np.abs(got - want) <= 2.5e-7 * terms).all()


@pytest.mark.parametrize("block", [1024, 4096])
def test_vector_add(block):
    n = 3 * block + 1000
    x, y = rng.standard_normal((2, n), dtype=np.float32)
    k = K.vector_add.variant(BLOCK=block)
    got, want = run_both(k, (-(-n // block),), [x, y, poisoned(n, np.float32)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("block", "n"), [(1024, 1000), (4096, 3000), (16384, 16384)])
def test_softmax_rows(block, n):
    x = rng.standard_normal((8, n), dtype=np.float32) * 3
    k = K.softmax_rows.variant(BLOCK=block)
    got, want = run_both(k, (8,), [x, poisoned((8, n), np.float32)])
    # ex2.approx on the card against the interpreter's f32-rounded exp: a few ulps apart.
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize(("block", "n"), [(1024, 1000), (8192, 8000)])
def test_layer_norm(block, n):
    x = rng.standard_normal((8, n)).astype(np.float16)
    w, b = rng.random((2, 1, n)).astype(np.float16)
    k = K.layer_norm.variant(BLOCK=block)
    got, want = run_both(k, (8,), [x, poisoned((8, n), np.float16), w, b], (1e-5,), out_index=1)
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3
    )


@pytest.mark.parametrize(("block", "n"), [(1024, 1000), (8192, 8192)])
def test_rms_norm(block, n):
    x = rng.standard_normal((8, n)).astype(np.float16)
    w = rng.random((1, n)).astype(np.float16)
    k = K.rms_norm.variant(BLOCK=block)
    got, want = run_both(k, (8,), [x, poisoned((8, n), np.float16), w], (1e-5,), out_index=1)
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3
    )


TWO_PHASE = (Path(__file__).parents[1] / "kernels" / "two_phase.ph").read_text()


def test_two_phase_reduction_over_grid_barrier():
    """A persistent grid, every CTA resident, meets at a grid barrier twice in a row."""
    from phobos.build import build_kernel
    from phobos.runtime.launch_gpu import GpuKernel
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    program, diagnostics = parse(SourceFile("two_phase.ph", TWO_PHASE))
    assert not diagnostics
    built = build_kernel(program, "total")
    gpu = GpuKernel(built.contract, built.ptx)
    bar = torch.zeros(2, dtype=torch.int32, device="cuda")  # zeroed once, reused
    for n in (1_000_000, 4 * 12_345):
        x = torch.randn(n, device="cuda")
        part = torch.full((8192,), float("nan"), device="cuda")
        out = torch.full((1,), float("nan"), device="cuda")
        counts = gpu.launch((), (x, part, out, bar))
        torch.cuda.synchronize()
        assert counts[0] > 132  # several CTAs a multiprocessor, all resident
        want = x.double().sum().item()
        assert abs(out.item() - want) <= 1e-4 * x.double().abs().sum().item()
