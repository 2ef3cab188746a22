"""The wgmma kernels of tests/interp/wgmmakit.py on the card: the same lir text the threads
interpreter runs, emitted as PTX for sm_90a and launched on the same kind of inputs,
against the same numpy references (at the card's tolerances). A canonical layout, a
descriptor field or an accumulator place the interpreter and the card disagree on shows
here as a wrong product."""

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

import tensorkit  # noqa: E402
import wgmmakit  # noqa: E402

from phobos.ptx import emit_module  # noqa: E402
from phobos.runtime import assemble, cuda  # noqa: E402
from phobos.runtime.module import Module, load_image  # noqa: E402


@pytest.mark.parametrize("case", wgmmakit.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_wgmma_computes_numpys_product_on_the_card(case, seed, device, to_device):
    if not device.chip.startswith("sm_90"):
        pytest.skip(f"wgmma needs sm_90a; this device is {device.chip}")
    arrays, want = case.inputs(np.random.default_rng(seed))
    k = case.kernel()
    ptx = emit_module([k], "sm_90a")
    tool = assemble.usable_ptxas(cuda.driver_version())
    cubin = None if tool is None else assemble.assemble(ptx.encode(), "sm_90a", tool)
    module = Module.load(load_image(ptx, cubin), device)
    function = module.function(k.name)
    on = {name: to_device(np.ascontiguousarray(a)) for name, a in arrays.items()}
    slots = [ctypes.c_uint64(on[p.name].ptr) for p in k.params]
    params = (ctypes.c_void_p * len(slots))(*(ctypes.addressof(v) for v in slots))
    cuda.launch_kernel(function.handle, (case.grid, 1, 1), (case.threads, 1, 1), 0, 0, params)
    device.synchronize()
    got = {name: on[name].get() for name in case.outputs}
    tensorkit.agree(case, got, want, card=True)
