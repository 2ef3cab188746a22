"""Launches from other libraries' arrays on the card: CuPy arrays (by
`__cuda_array_interface__`, and by DLPack alone) and JAX arrays (by DLPack), each against
numpy at a ragged size, outputs poisoned first. A library that is not installed skips its
tests, saying so."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from gpukit import ROOT, torch_on_a_gpu

torch_on_a_gpu()  # a CUDA device, or the module is skipped
sys.path.insert(0, str(ROOT))
from examples.saxpy import saxpy  # noqa: E402

N = 4100  # a multiple of 4 (the row-pitch ABI), not of any BLOCK


def grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


class OnlyDLPack:
    """An array offering DLPack and nothing else."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return (
            self.array.__dlpack__(stream=stream) if stream is not None else self.array.__dlpack__()
        )

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def inputs():
    rng = np.random.default_rng(17)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


@pytest.mark.parametrize("wrap", [lambda a: a, OnlyDLPack], ids=["interface", "dlpack"])
def test_a_launch_from_cupy_arrays(wrap):
    cupy = pytest.importorskip("cupy")
    x, y = inputs()
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    out = cupy.full(N, cupy.nan, dtype=cupy.float32)
    saxpy[grid](wrap(dx), wrap(dy), wrap(out), 2.0)
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_allclose(cupy.asnumpy(out), 2.0 * x.astype(np.float64) + y, rtol=1e-6)


def test_a_launch_from_jax_arrays():
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("jax sees no GPU")
    x, y = inputs()
    dx, dy = (jax.device_put(a, gpus[0]) for a in (x, y))
    out = jax.device_put(np.full(N, np.nan, np.float32), gpus[0])
    out.block_until_ready()
    saxpy[grid](OnlyDLPack(dx), OnlyDLPack(dy), OnlyDLPack(out), 2.0)
    got = np.asarray(out)  # JAX arrays are immutable to JAX; the kernel wrote its memory
    np.testing.assert_allclose(got, 2.0 * x.astype(np.float64) + y, rtol=1e-6)
