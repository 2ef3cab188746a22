"""Hopper's stores in lir's text form — stmatrix, the TMA store and its bulk groups — round
trip through the printer and parser, and what the verifier refuses of them (the other
Hopper refusals are in test_lir_hopper.py)."""

import pytest

from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, TensorMap, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify

s, m, x, p = Reg("s", "u32"), Reg("m", "u64"), Reg("x", "s32"), Reg("p", "pred")
r = tuple(Reg(f"r{j}", "b32") for j in range(4))

TEXT = """kernel st(%g: u64) threads=32 smem=1024 {
  shared tile @0 size=1024 align=1024
  tmap g_tmap = g f16 [64, 64] box=[8, 64] swizzle=128B
  reg %s: u32
  reg %r0: b32
  reg %r1: b32
  reg %r2: b32
  reg %r3: b32
  reg %m: u64
  reg %p: pred
  %s = sreg.tid.x
  %r0 = mov.b32 1:b32
  %r1 = mov.b32 2:b32
  %r2 = mov.b32 3:b32
  %r3 = mov.b32 4:b32
  stmatrix %s, %r0
  stmatrix %s, %r0, %r1  [trans=1]
  stmatrix %s, %r0, %r1, %r2, %r3
  fence.shared  [proxy=async]
  %m = tmap_addr  [map=g_tmap]
  %p = setp.eq.u32 %s, 0:u32
  @%p tma_store %m, 8:s32, -8:s32, %s
  @%p bulk_commit
  bulk_wait  [pending=1]
  bulk_wait  [pending=0, read=1]
}"""


def test_text_round_trips():
    k = parse_kernel(TEXT)
    verify(k)
    assert lir.print_kernel(k) == TEXT
    assert parse_kernel(lir.print_kernel(k)) == k
    ops = {i.op for i in k.body.items if isinstance(i, lir.Inst)}
    assert ops >= lir.HOPPER_STORES
    store = next(i for i in k.body.items if i.op == "tma_store")
    assert store.srcs == (m, Imm(8, "s32"), Imm(-8, "s32"), s) and store.guard == p


def test_every_store_op_is_in_the_op_table():
    assert all(lir.OPS[op] == "hopper_stores" for op in lir.HOPPER_STORES)


def kernel(*items) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        *(inst("mov", (reg,), (Imm(j, "b32"),), type="b32") for j, reg in enumerate(r)),
        inst("tmap_addr", (m,), (), map="g_tmap"),
        inst("mov", (x,), (Imm(0, "s32"),), type="s32"),
        inst("setp", (p,), (s, Imm(0, "u32")), cmp="eq", type="u32"),
    )
    return Kernel(
        "st",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=32,
        smem=1024,
        shared=(SharedBuffer("tile", 0, 1024, 1024),),
        maps=(TensorMap("g_tmap", "g", "f16", (64, 64), (8, 64), "128B"),),
    )


REFUSED = [
    (inst("stmatrix", (), (s,)), r"stores 1, 2 or 4 b32 registers, one a matrix, not 0"),
    (inst("stmatrix", (), (s, *r[:3])), r"not 3"),
    (inst("stmatrix", (), (s, r[0], s)), r"b32 registers, one a matrix, not 2"),
    (inst("stmatrix", (), (m, r[0])), r"takes a u32 shared address register first"),
    (inst("stmatrix", (), (Imm(0, "u32"), r[0])), r"takes a u32 shared address register"),
    (inst("stmatrix", (), (s, r[0]), trans=2), r"`trans` 0 or 1, not 2"),
    (inst("stmatrix", (r[1],), (s, r[0])), r"`stmatrix` writes no register"),
    (inst("stmatrix", (), (s, r[0]), guard=p), r"runs on the whole warp and takes no guard"),
    (inst("tma_store", (), (m, x, x)), r"a tensor map, two coordinates and a shared source, not 3"),
    (inst("tma_store", (), (s, x, x, s)), r"tensor map is a u64 register"),
    (inst("tma_store", (), (m, m, x, s)), r"coordinate is a 32-bit integer, not `%m`"),
    (inst("tma_store", (), (m, x, x, m)), r"source is a u32 shared address register"),
    (inst("tma_store", (s,), (m, x, x, s)), r"`tma_store` writes no register"),
    (inst("bulk_commit", (), (s,)), r"`bulk_commit` takes no operand"),
    (inst("bulk_wait", pending=-1), r"a `pending` count of groups from 0, not -1"),
    (inst("bulk_wait"), r"not None"),
    (inst("bulk_wait", pending=0, read=2), r"`read` 0 or 1, not 2"),
    (inst("bulk_wait", (), (s,), pending=0), r"`bulk_wait` takes no operand"),
]


@pytest.mark.parametrize(("item", "message"), REFUSED, ids=lambda x: getattr(x, "op", ""))
def test_the_verifier_refuses(item, message):
    with pytest.raises(LirError, match=message):
        verify(kernel(item))


def test_the_well_formed_ones_pass():
    verify(kernel(
        inst("stmatrix", (), (s, *r), trans=1),
        inst("tma_store", (), (m, x, Imm(3, "s32"), s), guard=p),
        inst("bulk_commit"),
        inst("bulk_wait", pending=0, read=1),
    ))  # fmt: skip
