"""Row reductions of a tensor-core accumulator on the card: the kernels of
tests/lower/test_lower_accumulator_rows.py (`rowmax` and `rowsum` of a product kept in
mma.sync's registers, and flash attention with both products on tensor cores), f16 and
bf16, against the tile interpreter and a float64 reference at ragged sizes, on fresh
random inputs, outputs poisoned with NaN first."""

from __future__ import annotations

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_accumulator_rows as cpu  # noqa: E402
from lowerkit import python_kernel  # noqa: E402
from test_tensorcore_gpu import both, close, nan, operand  # noqa: E402


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n", [(100, 92), (256, 128)])
def test_row_reductions_of_an_accumulator(elem, m, n, tmp_path):
    kern = python_kernel(cpu.source(cpu.ROWS, elem), tmp_path, f"rows_{elem}")
    a, b = operand(elem, (m, 64)), operand(elem, (n, 64))
    got, want = both(kern, (-(-m // 64),), {"A": a, "B": b, "R": nan(m, 1), "S": nan(m, 1)})
    s = a[0].astype(np.float64) @ b[0].astype(np.float64).T
    s = np.concatenate([s, np.zeros((m, 128 - n))], axis=1)  # zeros read past N
    for name, ref in (("R", s.max(axis=1)), ("S", 0.5 * s.sum(axis=1))):
        close(got[name], None if want is None else want[name], 1e-4, 1e-3)
        np.testing.assert_allclose(got[name][:, 0], ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("nq, nk", [(100, 152), (256, 1000)])
def test_flash_attention_on_tensor_cores(elem, nq, nk, tmp_path):
    kern = python_kernel(cpu.source(cpu.ATTENTION, elem), tmp_path, f"attention_{elem}")
    q, k, v = operand(elem, (nq, 64)), operand(elem, (nk, 64)), operand(elem, (nk, 64))
    got, want = both(kern, (-(-nq // 64),), {"Q": q, "K": k, "V": v, "O": nan(nq, 64)},
                     (0.125,))  # fmt: skip
    close(got["O"], None if want is None else want["O"], 2e-3, 2e-3)
    s = q[0].astype(np.float64) @ k[0].astype(np.float64).T * 0.125
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = p / p.sum(axis=1, keepdims=True) @ v[0].astype(np.float64)
    tol = 2e-2 if elem == "bf16" else 3e-3
    np.testing.assert_allclose(got["O"], ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("bc", [64, 128])
@pytest.mark.parametrize("nq, nk", [(200, 300), (4096, 4096)])
def test_the_f16_flash_attention_example(bc, nq, nk):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.flash_attention_f16 import flash_attention_f16

    q = torch.randn(nq, 64, device="cuda").half()
    k, v = (torch.randn(nk, 64, device="cuda").half() for _ in range(2))
    o = torch.full((nq, 64), float("nan"), device="cuda")
    flash_attention_f16.variant(BC=bc)[(-(-nq // 64),)](q, k, v, o, 0.125)
    s = q.double() @ k.double().T * 0.125
    want = torch.softmax(s, dim=1) @ v.double()
    assert not o.isnan().any()
    torch.testing.assert_close(o.double(), want, rtol=3e-3, atol=3e-3)
