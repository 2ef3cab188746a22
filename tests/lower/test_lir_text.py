"""lir's text form parses back to the same kernel, and the verifier catches what it lists."""

import pytest

from phobos.lower import lir
from phobos.lower.layout import Rows, Sweep
from phobos.lower.lir import Block, Break, Continue, For, If, Imm, Kernel, Loop, Param, Reg, inst
from phobos.lower.lirparse import LirSyntaxError, parse_kernel
from phobos.lower.verify import LirError, verify

t, p = Reg("t", "u32"), Reg("p", "pred")
a, f, g = Reg("a", "u64"), Reg("f", "f32"), Reg("g", "f32")
h, i = Reg("h", "f16"), Reg("i", "s32")


def sample() -> Kernel:
    body = Block(
        (
            inst("sreg", (t,), (), name="tid.x"),
            inst("setp", (p,), (t, Imm(100, "u32")), cmp="lt", type="u32"),
            inst("mul_wide", (Reg("o", "u64"),), (t, Imm(4, "u32")), type="u32"),
            inst("add", (a,), (a, Reg("o", "u64")), type="u64"),
            inst("mov", (f,), (Imm(0.0, "f32"),), type="f32"),
            inst("mov", (g,), (Imm(-1.5e30, "f32"),), type="f32"),
            inst("ld", (f, g), (a,), space="global", type="f32", vec=2, guard=p),
            If(p, Block((inst("add", (f,), (f, g), type="f32"),)), Block(())),
            For(
                i,
                Imm(0, "s32"),
                Imm(10, "s32"),
                Imm(1, "s32"),
                Block(
                    (
                        Continue(p, True),
                        inst("cvt", (h,), (f,), type="f16", from_type="f32", rounding="rn"),
                    )
                ),
            ),
            Loop(Block((Break(p),))),
            inst("shfl", (g,), (f, Imm(16, "u32"), Imm(31, "u32")), mode="bfly", type="b32"),
            inst("bar", (), (Imm(0, "u32"),)),
            inst("fence", (), (), scope="gpu", sem="acq_rel"),
            inst("atom", (f,), (a, g), space="global", atom="add", type="f32"),
            inst(
                "st", (), (a, f, g), space="global", type="f32", vec=2, guard=p, guard_negated=True
            ),
            lir.Return(p),
        )
    )
    return Kernel(
        "k",
        (Param("a", "u64"),),
        body,
        threads=128,
        smem=64,
        shared=(lir.SharedBuffer("buf", 0, 64),),
        max_regs=64,
    )


def test_text_form_round_trips():
    kernel = sample()
    verify(kernel)
    text = lir.print_kernel(kernel)
    assert parse_kernel(text) == kernel
    assert parse_kernel(text).body.items[5].srcs[0] == Imm(-1.5e30, "f32")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (Break(), "`break` outside a loop"),
        (inst("add", (f,), (Reg("zz", "f32"),), type="f32"), "`%zz` is read but never written"),
        (inst("add", (Reg("t", "f32"),), (f,), type="f32"), "`%t` is both u32 and f32"),
        (inst("ld", (f,), (t,), space="global", type="f32"), "a global address is u64"),
        (inst("ld", (f, g), (a,), space="global", type="f64", vec=4), "wider than 16 bytes"),
        (inst("setp", (f,), (f, g), cmp="lt", type="f32"), "`setp` writes one pred"),
        (If(f, Block(())), "is not a pred register"),
        (inst("frob", (f,), ()), "unknown op `frob`"),
        (inst("cvt", (h,), (f,), type="f16"), "needs the type it converts from"),
    ],
)
def test_verifier_names_the_broken_invariant(item, message):
    base = sample()
    kernel = Kernel("k", base.params, Block((*base.body.items, item)), threads=128, smem=64)
    with pytest.raises(LirError, match=message.replace("%", "%").replace("`", "`")):
        verify(kernel)


def test_parse_errors_name_the_line():
    text = lir.print_kernel(sample()).replace("add.f32", "frobnicate.f32", 1)
    with pytest.raises(LirSyntaxError, match=r"line \d+: unknown op `frobnicate`"):
        parse_kernel(text)


@pytest.mark.parametrize("layout", [Sweep((4, 8), 4, 4), Sweep((3, 10), 8, 2), Sweep((64,), 32, 1)])
def test_sweep_layout_is_a_bijection(layout):
    seen = set()
    for thread in range(layout.threads):
        for reg in range(layout.regs_per_thread):
            coord = layout.coord(thread, reg)
            if coord is None:
                continue
            assert layout.owner(coord) == (thread, reg)
            seen.add(coord)
    assert len(seen) == layout.size


def test_sweep_is_coalesced():
    layout = Sweep((2, 64), threads=32, vec=4)
    firsts = [layout.coord(thread, 0) for thread in range(32)]
    assert [c[1] for c in firsts[:16]] == list(range(0, 64, 4))


@pytest.mark.parametrize("layout", [Rows((4, 64), 64, 32, 2), Rows((5, 40), 64, 16, 1)])
def test_rows_layout_keeps_a_row_in_one_lane_group(layout):
    seen = set()
    for thread in range(layout.threads):
        for reg in range(layout.regs_per_thread):
            coord = layout.coord(thread, reg)
            if coord is None:
                continue
            assert layout.owner(coord) == (thread, reg)
            assert (coord[0] % layout.groups) == thread // layout.lanes
            seen.add(coord)
    assert len(seen) == layout.shape[0] * layout.shape[1]
