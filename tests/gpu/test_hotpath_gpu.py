"""The hot launch on torch tensors: repeated launches take it, and every change of an
argument it cannot take (shape, element type, strides, device, requires_grad, a
misaligned view) is launched or refused as the whole path would.

Inputs random at a ragged size, outputs poisoned with NaN, results against float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

import phobos.lang as ph
from phobos.runtime.errors import LaunchError

torch = torch_on_a_gpu()


@ph.kernel
@ph.launch(256)
def axpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], a: ph.f32):  # noqa: F821
    base: ph.let = ph.ctx.block.x * 1024
    out[base:+1024] = a * x[base:+1024] + y[base:+1024]


def grid(meta):
    return (-(-meta["N"] // 1024),)


def tensors(n, dtype=torch.float32):
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.full((n,), float("nan"), device="cuda", dtype=dtype)
    return x, y, out


def expect(out, x, y, a):
    torch.cuda.synchronize()
    want = a * x.double().cpu().numpy() + y.double().cpu().numpy()
    np.testing.assert_allclose(out.double().cpu().numpy(), want, rtol=1e-6, atol=1e-6)


def test_repeated_launches_take_the_hot_path_and_stay_right():
    k = axpy.variant()
    x, y, out = tensors(5000)
    k[grid](x, y, out, 2.0)
    assert k._hot is not None
    for i in range(5):
        x, y, out = tensors(5000)  # new pointers each time, the same signature
        k[grid](x, y, out, 0.5 + i)
        expect(out, x, y, 0.5 + i)


def test_what_the_hot_path_cannot_take_goes_the_whole_way():
    k = axpy.variant()
    x, y, out = tensors(5000)
    k[grid](x, y, out, 1.0)
    x2, y2, out2 = tensors(7004)  # another extent: its own plan
    k[grid](x2, y2, out2, 3.0)
    expect(out2, x2, y2, 3.0)
    big = torch.randn(2 * 5000, device="cuda")
    with pytest.raises(LaunchError, match="`x` is not row-major"):
        k[grid](big[::2], y, out, 1.5)  # the same extent, other strides
    with pytest.raises(LaunchError, match="`x`"):
        k[grid](big[1:5001], y, out, 1.0)  # 4 bytes past alignment
    with pytest.raises(LaunchError, match="`x`"):
        k[grid](x.double(), y, out, 1.0)
    with pytest.raises(LaunchError, match="`x`"):
        k[grid](x.cpu(), y, out, 1.0)  # a host tensor among device ones
    with pytest.raises(LaunchError, match="`x`.*requires? grad"):
        k[grid](x.clone().requires_grad_(True), y, out, 2.0)  # as on the CPU: refused
    out.fill_(float("nan"))
    k[grid](x, y, out, 2.5)  # back to the first signature, right again
    expect(out, x, y, 2.5)
