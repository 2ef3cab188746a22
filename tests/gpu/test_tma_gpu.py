"""The TMA kernel of tests/interp/tmakit.py on the card: the same lir text the threads
interpreter runs, emitted as PTX for sm_90, its tensor map encoded by the launcher's own
`phobos.runtime.tensormap.encode`, against the same numpy reference of the box, the zero
fill and the swizzle. A box corner, fill or swizzle mode the interpreter and the card
disagree on shows here as a wrong image."""

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

import test_threads_tma as cases  # noqa: E402
import tmakit  # noqa: E402

from phobos.ptx import emit_module  # noqa: E402
from phobos.runtime import cuda, tensormap  # noqa: E402
from phobos.runtime.module import Module, link, load_image  # noqa: E402


@pytest.mark.parametrize("elem, box, mode, shape, at", cases.CASES)
def test_a_tma_load_is_the_box_on_the_card(elem, box, mode, shape, at, device, to_device):
    if not device.chip.startswith("sm_90"):
        pytest.skip(f"TMA needs sm_90; this device is {device.chip}")
    k = tmakit.kernel(elem, box, mode)
    a = tmakit.tensor(elem, *shape, seed=sum(shape) + 1)
    nbytes = box[0] * box[1] * a.dtype.itemsize
    ptx = emit_module([k], "sm_90")
    module = Module.load(load_image(ptx, link(ptx, device, "sm_90")), device)
    function = module.function(k.name)
    da = to_device(a)
    out = to_device(np.full(nbytes, 0xEE, np.uint8))
    tmap = tensormap.encode(k.maps[0], da.ptr, shape[0], shape[1], kernel=k.name)
    words = [ctypes.c_uint64(da.ptr), ctypes.c_uint64(out.ptr)]
    words += [ctypes.c_int32(v) for v in (*at, *shape)]
    slot = cuda.aligned_buffer(cuda.TENSOR_MAP_BYTES, cuda.TENSOR_MAP_ALIGN)
    ctypes.memmove(ctypes.addressof(slot), tmap, len(tmap))
    values = [*words, slot]
    params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    cuda.launch_kernel(function.handle, (1, 1, 1), (tmakit.THREADS, 1, 1), nbytes + 16, 0, params)
    device.synchronize()
    got = out.get()
    want = tmakit.reference(a, box, *at, mode)
    assert (got == want).all(), np.nonzero(got != want)[0][:8]
