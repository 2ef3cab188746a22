"""The GEMM loop on sm_90a with a TMA ring: wgmma's operand tiles written by TMA loads
through tensor maps (`Kernel.maps`), a 4-stage ring of mbarriers, each turn's wgmma group
left in flight a turn; the loads issued by thread 0 two turns ahead after each turn's
barrier (the default, `RING`), or with `PHOBOS_SPECIALIZE=1` by a producer warpgroup of
their own, freed stages signalled on `empty` mbarriers (`CHECK`). The instruction mix is pinned by the CHECK lines against the lir and the
PTX; each form agrees with the tile interpreter at ragged sizes in the threads
interpreter (its TMA is held to the card by tests/gpu/test_tma_gpu.py), race-free, and
with float64. A tensor whose rows are not proven 16-byte aligned keeps the cp.async ring,
and the log says why."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean, text
from mmakit import agree, inputs, nan, run

from phobos.lower.lir import Imm
from phobos.ptx.emit import emit_module

# M, N and K ragged, read as zeros past the tensors' edges; the rows' pitches (K and N
# elements) are checked at launch, which takes the variant without TMA where TMA cannot
# read them (tests/runtime/test_tensormap.py).
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
// CHECK: threads=384
// CHECK: shared mbarriers
// CHECK: tmap A_tmap0 = A ELEM [M, K] box=[128, 64] swizzle=128B
// CHECK: tmap B_tmap1 = B ELEM [K, N] box=[64, 64] swizzle=128B
// CHECK: tmap_addr  [map=A_tmap0]
// CHECK-COUNT-8: mbarrier_init
// CHECK: fence_mbarrier_init
// CHECK: bar 0:u32
// CHECK: for %kt
// CHECK-NOT: bar
// CHECK: mbarrier_try_wait_parity
// CHECK-NOT: tma_load
// CHECK-NOT: fence.shared
// CHECK: wgmma_fence
// CHECK-COUNT-4: = wgmma_mma.f32.ELEM
// CHECK: wgmma_commit
// CHECK: wgmma_wait  [pending=1]
// CHECK: mbarrier_arrive %mb
// CHECK-NOT: cp_async
// CHECK: {{loop end}}
// CHECK: wgmma_wait  [pending=0]
// CHECK: } else {
// CHECK: for %kt
// CHECK: mbarrier_try_wait_parity
// CHECK: , 32768:u32
// CHECK-COUNT-3: tma_load
// CHECK: {{loop end}}
// RING: threads=256
// RING-COUNT-4: mbarrier_init
// RING: , 32768:u32
// RING-COUNT-3: tma_load
// RING: for %kt
// RING: bar 0:u32
// RING: mbarrier_arrive_expect_tx
// RING-COUNT-3: tma_load
// RING: mbarrier_try_wait_parity
// RING-NOT: fence.shared
// RING: wgmma_fence
// RING-COUNT-4: = wgmma_mma.f32.ELEM
// RING: wgmma_wait  [pending=1]
// RING-NOT: mbarrier_arrive %mb
// RING: {{loop end}}
// RING: wgmma_wait  [pending=0]
// PTX: .param .align 64 .b8 A_tmap0[128]
// PTX: cvta.param.u64
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.ELEM.ELEM
// PTX: wgmma.wait_group.sync.aligned 1
"""

# `dot_t`: B is [N, K], K-major like A; a k slice of 32 is a row of 64 bytes, the 64-byte
# swizzle, TMA boxes of 32 columns.
GEMM_T = """
@tensorcore
@launch(256)
@dynshared
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
// CHECK: tmap A_tmap0 = A ELEM [M, K] box=[128, 32] swizzle=64B
// CHECK: tmap B_tmap1 = B ELEM [N, K] box=[64, 32] swizzle=64B
// CHECK: for %kt
// CHECK: mbarrier_try_wait_parity
// CHECK: [lbo=16, sbo=512, swizzle=64B]
// CHECK-COUNT-2: = wgmma_mma.f32.ELEM
// CHECK: wgmma_wait  [pending=1]
// CHECK: {{loop end}}
// CHECK: } else {
// CHECK: for %kt
// CHECK-COUNT-2: tma_load
// CHECK: {{loop end}}
// RING: for %kt
// RING-COUNT-2: tma_load
// RING: mbarrier_try_wait_parity
// RING: [lbo=16, sbo=512, swizzle=64B]
// RING-COUNT-2: = wgmma_mma.f32.ELEM
// RING: wgmma_wait  [pending=1]
// RING: {{loop end}}
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.ELEM.ELEM
"""

FORMS = {"gemm": (GEMM, False), "gemm_t": (GEMM_T, True)}


def source(form: str, elem: str) -> str:
    return FORMS[form][0].replace("ELEM", elem)


@pytest.fixture(params=["producer", "thread0"])
def producer(request, monkeypatch):
    """Each TMA ring two ways: fed by a producer warpgroup of its own
    (`PHOBOS_SPECIALIZE=1`, `CHECK`), and by thread 0 of the consumers at each turn's
    top (the default, `RING`), its CTAs alone (`PHOBOS_CLUSTER=1`: their pairs in
    clusters are test_lower_cluster.py's)."""
    if request.param == "producer":
        monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    else:
        monkeypatch.setenv("PHOBOS_CLUSTER", "1")
    return request.param


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_ring_is_tma_loads_on_mbarriers(form, elem, producer):
    src = source(form, elem)
    _, k = lowered(src, chip="sm_90a")
    filecheck(src, text(k), prefix="CHECK" if producer == "producer" else "RING")
    ptx = emit_module([k], "sm_90a")
    filecheck(src, ptx, prefix="PTX")
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert not ops(k, "cp_async") and not ops(k, "mma")
    assert k.threads == (384 if producer == "producer" else 256)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("m, n, kk", [(200, 136, 200), (72, 40, 48), (128, 128, 64)])
def test_a_tma_ring_agrees_with_the_tile_interpreter(form, elem, m, n, kk, producer):
    hk, k = lowered(source(form, elem), chip="sm_90a")
    transposed = FORMS[form][1]
    tile_n = 64 if transposed else 128
    A = inputs(elem, (m, kk))
    B = inputs(elem, (n, kk) if transposed else (kk, n))
    want, got = run(hk, k, (-(-m // 128), -(-n // tile_n)), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want)
    b = B[0].astype(np.float64)
    ref = A[0].astype(np.float64) @ (b.T if transposed else b)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_ptx_assembles_for_sm_90a_without_a_warning_or_a_spill(form, producer):
    _, k = lowered(source(form, "f16"), chip="sm_90a")
    assert ".local" not in emit_module([k], "sm_90a")  # no local memory
    ptxas_clean(k, "sm_90a")


def test_static_rows_tma_cannot_read_keep_the_cp_async_ring_and_the_log_says_why(caplog):
    src = source("gemm", "f16").replace("B: tensor<f16>[K, N]", "B: tensor<f16>[K, 100]")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(src, chip="sm_90a")
    assert ops(k, "cp_async") and ops(k, "wgmma_mma")
    assert not k.maps and not ops(k, "tma_load")  # one ring a loop: cp.async for both
    logged = [r.getMessage() for r in caplog.records]
    assert ("`b` staged by cp.async, not TMA: `B`'s rows of 100 f16 elements are not a "
            "multiple of 16 bytes") in logged  # fmt: skip


def test_phobos_tma_0_keeps_the_cp_async_ring(monkeypatch):
    monkeypatch.setenv("PHOBOS_TMA", "0")
    _, k = lowered(source("gemm", "f16"), chip="sm_90a")
    assert ops(k, "cp_async") and not ops(k, "tma_load") and ops(k, "wgmma_mma")


def test_a_loop_that_reads_its_accumulator_waits_for_each_group():
    # `acc` read in the turn: no group may stay in flight past its product.
    src = source("gemm", "f16").replace(
        "    acc += dot(a, b)\n", "    acc += dot(a, b)\n    acc = acc * 0.5\n"
    )
    hk, k = lowered(src, chip="sm_90a")
    waits = [i.attr("pending") for i in ops(k, "wgmma_wait")]
    assert ops(k, "tma_load") and waits and set(waits) == {0}
    A, B = inputs("f16", (130, 72)), inputs("f16", (72, 40))
    want, got = run(hk, k, (2, 1), {"A": A, "B": B, "C": nan(130, 40)})
    agree(got, want, rtol=1e-3, atol=1e-3)


def test_on_sm_90_the_loop_keeps_cp_async_and_mma_sync():
    _, k = lowered(source("gemm", "f16"), chip="sm_90")
    assert not k.maps and not ops(k, "tma_load") and ops(k, "mma")


def test_rows_tma_cannot_read_are_refused_by_the_interpreter_and_the_other_variant_runs():
    # K = 100 f16 elements: rows of 200 bytes. The launcher takes the variant without TMA
    # for such tensors (tests/runtime/test_tensormap.py); the interpreter, given the TMA
    # variant anyway, refuses the map as the driver would.
    from phobos.interp import InterpError
    from phobos.lower.options import without_tma

    A, B = inputs("f16", (130, 100)), inputs("f16", (100, 40))
    hk, k = lowered(source("gemm", "f16"), chip="sm_90a")
    with pytest.raises(InterpError, match=r"tensor map `A_tmap0` of `A` needs a 16-byte aligned "
                       r"base and rows a multiple of 16 bytes, not 0x[0-9a-f]+ and 200 bytes"):  # fmt: skip
        run(hk, k, (2, 1), {"A": A, "B": B, "C": nan(130, 40)})
    with without_tma():
        hk, k = lowered(source("gemm", "f16"), chip="sm_90a")
    assert not k.maps and ops(k, "cp_async") and ops(k, "wgmma_mma")
    want, got = run(hk, k, (2, 1), {"A": A, "B": B, "C": nan(130, 40)})
    agree(got, want)


@pytest.mark.parametrize("tile_n", [128, 256])
def test_the_hgemm_example_runs_on_a_tma_ring(tile_n, producer):
    # examples/hgemm.py as a launch on an H200 compiles it (@aligned: no masks, no split).
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm

    built = hgemm.variant(TILE_N=tile_n, TILE_K=64, T=256).compile(chip="sm_90a")
    k = built.lir
    assert [m.box for m in k.maps] == [(128, 64), (64, 64)]
    assert len(ops(k, "wgmma_mma")) == 4 and not ops(k, "cp_async") and not ops(k, "mma")
    assert [i.attr("pending") for i in ops(k, "wgmma_wait")] == [1, 0]
    assert "cp.async.bulk.tensor.2d" in built.ptx and ".local" not in built.ptx
    assert k.threads == (384 if producer == "producer" else 256)
    ptxas_clean(k, "sm_90a")
    m, n, kk = 128, tile_n, 320  # five turns through four stages: the ring wraps
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    want, got = run(built.hir, k, (1, 1), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want, rtol=1e-4, atol=1e-4)  # f32 sums of 320 products, in two orders


@pytest.mark.parametrize("walk", ["1", "0"])
@pytest.mark.parametrize("m, n", [(1100, 136), (300, 264)])
def test_the_blocks_run_in_groups_of_eight_columns_each_index_once(m, n, walk, monkeypatch):
    monkeypatch.setenv("PHOBOS_WALK", walk)  # the CTAs walking the blocks, or a CTA a block
    # 9 x 2 blocks: a group of 8 columns of x, then one of 1; 3 x 3: one group of 3.
    # Every element is written (poisoned first) and right: each index ran once.
    hk, k = lowered(source("gemm", "f16"), chip="sm_90a")
    assert ops(k, "min")  # a group's width, the grid's edge's narrower
    A, B = inputs("f16", (m, 64)), inputs("f16", (64, n))
    want, got = run(hk, k, (-(-m // 128), -(-n // 128)), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want)


@pytest.mark.parametrize("group", ["2", "3"])
def test_phobos_raster_n_groups_n_columns_each_index_once(group, monkeypatch):
    monkeypatch.setenv("PHOBOS_RASTER", group)  # 9 x 2 blocks: groups of 2 or 3, one short
    hk, k = lowered(source("gemm", "f16"), chip="sm_90a")
    assert any(Imm(int(group), "u32") in i.srcs for i in ops(k, "min"))
    A, B = inputs("f16", (1100, 64)), inputs("f16", (64, 136))
    want, got = run(hk, k, (9, 2), {"A": A, "B": B, "C": nan(1100, 136)})
    agree(got, want)


@pytest.mark.parametrize("walk", ["1", "0"])
def test_phobos_raster_0_keeps_the_launch_order(walk, monkeypatch):
    monkeypatch.setenv("PHOBOS_WALK", walk)
    monkeypatch.setenv("PHOBOS_RASTER", "0")
    _, k = lowered(source("gemm", "f16"), chip="sm_90a")
    assert not ops(k, "min")


def _ring_of_a(k):
    """The shared buffer holding the stages of `a`."""
    (ring,) = [b for b in k.shared if b.name.startswith("tile_a")]
    return ring


@pytest.mark.parametrize(
    "asked, chip, stages",
    [
        (None, "sm_90a", 5),  # the default TMA ring: 5 stages of 32 KB fit
        ("7", "sm_90a", 7),
        ("8", "sm_90a", 7),  # 8 stages of 32 KB do not fit the 227 KB: one fewer
        ("7", "sm_80", 4),  # a cp.async ring is at most 4 deep
    ],
)
def test_the_ring_depth_is_five_tma_stages_or_as_asked(asked, chip, stages, monkeypatch):
    if asked is None:
        monkeypatch.delenv("PHOBOS_STAGES", raising=False)
    else:
        monkeypatch.setenv("PHOBOS_STAGES", asked)
    _, k = lowered(source("gemm", "f16"), chip=chip)
    if chip == "sm_90a":
        assert len(ops(k, "mbarrier_init")) == stages
    else:
        assert not ops(k, "tma_load")
        assert _ring_of_a(k).size == stages * 128 * 64 * 2  # stages of `a`'s 16 KB


@pytest.mark.parametrize(
    "attr, variant, chip, stages",
    [
        ("@pipeline(stages = 3)", None, "sm_90a", 3),  # fewer than the default 5
        ("@autotune(S in [3, 6, 8])\n@pipeline(stages = S)", {"S": 6}, "sm_90a", 6),
        ("@autotune(S in [3, 6, 8])\n@pipeline(stages = S)", {"S": 8}, "sm_90a", 7),  # fits 7
        ("@pipeline(stages = 3)", None, "sm_80", 3),
        ("@pipeline(stages = 6)", None, "sm_80", 4),  # a cp.async ring: at most 4
    ],
)
def test_pipeline_stages_sets_the_ring_depth(attr, variant, chip, stages, monkeypatch):
    monkeypatch.setenv("PHOBOS_STAGES", "2")  # the kernel's own depth wins over the switch
    src = source("gemm", "f16").replace("@dynshared", "@dynshared\n" + attr)
    hk, k = lowered(src, variant=variant, chip=chip)
    assert _ring_of_a(k).size == stages * 128 * 64 * 2
    if chip == "sm_90a":
        assert len(ops(k, "mbarrier_init")) == stages
        A, B = inputs("f16", (130, 200)), inputs("f16", (200, 136))
        want, got = run(hk, k, (2, 2), {"A": A, "B": B, "C": nan(130, 136)})
        agree(got, want, rtol=1e-4, atol=1e-4)  # f32 sums of 200 products, in another order
