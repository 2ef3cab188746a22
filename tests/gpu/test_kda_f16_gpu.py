"""kda in f16 on the card (examples/kda_f16.py), launched as a user launches it, f16 in,
the output poisoned with NaN first, against the float64 chunkwise reference of
tests/lower/test_lower_kda_f16.py: its two forms whose products all run on wgmma on an
H100 or H200, at whole chunks and a ragged last one, on wgmma (the default) and on
mma.sync (`PHOBOS_WGMMA=0`, the products sm_80 runs); and every variant of the space at a
ragged length (the tuner may pick any of them)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from gpukit import ROOT, torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_kda_f16 as forms  # noqa: E402


def example():
    """examples/kda_f16.py's kernel, imported afresh: it compiles under the lowering
    switches this test sets (a kernel keeps what it compiled)."""
    spec = importlib.util.spec_from_file_location("kda_f16_fresh", ROOT / "examples" / "kda_f16.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kda_f16


def launched(kern, n: int, d: int, c: int) -> None:
    q, k, v = (torch.randn(n, d).half() for _ in range(3))
    g = -0.1 * torch.rand(n, 1) - 0.001
    o = torch.full((n, d), float("nan"), device="cuda")
    kern[(1,)](q.cuda(), k.cuda(), v.cuda(), g.cuda(), o, 0.125)
    torch.cuda.synchronize()
    got = o.cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    ref = forms.reference(*(x.double().numpy() for x in (q, k, v, g)), 0.125, c)
    np.testing.assert_allclose(got, ref, rtol=3e-3, atol=1e-3 * np.abs(ref).max())


@pytest.mark.parametrize("path", ["wgmma", "mma.sync"])
@pytest.mark.parametrize("n", [1024, 4096, 1000])
@pytest.mark.parametrize("form", sorted(forms.FORMS))
def test_kda_f16_on_the_card(form, n, path, monkeypatch):
    if path == "mma.sync":
        monkeypatch.setenv("PHOBOS_WGMMA", "0")
    kern = example().variant(**forms.FORMS[form])
    launched(kern, n, forms.FORMS[form]["D"], forms.FORMS[form]["C"])


@pytest.mark.parametrize("variant", forms.VARIANTS, ids=forms.named)
def test_every_variant_on_the_card(variant):
    launched(example().variant(**variant), 1000, variant["D"], variant["C"])


def test_a_plain_launch_takes_the_first_choices():
    launched(example(), 1000, 64, 64)  # D = 64, C = 64, T = 128
