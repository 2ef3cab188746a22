"""`dot` and `dot_t` under `@tensorcore` on mma.sync m16n8k16: the accumulator's layout as
a map (a bijection, the ISA's C fragments), each form's instruction mix pinned by the
CHECK lines in the kernel's own source (`filecheck`, against its lir and PTX), and its
result in the threads interpreter against the tile interpreter at ragged sizes, race-free."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas, text
from mmakit import agree, inputs, nan, run

from phobos.lower.fragments import c_m16n8k16
from phobos.lower.layout import MmaAcc
from phobos.lower.mma import conflict_free
from phobos.ptx.emit import emit_module

rng = np.random.default_rng(23)

# ---------------------------------------------------------------------------
# The accumulator's layout


@pytest.mark.parametrize(
    "shape, threads",
    [((16, 8), 32), ((64, 32), 128), ((64, 64), 128), ((128, 128), 256), ((32, 16), 64),
     ((16, 64), 128), ((64, 8), 128)],
)  # fmt: skip
def test_mma_accumulator_is_a_bijection(shape, threads):
    lay = MmaAcc.choose(shape, threads)
    assert lay is not None
    seen = set()
    for t in range(threads):
        origin = lay.thread_origin(t)
        for r in range(lay.regs_per_thread):
            c = lay.coord(t, r)
            assert lay.owner(c) == (t, r)
            dr, dc = lay.offset(r)
            assert c == (origin[0] + dr, origin[1] + dc)
            seen.add(c)
    assert len(seen) == shape[0] * shape[1]
    assert lay.regs_per_thread * threads == shape[0] * shape[1]


def test_mma_accumulator_registers_are_the_isa_c_fragments():
    # A warp's first fragment is the ISA's C picture; the next is 8 columns on.
    lay = MmaAcc((16, 16), 32, 1, 1)
    for lane in range(32):
        for reg in range(4):
            assert lay.coord(lane, reg) == c_m16n8k16(lane, reg)
            row, col = c_m16n8k16(lane, reg)
            assert lay.coord(lane, 4 + reg) == (row, col + 8)
    # A group of two is a column pair of one row.
    for r in range(0, lay.regs_per_thread, 2):
        (r0, c0), (r1, c1) = lay.coord(3, r), lay.coord(3, r + 1)
        assert (r1, c1) == (r0, c0 + 1)


def test_mma_accumulator_warp_grid():
    # Four warps over 64 x 64: a 2 x 2 grid of 32 x 32 blocks, each 2 x 4 fragments.
    lay = MmaAcc.choose((64, 64), 128)
    assert (lay.warps_m, lay.warps_n, lay.wm, lay.wn, lay.frags) == (2, 2, 32, 32, 8)
    assert lay.coord(32, 0) == (0, 32) and lay.coord(64, 0) == (32, 0)
    # Over 64 x 32 a warp's 16 x 32 block loads as few fragments per mma as a 32 x 16 one.
    assert MmaAcc.choose((64, 32), 128).wn == 32
    # No grid of 8 warps tiles 16 x 16 with 16 x 8 fragments, nor of 3 warps 64 x 64.
    assert MmaAcc.choose((16, 16), 256) is None
    assert MmaAcc.choose((64, 64), 96) is None
    with pytest.raises(ValueError):
        MmaAcc((16, 12), 32, 1, 1)


# ---------------------------------------------------------------------------
# Kernels: `ELEM` is f16 or bf16


# A GEMM main loop over a dynamic K with ragged M, N and K: four warps in a 4 x 1 grid over
# the 64 x 32 accumulator, each a 16 x 32 block of four fragments. A k step of 16 is one
# ldmatrix.x4 of A and two ldmatrix.x4.trans of B (two 16 x 8 fragments each) for four mma;
# a turn of 32 is two steps, the second step's fragments loaded before the first step's
# mma are issued (an mma waits on the ldmatrix that feeds it). The loop runs its whole
# tiles, then the masked remainder
# once: 16 mma and 12 ldmatrix in all. The whole tiles' operands come by a two-stage
# cp.async ring (a turn waits for its group, meets, issues the next turn's copies); the
# remainder is staged by plain stores. A's rows are K halves apart, and a dynamic K is
# only known to be a multiple of 4, so its copies move 8 bytes (a sweep would branch on
# `K % 8` for 16; a copy cannot). Nothing of the accumulator goes to shared memory.
GEMM = """
@tensorcore
@launch(128)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[64, 32] = 0.0
  for kt in range(0, K, 32) {
    var a = A[pm * 64 :+ 64, kt :+ 32]
    var b = B[kt :+ 32, pn * 32 :+ 32]
    acc += dot(a, b)
  }
  C[pm * 64 :+ 64, pn * 32 :+ 32] = acc
}
// CHECK-NOT: shared tile_acc
// CHECK: cp_async %
// CHECK: cp_async_commit
// CHECK: for %kt
// CHECK: cp_async_wait  [pending=0]
// CHECK: bar 0
// CHECK: cp_async %
// CHECK: cp_async_commit
// CHECK-NOT: st.shared
// CHECK-NOT: bar 0
// CHECK: ldmatrix.shared.b16
// CHECK: [trans=1]
// CHECK: [trans=1]
// CHECK-NOT: mma.f32
// CHECK: ldmatrix.shared.b16
// CHECK: [trans=1]
// CHECK: [trans=1]
// CHECK-COUNT-8: mma.f32.ELEM
// CHECK-NOT: st.shared
// CHECK: {{loop end}}
// CHECK: st.shared
// CHECK: bar 0
// CHECK-NOT: st.shared
// CHECK-COUNT-8: mma.f32.ELEM
// CHECK-NOT: st.shared
// CHECK-NOT: ld.shared
// CHECK: st.global.v2.f32
// PTX: cp.async.ca.shared.global
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.ELEM.ELEM.f32
"""

# Attention's second product: `dot_t` (b's rows are n: plain ldmatrix), nested in an update
# of the accumulator (bound to a temporary in the same mma fragments and fused into the
# update's sweep), then an epilogue scaling it. Two warps over 32 x 24: a 2 x 1 grid of
# 16 x 24 blocks, three fragments a warp: one ldmatrix.x4 and one .x2 of B a k step.
UPDATE = """
@tensorcore
@launch(64)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[N, K], C: tensor<f32>[M, N], s: f32) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[32, 24] = 1.0
  for kt in range(0, K, 16) {
    var a = A[pm * 32 :+ 32, kt :+ 16]
    var b = B[pn * 24 :+ 24, kt :+ 16]
    acc = acc * s + dot_t(a, b)
  }
  C[pm * 32 :+ 32, pn * 24 :+ 24] = acc * 0.5
}
// CHECK-NOT: shared tile_acc
// CHECK-NOT: shared tile_dot
// CHECK: for %kt
// CHECK: ldmatrix.shared.b16
// CHECK-NOT: trans
// CHECK-COUNT-3: mma.f32.ELEM
// CHECK-NOT: st.shared
// CHECK: mul.f32 %acc
// CHECK: add.f32 %f
// CHECK: {{loop end}}
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.ELEM.ELEM.f32
"""

# One product of a whole [32, 64] x [64, 16] pair, no loop: K = 64 is four k steps written
# straight-line, and `-=` subtracts the sums from the target's registers.
SINGLE = """
@tensorcore
@launch(32)
kernel k(A: tensor<ELEM>[M, K], B: tensor<ELEM>[K, N], C: tensor<f32>[M, N]) {
  var a = A[0 :+ 32, 0 :+ 64]
  var b = B[0 :+ 64, 0 :+ 16]
  var c: tile<f32>[32, 16] = C[0 :+ 32, 0 :+ 16]
  c -= dot(a, b)
  C[0 :+ 32, 0 :+ 16] = c
}
// CHECK-NOT: for %
// CHECK-COUNT-16: mma.f32.ELEM
// CHECK-NOT: st.shared
// CHECK: sub.f32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.ELEM.ELEM.f32
"""

FORMS = {"gemm": GEMM, "update": UPDATE, "single": SINGLE}


def source(form: str, elem: str) -> str:
    return FORMS[form].replace("ELEM", elem)


def check(src: str, k) -> None:
    """The CHECK lines against the lir, the PTX lines against its PTX for sm_80."""
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_80"), prefix="PTX")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n, kk", [(72, 40, 48), (64, 32, 32), (130, 68, 20), (72, 40, 100)])
def test_gemm_loop_on_mma_sync(elem, m, n, kk):
    src = source("gemm", elem)
    hk, k = lowered(src)
    check(src, k)
    assert len(ops(k, "mma")) == 16 and len(ops(k, "ldmatrix")) == 12
    assert all(i.attr("from_type") == elem for i in ops(k, "mma"))
    A, B = inputs(elem, (m, kk)), inputs(elem, (kk, n))
    grid = (-(-m // 64), -(-n // 32))
    want, got = run(hk, k, grid, {"A": A, "B": B, "C": nan(m, n)})
    agree(got, want)
    ref = A[0].astype(np.float64) @ B[0].astype(np.float64)
    np.testing.assert_allclose(got["C"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
@pytest.mark.parametrize("m, n, kk", [(40, 28, 40), (32, 24, 16)])
def test_update_of_the_accumulator_by_dot_t_on_mma_sync(elem, m, n, kk):
    src = source("update", elem)
    hk, k = lowered(src)
    check(src, k)
    # a k step: one x4 of A, one x4 and one x2 of B, three mma; the loop and its remainder
    assert len(ops(k, "mma")) == 2 * 3 and len(ops(k, "ldmatrix")) == 2 * 3
    assert not [i for i in ops(k, "ldmatrix") if i.attr("trans")]
    A, B = inputs(elem, (m, kk)), inputs(elem, (n, kk))
    grid = (-(-m // 32), -(-n // 24))
    s = np.float32(0.75)
    want, got = run(hk, k, grid, {"A": A, "B": B, "C": nan(m, n)}, {"s": s})
    agree(got, want)


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_single_product_minus_equals(elem):
    src = source("single", elem)
    hk, k = lowered(src)
    check(src, k)
    A, B = inputs(elem, (40, 68)), inputs(elem, (68, 20))
    c = rng.standard_normal((40, 20)).astype(np.float32)
    want, got = run(hk, k, (1, 1), {"A": A, "B": B, "C": (c, c.copy())})
    agree(got, want)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_assembles(form, arch):
    for elem in ("f16", "bf16"):
        _, k = lowered(source(form, elem))
        ptxas(k, arch)


def test_ldmatrix_operands_are_swizzled(caplog):
    # The staging tiles' rows of 64 bytes (32 f16) would put rows r and r + 2 of a matrix
    # in one bank group: their chunks are XOR-swizzled instead, the tiles unpadded and on
    # 128-byte lines, and every address of them (the copies' and the ldmatrix's) XOR-ed.
    assert not conflict_free(64) and conflict_free(80) and conflict_free(48)
    assert not conflict_free(32) and conflict_free(16)
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(source("gemm", "f16"))
    logged = [r.getMessage() for r in caplog.records]
    for name in "ab":
        line = f"mma operand `{name}`: rows of 64 bytes, their 16-byte chunks XOR-swizzled for ldmatrix"
        assert line in logged
    sizes = {b.name: (b.size, b.align) for b in k.shared}
    assert sizes == {"tile_a_0": (2 * 64 * 64, 128), "tile_b_1": (2 * 32 * 64, 128)}
    assert len(ops(k, "xor")) >= 4


# `a` is also read by a sweep (its copy to `T` reads it in its own layout), and `b`'s rows of
# 48 halves (96 bytes) are not a power of two: neither is swizzled, each padded instead.
PADDED = """
@tensorcore
@launch(128)
kernel k(A: tensor<f16>[64, 32], B: tensor<f16>[32, 48], C: tensor<f32>[64, 48], T: tensor<f16>[64, 32]) {
  var a = A[0 :+ 64, 0 :+ 32]
  var b = B[0 :+ 32, 0 :+ 48]
  var acc: tile<f32>[64, 48] = dot(a, b)
  C[0 :+ 64, 0 :+ 48] = acc
  T[0 :+ 64, 0 :+ 32] = a
}
"""


def test_ldmatrix_operands_are_padded_where_not_swizzled(caplog, monkeypatch):
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        _, k = lowered(PADDED)
    logged = [r.getMessage() for r in caplog.records]
    assert (
        "mma operand `a`: rows of 64 bytes padded to a pitch of 40 elements, for ldmatrix" in logged
    )
    assert (
        "mma operand `b`: rows of 96 bytes padded to a pitch of 56 elements, for ldmatrix" in logged
    )
    assert not ops(k, "xor")
    # `PHOBOS_SWIZZLE=0` pads what would be swizzled (to measure one against the other).
    caplog.clear()
    monkeypatch.setenv("PHOBOS_SWIZZLE", "0")
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        lowered(source("gemm", "f16"))
    logged = [r.getMessage() for r in caplog.records]
    assert (
        "mma operand `a`: rows of 64 bytes padded to a pitch of 40 elements, for ldmatrix" in logged
    )


# ---------------------------------------------------------------------------
# Fallbacks to FMA, each with its reason in the log

# K = 24 a turn is not a whole number of k steps of 16: the product runs on FMA, its
# accumulator in the `Blocked` layout, as without `@tensorcore`.
K24 = """
@tensorcore
@launch(64)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[32, 16] = 0.0
  for kt in range(0, K, 24) {
    var a = A[0 :+ 32, kt :+ 24]
    var b = B[kt :+ 24, 0 :+ 16]
    acc += dot(a, b)
  }
  C[0 :+ 32, 0 :+ 16] = acc
}
// CHECK-NOT: mma
// CHECK-NOT: ldmatrix
// CHECK: fma.rn.f32
"""

# f32 operands under @tensorcore keep the FMA path that rounds them to f16 first.
F32 = """
@tensorcore
@launch(64)
kernel k(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[32, 16] = 0.0
  for kt in range(0, K, 16) {
    var a = A[0 :+ 32, kt :+ 16]
    var b = B[kt :+ 16, 0 :+ 16]
    acc += dot(a, b)
  }
  C[0 :+ 32, 0 :+ 16] = acc
}
// CHECK-NOT: mma
// CHECK: cvt.rn.f16.f32
// CHECK: fma.rn.f32
"""


def logged_paths(src, caplog):
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        hk, k = lowered(src)
    return hk, k, [r.getMessage() for r in caplog.records if r.getMessage().startswith("dot")]


def test_a_k_slice_of_24_falls_back_to_fma(caplog):
    hk, k, lines = logged_paths(K24, caplog)
    filecheck(K24, text(k))
    assert len(lines) == 1 and lines[0].endswith(": FMA: K = 24 is not a multiple of 16"), lines
    assert k.smem and not ops(k, "mma")
    A, B = inputs("f16", (32, 40)), inputs("f16", (40, 16))
    want, got = run(hk, k, (1, 1), {"A": A, "B": B, "C": nan(32, 16)})
    agree(got, want)


def test_f32_operands_keep_the_rounding_fma_path(caplog):
    _, k, lines = logged_paths(F32, caplog)
    filecheck(F32, text(k))
    assert lines[0].endswith("FMA: operands of `f32` into `f32` (mma.sync takes f16 or bf16 "
                             "into f32)"), lines  # fmt: skip


def test_the_log_names_the_path_of_each_dot(caplog):
    _, _, lines = logged_paths(source("gemm", "f16"), caplog)
    assert len(lines) == 1 and lines[0].startswith("dot #"), lines
    assert lines[0].endswith(": mma.sync m16n8k16 f16 -> f32: 4 warps of 16x32, 4 fragments a "
                             "warp"), lines  # fmt: skip
    _, _, lines = logged_paths(source("gemm", "f16").replace("@tensorcore\n", ""), caplog)
    assert lines and lines[0].endswith(": FMA: no @tensorcore"), lines


def plan_of(hk, chip="sm_80"):
    from phobos.lower.kernel import lower_kernel

    made = {}
    lower_kernel(hk, chip, after=lambda p, lw, out: made.setdefault(p.name, out))
    return made["place"]


def test_the_plan_records_the_path():
    hk, _ = lowered(source("update", "bf16"))
    plan = plan_of(hk)
    assert sorted(plan.paths.values()) == ["mma.m16n8k16.bf16"]
    acc = next(t for s, t in plan.tiles.items() if s.name == "acc")
    assert acc.place == "registers" and acc.mma == (2, 1) and acc.micro is None
    assert isinstance(acc.layout(64), MmaAcc)
    # Below sm_80 there is no mma.sync m16n8k16: FMA, the accumulator `Blocked`.
    plan = plan_of(hk, "sm_75")
    assert sorted(plan.paths.values()) == ["fma"]
    acc = next(t for s, t in plan.tiles.items() if s.name == "acc")
    assert acc.mma is None and acc.micro is not None


# Four warps over 128 x 128: a 2 x 2 grid of 64 x 64 warp blocks, 32 fragments (128
# accumulator registers) a thread — past the 64 elements SPEC.md allows a `@registers`
# tile, within the 128 a tensor-core accumulator may take. Twice as wide (128 x 256 on
# the same four warps: 256 registers) falls back to FMA, saying why (its accumulator then
# in shared memory: `@dynshared` makes room).
WIDE = """
@tensorcore
@launch(128)
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[128, WIDTH] = 0.0
  for kt in range(0, K, 16) {
    var a = A[0 :+ 128, kt :+ 16]
    var b = B[kt :+ 16, 0 :+ WIDTH]
    acc += dot(a, b)
  }
  C[0 :+ 128, 0 :+ WIDTH] = acc
}
"""


def test_a_warp_block_of_64_by_64_keeps_128_accumulator_registers(caplog):
    src = WIDE.replace("WIDTH", "128")
    hk, k, lines = logged_paths(src, caplog)
    assert lines[0].endswith(
        "mma.sync m16n8k16 f16 -> f32: 4 warps of 64x64, 32 fragments a warp"
    ), lines
    assert len(ops(k, "mma")) % 32 == 0 and not any("tile_acc" in b.name for b in k.shared)
    A, B = inputs("f16", (120, 40)), inputs("f16", (40, 124))
    want, got = run(hk, k, (1, 1), {"A": A, "B": B, "C": nan(120, 124)})
    agree(got, want)
    ptxas(k, "sm_90")


def test_an_accumulator_past_128_registers_a_thread_falls_back_to_fma(caplog):
    src = WIDE.replace("WIDTH", "256").replace("@launch(128)", "@launch(128)\n@dynshared")
    _, k, lines = logged_paths(src, caplog)
    assert "FMA: " in lines[0] and "256 registers a thread" in lines[0], lines
    assert not ops(k, "mma")
