"""Whole kernels: the entry's header, parameters and shared memory, a vector add written
in lir, and nested control flow, emitted and assembled for sm_80 and sm_90."""

import re

import pytest

from phobos.lower import lir
from phobos.lower.lir import (
    Block,
    Break,
    Continue,
    For,
    If,
    Imm,
    Kernel,
    Loop,
    Param,
    Reg,
    Return,
    SharedBuffer,
    inst,
)
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify
from phobos.ptx import TARGETS, emit_kernel, emit_module, target

ARCHS = ("sm_80", "sm_90")


def u32(name):
    return Reg(name, "u32")


def s32(name):
    return Reg(name, "s32")


def vector_add(threads: int = 256) -> Kernel:
    """out[i] = a[i] + b[i]: four f32 per thread by one 16-byte access where all four
    are in bounds, else element by element under a mask."""
    a, b, out, n = Reg("a", "u64"), Reg("b", "u64"), Reg("out", "u64"), s32("n")
    tid, cta, base, idx = u32("tid"), u32("cta"), u32("base"), s32("idx")
    off, pa, pb, po = Reg("off", "u64"), Reg("pa", "u64"), Reg("pb", "u64"), Reg("po", "u64")
    last, full, inb = s32("last"), Reg("full", "pred"), Reg("inb", "pred")
    xs = tuple(Reg(f"x{k}", "f32") for k in range(4))
    ys = tuple(Reg(f"y{k}", "f32") for k in range(4))
    j, e = s32("j"), s32("e")
    x, y, eo = Reg("x", "f32"), Reg("y", "f32"), Reg("eo", "u64")
    qa, qb, qo = Reg("qa", "u64"), Reg("qb", "u64"), Reg("qo", "u64")
    masked = Block(
        (
            For(
                j,
                Imm(0, "s32"),
                Imm(4, "s32"),
                Imm(1, "s32"),
                Block(
                    (
                        inst("add", (e,), (idx, j), type="s32"),
                        inst("setp", (inb,), (e, n), cmp="lt", type="s32"),
                        Break(inb, negated=True),
                        inst("mul_wide", (eo,), (e, Imm(4, "s32")), type="s32"),
                        inst("add", (qa,), (a, eo), type="u64"),
                        inst("add", (qb,), (b, eo), type="u64"),
                        inst("add", (qo,), (out, eo), type="u64"),
                        inst("ld", (x,), (qa,), space="global", type="f32"),
                        inst("ld", (y,), (qb,), space="global", type="f32"),
                        inst("add", (x,), (x, y), type="f32"),
                        inst("st", (), (qo, x), space="global", type="f32"),
                    )
                ),
            ),
        )
    )
    body = Block(
        (
            inst("sreg", (tid,), (), name="tid.x"),
            inst("sreg", (cta,), (), name="ctaid.x"),
            inst("mad", (base,), (cta, Imm(threads, "u32"), tid), type="u32"),
            inst("shl", (base,), (base, Imm(2, "u32")), type="u32"),
            inst("bitcast", (idx,), (base,), type="s32"),
            inst("mul_wide", (off,), (base, Imm(4, "u32")), type="u32"),
            inst("add", (pa,), (a, off), type="u64"),
            inst("add", (pb,), (b, off), type="u64"),
            inst("add", (po,), (out, off), type="u64"),
            inst("add", (last,), (idx, Imm(3, "s32")), type="s32"),
            inst("setp", (full,), (last, n), cmp="lt", type="s32"),
            inst("ld", xs, (pa,), space="global", type="f32", vec=4, guard=full),
            inst("ld", ys, (pb,), space="global", type="f32", vec=4, guard=full),
            *(inst("add", (xs[k],), (xs[k], ys[k]), type="f32", guard=full) for k in range(4)),
            inst("st", (), (po, *xs), space="global", type="f32", vec=4, guard=full),
            Return(full),
            If(Reg("full", "pred"), Block(()), masked),
        )
    )
    params = (Param("a", "u64"), Param("b", "u64"), Param("out", "u64"), Param("n", "s32"))
    return Kernel("vadd", params, body, threads=threads)


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_add_assembles(arch, assemble):
    k = vector_add()
    verify(k)
    text = emit_module([k], arch)
    assemble(text, arch)
    assert "@%p0 ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [%rd4];" in text
    assert re.search(r"@%p0 st\.global\.v4\.f32 \[%rd\d+\], \{%f0, %f1, %f2, %f3\};", text)
    assert "mov.u32 %r1, %tid.x;" in text and "mov.u32 %r2, %ctaid.x;" in text
    assert "mad.lo.u32 %r3, %r2, 256, %r1;" in text
    assert "@%p0 ret;" in text
    assert re.search(r"@%p0 bra (\$L_endif\d+);\n\tmov\.s32 %r6, 0;", text)  # only an else arm


def test_entry_header():
    params = (
        Param("x", "u64"),
        Param("alpha", "f32"),
        Param("h", "f16"),
        Param("g", "bf16"),
        Param("n", "s32"),
        Param("big", "s64"),
        Param("d", "f64"),
        Param("flag", "u32"),
    )
    k = Kernel("k", params, Block(()), threads=256, min_blocks=2, max_regs=128)
    text = emit_kernel(k, "sm_90")
    head = text.split("{")[0]
    slots = re.findall(r"\.param \.(\w+) (\w+)", head)
    assert slots == [("u64", "x"), ("f32", "alpha"), ("b16", "h"), ("b16", "g"), ("s32", "n"),
                     ("s64", "big"), ("f64", "d"), ("u32", "flag")]  # fmt: skip
    assert ".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 128\n{" in text
    assert "ld.param.b16 %h0, [h];" in text and "ld.param.b16 %hb0, [g];" in text
    assert "ld.param.f32 %f0, [alpha];" in text and "ld.param.s64 %rd1, [big];" in text
    assert ".maxnreg" not in emit_kernel(Kernel("k", params, Block(())), "sm_90")


@pytest.mark.parametrize("arch", ARCHS)
def test_header_assembles(arch, assemble):
    params = (Param("x", "u64"), Param("h", "f16"), Param("n", "s64"))
    k = Kernel("k", params, Block(()), threads=512, min_blocks=1, max_regs=64)
    assemble(emit_module([k, Kernel("k2", (), Block(()), threads=32)], arch), arch)


def test_module_header():
    text = emit_module([Kernel("a", (), Block(())), Kernel("b", (), Block(()))], "sm_90a")
    assert text.startswith(".version 8.0\n.target sm_90a\n.address_size 64\n")
    assert text.count(".visible .entry") == 2
    with pytest.raises(ValueError, match="unknown target `sm_70`"):
        emit_module([], "sm_70")
    assert set(TARGETS) == {"sm_80", "sm_90", "sm_90a"}
    assert target("sm_90a").has("wgmma") and not target("sm_90").has("wgmma")
    assert target("sm_90").has("async_proxy") and not target("sm_80").has("async_proxy")


def test_sm90a_assembles(assemble):
    assemble(emit_module([vector_add()], "sm_90a"), "sm_90a")


def shared_kernel(dynamic: bool) -> Kernel:
    tid, off, v = u32("tid"), u32("off"), Reg("v", "f32")
    body = Block(
        (
            inst("sreg", (tid,), (), name="tid.x"),
            inst("shl", (off,), (tid, Imm(2, "u32")), type="u32"),
            inst("add", (off,), (off, Imm(512, "u32")), type="u32"),  # buffer `b` at 512
            inst("st", (), (off, Imm(1.0, "f32")), space="shared", type="f32"),
            inst("bar", (), (Imm(0, "u32"),)),
            inst("ld", (v,), (off,), space="shared", type="f32", offset=4),
            inst("atom", (), (off, v), space="shared", type="f32", atom="add"),
        )
    )
    bufs = (SharedBuffer("a", 0, 512), SharedBuffer("b", 512, 512))
    return Kernel("sh", (), body, threads=128, smem=1024, shared=bufs, dynamic_smem=dynamic)


@pytest.mark.parametrize("arch", ARCHS)
def test_static_shared_memory(arch, assemble):
    k = shared_kernel(False)
    verify(k)
    text = emit_module([k], arch)
    assemble(text, arch)
    assert "\t.shared .align 16 .b8 $smem[1024];" in text
    assert "mov.u32 %rb0, $smem;" in text
    assert re.search(r"add\.u32 (%r\d+), %r\d+, %rb0;\n\tst\.shared\.f32 \[\1\], 0f3F800000;", text)
    assert re.search(r"ld\.shared\.f32 %f0, \[%r\d+\+4\];", text)
    assert "red.shared.add.f32" in text
    assert "$dsmem" not in text


@pytest.mark.parametrize("arch", ARCHS)
def test_dynamic_shared_memory(arch, assemble):
    text = emit_module([shared_kernel(True)], arch)
    assemble(text, arch)
    assert ".extern .shared .align 16 .b8 $dsmem_sh[];\n.visible .entry sh()" in text
    assert "mov.u32 %rb0, $dsmem_sh;" in text
    assert "$smem" not in text


def control_flow() -> Kernel:
    i, j, acc, lim = s32("i"), s32("j"), s32("acc"), s32("lim")
    p, q, done = Reg("p", "pred"), Reg("q", "pred"), Reg("done", "pred")
    out = Reg("out", "u64")
    k64 = Reg("k64", "u64")
    u = u32("u")
    inner = For(
        j,
        Imm(0, "s32"),
        lim,
        Imm(2, "s32"),
        Block(
            (
                inst("setp", (q,), (j, Imm(6, "s32")), cmp="eq", type="s32"),
                Continue(q),
                inst("add", (acc,), (acc, j), type="s32"),
                inst("setp", (q,), (acc, Imm(1000, "s32")), cmp="gt", type="s32"),
                Break(q),
                inst("add", (acc,), (acc, Imm(1, "s32")), type="s32"),
            )
        ),
    )
    body = Block(
        (
            inst("mov", (acc,), (Imm(0, "s32"),), type="s32"),
            inst("ld", (lim,), (out,), space="global", type="s32"),
            inst("setp", (p,), (lim, Imm(0, "s32")), cmp="le", type="s32"),
            Return(p),
            For(
                i,
                Imm(0, "s32"),
                Imm(10, "s32"),
                Imm(1, "s32"),
                Block(
                    (
                        inst("setp", (p,), (i, Imm(3, "s32")), cmp="lt", type="s32"),
                        If(p, Block((inner,)), Block((Continue(),))),
                        inst("setp", (p,), (acc, Imm(500, "s32")), cmp="ge", type="s32"),
                        If(p, Block((Break(),))),
                    )
                ),
            ),
            Loop(
                Block(
                    (
                        inst("add", (acc,), (acc, Imm(-7, "s32")), type="s32"),
                        inst("setp", (done,), (acc, Imm(0, "s32")), cmp="lt", type="s32"),
                        Break(done),
                        inst("setp", (p,), (acc, Imm(100, "s32")), cmp="gt", type="s32"),
                        Continue(p),
                        Return(p, negated=True),
                    )
                )
            ),
            For(
                k64,
                Imm(0, "u64"),
                Imm(4, "u64"),
                Imm(1, "u64"),
                Block((inst("cvt", (u,), (k64,), type="u32", from_type="u64"),)),
            ),
            inst("st", (), (out, acc), space="global", type="s32"),
        )
    )
    return Kernel("cf", (Param("out", "u64"),), body, threads=64)


@pytest.mark.parametrize("arch", ARCHS)
def test_control_flow_assembles(arch, assemble):
    k = control_flow()
    verify(k)
    text = emit_module([k], arch)
    assemble(text, arch)
    labels = re.findall(r"^(\$L_\w+):$", text, re.M)
    assert len(labels) == len(set(labels))
    targets = re.findall(r"bra(?:\.uni)? (\$L_\w+);", text)
    assert set(targets) <= set(labels)
    assert "setp.hs.u64" in text  # an unsigned loop variable compares unsigned
    assert "setp.ge.s32" in text


def branch_target(text: str, line_pattern: str) -> str:
    m = re.search(line_pattern + r".*\n\t(?:@!?%p\d+ )?bra(?:\.uni)? (\$L_\w+);", text)
    assert m, line_pattern
    return m.group(1)


def test_break_and_continue_reach_the_innermost_loop():
    text = emit_kernel(control_flow(), "sm_90")
    body = text.split("ld.param")[1]
    # the inner For (over %j): `continue if %q` goes to its increment, `break if %q` to its end
    fors = re.findall(r"^(\$L_for\d+):\n\tsetp\.ge\.s32 %p\d+, (%r\d+)", body, re.M)
    assert len(fors) == 2
    inner_next = re.search(r"(\$L_for_next\d+):\n\tadd\.s32 %r\d+, %r\d+, 2;", body).group(1)
    cont = re.search(r"setp\.eq\.s32 (%p\d+), %r\d+, 6;\n\t@\1 bra (\$L_\w+);", body).group(2)
    assert cont == inner_next
    brk = re.search(r"setp\.gt\.s32 (%p\d+), %r\d+, 1000;\n\t@\1 bra (\$L_\w+);", body).group(2)
    assert brk.startswith("$L_for_end") and f"{brk}:" in body
    # an if-else whose else arm continues the outer loop
    assert re.search(r"bra\.uni \$L_endif\d+;\n\$L_else\d+:\n\tbra\.uni \$L_for_next\d+;", body)
    assert "@!%p" in body and "ret;" in body


def test_text_form_emits_the_same_ptx():
    for k in (vector_add(), control_flow(), shared_kernel(False)):
        again = parse_kernel(lir.print_kernel(k))
        assert emit_kernel(again, "sm_90") == emit_kernel(k, "sm_90")


def test_register_names_are_mapped_in_a_comment():
    text = emit_kernel(vector_add(), "sm_90")
    assert "// %rd0 = %a, %rd1 = %b, %rd2 = %out, %r0 = %n" in text
    decls = re.findall(r"\.reg \.(\w+) %(\w+)<(\d+)>;", text)
    assert [d[1] for d in decls] == ["p", "r", "f", "rd"]


def test_every_op_family_round_trips_through_text():
    """The PTX of a kernel is the same after lir's text form: attributes survive printing."""
    import test_emit_ops as cases

    for build in cases.FAMILIES.values():
        for name, items in build("sm_90").items():
            k = cases.kernel(name, items)
            again = parse_kernel(lir.print_kernel(k))
            assert emit_kernel(again, "sm_90") == emit_kernel(k, "sm_90"), name
