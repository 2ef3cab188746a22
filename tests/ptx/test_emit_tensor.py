"""The tensor-core ops as PTX: `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16`, every
`mma.sync.aligned` form, `cvt.rn.f16x2.f32` with its sources swapped, and WMMA's load,
mma and store; assembled for sm_80 and sm_90 (tensorkit's kernels too, which the card
runs), and refused for a chip without tensor-core instructions of these kinds."""

import sys
from pathlib import Path

import pytest

from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.verify import verify
from phobos.ptx import NoTemplate, TargetError, emit_kernel, emit_module
from phobos.ptx.emit import Emitter
from phobos.ptx.targets import FEATURES, Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interp"))

import tensorkit  # noqa: E402

g, s = Reg("g", "u64"), Reg("s", "u32")


def regs(name: str, type_: str, n: int) -> list[Reg]:
    return [Reg(f"{name}{k}", type_) for k in range(n)]


a, b, c = regs("a", "b32", 4), regs("b", "b32", 2), regs("c", "f32", 4)
h, i = regs("h", "b32", 2), regs("i", "s32", 4)
wa, wb, wc = regs("wa", "b32", 8), regs("wb", "b32", 8), regs("wc", "f32", 8)
w = Reg("w", "b32")
WMMA = {"shape": "m16n16k16"}


def kernel(*items, check=True) -> Kernel:
    head = [inst("sreg", (s,), (), name="tid.x"), inst("shl", (s,), (s, Imm(5, "u32")), type="b32")]
    written = {"g", "s"}
    for item in items:
        for v in item.srcs:
            if isinstance(v, Reg) and v.name not in written:
                written.add(v.name)
                head.append(inst("mov", (v,), (Imm(0, v.type),), type=v.type))
        written.update(d.name for d in item.dests)
    k = Kernel(
        "tc",
        (Param("g", "u64"),),
        Block((*head, *items)),
        threads=64,
        smem=2048,
        shared=(SharedBuffer("tile", 0, 2048, 32),),
    )
    if check:
        verify(k)
    return k


EVERY = kernel(
    inst("ldmatrix", a, (s,), space="shared", type="b16"),
    inst("ldmatrix", b, (s,), space="shared", type="b16", trans=1),
    inst("ldmatrix", a[:1], (s,), space="shared", type="b16"),
    inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="f16"),
    inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="bf16"),
    inst("mma", h, (*a, *b, *h), shape="m16n8k16", type="f16", from_type="f16"),
    inst("mma", i, (*a, *b, *i), shape="m16n8k32", type="s32", from_type="s8"),
    inst("mma", i[:2], (a[0], b[0], *i[:2]), shape="m8n8k16", type="s32", from_type="s8"),
    inst("cvt_x2", (w,), (c[0], c[1]), type="f16", from_type="f32", rounding="rn"),
    inst("cvt_x2", (w,), (c[2], c[3]), type="bf16", from_type="f32", rounding="rz"),
    inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="row", **WMMA),
    inst("wmma_load", wb, (s, Imm(32, "u32")), space="shared", type="f16", matrix="b",
         layout="col", **WMMA),
    inst("wmma_load", wc, (g, s), space="global", type="f32", matrix="c", layout="row", **WMMA),
    inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="f16", alayout="row",
         blayout="col", **WMMA),
    inst("wmma_store", (), (s, *wc), space="shared", type="f32", layout="row", **WMMA),
    inst("wmma_store", (), (g, *wc, Imm(24, "u32")), space="global", type="f32", layout="col",
         **WMMA),
)  # fmt: skip


def body(text: str) -> list[str]:
    """The instructions after the shared window's base is taken, without their `;`."""
    lines = [line.strip().rstrip(";") for line in text.splitlines()]
    return lines[lines.index("mov.u32 %rb0, $smem") + 1 : -2]


def test_the_ptx_text():
    lines = body(emit_kernel(EVERY, "sm_80"))
    ops = [line for line in lines if line.split(" ")[0].split(".")[0] in ("ldmatrix", "mma",
                                                                          "wmma", "cvt")]  # fmt: skip
    fa, fb, fc = "{%r7, %r8, %r9, %r10}", "{%r11, %r12}", "{%f0, %f1, %f2, %f3}"
    hd, fi = "{%r1, %r2}", "{%r3, %r4, %r5, %r6}"
    ra = ", ".join(f"%r{k}" for k in range(14, 22))
    rb = ", ".join(f"%r{k}" for k in range(22, 30))
    rc = ", ".join(f"%f{k}" for k in range(4, 12))
    assert ops == [
        f"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {fa}, [%r30]",
        f"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {fb}, [%r31]",
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r7}, [%r32]",
        f"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {fc}, {fa}, {fb}, {fc}",
        f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {fc}, {fa}, {fb}, {fc}",
        f"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {hd}, {fa}, {fb}, {hd}",
        f"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {fi}, {fa}, {fb}, {fi}",
        "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r3, %r4}, {%r7}, {%r11}, {%r3, %r4}",
        # PTX takes the upper half's source first: lir's `%c0, %c1` (low first) swap.
        "cvt.rn.f16x2.f32 %r13, %f1, %f0",
        "cvt.rz.bf16x2.f32 %r13, %f3, %f2",
        f"wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {{{ra}}}, [%r33]",
        f"wmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {{{rb}}}, [%r34], 32",
        f"wmma.load.c.sync.aligned.row.m16n16k16.global.f32 {{{rc}}}, [%rd0], %r0",
        f"wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {{{rc}}}, {{{ra}}}, {{{rb}}}, {{{rc}}}",
        f"wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%r35], {{{rc}}}",
        f"wmma.store.d.sync.aligned.col.m16n16k16.global.f32 [%rd0], {{{rc}}}, 24",
    ]
    # A shared address is the lir offset rebased onto the window, just before its use.
    assert lines[lines.index(ops[0]) - 1] == "add.u32 %r30, %r0, %rb0"


@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_it_assembles(arch, assemble):
    assemble(emit_module([EVERY], arch), arch)


@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_the_kernels_the_card_runs_assemble(arch, assemble):
    cases = tensorkit.CASES + tensorkit.LDMATRIX_CASES
    assemble(emit_module([case.kernel() for case in cases], arch), arch)


def test_wmma_shared_memory_is_declared_32_byte_aligned():
    text = emit_kernel(tensorkit.case("wmma_row_col").kernel(), "sm_90")
    assert ".shared .align 32 .b8 $smem[4096];" in text


def test_a_chip_without_them_refuses_every_op():
    before = Target("sm_75", 75, "8.0", frozenset(f for f, (_, sm) in FEATURES.items() if sm <= 75))
    span = object()  # stands for the user's line
    for item in EVERY.body.items[2:]:
        if item.op == "mov":
            continue
        item = inst(item.op, item.dests, item.srcs, span=span, **dict(item.attrs))
        with pytest.raises(TargetError, match="sm_75 does not have .*sm_80 or newer") as info:
            Emitter(kernel(item), before).run()
        assert info.value.span is span and info.value.code == "E0590"


NO_TEMPLATE = [
    (inst("ldmatrix", a, (s,), space="shared", type="b32"), "other than b16 matrices"),
    (inst("ldmatrix", a[:3], (s,), space="shared", type="b16"), "loads 3 matrices"),
    (inst("ldmatrix", a, (s,), space="shared", type="b16", trans=2), "`trans` 2"),
    (inst("ldmatrix", a, (g,), space="shared", type="b16"), "u32 shared address register"),
    (inst("ldmatrix", a, (s,), space="shared", type="b16", vec=2), "attribute `vec`"),
    (inst("mma", c, (*a, *b, *c), shape="m16n8k8", type="f32", from_type="f16"),
     "no form m16n8k8 f16 -> f32"),
    (inst("mma", c, (*a, *b, *c[:3]), shape="m16n8k16", type="f32", from_type="f16"),
     "4 f32 registers for C"),
    (inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="f16", cache="cg"),
     "attribute `cache`"),
    (inst("cvt_x2", (w,), (c[0], c[1]), type="f16", from_type="f32", rounding="rm"),
     "rounding `rm`"),
    (inst("cvt_x2", (w,), (c[0], c[1]), type="f32", from_type="f32"), "rounds f32 to f32"),
    (inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="row",
          shape="m8n32k16"), "shape m8n32k16"),
    (inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="c", layout="row", **WMMA),
     "loads matrix 'c' of f16"),
    (inst("wmma_load", wa, (s,), space="local", type="f16", matrix="a", layout="row", **WMMA),
     "`local` memory"),
    (inst("wmma_load", wa, (s,), space="global", type="f16", matrix="a", layout="row", **WMMA),
     "u64 global address register"),
    (inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="bf16", alayout="row",
          blayout="col", **WMMA), "f16 multiplied into f32"),
    (inst("wmma_store", (), (s, *wc), space="shared", type="f32", layout="diag", **WMMA),
     "`layout` 'diag'"),
]  # fmt: skip


@pytest.mark.parametrize("bad, says", NO_TEMPLATE, ids=[says for _, says in NO_TEMPLATE])
def test_what_has_no_template_names_the_op(bad, says):
    k = kernel(bad, check=False)
    with pytest.raises(NoTemplate, match=f"`{bad.op}`.*{says}"):
        emit_kernel(k, "sm_90")
