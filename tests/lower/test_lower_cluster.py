"""Clusters of two CTAs on sm_90a (`phobos.lower.cluster`): a walking GEMM's CTAs whose
blocks differ in `ctx.block.x` share the staged tile whose slice does not depend on it,
each loading half of its boxes (whole panels, or halved rows) multicast into both; the
turn's barrier is the cluster's. Pinned by CHECK lines against the lir and the PTX, each
form agrees with the tile interpreter at ragged sizes in the threads interpreter (an odd
count of x blocks leaves a rank without a block), race-free; the PTX assembles clean.
Where a cluster cannot pair the CTAs, or `PHOBOS_CLUSTER=1`, the kernel runs without
one and the log says why."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean, text
from mmakit import agree, inputs, nan, run

from phobos.ptx.emit import emit_module

# B shared: its [64, 256] slice is four 128-byte panels, two a rank.
WIDE = """
@tensorcore
@launch(256)
@dynshared
@pipeline(cluster = 2)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[128, 256] = 0.0
  for kt in range(0, K, 64) {
    var a = A[pm * 128 :+ 128, kt :+ 64]
    var b = B[kt :+ 64, pn * 256 :+ 256]
    acc += dot(a, b)
  }
  C[pm * 128 :+ 128, pn * 256 :+ 256] = acc
}
// CHECK: cluster=2 {
// CHECK: tmap A_tmap0 = A ELEM [M, K] box=[128, 64] swizzle=128B
// CHECK: tmap B_tmap1 = B ELEM [K, N] box=[64, 64] swizzle=128B
// CHECK: sreg.cluster_ctarank
// CHECK: fence_mbarrier_init
// CHECK: cluster_arrive  [relaxed=1]
// CHECK: cluster_wait
// CHECK: , 49152:u32
// CHECK: tma_load %stage
// CHECK-NOT: 3:u16
// CHECK-COUNT-2: , 3:u16
// CHECK: for %kt
// CHECK: cluster_arrive  [relaxed=1]
// CHECK: cluster_wait
// CHECK-NOT: bar 0:u32
// CHECK: mbarrier_try_wait_parity
// CHECK: {{loop end}}
// CHECK: cluster_arrive
// CHECK: cluster_wait
// CHECK: {{loop end}}
// CHECK: cluster_arrive
// CHECK: cluster_wait
// PTX: .reqnctapercluster 2, 1, 1
// PTX: barrier.cluster.arrive.relaxed.aligned
// PTX: barrier.cluster.wait.aligned
// PTX: .multicast::cluster
// PTX: barrier.cluster.arrive.aligned
"""

# `dot_t`: B's [64, 32] slice is one 64-byte panel, split in two boxes of 32 rows.
THIN = """
@tensorcore
@launch(256)
@dynshared
@pipeline(cluster = 2)
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
// CHECK: cluster=2 {
// CHECK: tmap A_tmap0 = A ELEM [M, K] box=[128, 32] swizzle=64B
// CHECK: tmap B_tmap1 = B ELEM [N, K] box=[32, 32] swizzle=64B
// CHECK: for %kt
// CHECK: cluster_arrive  [relaxed=1]
// CHECK: , 3:u16
// CHECK: {{loop end}}
// PTX: .multicast::cluster
"""

# A shared: the blocks' x walks N, so A's slice is the pair's; one panel, rows halved.
TURNED = """
@tensorcore
@launch(256)
@dynshared
@pipeline(cluster = 2)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<f32>[M, N]) {
  let pn = ctx.block.x
  let pm = ctx.block.y
  var acc: tile<f32>[128, 128] = 0.0
  for kt in range(0, K, 64) {
    var a = A[pm * 128 :+ 128, kt :+ 64]
    var b = B[kt :+ 64, pn * 128 :+ 128]
    acc += dot(a, b)
  }
  C[pm * 128 :+ 128, pn * 128 :+ 128] = acc
}
// CHECK: cluster=2 {
// CHECK: tmap A_tmap0 = A ELEM [M, K] box=[64, 64] swizzle=128B
// CHECK: tmap B_tmap1 = B ELEM [K, N] box=[64, 64] swizzle=128B
// PTX: .reqnctapercluster 2, 1, 1
"""

FORMS = {"wide": (WIDE, False, 256, True), "thin": (THIN, True, 64, True),
         "turned": (TURNED, False, 128, False)}  # fmt: skip


def source(form: str, elem: str) -> str:
    return FORMS[form][0].replace("ELEM", elem)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_cluster_shares_a_tile_by_multicast(form, elem):
    src = source(form, elem)
    _, k = lowered(src, chip="sm_90a")
    assert k.cluster == 2 and k.walk
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_90a"), prefix="PTX")
    loads = ops(k, "tma_load")
    shared = [i for i in loads if len(i.srcs) == 6]
    assert shared and len(shared) < len(loads)  # one tile multicast, the other not
    # No CTA barrier is left in the ring: every one of them is the cluster's, its arrive
    # and wait side by side; relaxed but for the last, at the end.
    lines = [line.strip() for line in text(k).splitlines()]
    arrives = [i for i, line in enumerate(lines) if line.startswith("cluster_arrive")]
    assert len(arrives) >= 4 and all(lines[i + 1] == "cluster_wait" for i in arrives)
    assert len(ops(k, "cluster_wait")) == len(arrives)
    assert [i.attr("relaxed") for i in ops(k, "cluster_arrive")].count(None) == 1


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_ptx_assembles_for_sm_90a_without_a_warning_or_a_spill(form):
    _, k = lowered(source(form, "f16"), chip="sm_90a")
    assert ".local" not in emit_module([k], "sm_90a")
    ptxas_clean(k, "sm_90a")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("m, n, kk", [(328, 136, 200), (200, 264, 72)])
def test_a_cluster_agrees_with_the_tile_interpreter(form, elem, m, n, kk):
    # Three x blocks in the first size (an odd count: rank 1 of the last pair has no block
    # of its own), two in the second; ragged M, N and K read as zeros past the edges.
    hk, k = lowered(source(form, elem), chip="sm_90a")
    _, transposed, tile_n, x_is_m = FORMS[form]
    if not x_is_m:
        m, n = n, m  # x walks N: the odd count goes with it
    A = inputs(elem, (m, kk))
    B = inputs(elem, (n, kk) if transposed else (kk, n))
    blocks = (-(-m // 128), -(-n // tile_n))
    want, got = run(hk, k, blocks if x_is_m else blocks[::-1], {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want, rtol=1e-4, atol=1e-4)
    b = B[0].astype(np.float64)
    ref = A[0].astype(np.float64) @ (b.T if transposed else b)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


def test_the_f16_result_stored_by_tma_runs_in_a_cluster(monkeypatch):
    # examples/hgemm.py's hgemm_h: an f16 C left by TMA stores through the free stages.
    monkeypatch.setenv("PHOBOS_CLUSTER", "2")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from examples.hgemm import hgemm_h

    built = hgemm_h.variant(TILE_N=256, TILE_K=64, T=256).compile(chip="sm_90a")
    k = built.lir
    assert k.cluster == 2 and ops(k, "tma_store")
    ptxas_clean(k, "sm_90a")
    m, n, kk = 384, 256, 320  # three x blocks: a pair and a rank alone; the ring wraps
    A, B = inputs("f16", (m, kk)), inputs("f16", (kk, n))
    C = np.full((m, n), np.nan, np.float16)
    want, got = run(built.hir, k, (3, 1), {"A": A, "B": B, "C": (C, C)})
    agree(got, want, rtol=2e-3, atol=2e-3)


def test_a_kernel_that_asks_for_none_runs_without_one(caplog):
    src = source("wide", "f16").replace("@pipeline(cluster = 2)\n", "")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(src, chip="sm_90a")
    assert k.cluster == 1 and not ops(k, "cluster_arrive")
    assert all(len(i.srcs) == 5 for i in ops(k, "tma_load"))
    assert "no clusters: none asked" in caplog.text


@pytest.mark.parametrize("asked, cluster", [("2", 2), ("1", 1), ("7", 2), ("x", 1)])
def test_phobos_cluster_asks_where_the_kernel_does_not(asked, cluster, monkeypatch):
    monkeypatch.setenv("PHOBOS_CLUSTER", asked)  # at most 2; not a number: unset
    _, k = lowered(source("wide", "f16").replace("@pipeline(cluster = 2)\n", ""), chip="sm_90a")
    assert k.cluster == cluster


def test_the_attribute_wins_over_phobos_cluster(monkeypatch):
    monkeypatch.setenv("PHOBOS_CLUSTER", "1")
    _, k = lowered(source("wide", "f16"), chip="sm_90a")
    assert k.cluster == 2


@pytest.mark.parametrize("c", [1, 2])
def test_the_cluster_size_is_searched_by_autotune(c):
    src = source("wide", "f16").replace("@pipeline(cluster = 2)", "@autotune(CL in [1, 2])\n"
                                         "@pipeline(stages = 3, cluster = CL)")  # fmt: skip
    _, k = lowered(src, chip="sm_90a", variant={"CL": c})
    assert k.cluster == c
    assert len(ops(k, "mbarrier_init")) == 3  # both arguments read


def test_bounds_that_depend_on_the_x_block_keep_the_ctas_apart(caplog):
    # The pair would run different turns: each CTA runs alone.
    src = source("wide", "f16").replace("range(0, K, 64)", "range(0, (pm + 1) * 64, 64)")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(src, chip="sm_90a")
    assert k.cluster == 1 and k.walk
    assert "no clusters: the ring's loop bounds depend on ctx.block.x" in caplog.text


def test_a_kernel_of_one_block_per_cta_has_no_cluster(monkeypatch):
    monkeypatch.setenv("PHOBOS_WALK", "0")
    _, k = lowered(source("wide", "f16"), chip="sm_90a")
    assert k.cluster == 1 and not ops(k, "cluster_wait")
