"""`dot` and `dot_t` under `@tensorcore(wmma)` on WMMA m16n16k16: the instruction mix pinned
by the CHECK lines in the kernel's own source (against its lir and PTX), the result in
the threads interpreter against the tile interpreter and a float64 reference at ragged
sizes, race-free; the accumulator in shared memory between statements (a WMMA fragment's
elements have no known place, so nothing sweeps it in registers); the refusal (E0514) of
a product WMMA cannot take, at the user's line."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import checked, lowered, ops, ptxas, run_both, text

from phobos.diagnostics.render import render_human
from phobos.lower.kernel import lower_kernel
from phobos.ptx.emit import emit_module

rng = np.random.default_rng(16)

# A GEMM main loop: the [64, 48] accumulator is twelve 16 x 16 fragments on four warps,
# three rounds of one a warp. A fragment is a wmma_load of C from the shared accumulator,
# a k step of 16 a wmma_load of A and of B (row-major) and a wmma_mma, then a wmma_store:
# per product 15 loads, 6 mma and 3 stores, twice (the whole tiles and the remainder).
GEMM = """
@tensorcore(wmma)
@launch(128)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[64, 48] = 0.0
  for kt in range(0, K, 32) {
    var a = A[pm * 64 :+ 64, kt :+ 32]
    var b = B[kt :+ 32, pn * 48 :+ 48]
    acc += dot(a, b)
  }
  C[pm * 64 :+ 64, pn * 48 :+ 48] = acc
}
// CHECK: shared tile_acc
// CHECK: for %kt
// CHECK: wmma_load.shared.f32 %
// CHECK: [layout=row, matrix=c, shape=m16n16k16]
// CHECK: wmma_load.shared.f16
// CHECK: wmma_load.shared.f16
// CHECK: wmma_mma.f32.f16
// CHECK: wmma_store.shared.f32
// CHECK-NOT: fma.rn.f32
// CHECK-NOT: = mma.f32
// CHECK: {{loop end}}
// PTX: wmma.load.c.sync.aligned.row.m16n16k16.shared.f32
// PTX: wmma.load.a.sync.aligned.row.m16n16k16.shared.f16
// PTX: wmma.load.b.sync.aligned.row.m16n16k16.shared.f16
// PTX: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// PTX: wmma.store.d.sync.aligned.row.m16n16k16.shared.f32
"""

# Attention's update: `dot_t` (b's rows are n: b column-major) nested in an update of the
# accumulator, bound to a temporary the product writes with `=` (no load of C, zeros)
# and the update sweeps from shared memory. [48, 16] is three fragments on two warps:
# the second round's fragment is under a condition on the warp's number.
UPDATE = """
@tensorcore(wmma)
@launch(64)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[N, K], C: tensor<f32>[M, N], s: f32) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[48, 16] = 1.0
  for kt in range(0, K, 16) {
    var a = A[pm * 48 :+ 48, kt :+ 16]
    var b = B[pn * 16 :+ 16, kt :+ 16]
    acc = acc * s + dot_t(a, b)
  }
  C[pm * 48 :+ 48, pn * 16 :+ 16] = acc * 0.5
}
// CHECK: for %kt
// CHECK-NOT: matrix=c
// CHECK: [layout=col, matrix=b, shape=m16n16k16]
// CHECK: [alayout=row, blayout=col, shape=m16n16k16]
// CHECK: wmma_store.shared.f32
// CHECK: if %
// CHECK: wmma_mma.f32.f16
// CHECK: wmma_store.shared.f32
// CHECK: {{loop end}}
// PTX: wmma.load.b.sync.aligned.col.m16n16k16.shared.f16
// PTX: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
"""

# One product of whole [32, 80] x [80, 16] tiles by `-=` into a tile loaded from C, on
# one warp: K = 80 is five k steps, a loop; c - a b as -((a b) + (-c)).
SINGLE = """
@tensorcore(wmma)
@launch(32)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  var a = A[0 :+ 32, 0 :+ 80]
  var b = B[0 :+ 80, 0 :+ 16]
  var c: tile<f32>[32, 16] = C[0 :+ 32, 0 :+ 16]
  c -= dot(a, b)
  C[0 :+ 32, 0 :+ 16] = c
}
// CHECK: wmma_load.shared.f32
// CHECK: neg.f32
// CHECK: for %k
// CHECK: wmma_mma.f32.f16
// CHECK: {{loop end}}
// CHECK: neg.f32
// CHECK: wmma_store.shared.f32
// PTX: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// PTX: neg.f32
// PTX: wmma.store.d.sync.aligned.row.m16n16k16.shared.f32
"""

FORMS = {"gemm": GEMM, "update": UPDATE, "single": SINGLE}


def check(src: str, k) -> None:
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_80"), prefix="PTX")


def f16(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def nan(*shape):
    return np.full(shape, np.nan, np.float32)


def agree(got, want, ref=None):
    assert not np.isnan(got["C"]).any(), "`C` has elements never written"
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-5, atol=1e-5)
    if ref is not None:
        np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, n, kk", [(76, 52, 100), (64, 48, 64), (132, 100, 20)])
def test_gemm_loop_on_wmma(m, n, kk):
    hk, k = lowered(GEMM)
    check(GEMM, k)
    assert len(ops(k, "wmma_mma")) == 12 and len(ops(k, "wmma_store")) == 6
    assert len(ops(k, "wmma_load")) == 30
    assert not ops(k, "fma") and not ops(k, "mma")
    a, b = f16(m, kk), f16(kk, n)
    want, got = run_both(hk, k, (-(-m // 64), -(-n // 48)), {"A": a, "B": b, "C": nan(m, n)})
    agree(got, want, a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("m, n, kk", [(52, 20, 36), (48, 16, 16)])
def test_update_by_dot_t_on_wmma(m, n, kk):
    hk, k = lowered(UPDATE)
    check(UPDATE, k)
    assert not ops(k, "wmma_load", matrix="c")
    a, b = f16(m, kk), f16(n, kk)
    s = np.float32(0.75)
    want, got = run_both(hk, k, (-(-m // 48), -(-n // 16)), {"A": a, "B": b, "C": nan(m, n)},
                         {"s": s})  # fmt: skip
    agree(got, want)


def test_single_product_minus_equals_on_wmma():
    hk, k = lowered(SINGLE)
    check(SINGLE, k)
    a, b = f16(36, 84), f16(84, 20)
    c = rng.standard_normal((36, 20)).astype(np.float32)
    want, got = run_both(hk, k, (1, 1), {"A": a, "B": b, "C": c})
    agree(got, want)
    ref = c[:32, :16] - a[:32, :80].astype(np.float64) @ b[:80, :16].astype(np.float64)
    np.testing.assert_allclose(got["C"][:32, :16], ref, rtol=1e-4, atol=1e-4)


# A 48-byte shared tile allocated first would leave the WMMA tiles 16 bytes off a 32-byte
# boundary: the planner asks their buffers for 32-byte alignment (WMMA's loads and stores
# need it), so they start at 64.
ALIGNED = """
@tensorcore(wmma)
@launch(64)
kernel k(A: tensor<f16>[32, 32], B: tensor<f16>[32, 32], X: tensor<f32>[3, 4], C: tensor<f32>[32, 32], Y: tensor<f32>[3, 2]) {
  var w = X[0 :+ 3, 0 :+ 4]
  Y[0 :+ 3, 0 :+ 2] = w[0 :+ 3, 0 :+ 2]
  var a = A[0 :+ 32, 0 :+ 32]
  var b = B[0 :+ 32, 0 :+ 32]
  var acc: tile<f32>[32, 32] = dot(a, b)
  C[0 :+ 32, 0 :+ 32] = acc
  Y[0 :+ 3, 0 :+ 2] = w[0 :+ 3, 0 :+ 2]
}
// CHECK: shared tile_w_0 @0 size=48 align=16
// CHECK: shared tile_a_1 @64 size=2048 align=32
// CHECK: wmma_mma
"""


def test_wmma_tiles_are_placed_on_32_byte_boundaries():
    hk, k = lowered(ALIGNED)
    filecheck(ALIGNED, text(k))
    assert all(b.offset % 32 == 0 for b in k.shared if b.name != "tile_w_0")
    a, b = f16(32, 32), f16(32, 32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    want, got = run_both(hk, k, (1, 1), {"A": a, "B": b, "X": x, "C": nan(32, 32),
                                         "Y": nan(3, 2)})  # fmt: skip
    agree(got, want, a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_assembles(form, arch):
    _, k = lowered(FORMS[form])
    ptxas(k, arch)


def test_the_log_and_the_plan_name_the_path(caplog):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, _ = lowered(GEMM)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dot")]
    assert len(lines) == 1, lines
    assert lines[0].endswith(": WMMA m16n16k16 f16 -> f32: @tensorcore(wmma): 12 fragments of "
                             "16x16"), lines  # fmt: skip
    made = {}
    lower_kernel(hk, "sm_80", after=lambda p, lw, out: made.setdefault(p.name, out))
    plan = made["place"]
    assert sorted(plan.paths.values()) == ["wmma"]
    acc = next(t for s, t in plan.tiles.items() if s.name == "acc")
    assert acc.place == "shared" and "WMMA accumulator is opaque" in acc.reason


# ---------------------------------------------------------------------------
# A product WMMA cannot take: refused at the `dot`

K24 = """@tensorcore(wmma)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  var a = A[0 :+ 32, 0 :+ 24]
  var b = B[0 :+ 24, 0 :+ 16]
  C[0 :+ 32, 0 :+ 16] = dot(a, b)
}
"""


def test_a_shape_wmma_cannot_take_is_refused_at_the_dot():
    k, diags = lower_kernel(checked(K24), "sm_80")
    assert k is None and [d.code for d in diags] == ["E0514"]
    shown = render_human(diags)
    assert "error[E0514]: `@tensorcore(wmma)` cannot run this `dot` on WMMA m16n16k16: K = 24 " \
           "is not a multiple of 16" in shown, shown  # fmt: skip
    assert "k.ph:5:" in shown, shown
    assert "  C[0 :+ 32, 0 :+ 16] = dot(a, b)" in shown, shown
    assert "help: make every extent of the product a multiple of 16" in shown, shown


def test_f32_operands_are_refused_under_wmma():
    src = K24.replace("f16", "f32").replace("24", "16")
    _, diags = lower_kernel(checked(src), "sm_80")
    assert [d.code for d in diags] == ["E0514"]
    assert diags[0].message.endswith("its operands are `f32` into `f32`; WMMA takes f16 into f32")
