"""A GEMM's CTAs walking the launch grid's blocks (`phobos.lower.walk`): the ring set up
once, each block's loop carrying on its slots and phases, the next block's first boxes
issued after a barrier and before the epilogue; or, with a producer warpgroup
(`PHOBOS_SPECIALIZE=1`), two walks over the same blocks that never join, registers moved
from the producer to the consumers by `setmaxnreg`. Pinned by the WALK and SPEC lines against the lir;
held to the tile interpreter at ragged sizes in the threads interpreter with one, two
and five CTAs walking (two by default: `interp.threads.WALKERS`), race-free; the
launcher's side is tests/runtime/test_launch_walk.py, the card's
tests/gpu/test_hopper_gemm_gpu.py."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean, text
from mmakit import agree, inputs, nan, run

from phobos.interp import threads
from phobos.ptx.emit import emit_module

GEMM = """
@tensorcore
@launch(256)
@dynshared
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
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
// WALK: walk=%blocks_x1,%blocks_y2,%blocks_z3
// WALK-COUNT-5: mbarrier_init
// WALK: fence_mbarrier_init
// WALK: bar 0:u32
// WALK: %blk18 = mov.u32
// WALK: setp.lt.u32 %blk18, %blocks
// WALK-COUNT-3: tma_load
// WALK-COUNT-3: tma_load
// WALK-COUNT-3: tma_load
// WALK: loop {
// WALK: break if
// WALK: min.u32
// WALK-NOT: mbarrier_init
// WALK: for %kt
// WALK: bar 0:u32
// WALK-COUNT-3: tma_load
// WALK: mbarrier_try_wait_parity
// WALK: wgmma_wait  [pending=1]
// WALK: {{loop end}}
// WALK: wgmma_wait  [pending=0]
// WALK: bar 0:u32
// WALK: %blk267 = add.u32 %blk18
// WALK: setp.lt.u32 %blk267, %blocks
// WALK-COUNT-3: tma_load
// WALK-COUNT-3: tma_load
// WALK-COUNT-3: tma_load
// WALK: st.global.v2.f32
// WALK: %blk18 = mov.u32 %blk267
// WALK: {{loop end}}
// PTX: .param .u32 blocks_x1,
// PTX: .param .align 64 .b8 A_tmap0[128]
"""

# With a producer warpgroup: the consumers walk the blocks freeing each stage on its
# `empty` mbarrier (the last turn's after the loop), with no CTA barrier in the walk; the
# producer's first thread walks them issuing the boxes.
SPEC = (
    GEMM
    + """
// SPEC: walk=%blocks_x1,%blocks_y2,%blocks_z3
// SPEC-COUNT-10: mbarrier_init
// SPEC: fence_mbarrier_init
// SPEC: bar 0:u32
// SPEC-NOT: bar
// SPEC: setmaxnreg  [action=inc, regs=232]
// SPEC: loop {
// SPEC: for %kt
// SPEC: mbarrier_try_wait_parity
// SPEC: wgmma_wait  [pending=1]
// SPEC: mbarrier_arrive %mb
// SPEC: {{loop end}}
// SPEC: wgmma_wait  [pending=0]
// SPEC: mbarrier_arrive %mb
// SPEC: st.global.v2.f32
// SPEC: {{loop end}}
// SPEC: } else {
// SPEC: setmaxnreg  [action=dec, regs=40]
// SPEC: loop {
// SPEC: for %kt
// SPEC: mbarrier_try_wait_parity
// SPEC: mbarrier_arrive_expect_tx
// SPEC-COUNT-3: tma_load
// SPEC: {{loop end}}
// SPEC: {{loop end}}
// SPEC-NOT: bar
// PTX-SPEC: setmaxnreg.inc.sync.aligned.u32 232
// PTX-SPEC: setmaxnreg.dec.sync.aligned.u32 40
"""
)


# `ctx.block` and `ctx.blocks` in the epilogue read the walked block and the launch's
# counts: each block writes its own index and the grid it saw, z too.
SEEN = GEMM.replace(
    "C: tensor<f32>[M, N])",
    "C: tensor<f32>[M, N], G: tensor<i32>[Z, X, Y])",
).replace(
    "  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc\n",
    "  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc\n"
    "  if ctx.thread == 0 {\n"
    "    G[ctx.block.z, pm, pn] = ctx.blocks.x * 10000 + ctx.blocks.y * 100 + ctx.blocks.z\n"
    "  }\n",
)


def test_the_walk_carries_the_ring_from_block_to_block(monkeypatch):
    # CTAs walking alone (the pairs of clusters are pinned in test_lower_cluster.py).
    monkeypatch.setenv("PHOBOS_CLUSTER", "1")
    _, k = lowered(GEMM, chip="sm_90a")
    assert k.walk == ("blocks_x1", "blocks_y2", "blocks_z3")
    filecheck(GEMM, text(k), prefix="WALK")
    filecheck(GEMM, emit_module([k], "sm_90a"), prefix="PTX")
    assert len(ops(k, "mbarrier_init")) == 5  # once, not a block
    ptxas_clean(k, "sm_90a")


@pytest.mark.parametrize("walkers", [1, 2, 5])
@pytest.mark.parametrize("m, n, kk", [(1100, 136, 200), (300, 264, 16), (130, 40, 64)])
def test_walking_ctas_agree_with_the_tile_interpreter(m, n, kk, walkers, monkeypatch):
    # 9 x 2, 3 x 3 and 2 x 1 blocks; K of 16 runs one short turn (fewer than the two a
    # block issues ahead), K of 200 four; five walkers for two blocks leave three idle.
    monkeypatch.setattr(threads, "WALKERS", walkers)
    hk, k = lowered(GEMM, chip="sm_90a")
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    want, got = run(hk, k, (-(-m // 128), -(-n // 128)), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want, rtol=1e-4, atol=1e-4)  # f32 sums of up to 200 products, in two orders
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


def test_ctx_block_and_blocks_read_the_walked_block_and_the_launch_grid():
    hk, k = lowered(SEEN, chip="sm_90a")
    assert k.walk
    m, n, kk, z = 300, 136, 64, 2
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    G = np.full((z, 3, 2), -1, np.int32)
    want, got = run(hk, k, (3, 2, z), {"A": A, "B": B, "C": nan(m, n), "G": (G, G.copy())})
    agree(got, want)
    assert (got["G"] == 3 * 10000 + 2 * 100 + z).all()  # every block, each z, ran


@pytest.mark.parametrize(
    "change, why",
    [
        ({"env": "PHOBOS_WALK"}, "PHOBOS_WALK=0"),
        ({"src": ("@tensorcore", "@persistent\n@tensorcore")}, "@persistent"),
        ({"src": ("  C[pm", "  if pm > 1000 { return }\n  C[pm")}, "a `return` would end"),
    ],
)
def test_a_kernel_not_walked_runs_a_cta_a_block_and_the_log_says_why(
    change, why, caplog, monkeypatch
):
    src = GEMM
    if "env" in change:
        monkeypatch.setenv(change["env"], "0")
    else:
        src = src.replace(*change["src"])
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src, chip="sm_90a")
    assert not k.walk and ops(k, "tma_load")
    logged = [r.getMessage() for r in caplog.records]
    assert any(why in line for line in logged), logged
    A, B = inputs("f16", (300, 64)), inputs("f16", (64, 136))
    want, got = run(hk, k, (3, 2), {"A": A, "B": B, "C": nan(300, 136)})
    agree(got, want)


def test_a_producer_warpgroup_walks_beside_the_consumers_and_never_joins(monkeypatch):
    monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    _, k = lowered(SPEC, chip="sm_90a")
    filecheck(SPEC, text(k), prefix="SPEC")
    filecheck(SPEC, emit_module([k], "sm_90a"), prefix="PTX-SPEC")
    assert k.threads == 384 and len(ops(k, "bar")) == 1  # the inits', before the arms
    ptxas_clean(k, "sm_90a")


@pytest.mark.parametrize("walkers", [1, 2, 5])
@pytest.mark.parametrize("m, n, kk", [(1100, 136, 200), (300, 264, 16), (130, 40, 64)])
def test_a_producer_warpgroups_walk_agrees_with_the_tile_interpreter(
    m, n, kk, walkers, monkeypatch
):
    # As the walk above: blocks over walkers, one short turn, idle walkers; the producer
    # runs ahead into the next block's stages while the consumers store this one.
    monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    monkeypatch.setattr(threads, "WALKERS", walkers)
    hk, k = lowered(GEMM, chip="sm_90a")
    assert k.walk and k.threads == 384
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    want, got = run(hk, k, (-(-m // 128), -(-n // 128)), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want, rtol=1e-4, atol=1e-4)
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ct", ["f32", "f16"])
def test_a_producer_warpgroups_walk_fuses_the_epilogue_and_reads_the_walked_block(ct, monkeypatch):
    monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    hk, k = lowered(epilogue(ct), chip="sm_90a")
    assert k.walk and k.threads == 384 and not ops(k, "tma_store")  # its stages are refilled
    m, n, kk = 300, 264, 72
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    dt = np.float16 if ct == "f16" else np.float32
    C = np.random.default_rng(3).standard_normal((m, n)).astype(dt)
    want, got = run(
        hk, k, (3, 3), {"A": A, "B": B, "C": (C, C.copy())}, {"alpha": 0.5, "beta": -2.0}
    )
    agree(got, want, rtol=2e-3 if ct == "f16" else 1e-4, atol=2e-3 if ct == "f16" else 1e-4)
    hk, k = lowered(SEEN, chip="sm_90a")
    G = np.full((2, 3, 2), -1, np.int32)
    A, B = inputs("f16", (300, 64)), inputs("f16", (64, 136))
    want, got = run(hk, k, (3, 2, 2), {"A": A, "B": B, "C": nan(300, 136), "G": (G, G.copy())})
    agree(got, want)
    assert (got["G"] == 3 * 10000 + 2 * 100 + 2).all()


def test_the_hgemm_example_with_a_producer_warpgroup_rebalances_without_a_spill(monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.setenv("PHOBOS_SPECIALIZE", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm, hgemm_h

    built = hgemm.variant(TILE_N=256, TILE_K=64, T=256).compile(chip="sm_90a")
    assert built.lir.walk and built.lir.threads == 384 and ".local" not in built.ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232" in built.ptx
    ptxas_clean(built.lir, "sm_90a")
    m, n, kk = 256, 512, 320  # four blocks on two walkers, five turns a block
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    want, got = run(built.hir, built.lir, (2, 2), {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want, rtol=1e-4, atol=1e-4)
    # An f16 C leaves from registers: the TMA store's panels would be stages the
    # producer is refilling with the next block's boxes.
    built = hgemm_h.variant(TILE_N=256, TILE_K=64, T=256).compile(chip="sm_90a")
    assert built.lir.walk and not ops(built.lir, "tma_store") and not ops(built.lir, "stmatrix")
    ptxas_clean(built.lir, "sm_90a")
    C = np.full((m, n), np.nan, np.float16)
    want, got = run(built.hir, built.lir, (2, 2), {"A": A, "B": B, "C": (C, C.copy())})
    agree(got, want, rtol=2e-3, atol=2e-3)


def test_a_kernel_without_a_tma_ring_is_not_walked():
    _, k = lowered(GEMM, chip="sm_90")
    assert not k.walk and not ops(k, "tma_load")


def test_the_hgemm_example_walks_without_a_spill():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm

    built = hgemm.variant(TILE_N=256, TILE_K=64, T=256).compile(chip="sm_90a")
    assert built.lir.walk and ".local" not in built.ptx
    ptxas_clean(built.lir, "sm_90a")


# The epilogue reads C: `alpha * acc + beta * C`, in f32, or rounded into an f16 C (which
# leaves from registers: the TMA store takes a bare conversion of the accumulator).
EPILOGUE = GEMM.replace(
    "C: tensor<f32>[M, N])", "C: tensor<CT>[M, N], alpha: f32, beta: f32)"
).replace(
    "  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc\n",
    "  C[pm * 128 :+ 128, pn * 128 :+ 128] = "
    "WRAP(alpha * acc + beta * READ(C[pm * 128 :+ 128, pn * 128 :+ 128]))\n",
)


def epilogue(ct: str) -> str:
    src = EPILOGUE.replace("CT", ct)
    if ct == "f32":
        return src.replace("WRAP(", "(").replace("READ(", "(")
    return src.replace("WRAP(", "f16(").replace("READ(", "f32(")


@pytest.mark.parametrize("ct", ["f32", "f16"])
@pytest.mark.parametrize("m, n, kk", [(200, 136, 200), (300, 264, 72)])
def test_an_epilogue_reading_c_is_fused_after_the_walked_loop(ct, m, n, kk):
    # `C = alpha * acc + beta * C` (the C read and the sum in the epilogue), poisoned
    # nowhere: C's old values are inputs, so every element must be the blend.
    hk, k = lowered(epilogue(ct), chip="sm_90a")
    assert k.walk and ops(k, "wgmma_mma") and ops(k, "tma_load") and not ops(k, "tma_store")
    assert ops(k, "ld", space="global")  # C's old values, read in the epilogue
    ptxas_clean(k, "sm_90a")
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    old = np.random.default_rng(7).standard_normal((m, n)).astype(np.float32)
    if ct == "f16":
        old = old.astype(np.float16)
    blocks = (-(-m // 128), -(-n // 128))
    arrays = {"A": A, "B": B, "C": (old.copy(), old.copy())}
    want, got = run(hk, k, blocks, arrays, {"alpha": 1.5, "beta": -0.5})
    tol = 1e-4 if ct == "f32" else 2e-3
    agree(got, want, rtol=tol, atol=tol)
    ref = 1.5 * (A[0].astype(np.float64) @ B[0].astype(np.float64)) - 0.5 * old
    np.testing.assert_allclose(got["C"].astype(np.float64), ref, rtol=tol, atol=tol)
