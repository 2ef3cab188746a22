"""`dot` and `dot_t` on CUDA cores: each form agrees with the tile interpreter at ragged
sizes in the threads interpreter, race-free, and its code is pinned by the CHECK lines
in the kernel's own source (`filecheck`), run against its lir."""

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas, run_both, text

from phobos.lower.layout import Blocked
from phobos.lower.lir import For
from phobos.ptx.emit import emit_module

rng = np.random.default_rng(11)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def poison(*shape, dtype=np.float32):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -7, dtype)


def agree(got, want, rtol=2e-5, atol=2e-5):
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)
        assert not np.isnan(got[name]).any(), f"`{name}` has elements never written"


# A GEMM main loop over a dynamic K with ragged M, N and K: the accumulator stays in the
# registers of its micro-tiles (nothing is stored to shared memory in the loop but by the
# staging), one FMA per product element and k, the store of C after the loop. The loop
# runs its whole tiles through a two-stage cp.async ring (the first turn's copies issued
# before it; a turn waits for its own group, takes its one barrier and issues the next
# turn's copies), then the masked remainder once, staged plainly into the ring's bytes
# once every copy has landed.
GEMM = """
@launch(64)
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[16, 16] = 0.0
  for kt in range(0, K, 8) {
    var a = A[pm * 16 :+ 16, kt :+ 8]
    var b = B[kt :+ 8, pn * 16 :+ 16]
    acc += dot(a, b)
  }
  C[pm * 16 :+ 16, pn * 16 :+ 16] = acc
}
// CHECK: cp_async %
// CHECK: cp_async_commit
// CHECK-NOT: cp_async_wait
// CHECK: for %kt
// CHECK: cp_async_wait  [pending=0]
// CHECK: bar 0
// CHECK: cp_async %
// CHECK: cp_async_commit
// CHECK-NOT: bar 0
// CHECK-NOT: st.shared
// CHECK-COUNT-32: fma.rn.f32
// CHECK-NOT: st.shared
// CHECK-NOT: bar 0
// CHECK: {{loop end}}
// CHECK: cp_async_wait  [pending=0]
// CHECK: bar 0
// CHECK: st.shared
// CHECK-COUNT-32: fma.rn.f32
// CHECK-NOT: st.shared
// CHECK: st.global
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group
// PTX: cp.async.wait_group 0
// PTX: bar.sync 0
// PTX: fma.rn.f32
"""


@pytest.mark.parametrize("m, n, kk", [(32, 32, 16), (20, 28, 12), (36, 4, 20)])
def test_gemm_loop_keeps_the_accumulator_in_registers(m, n, kk):
    hk, k = lowered(GEMM)
    filecheck(GEMM, text(k))
    filecheck(GEMM, emit_module([k], "sm_80"), prefix="PTX")
    # tm * tn * KSTEP a turn, in the loop over whole tiles and in the remainder's turn
    assert len(ops(k, "fma")) == 2 * (16 * 16 // 64) * 8
    grid = (-(-m // 16), -(-n // 16))
    want, got = run_both(hk, k, grid, {"A": f32(m, kk), "B": f32(kk, n), "C": poison(m, n)})
    agree(got, want)
    np.testing.assert_allclose(got["C"], want["A"].astype(np.float64) @ want["B"], rtol=1e-4,
                               atol=1e-4)  # fmt: skip
    ptxas(k, "sm_80")


# Flash attention's turn: `let` views as operands (q staged once where it is bound, k and
# v where they are read), the scores in shared memory (a row reduction reads them), the
# product of `p` and `v` nested in the accumulator's update (bound to a temporary in the
# accumulator's registers and fused into the update's sweep).
ATTENTION = """
@launch(64)
kernel k(Q: tensor<f32>[Nq, 16], K: tensor<f32>[Nk, 16], V: tensor<f32>[Nk, 16],
         O: tensor<f32>[Nq, 16], scale: f32) {
  let row = ctx.block.x * 16
  let q = Q[row :+ 16, :]
  var acc: tile<f32>[16, 16] = 0.0
  var m: tile<f32>[16, 1] = -1.0e30
  var l: tile<f32>[16, 1] = 0.0
  for kt in range(0, Nk, 16) {
    let k = K[kt :+ 16, :]
    let v = V[kt :+ 16, :]
    var s: tile<f32>[16, 16] = dot_t(q, k)
    s = where(iota(1) < Nk - kt, s * scale, -1.0e30)
    var mnew: tile<f32>[16, 1] = tmax(m, rowmax(s))
    var p: tile<f32>[16, 16] = exp(s - mnew)
    var corr: tile<f32>[16, 1] = exp(m - mnew)
    l = l * corr + rowsum(p)
    acc = acc * corr + dot(p, v)
    m = mnew
  }
  O[row :+ 16, :] = acc / l
}
// CHECK: for %kt
// CHECK: fma.rn.f32
// CHECK: ex2
// CHECK: %dot_
// CHECK: fma.rn.f32
// CHECK-NOT: st.shared
// CHECK: {{loop end}}
"""


@pytest.mark.parametrize("nq, nk", [(32, 48), (20, 36)])
def test_attention_turn_with_let_view_operands(nq, nk):
    hk, k = lowered(ATTENTION)
    filecheck(ATTENTION, text(k))
    arrays = {"Q": f32(nq, 16), "K": f32(nk, 16), "V": f32(nk, 16), "O": poison(nq, 16)}
    want, got = run_both(hk, k, (-(-nq // 16),), arrays, {"scale": np.float32(0.25)})
    agree(got, want, rtol=1e-4, atol=1e-5)
    q, kk, v = (want[n].astype(np.float64) for n in "QKV")
    s = q @ kk.T * 0.25
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got["O"], p @ v / p.sum(axis=1, keepdims=True), rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    ptxas(k, "sm_90")


# f16 operands: the sums run in f32 and round once to the f16 tile they are written to.
HALF = """
@launch(128)
kernel k(A: tensor<f16>[M, 32], B: tensor<f16>[32, N], C: tensor<f16>[M, N]) {
  let pm = ctx.block.x * 32
  var c: tile<f16>[32, 32] = dot(A[pm :+ 32, :], B[:, 0 :+ 32])
  C[pm :+ 32, 0 :+ 32] = c
}
// CHECK: cvt.f32.f16
// CHECK: fma.rn.f32
// CHECK: cvt.rn.f16.f32
"""


def test_f16_product_sums_in_f32():
    hk, k = lowered(HALF)
    filecheck(HALF, text(k))
    a = rng.standard_normal((40, 32)).astype(np.float16)
    b = rng.standard_normal((32, 28)).astype(np.float16)
    want, got = run_both(hk, k, (2,), {"A": a, "B": b, "C": poison(40, 28, dtype=np.float16)})
    agree(got, want, rtol=2e-3, atol=2e-3)
    ptxas(k, "sm_80")


# A product read by a row reduction lives in shared memory; here 64 cells of 8x8 on 32
# threads (two a thread) and a product nested in the reduction.
REDUCED = """
@launch(32)
kernel k(X: tensor<f32>[64, 16], Y: tensor<f32>[64, 16], R: tensor<f32>[64, 1]) {
  var x = X[0 :+ 64, :]
  var y = Y[0 :+ 64, :]
  R[0 :+ 64, :] = rowmax(dot_t(x, y))
}
"""


def test_product_feeding_a_reduction_two_cells_a_thread():
    assert Blocked.choose((64, 64), 32).reps == 2
    hk, k = lowered(REDUCED)
    want, got = run_both(hk, k, (1,), {"X": f32(64, 16), "Y": f32(64, 16), "R": poison(64, 1)})
    agree(got, want)


# Fewer cells than threads: the threads past them hold no cell (a guarded region), and a
# [1, 1] product that every thread computes.
SMALL = """
@launch(256)
kernel k(X: tensor<f32>[8, 4], Y: tensor<f32>[4, 8], Z: tensor<f32>[8, 8], W: tensor<f32>[1, 1]) {
  var x = X[0 :+ 8, :]
  var y = Y[0 :+ 4, :]
  var z: tile<f32>[8, 8] = dot(x, y)
  Z[0 :+ 8, :] = z * 2.0
  var r = X[0 :+ 1, :]
  var c = Y[0 :+ 4, 0 :+ 1]
  var w: tile<f32>[1, 1] = dot(r, c)
  W[0 :+ 1, :] = w
}
"""


def test_small_products_idle_threads_and_one_element():
    hk, k = lowered(SMALL)
    arrays = {"X": f32(8, 4), "Y": f32(4, 8), "Z": poison(8, 8), "W": poison(1, 1)}
    want, got = run_both(hk, k, (1,), arrays)
    agree(got, want)
    np.testing.assert_allclose(got["W"], want["X"][:1] @ want["Y"][:, :1], rtol=1e-5)


# i8 operands through dot_t: i32 sums, exact (K = 12: a word of each row a dp4a).
INT8 = """
@launch(64)
kernel k(A: tensor<i8>[16, 12], B: tensor<i8>[16, 12], C: tensor<i32>[16, 16]) {
  var a = A[0 :+ 16, :]
  var b = B[0 :+ 16, :]
  C[0 :+ 16, :] = dot_t(a, b)
}
// CHECK: ld.shared.u32
// CHECK: dp4a.s32
"""


def test_i8_dot_t_sums_in_i32():
    hk, k = lowered(INT8)
    filecheck(INT8, text(k))
    a, b = (rng.integers(-128, 128, (16, 12)).astype(np.int8) for _ in range(2))
    want, got = run_both(hk, k, (1,), {"A": a, "B": b, "C": poison(16, 16, dtype=np.int32)})
    np.testing.assert_array_equal(got["C"], a.astype(np.int64) @ b.T.astype(np.int64))
    np.testing.assert_array_equal(got["C"], want["C"])


# Under @padstage a staging tile whose rows are 128 bytes is read at a pitch of 36
# elements: the k loop's vectors still start 16-byte aligned.
PADDED = """
@launch(64)
@padstage
kernel k(A: tensor<f32>[M, 32], B: tensor<f32>[32, 16], C: tensor<f32>[M, 16]) {
  let pm = ctx.block.x * 16
  var a = A[pm :+ 16, :]
  var b = B[0 :+ 32, :]
  var acc: tile<f32>[16, 16] = 0.0
  acc += dot(a, b)
  C[pm :+ 16, :] = acc
}
// CHECK: ld.shared.v4.f32
"""


def test_padstage_operands():
    hk, k = lowered(PADDED)
    filecheck(PADDED, text(k))
    assert k.smem == (16 * 36 + 32 * 16) * 4  # B's rows are 64 bytes: not padded
    want, got = run_both(hk, k, (2,), {"A": f32(24, 32), "B": f32(32, 16), "C": poison(24, 16)})
    agree(got, want)


# Under @tensorcore the FMA path rounds float operands to f16 first, as the tile
# interpreter does, so the two agree where the tensor-core path is not lowered yet.
TENSORCORE = """
@launch(64)
@tensorcore
kernel k(A: tensor<f32>[16, 16], B: tensor<f32>[16, 16], C: tensor<f32>[16, 16]) {
  var a = A[0 :+ 16, :]
  var b = B[0 :+ 16, :]
  var acc: tile<f32>[16, 16] = 0.0
  acc += dot(a, b)
  C[0 :+ 16, :] = acc
}
// CHECK: cvt.rn.f16.f32
// CHECK: fma.rn.f32
"""


def test_tensorcore_rounds_operands_as_the_interpreter_does():
    hk, k = lowered(TENSORCORE)
    filecheck(TENSORCORE, text(k))
    want, got = run_both(hk, k, (1,), {"A": f32(16, 16), "B": f32(16, 16), "C": poison(16, 16)})
    agree(got, want, rtol=1e-6, atol=1e-6)
    exact = want["A"].astype(np.float64) @ want["B"]
    assert np.abs(got["C"] - exact).max() > 1e-4  # the operands were rounded


def _doc_fence() -> str:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "contractions.md").read_text()
    return page.split("```ph\n", 1)[1].split("```", 1)[0]


def test_the_docs_gemm_runs_and_logs_what_the_page_shows(caplog):
    import logging

    source = _doc_fence()
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(source, "gemm")
    page = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "contractions.md"
    shown = page.read_text().split("```\ntile `acc`", 1)[1].split("```", 1)[0]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for line in ("tile `acc`" + shown).strip().splitlines():
        assert line in logged, line
    m, n, kk = 70, 100, 36
    arrays = {"A": f32(m, kk), "B": f32(kk, n), "C": poison(m, n)}
    want, got = run_both(hk, k, (2, 2), arrays)
    agree(got, want)


@pytest.mark.parametrize(
    "shape, threads",
    [((128, 128), 256), ((64, 64), 32), ((16, 16), 64), ((8, 8), 256), ((32, 64), 128)],
)
def test_blocked_layout_is_a_bijection_with_interleaved_vectors(shape, threads):
    lay = Blocked.choose(shape, threads)
    seen = set()
    for t in range(threads):
        for r in range(lay.regs_per_thread):
            c = lay.coord(t, r)
            if c is not None:
                assert lay.owner(c) == (t, r)
                seen.add(c)
    assert len(seen) == shape[0] * shape[1]
    if lay.cols >= 8 and lay.vec == 4:  # a warp's first vectors: consecutive, 16 bytes each
        starts = [lay.coord(t, 0)[1] for t in range(8)]
        assert starts == [4 * t for t in range(8)]


# Two stages of a 128x32 and a 32x128 f32 tile need 64 KB: past the static 48 KB, so
# the loop keeps one stage (no cp.async), and the kernel still compiles and runs.
BIG_STAGES = """
@launch(256)
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[128, 128] = 0.0
  for kt in range(0, K, 32) {
    var a = A[0 :+ 128, kt :+ 32]
    var b = B[kt :+ 32, 0 :+ 128]
    acc += dot(a, b)
  }
  C[0 :+ 128, 0 :+ 128] = acc
}
// CHECK-NOT: cp_async
// CHECK: fma.rn.f32
"""


def test_a_ring_past_48_kb_keeps_one_stage():
    hk, k = lowered(BIG_STAGES)
    filecheck(BIG_STAGES, text(k))
    assert k.smem == (128 * 32 + 32 * 128) * 4


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_a_ring_of_s_stages_waits_for_its_own_group_leaving_s_minus_2(monkeypatch, stages):
    monkeypatch.setenv("PHOBOS_STAGES", str(stages))
    hk, k = lowered(GEMM)
    (loop,) = [i for i in k.body.items if isinstance(i, For)]
    waits = [i.attr("pending") for i in loop.body.items if getattr(i, "op", "") == "cp_async_wait"]
    assert waits == [stages - 2]
    before = [i for i in k.body.items[: k.body.items.index(loop)] if getattr(i, "op", "") ==
              "cp_async_commit"]  # fmt: skip
    assert len(before) == stages - 1
    assert k.smem >= stages * (16 * 8 + 8 * 16) * 4
    want, got = run_both(hk, k, (2, 2), {"A": f32(32, 72), "B": f32(72, 32), "C": poison(32, 32)})
    agree(got, want)  # race-checked: a read of bytes in flight would be reported


# 16 KB a stage: four stages would need 64 KB, three fit the static 48 KB exactly.
THREE_FIT = GEMM.replace("16 :+ 16", "64 :+ 64").replace("[16, 16]", "[64, 64]").replace(
    "kt :+ 8", "kt :+ 32").replace("range(0, K, 8)", "range(0, K, 32)").replace(
    "@launch(64)", "@launch(256)")  # fmt: skip


def test_the_ring_takes_the_deepest_stages_that_fit(monkeypatch):
    monkeypatch.setenv("PHOBOS_STAGES", "4")
    hk, k = lowered(THREE_FIT)
    (loop,) = [i for i in k.body.items if isinstance(i, For)]
    waits = [i.attr("pending") for i in loop.body.items if getattr(i, "op", "") == "cp_async_wait"]
    assert waits == [1]  # three stages
    assert k.smem == 3 * (64 * 32 + 32 * 64) * 4 == 48 * 1024


def test_the_ring_is_race_free_and_its_copies_land_before_they_are_read():
    hk, k = lowered(GEMM)
    assert ops(k, "cp_async") and ops(k, "cp_async_wait")
    want, got = run_both(hk, k, (2, 2), {"A": f32(32, 40), "B": f32(40, 32), "C": poison(32, 32)})
    agree(got, want)
