"""`dot_t` of i8 tiles into i32 on its three paths (SPEC.md "Dense contraction"): integer
mma.sync (m16n8k32 a k step of 32, two m8n8k16 for a last 16), dp4a (a word of each
operand row a step) and scalar `mad`. Each form's instruction mix is pinned by the CHECK
lines in the kernel's own source (against its lir and PTX), its result in the threads
interpreter compared bit for bit with the tile interpreter and numpy at ragged sizes,
race-free; the `dp4a` op itself, its text, verifier and interpreter."""

import logging

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas, run_both, text

from phobos.interp.threads_ops import bits
from phobos.lower.layout import MmaAcc
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify
from phobos.ptx.emit import emit_module

rng = np.random.default_rng(8)

# ---------------------------------------------------------------------------
# The dp4a op


def test_dp4a_sums_the_four_signed_byte_products():
    x = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    acc = rng.integers(-(2**20), 2**20, 64).astype(np.int32)
    got = bits("dp4a", "s32", [x, y, acc])
    xs, ys = x.view(np.int8).reshape(64, 4), y.view(np.int8).reshape(64, 4)
    want = acc + (xs.astype(np.int64) * ys.astype(np.int64)).sum(axis=1)
    np.testing.assert_array_equal(got, want.astype(np.int32))
    assert got.dtype == np.int32


def _dp4a_kernel(*items) -> Kernel:
    return Kernel("d", (Param("x", "u32"), Param("y", "u32"), Param("c", "s32")), Block(items))


def test_dp4a_text_form_and_verifier():
    x, y, c, d = Reg("x", "u32"), Reg("y", "u32"), Reg("c", "s32"), Reg("d", "s32")
    k = _dp4a_kernel(inst("dp4a", (d,), (x, y, c), type="s32"))
    verify(k)
    assert "%d = dp4a.s32 %x, %y, %c" in text(k)
    assert parse_kernel(text(k)) == k
    assert "dp4a.s32.s32" in emit_module([k], "sm_80")
    for bad in (inst("dp4a", (d,), (x, y), type="s32"), inst("dp4a", (d,), (x, y, c), type="f32")):
        with pytest.raises(LirError, match="dp4a"):
            verify(_dp4a_kernel(bad))


# ---------------------------------------------------------------------------
# Kernels


# A GEMM main loop over dynamic M, N, K with k slices of 32: the accumulator is in the
# `MmaAcc` layout (m16n8k32's C fragments are m16n8k16's), four warps of 16 x 32, four
# fragments a warp. A k step is one ldmatrix.x4 of A (16 rows of 32 bytes) and two of B
# (two fragments of 8 n rows each) for four m16n8k32: the loop's whole tiles and its
# masked remainder, 8 mma and 6 ldmatrix in all. The operand rows of 32 bytes are not
# padded: their 16-byte chunks are XOR-swizzled (two stages of 64 x 32 bytes for A, on a
# 128-byte line); the accumulator never goes to shared memory.
GEMM = """
@launch(128)
kernel k(A: tensor<i8>[M, K], B: tensor<i8>[N, K], C: tensor<i32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<i32>[64, 32] = 0
  for kt in range(0, K, KS) {
    var a = A[pm * 64 :+ 64, kt :+ KS]
    var b = B[pn * 32 :+ 32, kt :+ KS]
    acc += dot_t(a, b)
  }
  C[pm * 64 :+ 64, pn * 32 :+ 32] = acc
}
"""

MMA_CHECKS = """
// CHECK-NOT: shared tile_acc
// CHECK: shared tile_a_0 @0 size=4096 align=128
// CHECK: for %kt
// CHECK: cp_async_wait  [pending=0]
// CHECK: ldmatrix.shared.b16
// CHECK-NOT: trans
// CHECK-COUNT-4: mma.s32.s8
// CHECK-NOT: st.shared
// CHECK: {{loop end}}
// CHECK-COUNT-4: mma.s32.s8
// CHECK-NOT: dp4a
// CHECK-NOT: mad
// CHECK-NOT: st.shared
// CHECK-NOT: ld.shared
// CHECK: st.global.v2.s32
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
"""

# K slices of 20 are not whole k steps of 16: dp4a, the accumulator `Blocked` (4 x 4 a
# thread), each row's 20 bytes five words read as `ld.shared.u32`, sixteen dp4a a word.
DP4A_CHECKS = """
// CHECK-NOT: shared tile_acc
// CHECK: for %kt
// CHECK-NOT: mma
// CHECK-NOT: ldmatrix
// CHECK: ld.shared.u32
// CHECK-COUNT-16: dp4a.s32
// CHECK-NOT: mad
// CHECK: {{loop end}}
// PTX: dp4a.s32.s32
"""

# K slices of 18: not whole words either, the scalar path: a `mad.s32` a byte pair, a k
# loop of two bytes a turn.
SCALAR_CHECKS = """
// CHECK-NOT: mma
// CHECK-NOT: dp4a
// CHECK: for %kt
// CHECK: mad.s32
// PTX: mad.lo.s32
"""

# One product of whole [32, 48] x [16, 48] tiles on one warp (2 x 2 fragments) into a
# register tile loaded from C, by `-=`: a k step of 32 (four m16n8k32), then the last 16
# as two m8n8k16 a fragment, its A halves by one ldmatrix.x2, its B by an .x1 a fragment.
SINGLE = """
@launch(32)
kernel k(A: tensor<i8>[M, K], B: tensor<i8>[N, K], C: tensor<i32>[M, N]) {
  var a = A[0 :+ 32, 0 :+ 48]
  var b = B[0 :+ 16, 0 :+ 48]
  var c: tile<i32>[32, 16] = C[0 :+ 32, 0 :+ 16]
  c -= dot_t(a, b)
  C[0 :+ 32, 0 :+ 16] = c
}
// CHECK-NOT: for %
// CHECK-COUNT-4: mma.s32.s8
// CHECK: ldmatrix.shared.b16
// CHECK-COUNT-8: [shape=m8n8k16]
// CHECK: sub.s32
// CHECK-NOT: st.shared
// PTX: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
// PTX: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x1.shared.b16
// PTX: mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32
"""

FORMS = {
    "mma": GEMM.replace("KS", "32") + MMA_CHECKS,
    "dp4a": GEMM.replace("KS", "20") + DP4A_CHECKS,
    "scalar": GEMM.replace("KS", "18") + SCALAR_CHECKS,
    "single": SINGLE,
}


def check(src: str, k) -> None:
    filecheck(src, text(k))
    filecheck(src, emit_module([k], "sm_80"), prefix="PTX")


def i8(*shape):
    return rng.integers(-8, 8, shape).astype(np.int8)


def poison(*shape):
    return np.full(shape, -123456789, np.int32)


def exact(got, want, a, b, c=None):
    """Bit-exact against the tile interpreter and numpy's int64 product."""
    ref = a.astype(np.int64) @ b.T.astype(np.int64)
    if c is not None:
        ref = c.astype(np.int64) - ref
    np.testing.assert_array_equal(got["C"], want["C"])
    np.testing.assert_array_equal(got["C"], ref.astype(np.int32))


@pytest.mark.parametrize("form", ["mma", "dp4a", "scalar"])
@pytest.mark.parametrize("m, n, kk", [(76, 44, 100), (64, 32, 64), (132, 68, 36)])
def test_gemm_loop_on_each_path(form, m, n, kk):
    src = FORMS[form]
    hk, k = lowered(src)
    check(src, k)
    count = {"mma": ("mma", 8), "dp4a": ("dp4a", 2 * 5 * 16), "scalar": ("mad", 2 * 2 * 16)}
    op, n_ops = count[form]
    assert len(ops(k, op)) == n_ops, len(ops(k, op))
    if form == "mma":
        assert len(ops(k, "ldmatrix")) == 6
        assert all(i.attr("shape") == "m16n8k32" for i in ops(k, "mma"))
    a, b = i8(m, kk), i8(n, kk)
    grid = (-(-m // 64), -(-n // 32))
    want, got = run_both(hk, k, grid, {"A": a, "B": b, "C": poison(m, n)})
    exact(got, want, a, b)


def test_single_product_minus_equals_with_a_last_16():
    hk, k = lowered(SINGLE)
    check(SINGLE, k)
    mmas = ops(k, "mma")
    assert [i.attr("shape") for i in mmas].count("m16n8k32") == 4
    assert [i.attr("shape") for i in mmas].count("m8n8k16") == 8
    assert sorted(len(i.dests) for i in ops(k, "ldmatrix")) == [1, 1, 2, 2, 4, 4, 4]
    a, b = i8(36, 52), i8(20, 52)
    c = rng.integers(-1000, 1000, (36, 20)).astype(np.int32)
    want, got = run_both(hk, k, (1, 1), {"A": a, "B": b, "C": c})
    exact({"C": got["C"][:32, :16]}, {"C": want["C"][:32, :16]}, a[:32, :48], b[:16, :48],
          c[:32, :16])  # fmt: skip
    np.testing.assert_array_equal(got["C"], want["C"])


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_assembles(form, arch):
    _, k = lowered(FORMS[form])
    ptxas(k, arch)


# ---------------------------------------------------------------------------
# The plan's path and the log's reasons


def logged_paths(src, caplog, chip=None):
    from lowerkit import checked

    from phobos.lower.kernel import lower_kernel

    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="phobos.lower"):
        if chip is None:
            lowered(src)
        else:
            lower_kernel(checked(src), chip)
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("dot")]


def test_the_log_names_each_path_and_why(caplog):
    lines = logged_paths(FORMS["mma"], caplog)
    assert len(lines) == 1 and lines[0].startswith("dot_t #"), lines
    assert lines[0].endswith(": mma.sync m16n8k32 s8 -> s32: 4 warps of 16x32, 4 fragments a "
                             "warp"), lines  # fmt: skip
    lines = logged_paths(FORMS["dp4a"], caplog)
    assert lines[0].endswith(": dp4a: K = 20 is not a multiple of 16"), lines
    lines = logged_paths(FORMS["scalar"], caplog)
    assert lines[0].endswith(": FMA: K = 18 is not a multiple of 4 (dp4a takes four bytes a "
                             "step)"), lines  # fmt: skip
    lines = logged_paths(FORMS["mma"], caplog, chip="sm_75")
    assert lines[0].endswith(": dp4a: integer mma.sync m16n8k32 needs sm_80, not sm_75"), lines


# M = 24 is not whole 16-row fragments: dp4a (K = 32 is a multiple of 4).
ROWS24 = """
@launch(64)
kernel k(A: tensor<i8>[M, K], B: tensor<i8>[N, K], C: tensor<i32>[M, N]) {
  var a = A[0 :+ 24, 0 :+ 32]
  var b = B[0 :+ 16, 0 :+ 32]
  C[0 :+ 24, 0 :+ 16] = dot_t(a, b)
}
// CHECK-NOT: mma
// CHECK: ld.shared.v4.u32
// CHECK: dp4a.s32
"""


def test_rows_not_whole_fragments_take_dp4a(caplog):
    lines = logged_paths(ROWS24, caplog)
    assert lines[0].endswith(": dp4a: M = 24 is not a multiple of 16"), lines
    hk, k = lowered(ROWS24)
    filecheck(ROWS24, text(k))
    a, b = i8(24, 32), i8(16, 32)
    want, got = run_both(hk, k, (1,), {"A": a, "B": b, "C": poison(24, 16)})
    exact(got, want, a, b)


def plan_of(hk, chip="sm_80"):
    from phobos.lower.kernel import lower_kernel

    made = {}
    lower_kernel(hk, chip, after=lambda p, lw, out: made.setdefault(p.name, out))
    return made["place"]


def test_the_plan_records_the_path():
    hk, _ = lowered(FORMS["mma"])
    plan = plan_of(hk)
    assert sorted(plan.paths.values()) == ["mma.m16n8k32.s8"]
    acc = next(t for s, t in plan.tiles.items() if s.name == "acc")
    assert acc.place == "registers" and acc.mma == (4, 1) and isinstance(acc.layout(128), MmaAcc)
    hk, _ = lowered(FORMS["dp4a"])
    assert sorted(plan_of(hk).paths.values()) == ["dp4a"]
    hk, _ = lowered(FORMS["scalar"])
    assert sorted(plan_of(hk).paths.values()) == ["fma"]


def test_dp4a_reads_registers_only():
    # The sums start from an immediate 0 moved into a register; dp4a reads registers.
    _, k = lowered(FORMS["dp4a"])
    assert all(not isinstance(v, Imm) for i in ops(k, "dp4a") for v in i.srcs)
