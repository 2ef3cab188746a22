"""Hopper's asynchronous ops in lir's text form — mbarriers, the bulk copy, elect_sync,
setmaxnreg, named barriers, the async-proxy fence — and what the verifier refuses of
them."""

import pytest

from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify

g, s, bar, n = Reg("g", "u64"), Reg("s", "u32"), Reg("bar", "u32"), Reg("n", "u32")
p, tok, lane = Reg("p", "pred"), Reg("tok", "b64"), Reg("lane", "u32")
U = lambda v: Imm(v, "u32")  # noqa: E731

TEXT = """kernel hop(%g: u64, %R: s32) threads=128 smem=1040 {
  shared tile @0 size=1024 align=16
  shared bars @1024 size=16 align=8
  tmap g_tmap0 = g f16 [R, 64] box=[8, 64] swizzle=128B
  reg %s: u32
  reg %bar: u32
  reg %n: u32
  reg %tok: b64
  reg %p: pred
  reg %m: u64
  reg %lane: u32
  reg %da: u64
  reg %d0: f32
  reg %d1: f32
  reg %d2: f32
  reg %d3: f32
  reg %a0: b32
  reg %a1: b32
  reg %a2: b32
  reg %a3: b32
  %s = sreg.tid.x
  %bar = mov.u32 1024:u32
  %n = and.b32 %s, 1:u32
  mbarrier_init %bar, 1:u32
  fence_mbarrier_init
  bar 0:u32
  %tok = mbarrier_arrive %bar
  mbarrier_arrive %bar
  mbarrier_arrive_expect_tx %bar, 1024:u32
  cp_async_bulk %s, %g, 1024:u32, %bar
  %p = mbarrier_try_wait_parity %bar, %n
  @!%p cp_async_bulk %s, %g, %n, %bar
  %m = tmap_addr  [map=g_tmap0]
  tma_load %s, %m, 0:s32, %R, %bar
  fence.shared  [proxy=async]
  %p, %lane = elect_sync
  %p = elect_sync
  bar 1:u32, 64:u32
  bar 2:u32, 96:u32  [arrive=1]
  setmaxnreg  [action=dec, regs=40]
  %da = wgmma_desc %s  [lbo=16, sbo=1024, swizzle=128B]
  %d0 = mov.f32 0.0:f32
  %d1 = mov.f32 0.0:f32
  %d2 = mov.f32 0.0:f32
  %d3 = mov.f32 0.0:f32
  %a0 = mov.b32 0:b32
  %a1 = mov.b32 0:b32
  %a2 = mov.b32 0:b32
  %a3 = mov.b32 0:b32
  wgmma_fence
  %d0, %d1, %d2, %d3 = wgmma_mma.f32.f16 %da, %da, %p, %d0, %d1, %d2, %d3  [major_a=K, major_b=MN, shape=m64n8k16]
  %d0, %d1, %d2, %d3 = wgmma_mma.f32.bf16 %a0, %a1, %a2, %a3, %da, %p, %d0, %d1, %d2, %d3  [major_b=K, shape=m64n8k16]
  wgmma_commit
  wgmma_wait  [pending=1]
}"""


def kernel(*items) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        inst("mov", (bar,), (U(1024),), type="u32"),
        inst("and", (n,), (s, U(1)), type="b32"),
        inst("setp", (p,), (s, U(4)), cmp="lt", type="u32"),
    )
    return Kernel(
        "hop",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=128,
        smem=1040,
        shared=(SharedBuffer("tile", 0, 1024), SharedBuffer("bars", 1024, 16, 8)),
    )


def test_text_round_trips():
    k = parse_kernel(TEXT)
    verify(k)
    assert lir.print_kernel(k) == TEXT
    ops = [i.op for i in k.body.items if isinstance(i, lir.Inst)]
    # the cluster's barrier needs a kernel of clusters: tests/ptx/test_emit_cluster.py
    assert set(ops) >= lir.HOPPER - {"cluster_arrive", "cluster_wait"}
    assert parse_kernel(lir.print_kernel(k)) == k


def test_the_parsed_operands():
    items = {lir.print_item(i): i for i in parse_kernel(TEXT).body.items}
    sink = items["mbarrier_arrive %bar"]
    assert sink.dests == () and sink.srcs == (bar,)
    assert items["%tok = mbarrier_arrive %bar"].dests == (tok,)
    elect = items["%p, %lane = elect_sync"]
    assert elect.dests == (p, lane) and elect.srcs == ()
    named = items["bar 2:u32, 96:u32  [arrive=1]"]
    assert named.srcs == (U(2), U(96)) and named.attr("arrive") == 1
    reg = items["setmaxnreg  [action=dec, regs=40]"]
    assert reg.attr("action") == "dec" and reg.attr("regs") == 40


def test_every_hopper_op_is_in_the_op_table():
    assert all(lir.OPS[op] == "hopper" for op in lir.HOPPER)


acc = tuple(Reg(f"acc{i}", "f32") for i in range(4))


def wg(srcs, guard=None, **attrs):
    """A `wgmma_mma` of m64n8k16 (four accumulator registers), `attrs` overriding."""
    at = {"shape": "m64n8k16", "type": "f32", "from_type": "f16", **attrs}
    return inst("wgmma_mma", acc, srcs, guard=guard, **at)


REFUSED = [
    (
        inst("tmap_addr", (Reg("m", "u64"),), (), map="x"),
        r"`tmap_addr` names a tensor map of the kernel \(none\), not 'x'",
    ),
    (
        inst("tma_load", (), (s, g, U(0), U(0))),
        r"a tensor map, two coordinates and an mbarrier \(and a multicast's CTA mask\), not 4 "
        r"operands",
    ),
    (inst("tma_load", (), (s, s, U(0), U(0), bar)), r"tensor map is a u64 register"),
    (inst("tma_load", (), (s, g, Imm(0, "u64"), U(0), bar)), r"coordinate is a 32-bit integer"),
    (inst("tma_load", (), (g, g, U(0), U(0), bar)), r"destination is a u32 shared address"),
    (
        inst("mbarrier_init", (), (Reg("w", "u64"), U(1))),
        r"an mbarrier is named by a u32 shared address register, not `%w` \(u64\)",
    ),
    (inst("mbarrier_init", (), (U(1024), U(1))), r"not `1024:u32` \(u32\)"),
    (inst("mbarrier_init", (), (bar,)), r"`mbarrier_init` takes 2 operands, not 1"),
    (inst("mbarrier_init", (), (bar, U(0))), r"an arrival count of 0 is not 1 to 1048575"),
    (inst("mbarrier_init", (), (bar, Imm(1, "u64"))), r"an arrival count is a 32-bit integer"),
    (inst("mbarrier_init", (n,), (bar, U(1))), r"`mbarrier_init` writes no register"),
    (inst("mbarrier_arrive", (n,), (bar,)), r"state token to one b64 register, or none"),
    (inst("mbarrier_arrive", (), (bar, U(1))), r"`mbarrier_arrive` takes 1 operand, not 2"),
    (
        inst("mbarrier_arrive_expect_tx", (), (bar, U(1 << 20))),
        r"a transaction byte count of 1048576 is not 0 to 1048575",
    ),
    (inst("mbarrier_try_wait_parity", (n,), (bar, U(0))), r"writes one pred register"),
    (inst("mbarrier_try_wait_parity", (p,), (bar, U(2))), r"a phase parity of 2 is not 0 to 1"),
    (inst("fence_mbarrier_init", (), (bar,)), r"takes no operand and writes no register"),
    (
        inst("cp_async_bulk", (), (s, g, U(24), bar)),
        r"a bulk copy's size of 24 is not 16 to 1048575 in steps of 16",
    ),
    (inst("cp_async_bulk", (), (s, g, U(0), bar)), r"size of 0 is not 16 to"),
    (inst("cp_async_bulk", (), (s, g, U(16))), r"not 3 operands"),
    (inst("cp_async_bulk", (), (g, g, U(16), bar)), r"destination is a u32 shared address"),
    (inst("cp_async_bulk", (), (s, s, U(16), bar)), r"source is a u64 global address"),
    (inst("cp_async_bulk", (), (s, g, U(16), g)), r"an mbarrier is named by a u32 shared"),
    (inst("elect_sync", (n,)), r"writes a pred, then optionally the lane"),
    (inst("elect_sync", (p,), guard=p), r"runs on the whole warp and takes no guard"),
    (
        inst("setmaxnreg", action="inc", regs=20),
        r"a multiple of 8 registers from 24 to 256, not 20",
    ),
    (inst("setmaxnreg", action="inc", regs=260), r"not 260"),
    (inst("setmaxnreg", action="dec", regs=100), r"not 100"),
    (inst("setmaxnreg", action="up", regs=240), r"`action` inc or dec, not 'up'"),
    (inst("setmaxnreg", (), (U(240),), action="inc", regs=240), r"takes no operand"),
    (wg((g, g, p, *acc), shape="m64n12k16"), r"N a multiple of 8 up to 256, not 'm64n12k16'"),
    (wg((g, g, p, *acc), shape="m32n8k16"), r"not 'm32n8k16'"),
    (wg((g, g, p, *acc), from_type="f32"), r"sums f16 or bf16 products in f32"),
    (wg((g, g, p, *acc[:3])), r"not 6 operands"),
    (wg((s, g, p, *acc)), r"descriptor is a u64 register, not `%s`"),
    (wg((g, g, U(1), *acc)), r"scale is a pred register"),
    (wg((g, g, p, *acc[::-1])), r"the registers after the scale are its destinations"),
    (wg((g, g, p, *acc), major_b="T"), r"major_b is K or MN, not 'T'"),
    (wg((n, n, n, n, g, p, *acc), major_b="K"), r"a register A operand is four b32 registers"),
    (wg((g, g, p, *acc), guard=p), r"takes no guard"),
    (inst("wgmma_wait", pending=8), r"leaves 0 to 7 groups in flight, not 8"),
    (inst("wgmma_fence", (), (s,)), r"takes no operand"),
    (inst("wgmma_desc", (s,), (s,), lbo=16, sbo=1024, swizzle="128B"), r"writes one u64"),
    (inst("wgmma_desc", (g,), (g,), lbo=16, sbo=1024, swizzle="128B"), r"one u32 shared offset"),
    (inst("wgmma_desc", (g,), (s,), lbo=8, sbo=1024, swizzle="128B"), r"lbo is a multiple of 16"),
    (inst("wgmma_desc", (g,), (s,), lbo=16, sbo=1024, swizzle="256B"), r"no descriptor swizzles"),
]


@pytest.mark.parametrize(("item", "message"), REFUSED, ids=lambda x: getattr(x, "op", ""))
def test_the_verifier_refuses(item, message):
    with pytest.raises(LirError, match=message):
        verify(kernel(item))


_REGS = {
    "s": "u32",
    "x": "u32",
    "p": "pred",
    "da": "u64",
    "y": "f32",
    "z": "f32",
    **{f"d{i}": "f32" for i in range(4)},
    **{f"a{i}": "b32" for i in range(4)},
}
_ZEROED = "".join(f"  %d{i} = mov.f32 0.0:f32\n" for i in range(4)) + "".join(
    f"  %a{i} = mov.b32 0:b32\n" for i in range(4)
)
IN_FLIGHT = (
    "kernel hop(%g: u64) threads=128 smem=1024 {\n  shared tile @0 size=1024 align=16\n"
    + "".join(f"  reg %{n}: {t}\n" for n, t in _REGS.items())
    + "  %s = sreg.tid.x\n  %p = setp.lt.u32 %s, 4:u32\n"
    "  %da = wgmma_desc %s  [lbo=16, sbo=1024, swizzle=128B]\n"
    + _ZEROED
    + """  wgmma_fence
  %d0, %d1, %d2, %d3 = wgmma_mma.f32.bf16 %a0, %a1, %a2, %a3, %da, %p, %d0, %d1, %d2, %d3  [major_b=K, shape=m64n8k16]
  wgmma_commit
  %x = add.u32 %s, 1:u32
  BETWEEN
  wgmma_wait  [pending=0]
  %y = add.f32 %d0, %d1
}"""
)


@pytest.mark.parametrize(
    ("between", "message"),
    [
        ("%z = mul.f32 %d2, 2.0:f32", r"`%d2` is read while a wgmma group in flight writes it"),
        ("%d3 = mov.f32 0.0:f32", r"`%d3` is written while a wgmma group in flight uses it"),
        ("%a1 = mov.b32 7:b32", r"`%a1` is written while a wgmma group in flight uses it"),
        ("%da = wgmma_desc %x  [lbo=16, sbo=1024, swizzle=128B]", None),  # a wgmma op
    ],
)
def test_a_group_in_flight_is_left_alone(between, message):
    # invariant 10 (phobos.lower.verify): what `phobos.lower.overlap` may move a wait past
    k = parse_kernel(IN_FLIGHT.replace("BETWEEN", between))
    if message is None:
        verify(k)
        return
    with pytest.raises(LirError, match=message):
        verify(k)
    verify(parse_kernel(IN_FLIGHT.replace("  BETWEEN\n", "")))  # and without it, accepted
