"""The Hopper GEMM on the card: the TMA-ring forms of tests/lower/test_lower_tma.py and
examples/hgemm.py, launched as a user launches them (their arrays on an H100 or H200
compile for sm_90a), f16 and bf16, `dot` and `dot_t`, at ragged sizes, on fresh random
inputs with outputs poisoned with NaN first, against the tile interpreter (f16) and a
float64 reference. Tensors whose rows TMA cannot read (a pitch that is not a multiple of
16 bytes) take the variant without TMA and still agree; `@aligned` (the example) drops
the masks.

The kernels are the CPU tests' own `.ph` sources, put in the Python spelling by `ph2py`
and imported, so the card runs exactly what the threads interpreter ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

import test_lower_tma as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402
from test_tensorcore_gpu import both, close, nan, operand, out  # noqa: E402

from phobos.runtime import cuda  # noqa: E402

if not cuda.device(0).target == "sm_90a":
    pytest.skip("the Hopper GEMM needs sm_90a (an H100 or H200)", allow_module_level=True)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(forms.FORMS))
@pytest.mark.parametrize("m, n, k", [(200, 136, 200), (72, 40, 48), (300, 264, 520)])
def test_a_tma_ring_gemm_on_the_card(form, elem, m, n, k, tmp_path):
    kern = python_kernel(forms.source(form, elem), tmp_path, f"{form}_{elem}")
    transposed = forms.FORMS[form][1]
    tile_n = 64 if transposed else 128
    a = operand(elem, (m, k))
    b = operand(elem, (n, k) if transposed else (k, n))
    grid = (-(-m // 128), -(-n // tile_n))
    got, want = both(kern, grid, {"A": a, "B": b, "C": nan(m, n)})
    ref = a[0].astype(np.float64) @ (b[0].astype(np.float64).T if transposed else b[0])
    close(got["C"], out(want, "C"), 1e-3, 1e-3)
    close(got["C"], ref, 1e-3, 1e-3)


@pytest.mark.parametrize("form", sorted(forms.FORMS))
def test_rows_tma_cannot_read_take_the_variant_without_tma(form, tmp_path):
    kern = python_kernel(forms.source(form, "f16"), tmp_path, f"{form}_odd")
    transposed = forms.FORMS[form][1]
    m, n, k = 132, 72, 100  # K = 100 f16: rows of 200 bytes
    a = operand("f16", (m, k))
    b = operand("f16", (n, k) if transposed else (k, n))
    grid = (-(-m // 128), -(-n // (64 if transposed else 128)))
    got, want = both(kern, grid, {"A": a, "B": b, "C": nan(m, n)})
    ref = a[0].astype(np.float64) @ (b[0].astype(np.float64).T if transposed else b[0])
    close(got["C"], ref, 1e-3, 1e-3)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("tile_n", [128, 256])
def test_the_hgemm_example_on_the_card(elem, tile_n):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm, hgemm_bf16

    kern = (hgemm if elem == "f16" else hgemm_bf16).variant(TILE_N=tile_n, TILE_K=64, T=256)
    m, n, k = 384, 2 * tile_n, 640
    a, b = operand(elem, (m, k)), operand(elem, (k, n))
    c = nan(m, n)
    kern[(m // 128, n // tile_n)](a[1], b[1], c[1])
    torch.cuda.synchronize()
    got = c[1].cpu().numpy()
    close(got, a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-3, 1e-3)


@pytest.mark.parametrize("m, n, k", [(2000, 1300, 200), (4100, 4000, 64)])
def test_ctas_walking_many_blocks_on_the_card(m, n, k, tmp_path):
    # 16 x 11 and 33 x 32 blocks: more than the card holds at once (one CTA an SM), so
    # each CTA walks several, the ring's phases carried from one block to the next.
    import test_lower_walk as walks

    kern = python_kernel(walks.GEMM, tmp_path, "walk_gemm")
    a, b = operand("f16", (m, k)), operand("f16", (k, n))
    c = nan(m, n)
    kern[(-(-m // 128), -(-n // 128))](a[1], b[1], c[1])
    torch.cuda.synchronize()
    got = c[1].cpu().numpy()
    close(got, a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-3, 1e-3)


def test_walking_ctas_see_their_block_and_the_launch_grid_on_the_card(tmp_path):
    import test_lower_walk as walks

    kern = python_kernel(walks.SEEN, tmp_path, "walk_seen")
    m, n, k, z = 300, 136, 64, 2
    a, b = operand("f16", (m, k)), operand("f16", (k, n))
    g = torch.full((4, 4, 4), -1, dtype=torch.int32, device="cuda")  # extents of 4: rows of 16 B
    c = nan(m, n)
    kern[(3, 2, z)](a[1], b[1], c[1], g)
    torch.cuda.synchronize()
    seen = g.cpu().numpy()
    assert (seen[:z, :3, :2] == 3 * 10000 + 2 * 100 + z).all()  # every block, each z, ran
    assert (seen[z:] == -1).all() and (seen[:, 3:] == -1).all() and (seen[:, :, 2:] == -1).all()
    close(c[1].cpu().numpy(), a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-3, 1e-3)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("tn", [128, 256])
@pytest.mark.parametrize("m, n, k", [(300, 520, 200), (2000, 1300, 136)])
def test_an_epilogue_stored_by_tma_on_the_card(elem, tn, m, n, k, tmp_path, monkeypatch):
    # stmatrix into the free stages, TMA stores clipped at the ragged edges; the C of
    # 2000 x 1300 has more blocks than the card holds, so each CTA stores several.
    import test_lower_tmastore as stores

    monkeypatch.delenv("PHOBOS_TMA_STORE", raising=False)  # on by default

    kern = python_kernel(stores.source(elem, tn), tmp_path, f"store_{elem}_{tn}")
    a, b = operand(elem, (m, k)), operand(elem, (k, n))
    dtype = torch.float16 if elem == "f16" else torch.bfloat16
    c = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
    kern[(-(-m // 128), -(-n // tn))](a[1], b[1], c)
    torch.cuda.synchronize()
    got = c.float().cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    tol = 2e-3 if elem == "f16" else 1.6e-2
    close(got, a[0].astype(np.float64) @ b[0].astype(np.float64), tol, tol)


@pytest.mark.parametrize("stages", [3, 6, 8])
def test_a_ring_as_deep_as_pipeline_stages_asks_on_the_card(stages, tmp_path):
    # `@pipeline(stages = S)`: 3 and 6 stages as asked, 8 cut to the 7 that fit; the
    # 2000 x 1300 C has more blocks than the card holds, so each CTA walks several.
    src = forms.source("gemm", "f16").replace(
        "@dynshared", "@dynshared\n@autotune(S in [3, 6, 8])\n@pipeline(stages = S)"
    )
    kern = python_kernel(src, tmp_path, f"stages_{stages}").variant(S=stages)
    m, n, k = 2000, 1300, 328
    a, b = operand("f16", (m, k)), operand("f16", (k, n))
    got, want = both(kern, (-(-m // 128), -(-n // 128)), {"A": a, "B": b, "C": nan(m, n)})
    close(got["C"], a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-3, 1e-3)
    close(got["C"], out(want, "C"), 1e-3, 1e-3)
    mbarriers = kern.compile(chip="sm_90a").ptx.count("mbarrier.init")
    assert mbarriers == min(stages, 7)


@pytest.mark.parametrize("ct", ["f32", "f16"])
@pytest.mark.parametrize("m, n, k", [(300, 264, 200), (2000, 1300, 136)])
def test_an_epilogue_reading_c_on_the_card(ct, m, n, k, tmp_path):
    # `C = alpha * acc + beta * C` after the walked loop (tests/lower/test_lower_walk.py);
    # C's old values are the input, so an element left unwritten keeps one and shows.
    import test_lower_walk as walks

    kern = python_kernel(walks.epilogue(ct), tmp_path, f"blend_{ct}")
    a, b = operand("f16", (m, k)), operand("f16", (k, n))
    dtype = torch.float32 if ct == "f32" else torch.float16
    old = torch.randn(m, n, device="cuda").to(dtype)
    c = old.clone()
    kern[(-(-m // 128), -(-n // 128))](a[1], b[1], c, 1.5, -0.5)
    torch.cuda.synchronize()
    ref = 1.5 * (a[0].astype(np.float64) @ b[0].astype(np.float64))
    ref -= 0.5 * old.double().cpu().numpy()
    tol = 1e-3 if ct == "f32" else 2e-3
    close(c.float().cpu().numpy(), ref, tol, tol)
