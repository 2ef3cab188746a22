"""A walking GEMM's f16 (or bf16) epilogue stored by TMA (`phobos.lower.tmastore`): the
accumulator rounded to f16x2 words, written by `stmatrix` into the ring's free stages as
128-byte swizzled panels, fenced for the async proxy, and stored by thread 0's
`tma_store`s, drained before the next block's refills and before the CTA ends. Pinned by
the STORE and PTX lines; held to the tile interpreter and float64 at ragged sizes (TMA
writes only inside the tensor) in the threads interpreter, race-free; the card's side is
tests/gpu/test_hopper_gemm_gpu.py."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean, text
from mmakit import inputs, run

from phobos.interp import threads
from phobos.ptx.emit import emit_module


@pytest.fixture(autouse=True)
def tma_store(monkeypatch):
    """The TMA store is on by default: an environment that turns it off is not ours."""
    monkeypatch.delenv("PHOBOS_TMA_STORE", raising=False)


GEMM = """
@tensorcore
@launch(256)
@dynshared
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<ELEM>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[128, TN] = 0.0
  for kt in range(0, K, 64) {
    var a = A[pm * 128 :+ 128, kt :+ 64]
    var b = B[kt :+ 64, pn * TN :+ TN]
    acc += dot(a, b)
  }
  C[pm * 128 :+ 128, pn * TN :+ TN] = ELEM(acc)
}
// STORE: walk=
// STORE: tmap C_tmap2 = C ELEM [M, N] box=[128, 64] swizzle=128B
// STORE: loop {
// STORE: bulk_wait  [pending=0, read=1]
// STORE: break if
// STORE: for %kt
// STORE: {{loop end}}
// STORE: wgmma_wait  [pending=0]
// STORE: bar 0:u32
// STORE-COUNT-6: tma_load
// STORE: cvt_x2.rn.ELEM.f32
// STORE-COUNT-16: stmatrix
// STORE-NOT: st.global
// STORE: fence.shared  [proxy=async]
// STORE: bar 0:u32
// STORE-COUNT-4: tma_store
// STORE: bulk_commit
// STORE: {{loop end}}
// PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: fence.proxy.async.shared::cta
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// PTX: cp.async.bulk.commit_group
"""


def source(elem: str, tn: int) -> str:
    return GEMM.replace("ELEM", elem).replace("TN", str(tn))


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_the_epilogue_is_stmatrix_then_tma_stores(elem, monkeypatch):
    # Pinned for CTAs walking alone; in clusters (test_lower_cluster.py) the epilogue is
    # the same, under the test of a rank without a block.
    monkeypatch.setenv("PHOBOS_CLUSTER", "1")
    src = source(elem, 256)
    _, k = lowered(src, chip="sm_90a")
    filecheck(src, text(k), prefix="STORE")
    ptx = emit_module([k], "sm_90a")
    filecheck(src, ptx, prefix="PTX")
    assert "cp.async.bulk.wait_group.read 0" in ptx and ".local" not in ptx
    ptxas_clean(k, "sm_90a")


@pytest.mark.parametrize("walkers", [1, 2, 5])
@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("tn", [128, 256])
@pytest.mark.parametrize("m, n, kk", [(300, 520, 200), (130, 40, 64)])
def test_tma_stored_epilogues_agree_with_the_tile_interpreter(m, n, kk, tn, elem, walkers,
                                                              monkeypatch):  # fmt: skip
    # Ragged M and N: the boxes past the tensor's edges are written only inside it.
    monkeypatch.setattr(threads, "WALKERS", walkers)
    hk, k = lowered(source(elem, tn), chip="sm_90a")
    assert len(ops(k, "tma_store")) == tn // 64
    A, B = inputs(elem, (m, kk)), inputs(elem, (kk, n))
    want, got = run(
        hk, k, (-(-m // 128), -(-n // tn)), {"A": A, "B": B, "C": _poisoned(elem, m, n)}
    )
    out = _floats(got["C"])
    assert not np.isnan(out).any(), "elements never written"
    tol = 2e-3 if elem == "f16" else 1.6e-2  # one rounding of the f32 sum to 16 bits
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(out, _floats(want["C"]), rtol=tol, atol=tol)


def _poisoned(elem: str, m: int, n: int):
    """C filled with NaN: f16 for both interpreters, or for bf16 f32 NaN (the tile
    interpreter's) and bf16 NaN's bits (the threads interpreter's)."""
    if elem == "f16":
        c = np.full((m, n), np.nan, np.float16)
        return c, c.copy()
    return np.full((m, n), np.nan, np.float32), np.full((m, n), 0x7FC0, np.uint16)


def _floats(a) -> np.ndarray:
    """An output as float64: bf16 bits (uint16) widened through f32."""
    if a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)


@pytest.mark.parametrize(
    "change, why",
    [
        ("env", "PHOBOS_TMA_STORE=0"),
        ("f32", "the stored value is not a conversion to the tensor's 16-bit type"),
    ],
)
def test_an_epilogue_not_stored_by_tma_stores_from_registers_and_the_log_says_why(
    change, why, caplog, monkeypatch
):
    src = source("f16", 128)
    if change == "env":
        monkeypatch.setenv("PHOBOS_TMA_STORE", "0")
    else:
        src = src.replace("C: tensor<f16>", "C: tensor<f32>").replace("f16(acc)", "acc")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(src, chip="sm_90a")
    assert k.walk and not ops(k, "tma_store") and not ops(k, "stmatrix")
    assert ops(k, "st", space="global")
    logged = [r.getMessage() for r in caplog.records]
    assert any(why in line for line in logged), logged


def test_the_hgemm_h_example_stores_by_tma_without_a_spill():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm_h

    built = hgemm_h.variant(TILE_N=256, TILE_K=64, T=256).compile(chip="sm_90a")
    assert len(ops(built.lir, "tma_store")) == 4 and ".local" not in built.ptx
    ptxas_clean(built.lir, "sm_90a")
