"""The tensor-core kernels of tests/interp/tensorkit.py on the card: the same lir text the
threads interpreter runs, emitted as PTX for the device's chip and launched on the same
kind of inputs, against the same numpy references (at the card's tolerances: its order of
summation is unspecified). A fragment table the interpreter and the card disagree on
shows here as a wrong product.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

from phobos.runtime import cuda


def _gpu_missing() -> str | None:
    try:
        return None if cuda.device_count() else "the CUDA driver sees no GPU"
    except cuda.DriverUnavailable as exc:
        return f"no CUDA driver here: {exc}"
    except cuda.CudaError as exc:
        return f"the CUDA driver has no usable GPU: {exc}"


_MISSING = _gpu_missing()
if _MISSING:
    pytest.skip(_MISSING, allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interp"))

import tensorkit  # noqa: E402

from phobos.ptx import TARGETS, emit_module  # noqa: E402
from phobos.runtime.module import Module, link, load_image  # noqa: E402


def target_for(device) -> str:
    """The PTX target the device runs: its own, or the newest one below it."""
    sm = int(device.chip.removeprefix("sm_").rstrip("a"))
    if sm < 80:
        pytest.skip(f"{device.chip} has no mma.sync m16n8k16 (sm_80 or newer)")
    return device.chip if device.chip in TARGETS else ("sm_90" if sm >= 90 else "sm_80")


def on_card(case, arrays: dict, device, to_device, chip: str | None = None) -> dict:
    """Run `case`'s kernel on `arrays` (by parameter name), its PTX for `chip` (the
    device's own by default); its outputs, copied back."""
    k = case.kernel()
    chip = chip or target_for(device)
    ptx = emit_module([k], chip)
    module = Module.load(load_image(ptx, link(ptx, device, chip)), device)
    function = module.function(k.name)
    on = {name: to_device(np.ascontiguousarray(a)) for name, a in arrays.items()}
    slots = [ctypes.c_uint64(on[p.name].ptr) for p in k.params]
    params = (ctypes.c_void_p * len(slots))(*(ctypes.addressof(v) for v in slots))
    cuda.launch_kernel(function.handle, (case.grid, 1, 1), (case.threads, 1, 1), 0, 0, params)
    device.synchronize()
    return {name: on[name].get() for name in case.outputs}


@pytest.mark.parametrize("case", tensorkit.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_kernel_computes_numpys_product_on_the_card(case, seed, device, to_device):
    arrays, want = case.inputs(np.random.default_rng(seed))
    got = on_card(case, arrays, device, to_device)
    tensorkit.agree(case, got, want, card=True)


@pytest.mark.parametrize("case", tensorkit.LDMATRIX_CASES, ids=lambda c: c.name)
def test_ldmatrix_alone_is_what_the_isa_says_on_the_card(case, device, to_device):
    arrays, want = case.inputs(np.random.default_rng(len(case.name)))
    got = on_card(case, arrays, device, to_device)
    tensorkit.agree(case, got, want, card=True)
