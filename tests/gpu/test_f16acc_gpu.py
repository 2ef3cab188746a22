"""f16 accumulation on the card (ours): the forms of tests/lower/test_lower_f16acc.py,
`acc += dot(a, b)` and `dot_t` into an f16 tile under `@tensorcore`, on wgmma's f16
accumulator, launched as a user launches them, at ragged sizes, on fresh random inputs
with the output poisoned first, against the threads interpreter's lir run (f16 partial
sums rounded at the same k steps) and float64 within f16's precision; the same without a
TMA ring (`PHOBOS_TMA=0`); and examples/hgemm.py's `hgemm_hh` at a size its tiles fit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_f16acc as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402

from phobos.runtime import cuda  # noqa: E402

if not cuda.device(0).target == "sm_90a":
    pytest.skip("wgmma's f16 accumulator needs sm_90a (an H100 or H200)", allow_module_level=True)


def _operands(m, n, k, transposed):
    a = torch.randn(m, k).half()
    b = torch.randn(n, k).half() if transposed else torch.randn(k, n).half()
    ref = a.double().numpy() @ (b.double().numpy().T if transposed else b.double().numpy())
    return a, b, ref


@pytest.mark.parametrize("tma", ["1", "0"])
@pytest.mark.parametrize("form", sorted(forms.FORMS))
@pytest.mark.parametrize("m, n, k", [(200, 136, 200), (72, 40, 320), (1000, 1100, 1024)])
def test_an_f16_accumulator_on_the_card(form, m, n, k, tma, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_TMA", tma)
    src, transposed = forms.FORMS[form]
    kern = python_kernel(src, tmp_path, f"{form}_{tma}")
    built = kern.compile(chip="sm_90a")
    assert {i.attr("type") for i in forms.ops(built.lir, "wgmma_mma")} == {"f16"}
    a, b, ref = _operands(m, n, k, transposed)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    kern[(-(-m // 128), -(-n // 128))](a.cuda(), b.cuda(), c)
    torch.cuda.synchronize()
    got = c.double().cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    np.testing.assert_allclose(got, ref, rtol=0, atol=forms.tolerance(ref, k))
    if m * n <= 1 << 16:  # the lir on the threads interpreter: the same roundings
        from mmakit import run

        hk = built.hir
        arr = lambda x: (x.numpy(), x.numpy())  # noqa: E731
        C = np.full((m, n), np.nan, np.float16)
        _, lir_got = run(hk, built.lir, (-(-m // 128), -(-n // 128)),
                         {"A": arr(a), "B": arr(b), "C": (C, C.copy())})  # fmt: skip
        np.testing.assert_allclose(got, lir_got["C"], rtol=0, atol=forms.tolerance(ref, k))


def test_the_f16_sums_example_on_the_card():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm_hh

    m, n, k = 384, 512, 1024
    a, b, ref = _operands(m, n, k, False)
    for tn in (128, 256):
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        hgemm_hh.variant(TILE_N=tn)[(m // 128, n // tn)](a.cuda(), b.cuda(), c)
        torch.cuda.synchronize()
        got = c.double().cpu().numpy()
        np.testing.assert_allclose(got, ref, rtol=0, atol=forms.tolerance(ref, k))
