"""A scalar read of an i8, u8, u16 or u32 element is an index (SPEC.md "Types"): i8
sign-extends, the unsigned types zero-extend. Checked, lowered, assembled, and run on both
interpreters, which agree with each other and with numpy on bytes of every sign."""

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import checked, lowered, ops, ptxas, run_both

from phobos.lower import lir
from phobos.lower.kernel import lower_kernel
from phobos.lower.verify import verify
from phobos.ptx.emit import emit_module
from phobos.pyfront.translate import translate_module
from phobos.sema import hir
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

rng = np.random.default_rng(11)
N = 64


def agree(hk, k, grid, arrays):
    ref, got = run_both(hk, k, grid, arrays)
    for name in ref:
        assert np.array_equal(ref[name], got[name]), name
    for arch in ("sm_90", "sm_80"):
        ptxas(k, arch)
    return ref


def halves(b):
    """The f16 whose low byte is b[:, 0] and high byte b[:, 1], as numpy reads them."""
    raw = b.view(np.uint8).astype(np.uint16)
    return (raw[:, 0] | (raw[:, 1] << 8)).view(np.float16)


def byte_pairs(dtype):
    """Pairs of bytes of every sign; a bit pattern of f16 NaN is avoided, so equality holds."""
    raw = rng.integers(0, 256, (N, 2)).astype(np.uint8)
    raw[:, 1] &= 0xBB  # exponent bits never all set: no inf or NaN
    raw[0] = (0x00, 0x3C)  # 1.0
    raw[1] = (0xFF, 0x80)  # a negative subnormal: bytes >= 128 in both places
    return raw.view(dtype)


# SPEC.md's own example, `f16bits` of two bytes of a block, in both spellings
HALF_PH = """
kernel k(B: tensor<{t}>[N, 2], Y: tensor<f16>[N]) {{
  let i = ctx.block.x
  Y[i] = f16bits((B[i, 0] & 255) | ((B[i, 1] & 255) << 8))
}}"""

HALF_PY = """
import phobos.lang as ph


@ph.kernel
def k(B: ph.tensor[ph.{t}][N, 2], Y: ph.tensor[ph.f16][N]):
    i: ph.let = ph.ctx.block.x
    Y[i] = ph.f16bits((B[i, 0] & 255) | ((B[i, 1] & 255) << 8))
"""


def lowered_py(source: str, index_width=32):
    program, diags = translate_module(SourceFile("k.py", source))
    assert not diags, [d.message for d in diags]
    hk, diags = check_kernel(program, "k", None, index_width)
    assert hk is not None, [d.message for d in diags]
    k, diags = lower_kernel(hk)
    assert k is not None, [(d.code, d.message) for d in diags]
    verify(k)
    return hk, k


@pytest.mark.parametrize("t", ["i8", "u8"])
@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_the_spec_f16bits_example_runs(t, spelling):
    source = (HALF_PH if spelling == "ph" else HALF_PY).format(t=t)
    hk, k = lowered(source) if spelling == "ph" else lowered_py(source)
    b = byte_pairs(np.int8 if t == "i8" else np.uint8)
    ref = agree(hk, k, (N,), {"B": b, "Y": np.zeros(N, np.float16)})
    assert np.array_equal(ref["Y"].view(np.uint16), halves(b).view(np.uint16))
    # hir shows the widening; the byte loads as itself, extended by its sign or not, into a
    # 32-bit register
    assert "f16bits(((i32(B[i, 0]) & 255: i32)" in hir.dump(hk)
    assert len(ops(k, "ld", space="global", type="s8" if t == "i8" else "u8")) == 2


WIDE = """
kernel k(B: tensor<i8>[N], C: tensor<u8>[N], D: tensor<u16>[N], E: tensor<u32>[N],
         Y: tensor<{y}>[N, 4]) {{
  let i = ctx.block.x
  Y[i, 0] = B[i] * 3 - 1
  Y[i, 1] = C[i] + D[i]
  Y[i, 2] = (E[i] >> 1) & 2147483647
  Y[i, 3] = E[i] >> 1
}}"""


def wide_arrays(y):
    e = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    e[0], e[1] = 0xFFFFFFFF, 0x80000000
    d = rng.integers(0, 1 << 16, N).astype(np.uint16)
    d[0] = 0xFFFF
    c = rng.integers(0, 256, N).astype(np.uint8)
    c[0] = 255
    b = rng.integers(-128, 128, N).astype(np.int8)
    b[0], b[1] = -128, 127
    return {"B": b, "C": c, "D": d, "E": e, "Y": np.zeros((N, 4), y)}


@pytest.mark.parametrize(("width", "y"), [(32, np.int32), (64, np.int64)])
def test_reads_widen_to_the_index(width, y):
    hk, k = lowered(WIDE.format(y="i32" if width == 32 else "i64"), index_width=width)
    arrays = wide_arrays(y)
    ref = agree(hk, k, (N,), arrays)
    b, c, d = (arrays[n].astype(np.int64) for n in "BCD")
    e = arrays["E"].astype(np.int64)
    assert np.array_equal(ref["Y"][:, 0], b * 3 - 1)
    assert np.array_equal(ref["Y"][:, 1], c + d)
    assert np.array_equal(ref["Y"][:, 2], (e >> 1) & 0x7FFFFFFF)
    # a u32 of 2^31 or more keeps its bits at 32-bit indices: it reads as negative there
    e_index = e if width == 64 else e.astype(np.uint32).view(np.int32).astype(np.int64)
    assert np.array_equal(ref["Y"][:, 3], e_index >> 1)


def test_at_64_bits_the_sign_decides_the_extension():
    _, k = lowered(WIDE.format(y="i64"), index_width=64)
    cvts = [(i.attr("from_type"), i.attr("type")) for i in ops(k, "cvt")]
    assert ("s32", "s64") in cvts  # the i8, loaded by ld.global.s8
    assert cvts.count(("u32", "s64")) >= 4  # u8, u16, u32 (twice) zero-extend
    assert ops(k, "ld", space="global", type="u16")


# elem of a run: single loads (u16, an odd start) and bytes unpacked from a word (i8, u8)
ELEM = """
@launch(32)
kernel k(Q: tensor<i8>[R, 16], P: tensor<u8>[R, 16], H: tensor<u16>[R, 8], Y: tensor<i32>[R, 6]) {
  let r = ctx.thread
  Y[r, 0] = elem(Q[r, 0 :+ 16], 5) * 2
  Y[r, 1] = elem(P[r, 0 :+ 16], 6) - elem(Q[r, 0 :+ 16], 7)
  Y[r, 2] = elem(H[r, 1 :+ 3], 2) + 1
  Y[r, 3] = elem(Q[r, 3 :+ 2], 1)
  Y[r, 4] = elem(P[r, 3 :+ 2], 0) << 1
  Y[r, 5] = elem(H[r, 0 :+ 8], 7) & 65535
}"""


def test_elem_widens_as_a_scalar_load():
    hk, k = lowered(ELEM)
    q = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    p = rng.integers(0, 256, (32, 16)).astype(np.uint8)
    h = rng.integers(0, 1 << 16, (32, 8)).astype(np.uint16)
    q[:, 5], p[:, 6], h[:, 3] = -128, 255, 0xFFFF
    arrays = {"Q": q, "P": p, "H": h, "Y": np.zeros((32, 6), np.int32)}
    ref = agree(hk, k, (1,), arrays)
    q64, p64, h64 = (a.astype(np.int64) for a in (q, p, h))
    want = np.stack([q64[:, 5] * 2, p64[:, 6] - q64[:, 7], h64[:, 3] + 1, q64[:, 4],
                     p64[:, 3] << 1, h64[:, 7]], axis=1)  # fmt: skip
    assert np.array_equal(ref["Y"], want)
    # a byte unpacked from its word: shifted up and back arithmetically for i8, masked for u8
    assert ops(k, "shr", type="s32") and ops(k, "and", type="b32")


# a read stored back to its own type is the bytes it read; an index must be converted, and
# there is no conversion to u8, so a u8 is stored only from a u8
STORES = """
@launch(32)
kernel k(I: tensor<i8>[R, 16], B: tensor<u8>[R, 16], Y: tensor<i32>[R]) {
  let r = ctx.thread
  I[r, 0] = I[r, 1]
  B[r, 0] = B[r, 1]
  I[r, 2] = i8(I[r, 3] + 100)
  I[r, 4] += 100
  store(I[r, 8 :+ 4], elem(I[r, 12 :+ 4], 3), elem(I[r, 12 :+ 4], 2), -1, 127)
  Y[r] = i32(I[r, 5]) + i32(B[r, 5])
}"""


def test_a_store_back_truncates():
    hk, k = lowered(STORES)
    i8s = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    u8s = rng.integers(0, 256, (32, 16)).astype(np.uint8)
    i8s[0, 3], i8s[0, 4], u8s[0, 5] = 100, 100, 255
    arrays = {"I": i8s, "B": u8s, "Y": np.zeros(32, np.int32)}
    ref = agree(hk, k, (1,), arrays)
    got_i, got_b = ref["I"], ref["B"]
    assert np.array_equal(got_i[:, 0], i8s[:, 1]) and np.array_equal(got_b[:, 0], u8s[:, 1])
    assert np.array_equal(got_i[:, 2], (i8s[:, 3].astype(np.int32) + 100).astype(np.int8))
    assert np.array_equal(got_i[:, 4], (i8s[:, 4].astype(np.int32) + 100).astype(np.int8))
    assert np.array_equal(got_i[:, 8:12], np.stack([i8s[:, 15], i8s[:, 14],
                                                    np.full(32, -1), np.full(32, 127)], 1))  # fmt: skip
    assert np.array_equal(ref["Y"], i8s[:, 5].astype(np.int32) + u8s[:, 5])


def types_of(source):
    """The type of each `let` of a checked kernel, by name."""
    hk = checked(source)
    return {s.sym.name: str(s.sym.type) for s in hk.body.stmts if isinstance(s, hir.Let)}


def test_only_scalar_reads_widen():
    types = types_of("""
kernel k(B: tensor<u8>[N, 4], I: tensor<i8>[N, 4], E: tensor<u32>[N, 4], F: tensor<i32>[N, 4]) {
  let v = B[0 :+ 4, :]
  let p = B[0, 1]
  let q = I[2, 3]
  let u = E[0, 0]
  let f = F[0, 0]
  let w = v[1, 2]
  let x = f32(E[0, 1])
}""")
    assert types == {"v": "tensor<u8>[4, 4]", "p": "i32", "q": "i32", "u": "i32", "f": "i32",
                     "w": "i32", "x": "f32"}  # fmt: skip
    assert checked("kernel k(B: tensor<i8>[N]) { let p = B[0] }", index_width=64)


def test_an_explicit_conversion_reads_the_element_itself():
    # `f32(u)` and `i64(u)` of a u32 see its value, never the 32-bit index it would wrap to
    hk, k = lowered("""
kernel k(E: tensor<u32>[N], F: tensor<f32>[N], L: tensor<i64>[N]) {
  let i = ctx.block.x
  F[i] = f32(E[i])
  L[i] = i64(E[i])
}""")
    e = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF] * 4, np.uint32)
    n = len(e)
    ref = agree(hk, k, (n,), {"E": e, "F": np.zeros(n, np.float32), "L": np.zeros(n, np.int64)})
    assert np.array_equal(ref["F"], e.astype(np.float32))
    assert np.array_equal(ref["L"], e.astype(np.int64))
    cvts = [(i.attr("from_type"), i.attr("type")) for i in ops(k, "cvt")]
    assert ("u32", "f32") in cvts and ("u32", "s64") in cvts


# each element loads by its own sign into a 32-bit register, then widens to the 64-bit index
PINNED = """
kernel k(B: tensor<i8>[N], C: tensor<u8>[N], D: tensor<u16>[N], E: tensor<u32>[N],
         Y: tensor<i64>[N]) {
  let i = ctx.block.x
  Y[i] = B[i] + C[i] + D[i] + E[i]
}
// CHECK: ld.global.s8
// CHECK: cvt.s64.s32
// CHECK: ld.global.u8
// CHECK: cvt.s64.u32
// CHECK: ld.global.u16
// CHECK: cvt.s64.u32
// CHECK: ld.global.u32
// CHECK: cvt.s64.u32
// CHECK: add.s64
"""


@pytest.mark.parametrize("emit", ["lir", "ptx"])
def test_the_code_shows_the_load_and_its_extension(emit):
    _, k = lowered(PINNED, index_width=64)
    filecheck(PINNED, lir.print_kernel(k) if emit == "lir" else emit_module([k], "sm_90"))
    ptxas(k)


# at 32-bit indices the load is the extension: an i8 or u16 read needs no cvt at all
PINNED_32 = """
kernel k(B: tensor<i8>[N], D: tensor<u16>[N], Y: tensor<i32>[N]) {
  let i = ctx.block.x
  Y[i] = B[i] - D[i]
}
// CHECK: ld.global.s8
// CHECK-NOT: cvt
// CHECK: ld.global.u16
// CHECK-NOT: cvt
// CHECK: sub.s32
"""


@pytest.mark.parametrize("emit", ["lir", "ptx"])
def test_at_32_bits_the_load_alone_extends(emit):
    _, k = lowered(PINNED_32)
    filecheck(PINNED_32, lir.print_kernel(k) if emit == "lir" else emit_module([k], "sm_90"))


# a point read of a tile widens as one of a tensor; the tile itself stays u8 and i8
TILE_POINTS = """
@launch(32)
kernel k(B: tensor<u8>[R, 8], I: tensor<i8>[R, 8], Y: tensor<i32>[R, 2]) {
  var t = B[0 :+ 32, :]
  var q = I[0 :+ 32, :]
  let r = ctx.thread
  Y[r, 0] = t[r, 7] - t[r, 0]
  Y[r, 1] = q[r, 3] * q[r, 5]
}"""


def test_a_point_read_of_a_tile_widens():
    hk, k = lowered(TILE_POINTS)
    tiles = {s.sym.name: str(s.sym.type) for s in hk.body.stmts if isinstance(s, hir.VarDecl)}
    assert tiles == {"t": "tile<u8>[32, 8]", "q": "tile<i8>[32, 8]"}
    b = rng.integers(0, 256, (32, 8)).astype(np.uint8)
    q = rng.integers(-128, 128, (32, 8)).astype(np.int8)
    b[0, 7], q[0, 3], q[0, 5] = 255, -128, -1
    ref = agree(hk, k, (1,), {"B": b, "I": q, "Y": np.zeros((32, 2), np.int32)})
    b64, q64 = b.astype(np.int64), q.astype(np.int64)
    assert np.array_equal(ref["Y"][:, 0], b64[:, 7] - b64[:, 0])
    assert np.array_equal(ref["Y"][:, 1], q64[:, 3] * q64[:, 5])


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("I[0] = n", "expected `i8`, found `i32`"),  # an index is never narrowed implicitly
        ("I[0] = B[0]", "expected `i8`, found `i32`"),  # a u8 is not an i8
        ("B[0] = I[0]", "expected `u8`, found `i32`"),
        ("let v = B[0]\n  B[1] = v", "expected `u8`, found `i32`"),  # `v` is an index
        ("B[0] += 1", "no arithmetic on `u8`"),  # the target's type: stored as before
        ("let t = B[0 :+ 4] + 1", "no arithmetic on `u8`"),  # a tile read stays storage
    ],
)
def test_an_index_is_not_stored_to_a_byte_implicitly(body, found):
    source = f"kernel k(I: tensor<i8>[N], B: tensor<u8>[N], n: i32) {{\n  {body}\n}}"
    program, _ = parse(SourceFile("k.ph", source))
    hk, diags = check_kernel(program, "k", None, 32)
    assert hk is None and any(found in d.message for d in diags), [d.message for d in diags]
