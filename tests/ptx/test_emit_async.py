"""cp_async and its groups as PTX: `cp.async.{ca,cg}.shared.global` with a source size,
`cp.async.commit_group`, `cp.async.wait_group N`; assembled for sm_80 and sm_90, and
refused for a chip without cp.async."""

import re

import pytest

from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.verify import verify
from phobos.ptx import NoTemplate, TargetError, emit_kernel, emit_module
from phobos.ptx.emit import Emitter
from phobos.ptx.targets import FEATURES, Target

g, s, n, p = Reg("g", "u64"), Reg("s", "u32"), Reg("n", "u32"), Reg("p", "pred")


def kernel(*items) -> Kernel:
    head = (
        inst("sreg", (s,), (), name="tid.x"),
        inst("and", (n,), (s, Imm(15, "u32")), type="b32"),
        inst("setp", (p,), (s, Imm(4, "u32")), cmp="lt", type="u32"),
        inst("shl", (s,), (s, Imm(4, "u32")), type="b32"),
    )
    k = Kernel(
        "copy",
        (Param("g", "u64"),),
        Block(head + tuple(items)),
        threads=64,
        smem=1024,
        shared=(SharedBuffer("tile", 0, 1024),),
    )
    verify(k)
    return k


PIPELINE = kernel(
    inst("cp_async", (), (s, g), size=16),
    inst("cp_async", (), (s, g, n), size=16, guard=p),
    inst("cp_async", (), (s, g, Imm(0, "u32")), size=8, guard=p, guard_negated=True),
    inst("cp_async", (), (s, g, Imm(4, "u32")), size=4),
    inst("cp_async", (), (s, g), size=16, cache="ca"),
    inst("cp_async_commit"),
    inst("cp_async_commit", guard=p),
    inst("cp_async_wait", pending=1),
    inst("cp_async_wait", pending=0),
)


def body(text: str) -> list[str]:
    """The instructions after the shared window's base is taken, without their `;`."""
    lines = [line.strip().rstrip(";") for line in text.splitlines()]
    return lines[lines.index("mov.u32 %rb0, $smem") + 1 : -2]


def test_the_ptx_text():
    lines = body(emit_kernel(PIPELINE, "sm_80"))
    copies = [line for line in lines if "cp.async" in line]
    assert copies == [
        "cp.async.cg.shared.global [%r2], [%rd0], 16",
        "@%p0 cp.async.cg.shared.global [%r3], [%rd0], 16, %r1",
        "@!%p0 cp.async.ca.shared.global [%r4], [%rd0], 8, 0",
        "cp.async.ca.shared.global [%r5], [%rd0], 4, 4",
        "cp.async.ca.shared.global [%r6], [%rd0], 16",
        "cp.async.commit_group",
        "@%p0 cp.async.commit_group",
        "cp.async.wait_group 1",
        "cp.async.wait_group 0",
    ]
    # Each shared address is the lir offset rebased onto the window, unguarded, just before.
    assert lines[lines.index(copies[1]) - 1] == "add.u32 %r3, %r0, %rb0"


@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_it_assembles(arch, assemble):
    assemble(emit_module([PIPELINE], arch), arch)


def test_a_64_bit_shared_address_is_narrowed_first(assemble):
    wide = Reg("w", "u64")
    k = kernel(
        inst("cvt", (wide,), (s,), type="u64", from_type="u32"),
        inst("cp_async", (), (wide, g, n), size=16),
    )
    text = emit_kernel(k, "sm_80")
    assert re.search(r"cvt\.u32\.u64 (%r\d+), %rd1;\n\tadd\.u32 (%r\d+), \1, %rb0;", text)
    assemble(emit_module([k], "sm_80"), "sm_80")


def test_a_chip_without_cp_async_refuses_every_op():
    before = Target("sm_75", 75, "8.0", frozenset(f for f, (_, sm) in FEATURES.items() if sm <= 75))
    span = object()  # stands for the user's line
    for item in (
        inst("cp_async", (), (s, g), size=16, span=span),
        inst("cp_async_commit", span=span),
        inst("cp_async_wait", pending=0, span=span),
    ):
        with pytest.raises(TargetError, match="sm_75 does not have .*sm_80 or newer") as info:
            Emitter(kernel(item), before).run()
        assert info.value.span is span and info.value.code == "E0590"


NO_TEMPLATE = [
    (inst("cp_async", (), (s, g), size=8, cache="cg"), "`cg` copies 16 only"),
    (inst("cp_async", (), (s, g), size=2), "copies 2 bytes"),
    (inst("cp_async", (), (s, g), size=16, space="shared"), "attribute `space`"),
    (inst("cp_async_wait"), "`pending` None"),
]


@pytest.mark.parametrize("bad, says", NO_TEMPLATE, ids=[says for _, says in NO_TEMPLATE])
def test_what_has_no_template_names_the_op(bad, says):
    k = Kernel("copy", (Param("g", "u64"),), Block((inst("mov", (s,), (Imm(0, "u32"),)), bad)),
               smem=64)  # fmt: skip
    with pytest.raises(NoTemplate, match=f"`{bad.op}`.*{says}"):
        emit_kernel(k, "sm_90")
