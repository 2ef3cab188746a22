"""The store kernels of tests/interp/storekit.py on the card: stmatrix (x1, x2, x4, plain
and `.trans`, and its round trip through ldmatrix) and the TMA store in each swizzle mode
at boxes inside and past the tensor's edges, the same lir text the threads interpreter
runs, emitted as PTX for sm_90, against the same numpy references. A fragment placement,
un-swizzle or edge the interpreter and the card disagree on shows here as wrong bytes."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest
from test_fragments_gpu import _MISSING

if _MISSING:
    pytest.skip(_MISSING, allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "interp"))

import storekit  # noqa: E402
import test_threads_stores as cases  # noqa: E402

from phobos.ptx import emit_module  # noqa: E402
from phobos.runtime import cuda, tensormap  # noqa: E402
from phobos.runtime.module import Module, link, load_image  # noqa: E402


def _function(k, device):
    if not device.chip.startswith("sm_90"):
        pytest.skip(f"stmatrix and TMA stores need sm_90; this device is {device.chip}")
    ptx = emit_module([k], "sm_90")
    return Module.load(load_image(ptx, link(ptx, device, "sm_90")), device).function(k.name)


def _launch(function, threads: int, smem: int, values) -> None:
    params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    cuda.launch_kernel(function.handle, (1, 1, 1), (threads, 1, 1), smem, 0, params)


def _pointers(k, arrays, to_device):
    on = {name: to_device(np.ascontiguousarray(a)) for name, a in arrays.items()}
    return on, [ctypes.c_uint64(on[p.name].ptr) for p in k.params]


@pytest.mark.parametrize("n, trans", cases.STMATRIX)
def test_stmatrix_on_the_card(n, trans, device, to_device):
    k = storekit.stmatrix_kernel(n, trans)
    function = _function(k, device)
    arrays = storekit.stmatrix_inputs(n, seed=10 * n + trans)
    on, slots = _pointers(k, arrays, to_device)
    _launch(function, 32, k.smem, slots)
    device.synchronize()
    want = storekit.stmatrix_reference(arrays["W"], arrays["A"], n, trans)
    np.testing.assert_array_equal(on["out"].get().view(np.uint8), want)


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_then_ldmatrix_on_the_card(trans, device, to_device):
    k = storekit.roundtrip_kernel(trans)
    function = _function(k, device)
    arrays = storekit.stmatrix_inputs(4, seed=7)
    on, slots = _pointers(k, arrays, to_device)
    _launch(function, 32, k.smem, slots)
    device.synchronize()
    np.testing.assert_array_equal(on["out"].get().reshape(32, 4), arrays["W"])


@pytest.mark.parametrize("elem, box, mode, shape, at", cases.CASES)
def test_a_tma_store_on_the_card(elem, box, mode, shape, at, device, to_device):
    k = storekit.store_kernel(elem, box, mode)
    function = _function(k, device)
    tile = storekit.box_values(elem, box, seed=sum(shape) + at[0])
    before = storekit.poisoned_tensor(elem, *shape)
    source = to_device(storekit.swizzle_image(tile, mode))
    dt = to_device(before)
    tmap = tensormap.encode(k.maps[0], dt.ptr, shape[0], shape[1], kernel=k.name)
    words = [ctypes.c_uint64(source.ptr), ctypes.c_uint64(dt.ptr)]
    words += [ctypes.c_int32(v) for v in (*at, *shape)]
    slot = cuda.aligned_buffer(cuda.TENSOR_MAP_BYTES, cuda.TENSOR_MAP_ALIGN)
    ctypes.memmove(ctypes.addressof(slot), tmap, len(tmap))
    _launch(function, storekit.THREADS, k.smem, [*words, slot])
    device.synchronize()
    got = dt.get()
    want = storekit.store_reference(before, tile, *at)
    assert (got.view(np.uint8) == want.view(np.uint8)).all(), np.argwhere(got != want)[:8]
