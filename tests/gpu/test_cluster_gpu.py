"""Clusters of two CTAs on the card: the forms of tests/lower/test_lower_cluster.py (B
shared by whole panels, by halved rows under `dot_t`, A shared where x walks N) and the
f16-C example, launched as a user launches them, f16 and bf16, at ragged sizes with an
odd count of x blocks (a rank without a block of its own), on fresh random inputs with
outputs poisoned first, against the tile interpreter and a float64 reference; grids with
more blocks than the card holds clusters of, so each cluster walks several; and the
same kernels' variants of one CTA a cluster (`@autotune(CL in [1, 2])`), each CTA alone,
agreeing bit for bit (the sums are the same products in the same order)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_cluster as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402
from test_tensorcore_gpu import both, close, nan, operand, out  # noqa: E402

from phobos.runtime import cuda  # noqa: E402

if not cuda.device(0).target == "sm_90a":
    pytest.skip("clusters and TMA multicast need sm_90a (an H100 or H200)",
                allow_module_level=True)  # fmt: skip


def _shapes(form, m, n, k):
    _, transposed, tile_n, x_is_m = forms.FORMS[form]
    if not x_is_m:
        m, n = n, m
    blocks = (-(-m // 128), -(-n // tile_n))
    return transposed, (blocks if x_is_m else blocks[::-1]), m, n


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(forms.FORMS))
@pytest.mark.parametrize("m, n, k", [(328, 136, 200), (200, 264, 72), (2000, 1300, 328)])
def test_a_cluster_gemm_on_the_card(form, elem, m, n, k, tmp_path):
    kern = python_kernel(forms.source(form, elem), tmp_path, f"{form}_{elem}")
    assert kern.compile(chip="sm_90a").lir.cluster == 2
    transposed, grid, m, n = _shapes(form, m, n, k)
    a = operand(elem, (m, k))
    b = operand(elem, (n, k) if transposed else (k, n))
    ref = a[0].astype(np.float64) @ (b[0].astype(np.float64).T if transposed else b[0])
    if m * n > 1 << 20:  # many blocks: the float64 reference alone
        c = nan(m, n)
        kern[grid](a[1], b[1], c[1])
        torch.cuda.synchronize()
        close(c[1].cpu().numpy(), ref, 1e-3, 1e-3)
        return
    got, want = both(kern, grid, {"A": a, "B": b, "C": nan(m, n)})
    close(got["C"], out(want, "C"), 1e-3, 1e-3)
    close(got["C"], ref, 1e-3, 1e-3)


@pytest.mark.parametrize("form", sorted(forms.FORMS))
def test_a_cluster_and_lone_ctas_agree_bit_for_bit(form, tmp_path):
    # `@autotune(CL in [1, 2]) @pipeline(cluster = CL)`: the tuner's two variants.
    src = forms.source(form, "f16").replace(
        "@pipeline(cluster = 2)", "@autotune(CL in [1, 2])\n@pipeline(cluster = CL)"
    )
    kern = python_kernel(src, tmp_path, f"{form}_tuned")
    transposed, grid, m, n = _shapes(form, 1000, 1100, 200)
    a = operand("f16", (m, 200))
    b = operand("f16", (n, 200) if transposed else (200, n))
    results = []
    for cl in (2, 1):
        variant = kern.variant(CL=cl)
        assert variant.compile(chip="sm_90a").lir.cluster == cl
        c = nan(m, n)
        variant[grid](a[1], b[1], c[1])
        torch.cuda.synchronize()
        results.append(c[1].cpu().numpy())
    close(results[0], None, 0, 0)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("m, n, k", [(384, 512, 640), (2048, 1536, 192)])
def test_the_f16_c_example_in_clusters_on_the_card(m, n, k, monkeypatch):
    # examples/hgemm.py's hgemm_h (@aligned): its f16 C stored by TMA through the free
    # stages; 3 x 2 blocks (a rank alone in the last pair), then 16 x 6.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm_h

    monkeypatch.setenv("PHOBOS_CLUSTER", "2")  # the example asks for none
    kern = hgemm_h.variant(TILE_N=256, TILE_K=64, T=256)
    kern._gpu.clear()  # compiled under the switch
    assert kern.compile(chip="sm_90a").lir.cluster == 2
    a, b = operand("f16", (m, k)), operand("f16", (k, n))
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    try:
        kern[(m // 128, n // 256)](a[1], b[1], c)
        torch.cuda.synchronize()
    finally:
        kern._gpu.clear()  # later tests launch the example as it asks
    got = c.float().cpu().numpy()
    close(got, a[0].astype(np.float64) @ b[0].astype(np.float64), 2e-3, 2e-3)
