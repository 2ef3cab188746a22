"""The asynchronous copies in lir's text form, and what the verifier refuses of them."""

import pytest

from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify

g, s, n, p = Reg("g", "u64"), Reg("s", "u32"), Reg("n", "u32"), Reg("p", "pred")

TEXT = """kernel copy(%g: u64) threads=64 smem=64 {
  shared tile @0 size=64 align=16
  reg %s: u32
  reg %n: u32
  reg %p: pred
  %s = sreg.tid.x
  %n = and.b32 %s, 15:u32
  %p = setp.lt.u32 %s, 4:u32
  cp_async %s, %g  [size=16]
  @%p cp_async %s, %g, %n  [size=16]
  @!%p cp_async %s, %g, 0:u32  [cache=ca, size=16]
  cp_async %s, %g, 2:u32  [size=4]
  cp_async_commit
  cp_async_wait  [pending=1]
  @%p cp_async_wait  [pending=0]
}"""


def kernel(*items) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        inst("and", (n,), (s, Imm(15, "u32")), type="b32"),
        inst("setp", (p,), (s, Imm(4, "u32")), cmp="lt", type="u32"),
    )
    return Kernel(
        "copy",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=64,
        smem=64,
        shared=(SharedBuffer("tile", 0, 64),),
    )


def test_the_text_form_reads_back_to_the_same_kernel():
    k = kernel(
        inst("cp_async", (), (s, g), size=16),
        inst("cp_async", (), (s, g, n), size=16, guard=p),
        inst(
            "cp_async", (), (s, g, Imm(0, "u32")), size=16, cache="ca", guard=p, guard_negated=True
        ),
        inst("cp_async", (), (s, g, Imm(2, "u32")), size=4),
        inst("cp_async_commit"),
        inst("cp_async_wait", pending=1),
        inst("cp_async_wait", pending=0, guard=p),
    )
    verify(k)
    assert lir.print_kernel(k) == TEXT
    assert parse_kernel(TEXT) == k
    assert {lir.OPS[op] for op in ("cp_async", "cp_async_commit", "cp_async_wait")} == {"async"}


REFUSED = [
    (inst("cp_async", (), (s, g), size=2), "copies 4, 8 or 16 bytes, not 2"),
    (inst("cp_async", (), (s, g), size=32), "copies 4, 8 or 16 bytes, not 32"),
    (inst("cp_async", (), (s, g)), "copies 4, 8 or 16 bytes, not None"),
    (inst("cp_async", (), (s, g), size=8, cache="cg"), "`cg` copies 16 only"),
    (inst("cp_async", (), (s, g), size=16, cache="cs"), "has cache `cs`"),
    (inst("cp_async", (), (s, g, Imm(17, "u32")), size=16), "source size of 17 is not 0 to 16"),
    (inst("cp_async", (), (s, g, Reg("f", "f32")), size=16), "32-bit integer, not f32"),
    (inst("cp_async", (), (s, Reg("h", "u32")), size=4), "global address is u64, not u32"),
    (inst("cp_async", (), (Reg("a", "s32"), g), size=4), "shared address is u32 or u64"),
    (inst("cp_async", (), (s,), size=4), "takes a shared and a global address"),
    (inst("cp_async", (Reg("d", "u32"),), (s, g), size=4), "writes no register"),
    (inst("cp_async_commit", (), (s,)), "`cp_async_commit` takes no operand"),
    (inst("cp_async_wait"), "`pending` count from 0"),
    (inst("cp_async_wait", pending=-1), "`pending` count from 0"),
]


@pytest.mark.parametrize("bad, says", REFUSED, ids=[says for _, says in REFUSED])
def test_the_verifier_refuses(bad, says):
    # Registers the bad instruction reads are written first, so only its shape is wrong.
    defs = tuple(
        inst("mov", (v,), (Imm(0, v.type),), type=v.type)
        for v in bad.srcs
        if isinstance(v, Reg) and v.name not in ("g", "s", "n")
    )
    with pytest.raises(LirError, match=says):
        verify(kernel(*defs, bad))
