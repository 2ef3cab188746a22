"""Attention on the card: the causal one-head kernel of tests/lower/test_lower_attention.py
at ragged lengths, and examples/attention.py over heads (multi-head and grouped-query,
causal and not), launched as a user launches them, f16 in, outputs poisoned with NaN
first, against a float64 reference."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_attention as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402

# `dot(p, v)` on wgmma with `p` from registers, K and V by a TMA ring (the default),
# and on mma.sync, K and V by cp.async (PHOBOS_WGMMA_REGISTER_A=0)
PV = ["wgmma", "mma.sync"]


def _pv(pv, monkeypatch):
    if pv == "mma.sync":
        monkeypatch.setenv("PHOBOS_WGMMA_REGISTER_A", "0")


@pytest.mark.parametrize("pv", PV)
@pytest.mark.parametrize("n", [100, 1000, 4100])
def test_causal_attention_on_the_card(n, pv, tmp_path, monkeypatch):
    _pv(pv, monkeypatch)
    kern = python_kernel(forms.CAUSAL, tmp_path, f"c{n}")
    q, k, v = (torch.randn(n, 64).half() for _ in range(3))
    o = torch.full((n, 64), float("nan"), device="cuda")
    kern[(-(-n // 64),)](q.cuda(), k.cuda(), v.cuda(), o, 0.125)
    torch.cuda.synchronize()
    got = o.cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    ref = forms.reference(*(x.double().numpy() for x in (q, k, v)), 0.125, True)
    np.testing.assert_allclose(got, ref, rtol=3e-3, atol=3e-3)


@pytest.mark.parametrize("pv", PV)
@pytest.mark.parametrize("d, bc", [(64, 64), (64, 128), (128, 64), (128, 128)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads, s", [(4, 4, 256), (8, 2, 512)])
def test_attention_over_heads_on_the_card(causal, heads, kv_heads, s, d, bc, pv, monkeypatch):
    _pv(pv, monkeypatch)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.attention import ROWS, attention, attention_causal

    g = heads // kv_heads
    kern = (attention_causal if causal else attention).variant(G=g, D=d, BC=bc)
    q = torch.randn(heads * s, d).half()
    k, v = (torch.randn(kv_heads * s, d).half() for _ in range(2))
    o = torch.full((heads * s, d), float("nan"), device="cuda")
    kern[(s // ROWS, heads)](q.cuda(), k.cuda(), v.cuda(), o, s, d**-0.5)
    _heads_agree(o, q, k, v, g, s, causal)


@pytest.mark.parametrize("pingpong", ["1", "0"])
@pytest.mark.parametrize("d, bc", [(64, 128), (128, 64), (128, 128)])
def test_attention_with_a_producer_warpgroup_on_the_card(d, bc, pingpong, monkeypatch):
    # examples/attention.py at one CTA an SM with a producer warpgroup (PHOBOS_SPECIALIZE=1,
    # 384 threads), its two consumer warpgroups taking turns at the tensor cores or free
    from phobos.build import build_kernel
    from phobos.runtime.launch_gpu import GpuKernel
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    monkeypatch.setenv("PHOBOS_PINGPONG", pingpong)
    program, diagnostics = parse(SourceFile("attention.ph", forms._examples_attention(d, bc)))
    assert not diagnostics
    chip = "sm_90a"
    built = build_kernel(program, "attention", {"G": 1, "D": d, "BC": bc}, chip=chip)
    assert built.lir.threads == 384, "the producer form did not take"
    heads, s = 4, 512
    q, k, v = (torch.randn(heads * s, d).half() for _ in range(3))
    o = torch.full((heads * s, d), float("nan"), device="cuda")
    GpuKernel(built.contract, built.ptx).launch(
        (s // 128, heads), (q.cuda(), k.cuda(), v.cuda(), o, s, d**-0.5)
    )
    torch.cuda.synchronize()
    got = o.cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    for h in range(heads):
        rows = slice(h * s, (h + 1) * s)
        ref = forms.reference(*(x[rows].double().numpy() for x in (q, k, v)), d**-0.5, False)
        np.testing.assert_allclose(got[rows], ref, rtol=3e-3, atol=3e-3)


@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("d, bc", [(64, 64), (64, 128), (128, 64), (128, 128)])
@pytest.mark.parametrize("heads, kv_heads, s", [(4, 4, 256), (8, 2, 512)])
def test_attention_ahead_on_the_card(heads, kv_heads, s, d, bc, overlap, monkeypatch):
    # examples/attention.py's `attention_ahead`: the next key tile's scores issued before
    # this tile's softmax, their wait put off past it (`phobos.lower.overlap`; "0": where
    # it is issued); the last head's last turn reads past K, as zeros
    monkeypatch.setenv("PHOBOS_OVERLAP", overlap)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.attention import ROWS, attention_ahead

    g = heads // kv_heads
    q = torch.randn(heads * s, d).half()
    k, v = (torch.randn(kv_heads * s, d).half() for _ in range(2))
    o = torch.full((heads * s, d), float("nan"), device="cuda")
    attention_ahead.variant(G=g, D=d, BC=bc)[(s // ROWS, heads)](
        q.cuda(), k.cuda(), v.cuda(), o, s, d**-0.5
    )
    _heads_agree(o, q, k, v, g, s, False)


def _heads_agree(o, q, k, v, g: int, s: int, causal: bool) -> None:
    """Every head's rows of the card's `o` against float64, head h reading KV head h / g."""
    torch.cuda.synchronize()
    got = o.cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    d = q.shape[1]
    for h in range(q.shape[0] // s):
        rows, kv = slice(h * s, (h + 1) * s), slice(h // g * s, (h // g + 1) * s)
        ref = forms.reference(q[rows].double().numpy(), k[kv].double().numpy(),
                              v[kv].double().numpy(), d**-0.5, causal)  # fmt: skip
        np.testing.assert_allclose(got[rows], ref, rtol=3e-3, atol=3e-3)
