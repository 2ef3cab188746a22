"""Hopper's asynchronous ops as PTX: mbarriers (init, arrive, arrive.expect_tx,
try_wait.parity, fence.mbarrier_init), the bulk copy completing on an mbarrier,
fence.proxy.async, elect.sync, named barriers, setmaxnreg and wgmma (its descriptor, fence,
mma_async from descriptors or a register A, commit and wait); assembled for sm_90 (and
sm_90a for setmaxnreg and wgmma) and refused below."""

import pytest

from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, TensorMap, inst
from phobos.lower.verify import verify
from phobos.ptx import NoTemplate, TargetError, emit_kernel, emit_module

g, s, bar = Reg("g", "u64"), Reg("s", "u32"), Reg("bar", "u32")
n, p, q, lane, tok = (
    Reg("n", "u32"),
    Reg("p", "pred"),
    Reg("q", "pred"),
    Reg("l", "u32"),
    Reg("tok", "b64"),
)
U = lambda v: Imm(v, "u32")  # noqa: E731


def kernel(*items, threads=128, maps=()) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        inst("mov", (bar,), (U(1024),), type="u32"),
        inst("and", (n,), (s, U(1)), type="b32"),
    )
    k = Kernel(
        "hop",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=threads,
        smem=1040,
        shared=(SharedBuffer("tile", 0, 1024), SharedBuffer("bars", 1024, 16, 8)),
        maps=maps,
    )
    verify(k)
    return k


MBARRIERS = kernel(
    inst("mbarrier_init", (), (bar, U(1))),
    inst("mbarrier_init", (), (bar, n)),
    inst("fence_mbarrier_init"),
    inst("mbarrier_arrive", (tok,), (bar,)),
    inst("mbarrier_arrive", (), (bar,)),
    inst("mbarrier_arrive_expect_tx", (), (bar, U(256))),
    inst("mbarrier_arrive_expect_tx", (tok,), (bar, n), guard=p),
    inst("mbarrier_try_wait_parity", (q,), (bar, U(0))),
    inst("mbarrier_try_wait_parity", (q,), (bar, n)),
    inst("cp_async_bulk", (), (s, g, U(256), bar)),
    inst("cp_async_bulk", (), (s, g, n, bar), guard=q, guard_negated=True),
    inst("fence", space="shared", proxy="async"),
    inst("elect_sync", (p,)),
    inst("elect_sync", (p, lane)),
    inst("bar", (), (U(1), U(64))),
    inst("bar", (), (U(2), U(96)), arrive=1),
    inst("bar", (), (n, U(64)), arrive=1),
)

m, x = Reg("m", "u64"), Reg("x", "s32")
TMA = kernel(
    inst("tmap_addr", (m,), (), map="g_tmap"),
    inst("mov", (x,), (Imm(-3, "s32"),), type="s32"),
    inst("elect_sync", (p,)),
    inst("tma_load", (), (s, m, x, Imm(64, "s32"), bar), guard=p),
    maps=(TensorMap("g_tmap", "g", "f16", (100, "n"), (8, 64), "128B"),),
)

SETMAXNREG = kernel(
    inst("setmaxnreg", action="dec", regs=40), inst("setmaxnreg", action="inc", regs=232)
)


def body(text: str) -> list[str]:
    lines = [line.strip().rstrip(";") for line in text.splitlines()]
    return lines[lines.index("mov.u32 %rb0, $smem") + 1 : -2]


def test_the_ptx_text():
    lines = body(emit_kernel(MBARRIERS, "sm_90"))
    picked = [line for line in lines if not line.startswith(("add.u32", "mov.", "and.b32", "//"))]
    assert picked == [
        "mbarrier.init.shared::cta.b64 [%r4], 1",
        "mbarrier.init.shared::cta.b64 [%r5], %r2",
        "fence.mbarrier_init.release.cluster",
        "mbarrier.arrive.shared::cta.b64 %rd1, [%r6]",
        "mbarrier.arrive.shared::cta.b64 _, [%r7]",
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], 256",
        "@%p0 mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r9], %r2",
        "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r10], 0",
        "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r11], %r2",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r12], [%rd0], 256, "
        "[%r13]",
        "@!%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r14], [%rd0], "
        "%r2, [%r15]",
        "fence.proxy.async.shared::cta",
        "elect.sync _|%p0, 0xffffffff",
        "elect.sync %r3|%p0, 0xffffffff",
        "bar.sync 1, 64",
        "bar.arrive 2, 96",
        "bar.arrive %r2, 64",
    ]
    # Each mbarrier address is the lir offset rebased onto the window, just before.
    assert lines[lines.index(picked[0]) - 1] == "add.u32 %r4, %r1, %rb0"


def test_the_tma_text_takes_the_maps_generic_address_and_its_slot_follows_the_params():
    text = emit_kernel(TMA, "sm_90")
    head = text[: text.index(")")]
    assert head.rstrip().endswith(".param .u64 g,\n\t.param .align 64 .b8 g_tmap[128]")
    lines = [line.strip().rstrip(";") for line in text.splitlines()]
    at = lines.index("mov.b64 %rd1, g_tmap")
    assert lines[at + 1] == "cvta.param.u64 %rd1, %rd1"
    load = next(line for line in lines if "tensor" in line)
    assert load.startswith("@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                           "mbarrier::complete_tx::bytes [%r")  # fmt: skip
    assert "[%rd1, {%r3, 64}]" in load


def test_tma_assembles_for_sm_90(assemble):
    assemble(emit_module([TMA], "sm_90"), "sm_90")


def test_a_tmap_addr_naming_no_map_is_refused():
    with pytest.raises(Exception, match=r"names a tensor map of the kernel \(g_tmap\), not 'h'"):
        kernel(inst("tmap_addr", (m,), (), map="h"),
               maps=(TensorMap("g_tmap", "g", "f16", (100, "n"), (8, 64)),))  # fmt: skip


def test_setmaxnreg_text():
    text = emit_kernel(SETMAXNREG, "sm_90a")
    lines = [line.strip().rstrip(";") for line in text.splitlines() if "setmaxnreg" in line]
    assert lines == [
        "setmaxnreg.dec.sync.aligned.u32 40",
        "setmaxnreg.inc.sync.aligned.u32 232",
    ]


@pytest.mark.parametrize("arch", ("sm_90", "sm_90a"))
def test_it_assembles(arch, assemble):
    assemble(emit_module([MBARRIERS], arch), arch)


def test_setmaxnreg_assembles_for_sm_90a(assemble):
    assemble(emit_module([SETMAXNREG], "sm_90a"), "sm_90a")


@pytest.mark.parametrize(
    "item",
    [
        inst("mbarrier_init", (), (bar, U(1))),
        inst("mbarrier_arrive", (), (bar,)),
        inst("mbarrier_try_wait_parity", (q,), (bar, U(0))),
        inst("fence_mbarrier_init"),
        inst("cp_async_bulk", (), (s, g, U(16), bar)),
        inst("elect_sync", (p,)),
        inst("tma_load", (), (s, g, n, n, bar)),
    ],
    ids=lambda i: i.op,
)
def test_sm_80_is_refused(item):
    with pytest.raises(TargetError, match=r"needs sm_90 or newer") as info:
        emit_kernel(kernel(item), "sm_80")
    assert info.value.code == "E0590"
    assert f"`{item.op}` needs" in str(info.value)


def test_setmaxnreg_needs_sm_90a():
    with pytest.raises(TargetError, match=r"which sm_90 does not have \(it needs sm_90a"):
        emit_kernel(SETMAXNREG, "sm_90")


def test_named_barriers_assemble_on_sm_80(assemble):
    k = kernel(inst("bar", (), (U(1), U(64))), inst("bar", (), (U(2), U(96)), arrive=1))
    assemble(emit_module([k], "sm_80"), "sm_80")


def test_bar_arrive_needs_a_count():
    with pytest.raises(NoTemplate, match=r"bar.arrive needs one"):
        emit_kernel(kernel(inst("bar", (), (U(1),), arrive=1)), "sm_90")


def test_a_misfit_bulk_size_has_no_template():
    k = Kernel(
        "k",
        (Param("g", "u64"),),
        Block(
            (
                inst("mov", (bar,), (U(0),), type="u32"),
                inst("cp_async_bulk", (), (bar, g, U(24), bar)),
            )
        ),
        threads=32,
        smem=64,
    )
    with pytest.raises(NoTemplate, match=r"copies 24 bytes, not a positive multiple of 16"):
        emit_kernel(k, "sm_90")


# wgmma: a descriptor built from a shared offset, the fence, an m64n8k16 from two
# descriptors (B MN-major) and one from a register A, the commit and the wait.
da = Reg("da", "u64")
acc = tuple(Reg(f"acc{i}", "f32") for i in range(4))
regs_a = tuple(Reg(f"ra{i}", "b32") for i in range(4))
WGMMA = kernel(
    inst("setp", (p,), (s, U(0)), cmp="ge", type="u32"),
    *(inst("mov", (r,), (Imm(0.0, "f32"),), type="f32") for r in acc),
    *(inst("mov", (r,), (Imm(0, "b32"),), type="b32") for r in regs_a),
    inst("wgmma_desc", (da,), (s,), lbo=16, sbo=1024, swizzle="128B"),
    inst("wgmma_fence"),
    inst(
        "wgmma_mma",
        acc,
        (da, da, p, *acc),
        shape="m64n8k16",
        type="f32",
        from_type="f16",
        major_a="K",
        major_b="MN",
    ),  # fmt: skip
    inst(
        "wgmma_mma", acc, (*regs_a, da, p, *acc), shape="m64n8k16", type="f32", from_type="bf16"
    ),  # fmt: skip
    inst("wgmma_commit"),
    inst("wgmma_wait", pending=0),
)


def test_wgmma_text():
    text = emit_kernel(WGMMA, "sm_90a")
    lines = [line.strip().rstrip(";") for line in text.splitlines()]
    picked = [line for line in lines if line.startswith(("wgmma", "or.b64", "shr.u64", "and.b64"))]
    d = "{%f0, %f1, %f2, %f3}"
    assert picked == [
        "shr.u64 %rd2, %rd2, 4",
        "and.b64 %rd2, %rd2, 16383",
        f"or.b64 %rd1, %rd2, {(1 << 62) | (64 << 32) | (1 << 16)}",
        "wgmma.fence.sync.aligned",
        f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {d}, %rd1, %rd1, %p0, 1, 1, 0, 1",
        f"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {d}, {{%r3, %r4, %r5, %r6}}, "
        "%rd1, %p0, 1, 1, 0",
        "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned 0",
    ]


def test_wgmma_assembles_for_sm_90a(assemble):
    assemble(emit_module([WGMMA], "sm_90a"), "sm_90a")


def test_wgmma_needs_sm_90a():
    with pytest.raises(TargetError, match=r"`wgmma_desc` needs .* which sm_90 does not have "
                       r"\(it needs sm_90a"):  # fmt: skip
        emit_kernel(WGMMA, "sm_90")
