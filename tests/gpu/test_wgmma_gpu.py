"""The wgmma kernels of tests/interp/wgmmakit.py on the card: the same lir text the threads
interpreter runs, emitted as PTX for sm_90a and launched on the same kind of inputs,
against the same numpy references (at the card's tolerances). A canonical layout, a
descriptor field or an accumulator place the interpreter and the card disagree on shows
here as a wrong product."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from test_fragments_gpu import _MISSING, on_card

if _MISSING:
    pytest.skip(_MISSING, allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "interp"))

import tensorkit  # noqa: E402
import wgmmakit  # noqa: E402


@pytest.mark.parametrize("case", wgmmakit.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_wgmma_computes_numpys_product_on_the_card(case, seed, device, to_device):
    if not device.chip.startswith("sm_90"):
        pytest.skip(f"wgmma needs sm_90a; this device is {device.chip}")
    arrays, want = case.inputs(np.random.default_rng(seed))
    got = on_card(case, arrays, device, to_device, chip="sm_90a")
    tensorkit.agree(case, got, want, card=True)
