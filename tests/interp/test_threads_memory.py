"""interp.threads: global memory, vector loads and stores, masked tails, the memcheck."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify
from phobos.source import SourceFile

# Each thread adds 4 consecutive elements with one 16-byte load of each input and one
# store; the thread holding the ragged end adds its elements one at a time, leaving the
# loop at the first index past `n`.
VADD = """
kernel vadd(%a: u64, %b: u64, %out: u64, %n: s32) threads=64 smem=0 {
  reg %t: s32
  reg %c: s32
  reg %g: s32
  reg %i: s32
  reg %e: s32
  reg %full: pred
  reg %off: s64
  reg %pa: u64
  reg %pb: u64
  reg %po: u64
  reg %x0: f32
  reg %x1: f32
  reg %x2: f32
  reg %x3: f32
  reg %y0: f32
  reg %y1: f32
  reg %y2: f32
  reg %y3: f32
  reg %k: s32
  reg %j: s32
  reg %in: pred
  reg %o: s64
  reg %qa: u64
  reg %qb: u64
  reg %qo: u64
  %t = sreg.tid.x
  %c = sreg.ctaid.x
  %g = mad.s32 %c, 64:s32, %t
  %i = shl.s32 %g, 2:u32
  %e = add.s32 %i, 4:s32
  %full = setp.le.s32 %e, %n
  %off = mul_wide.s32 %i, 4:s32
  %pa = add.u64 %a, %off
  %pb = add.u64 %b, %off
  %po = add.u64 %out, %off
  if %full {
    %x0, %x1, %x2, %x3 = ld.global.v4.f32 %pa
    %y0, %y1, %y2, %y3 = ld.global.v4.f32 %pb
    %x0 = add.f32 %x0, %y0
    %x1 = add.f32 %x1, %y1
    %x2 = add.f32 %x2, %y2
    %x3 = add.f32 %x3, %y3
    st.global.v4.f32 %po, %x0, %x1, %x2, %x3
  } else {
    for %k = 0:s32 to 4:s32 step 1:s32 {
      %j = add.s32 %i, %k
      %in = setp.lt.s32 %j, %n
      break if !%in
      %o = mul_wide.s32 %k, 4:s32
      %qa = add.u64 %pa, %o
      %qb = add.u64 %pb, %o
      %qo = add.u64 %po, %o
      %x0 = ld.global.f32 %qa
      %y0 = ld.global.f32 %qb
      %x0 = add.f32 %x0, %y0
      st.global.f32 %qo, %x0
    }
  }
}
"""


def vadd(n: int, kernel_text: str = VADD):
    kernel = parse_kernel(kernel_text)
    verify(kernel)
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    mem = GlobalMemory()
    pa, pb = mem.place(a, "a"), mem.place(b, "b")
    po = mem.place(np.full(n, np.nan, np.float32), "out")
    blocks = -(-n // 256)
    report = run_lir(kernel, blocks, {"a": pa, "b": pb, "out": po, "n": n}, mem)
    return a, b, mem.read(po), report


@pytest.mark.parametrize("n", [1, 3, 256, 1000, 1001, 1023])
def test_vector_add_with_a_masked_tail(n):
    a, b, out, report = vadd(n)
    np.testing.assert_array_equal(out, a + b)
    assert report.ctas == -(-n // 256)


def test_text_round_trips_through_the_parser():
    kernel = parse_kernel(VADD)
    assert parse_kernel(lir.print_kernel(kernel)) == kernel


def test_an_unmasked_tail_is_refused():
    # Without the loop's exit the tail thread reads past `a`.
    broken = VADD.replace("      break if !%in\n", "")
    with pytest.raises(InterpError, match=r"reads 4 bytes at 0x[0-9a-f]+, past the end of `a`"):
        vadd(1001, broken)


SRC = SourceFile(
    "oob.ph",
    "let t = tid\nout[t] = 1.0\n",
)
T, ADDR = Reg("t", "u32"), Reg("p", "u64")
OUT = Reg("out", "u64")


def store_kernel(threads: int, offset: int = 0) -> Kernel:
    body = Block(
        (
            inst("sreg", (T,), (), name="tid.x", span=SRC.span(0, 11)),
            inst("mul_wide", (ADDR,), (T, Imm(4, "u32")), type="u32", span=SRC.span(12, 18)),
            inst("add", (ADDR,), (ADDR, OUT), type="u64", span=SRC.span(12, 18)),
            inst(
                "st",
                (),
                (ADDR, Imm(1.0, "f32")),
                space="global",
                type="f32",
                offset=offset,
                span=SRC.span(12, 24),
            ),
        )
    )
    kernel = Kernel("store", (Param("out", "u64"),), body, threads=threads)
    verify(kernel)
    return kernel


def test_an_out_of_bounds_store_is_refused_at_its_span():
    mem = GlobalMemory()
    out = mem.place(np.zeros(60, np.float32), "out")
    with pytest.raises(InterpError) as info:
        run_lir(store_kernel(64), 1, {"out": out}, mem)
    assert info.value.span == SRC.span(12, 24)
    text = str(info.value)
    assert text.startswith("oob.ph:2:1: `st.global.f32")
    assert "thread 60 of block (0, 0, 0) writes 4 bytes" in text
    assert "past the end of `out` (240 bytes" in text
    # Nothing was half-written before the refusal.
    assert not mem.read(out).any()


def test_stores_in_bounds_land():
    mem = GlobalMemory()
    out = mem.place(np.zeros(64, np.float32), "out")
    run_lir(store_kernel(64), 1, {"out": out}, mem)
    assert (mem.read(out) == 1.0).all()


def test_unmapped_and_misaligned_addresses_are_refused():
    mem = GlobalMemory()
    out = mem.place(np.zeros(64, np.float32), "out")
    with pytest.raises(InterpError, match="outside every buffer"):
        run_lir(store_kernel(64, offset=1 << 20), 1, {"out": out}, mem)
    with pytest.raises(InterpError, match="misaligned address"):
        run_lir(store_kernel(8, offset=2), 1, {"out": out}, mem)
    with pytest.raises(InterpError, match="outside every buffer"):
        run_lir(store_kernel(8, offset=-4), 1, {"out": out}, mem)


def test_global_memory_places_buffers_apart():
    mem = GlobalMemory()
    addresses = [mem.place(np.arange(n, dtype=np.int16)) for n in (0, 1, 100, 3)]
    assert all(a % GlobalMemory.ALIGN == 0 for a in addresses)
    for lo, hi in zip(addresses, addresses[1:], strict=False):
        assert hi - lo >= GlobalMemory.GAP
    assert mem.read(addresses[2]).tolist() == list(range(100))
    assert mem.read(addresses[2], np.int32, (50,)).dtype == np.int32
    mem.write(addresses[3], np.array([7, 8, 9], np.int16))
    assert mem.read(addresses[3]).tolist() == [7, 8, 9]


def test_narrow_loads_extend_and_stores_truncate():
    # ld.global.s8 into an s32 sign-extends; ld.u8 zero-extends; st.u8 keeps the low byte.
    p, v, w = Reg("p", "u64"), Reg("v", "s32"), Reg("w", "u32")
    t, a = Reg("t", "u32"), Reg("a", "u64")
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("cvt", (a,), (t,), type="u64", from_type="u32"),
            inst("add", (a,), (a, p), type="u64"),
            inst("ld", (v,), (a,), space="global", type="s8"),
            inst("ld", (w,), (a,), space="global", type="u8"),
            inst("add", (v,), (v, Imm(1, "s32")), type="s32"),
            inst("st", (), (a, v), space="global", type="u8"),
        )
    )
    kernel = Kernel("narrow", (Param("p", "u64"),), body, threads=4)
    verify(kernel)
    mem = GlobalMemory()
    buf = mem.place(np.array([0, 127, 255, 128], np.uint8))
    run_lir(kernel, 1, {"p": buf}, mem)
    assert mem.read(buf).tolist() == [1, 128, 0, 129]


def test_a_three_axis_grid_runs_every_block_once():
    regs = [Reg(n, "u32") for n in ("cx", "cy", "cz", "nx", "ny")]
    lin, addr, out = Reg("lin", "u32"), Reg("addr", "u64"), Reg("out", "u64")
    names = ("ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y")
    cx, cy, cz, nx, ny = regs
    body = Block(
        (
            *(inst("sreg", (r,), (), name=n) for r, n in zip(regs, names, strict=True)),
            inst("mad", (lin,), (cz, ny, cy), type="u32"),
            inst("mad", (lin,), (lin, nx, cx), type="u32"),
            inst("mul_wide", (addr,), (lin, Imm(4, "u32")), type="u32"),
            inst("add", (addr,), (addr, out), type="u64"),
            inst("atom", (Reg("old", "u32"),), (addr, lin), space="global", atom="add", type="u32"),
        )
    )
    kernel = Kernel("grid", (Param("out", "u64"),), body, threads=32)
    verify(kernel)
    mem = GlobalMemory()
    buf = mem.place(np.zeros(2 * 3 * 4, np.uint32))
    report = run_lir(kernel, (2, 3, 4), {"out": buf}, mem)
    assert report.ctas == 24
    assert mem.read(buf).tolist() == [32 * k for k in range(24)]


def test_a_missing_parameter_is_named():
    mem = GlobalMemory()
    with pytest.raises(InterpError, match="no value for parameter `out`"):
        run_lir(store_kernel(4), 1, {}, mem)


def test_param_loads_and_local_memory():
    # n = ld.param n; local[t % 4 * 4] = n + t; out[t] = local[t % 4 * 4]
    n, v, la = Reg("n", "s32"), Reg("v", "s32"), Reg("la", "u32")
    t, a = Reg("t", "s32"), Reg("a", "u64")
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("ld", (v,), (n,), space="param", type="s32"),  # the param named by %n
            inst("add", (v,), (v, t), type="s32"),
            inst("and", (la,), (t, Imm(3, "s32")), type="b32"),
            inst("shl", (la,), (la, Imm(2, "u32")), type="b32"),
            inst("st", (), (la, v), space="local", type="s32"),
            inst("mov", (v,), (Imm(0, "s32"),), type="s32"),
            inst("ld", (v,), (la,), space="local", type="s32"),
            inst("mul_wide", (a,), (t, Imm(4, "s32")), type="s32"),
            inst("add", (a,), (a, OUT), type="u64"),
            inst("st", (), (a, v), space="global", type="s32"),
        )
    )
    kernel = Kernel("k", (Param("n", "s32"), Param("out", "u64")), body, threads=8)
    mem = GlobalMemory()
    out = mem.place(np.zeros(8, np.int32))
    run_lir(kernel, 1, {"n": 100, "out": out}, mem)
    assert mem.read(out).tolist() == [100 + k for k in range(8)]
