"""`dot`/`dot_t` under `@tensorcore` on the card: the mma.sync forms of
tests/lower/test_lower_tensorcore.py, f16 and bf16, agree with the tile interpreter and a
float64 reference at ragged sizes, on fresh random inputs, with outputs poisoned with NaN
first.

The kernels are the CPU tests' own `.ph` sources, put in the Python spelling by `ph2py`
and imported, so the card runs exactly what the threads interpreter ran.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_tensorcore as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402

rng = np.random.default_rng()


def operand(elem: str, shape):
    """(the host array, the device tensor) of random `elem` values: bf16 as float32
    rounded to bf16 on the host (for the float64 reference), torch.bfloat16 on the card."""
    x = torch.randn(*shape, generator=None)
    if elem == "f16":
        h = x.half()
        return h.numpy(), h.cuda()
    b = x.bfloat16()
    return b.float().numpy(), b.cuda()


def nan(*shape):
    a = np.full(shape, np.nan, np.float32)
    return a, torch.from_numpy(a.copy()).cuda()


def both(kernel, grid, arrays: dict, scalars=()):
    """The outputs on the card and on the tile interpreter: `arrays` maps a parameter to
    (its host array, its device tensor). A host launch takes bf16 only as a bfloat16
    array (numpy has none), so for bf16 operands the tile interpreter's side is None and
    the card is held to the float64 reference alone (the CPU tests hold the threads
    interpreter, which runs the same lir, to the tile interpreter in bf16)."""
    host = {n: h.copy() for n, (h, _) in arrays.items()}
    dev = {n: d for n, (_, d) in arrays.items()}
    kernel[grid](*dev.values(), *scalars)
    torch.cuda.synchronize()
    got = {n: t.float().cpu().numpy() for n, t in dev.items()}
    if any(d.dtype == torch.bfloat16 for d in dev.values()):
        return got, None
    kernel[grid](*host.values(), *scalars)
    return got, host


def close(got, want, rtol, atol):
    assert not np.isnan(got).any(), "elements never written"
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def out(want, name):
    return None if want is None else want[name]


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n, k", [(72, 40, 48), (200, 100, 132)])
def test_gemm_form(elem, m, n, k, tmp_path):
    kern = python_kernel(forms.source("gemm", elem), tmp_path, f"gemm_{elem}")
    a, b = operand(elem, (m, k)), operand(elem, (k, n))
    got, want = both(kern, (-(-m // 64), -(-n // 32)), {"A": a, "B": b, "C": nan(m, n)})
    close(got["C"], out(want, "C"), 1e-4, 1e-4)
    close(got["C"], a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-4, 1e-4)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n, k", [(40, 28, 40), (100, 52, 96)])
def test_update_form(elem, m, n, k, tmp_path):
    kern = python_kernel(forms.source("update", elem), tmp_path, f"update_{elem}")
    a, b = operand(elem, (m, k)), operand(elem, (n, k))
    got, want = both(kern, (-(-m // 32), -(-n // 24)), {"A": a, "B": b, "C": nan(m, n)}, (0.75,))
    close(got["C"], out(want, "C"), 1e-4, 1e-4)
    x, y = a[0].astype(np.float64), b[0].astype(np.float64)
    acc = np.ones((m, n))
    for kt in range(0, k, 16):  # past K the slices read zeros: a turn of the scaling alone
        acc = acc * 0.75 + x[:, kt : kt + 16] @ y[:, kt : kt + 16].T
    close(got["C"], acc * 0.5, 1e-4, 1e-4)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_single_form(elem, tmp_path):
    kern = python_kernel(forms.source("single", elem), tmp_path, f"single_{elem}")
    a, b = operand(elem, (40, 68)), operand(elem, (68, 20))
    c = rng.standard_normal((40, 20)).astype(np.float32)
    got, want = both(kern, (1,), {"A": a, "B": b, "C": (c, torch.from_numpy(c.copy()).cuda())})
    close(got["C"], out(want, "C"), 1e-4, 1e-4)
    ref = c.astype(np.float64)
    ref[:32, :16] -= a[0][:32, :64].astype(np.float64) @ b[0][:64, :16].astype(np.float64)
    close(got["C"], ref, 1e-4, 1e-4)
