"""`dot` and `dot_t` under `@tensorcore` on sm_90a: wgmma m64nNk16 from shared-memory
descriptors, the operand tiles stored as wgmma reads them (swizzled, wide rows in 128-byte
panels, on 1024-byte boundaries), the accumulator in one warp column (`MmaAcc` of wgmma's
registers). Each form's instruction mix is pinned by the CHECK lines in its source
against its lir and PTX; each agrees with the tile interpreter at ragged sizes in the
threads interpreter (whose wgmma is held to the card by tests/gpu/test_wgmma_gpu.py),
race-free, and with float64; the fallbacks to mma.sync say why. These are the loops a
launch takes where TMA cannot read its tensors' rows (the variant without TMA: the cp.async
ring); tests/lower/test_lower_tma.py has the TMA ring."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean, text
from mmakit import agree, inputs, nan, run

from phobos.lower.options import without_tma
from phobos.ptx.emit import emit_module


@pytest.fixture(autouse=True)
def _cp_async_ring():
    with without_tma():
        yield


# A 128 x 128 tile on two warpgroups (m64n128k16 each), a k slice of 64: four wgmma a
# turn, from A's 128-byte rows and B's rows of 256 bytes, stored as two panels of 128.
# The loop's whole tiles come by the cp.async ring; the masked remainder runs once.
GEMM = """
@tensorcore
@launch(256)
@dynshared
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[128, 128] = 0.0
  for kt in range(0, K, 64) {
    var a = A[pm * 128 :+ 128, kt :+ 64]
    var b = B[kt :+ 64, pn * 128 :+ 128]
    acc += dot(a, b)
  }
  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc
}
// CHECK: shared tile_a_0 @0 size=32768 align=1024
// CHECK: shared tile_b_1 @32768 size=32768 align=1024
// CHECK: for %kt
// CHECK: fence.shared  [proxy=async]
// CHECK: wgmma_fence
// CHECK: [lbo=16, sbo=1024, swizzle=128B]
// CHECK: [lbo=8192, sbo=1024, swizzle=128B]
// CHECK-COUNT-4: = wgmma_mma.f32.ELEM
// CHECK: wgmma_commit
// CHECK: wgmma_wait  [pending=0]
// CHECK-NOT: ldmatrix
// CHECK-NOT: mma.f32
// CHECK: {{loop end}}
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.ELEM.ELEM
// PTX: wgmma.wait_group.sync.aligned 0
"""

# `dot_t`: B's rows are n, k contiguous (K-major, 128-byte rows); a k slice of 32 has rows
# of 64 bytes: the 64-byte swizzle, two k steps a turn.
GEMM_T = """
@tensorcore
@launch(256)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[N, K], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[128, 64] = 0.0
  for kt in range(0, K, 32) {
    var a = A[pm * 128 :+ 128, kt :+ 32]
    var b = B[pn * 64 :+ 64, kt :+ 32]
    acc += dot_t(a, b)
  }
  C[pm * 128 :+ 128, pn * 64 :+ 64] = acc
}
// CHECK: align=512
// CHECK: for %kt
// CHECK: [lbo=16, sbo=512, swizzle=64B]
// CHECK-COUNT-2: = wgmma_mma.f32.ELEM
// CHECK: {{loop end}}
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.ELEM.ELEM
"""


def check(src, k):
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_90a"), prefix="PTX")


FORMS = {"gemm": (GEMM, False), "gemm_t": (GEMM_T, True)}


def source(form: str, elem: str) -> str:
    return FORMS[form][0].replace("ELEM", elem)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("m, n, kk", [(128, 128, 64), (200, 136, 100), (72, 40, 48)])
def test_gemm_loop_on_wgmma(form, elem, m, n, kk):
    src = source(form, elem)
    hk, k = lowered(src, chip="sm_90a")
    check(src, k)
    assert not ops(k, "mma") and not ops(k, "ldmatrix")
    transposed = FORMS[form][1]
    tile_n = 64 if transposed else 128
    A = inputs(elem, (m, kk))
    B = inputs(elem, (n, kk) if transposed else (kk, n))
    want, got = run(hk, k, (-(-m // 128), -(-n // tile_n)), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want)
    b = B[0].astype(np.float64)
    ref = A[0].astype(np.float64) @ (b.T if transposed else b)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


def test_the_log_names_the_path(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        lowered(source("gemm", "f16"), chip="sm_90a")
    logged = [r.getMessage() for r in caplog.records]
    assert ("dot #13: wgmma m64n128k16 f16 -> f32: 2 warpgroups of 64x128, operands from "
            "swizzled shared memory") in logged  # fmt: skip
    assert "mma operand `b`: rows of 256 bytes, their 16-byte chunks XOR-swizzled for ldmatrix" \
        in logged  # fmt: skip


def test_sm_90_and_a_single_warpgroup_keep_mma_sync(caplog):
    _, k = lowered(source("gemm", "f16"))  # sm_90: no wgmma
    assert ops(k, "mma") and not ops(k, "wgmma_mma")
    one = source("gemm", "f16").replace("@launch(256)", "@launch(128)")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(one, chip="sm_90a")
    assert ops(k, "mma") and not ops(k, "wgmma_mma")
    logged = [r.getMessage() for r in caplog.records]
    assert "not on wgmma: the accumulator's 128 rows are not 64 a warpgroup; on mma.sync" in logged


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_ptx_assembles_for_sm_90a_without_a_warning(form):
    _, k = lowered(source(form, "f16"), chip="sm_90a")
    ptxas_clean(k, "sm_90a")


def test_an_i8_product_keeps_integer_mma_on_sm_90a(caplog):
    src = """
@launch(256)
kernel k(A: tensor<i8>[M, 64], B: tensor<i8>[N, 64], C: tensor<i32>[M, N]) {
  var a = A[ctx.block.x * 128 :+ 128, :]
  var b = B[0 :+ 128, :]
  var acc: tile<i32>[128, 128] = dot_t(a, b)
  C[ctx.block.x * 128 :+ 128, 0 :+ 128] = acc
}
"""
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(src, chip="sm_90a")
    assert ops(k, "mma") and not ops(k, "wgmma_mma")
    logged = [r.getMessage() for r in caplog.records]
    assert "not on wgmma: wgmma is lowered for f16 and bf16 operands, not i8; on mma.sync" in logged


@pytest.mark.parametrize("tile_n", [128, 256])
def test_the_hgemm_example_on_wgmma(tile_n):
    # examples/hgemm.py as a launch on an H200 compiles it: two warpgroups, m64nNk16.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm

    view = hgemm.variant(TILE_N=tile_n, TILE_K=64, T=256)
    built = view.compile(chip="sm_90a")
    k = built.lir
    assert len(ops(k, "wgmma_mma")) == 4 and not ops(k, "mma")
    assert f"wgmma.mma_async.sync.aligned.m64n{tile_n}k16.f32.f16.f16" in built.ptx
    m, n, kk = 128, tile_n, 192
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    want, got = run(built.hir, k, (1, 1), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want)


def test_a_tile_shared_with_a_product_on_mma_sync_keeps_both_off_wgmma(caplog):
    # `b` is B of a 128-row product (mma.sync on one warpgroup) and of a 64-row one (fit
    # for wgmma). It is stored for ldmatrix, rows of 256 bytes whole, not wgmma's two
    # panels of 128, so the second runs on mma.sync too: wgmma read it wrong (kda in f16
    # at D = 64, C = 128 computed garbage on the H200 before this).
    src = """
@tensorcore
@launch(128)
kernel k(A: tensor<f16>[128, 64], B: tensor<f16>[64, 128], C: tensor<f32>[128, 128],
         D: tensor<f32>[64, 128]) {
  var a = A[0 :+ 128, :]
  var a2 = A[0 :+ 64, :]
  var b = B[0 :+ 64, :]
  var c: tile<f32>[128, 128] = dot(a, b)
  var d: tile<f32>[64, 128] = dot(a2, b)
  C[0 :+ 128, :] = c
  D[0 :+ 64, :] = d
}
"""
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src, chip="sm_90a")
    assert ops(k, "mma") and not ops(k, "wgmma_mma")
    logged = [r.getMessage() for r in caplog.records]
    assert "not on wgmma: `b` is also read by a product off wgmma; on mma.sync" in logged
    A, B = inputs("f16", (128, 64)), inputs("f16", (64, 128))
    want, got = run(hk, k, (1,), {"A": A, "B": B, "C": nan(128, 128), "D": nan(64, 128)})
    agree(got, want, outputs=("C", "D"))
    a, b = (x[0].astype(np.float64) for x in (A, B))
    np.testing.assert_allclose(got["D"], a[:64] @ b, rtol=1e-5, atol=1e-5)
