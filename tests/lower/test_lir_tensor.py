"""The tensor-core ops and cvt_x2 in lir's text form, and what the verifier refuses of them."""

import pytest

from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import LirError, verify

g, s, p = Reg("g", "u64"), Reg("s", "u32"), Reg("p", "pred")


def regs(name: str, type_: str, n: int) -> list[Reg]:
    return [Reg(f"{name}{k}", type_) for k in range(n)]


a, b, c = regs("a", "b32", 4), regs("b", "b32", 2), regs("c", "f32", 4)
h, i = regs("h", "b32", 2), regs("i", "s32", 4)
wa, wb, wc = regs("wa", "b32", 8), regs("wb", "b32", 8), regs("wc", "f32", 8)
w = Reg("w", "b32")
WMMA = {"shape": "m16n16k16"}


def kernel(*items) -> Kernel:
    # Every register the items read is written first, so that only their shape matters.
    written = {"g", "s", "p"}
    head = [
        inst("sreg", (s,), (), name="tid.x"),
        inst("setp", (p,), (s, Imm(4, "u32")), cmp="lt", type="u32"),
    ]
    for item in items:
        for v in item.srcs:
            if isinstance(v, Reg) and v.name not in written:
                written.add(v.name)
                head.append(inst("mov", (v,), (Imm(0, v.type),), type=v.type))
        written.update(d.name for d in item.dests)
    return Kernel(
        "tc",
        (Param("g", "u64"),),
        Block((*head, *items)),
        threads=64,
        smem=2048,
        shared=(SharedBuffer("tile", 0, 2048, 32),),
    )


ITEMS = (
    inst("ldmatrix", a, (s,), space="shared", type="b16"),
    inst("ldmatrix", b, (s,), space="shared", type="b16", trans=1),
    inst("ldmatrix", a[:1], (s,), space="shared", type="b16"),
    inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="f16"),
    inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="bf16"),
    inst("mma", h, (*a, *b, *h), shape="m16n8k16", type="f16", from_type="f16"),
    inst("mma", i, (*a, *b, *i), shape="m16n8k32", type="s32", from_type="s8"),
    inst("mma", i[:2], (a[0], b[0], *i[:2]), shape="m8n8k16", type="s32", from_type="s8"),
    inst("cvt_x2", (w,), (c[0], c[1]), type="f16", from_type="f32", rounding="rn"),
    inst("cvt_x2", (w,), (c[2], c[3]), type="bf16", from_type="f32", rounding="rz", guard=p),
    inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="row", **WMMA),
    inst("wmma_load", wb, (s, Imm(32, "u32")), space="shared", type="f16", matrix="b",
         layout="col", **WMMA),
    inst("wmma_load", wc, (g,), space="global", type="f32", matrix="c", layout="row", **WMMA),
    inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="f16", alayout="row",
         blayout="col", **WMMA),
    inst("wmma_store", (), (s, *wc, s), space="shared", type="f32", layout="row", **WMMA),
    inst("wmma_store", (), (g, *wc), space="global", type="f32", layout="col", **WMMA),
)  # fmt: skip

LINES = """\
  %a0, %a1, %a2, %a3 = ldmatrix.shared.b16 %s
  %b0, %b1 = ldmatrix.shared.b16 %s  [trans=1]
  %a0 = ldmatrix.shared.b16 %s
  %c0, %c1, %c2, %c3 = mma.f32.f16 %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3  [shape=m16n8k16]
  %c0, %c1, %c2, %c3 = mma.f32.bf16 %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3  [shape=m16n8k16]
  %h0, %h1 = mma.f16.f16 %a0, %a1, %a2, %a3, %b0, %b1, %h0, %h1  [shape=m16n8k16]
  %i0, %i1, %i2, %i3 = mma.s32.s8 %a0, %a1, %a2, %a3, %b0, %b1, %i0, %i1, %i2, %i3  [shape=m16n8k32]
  %i0, %i1 = mma.s32.s8 %a0, %b0, %i0, %i1  [shape=m8n8k16]
  %w = cvt_x2.rn.f16.f32 %c0, %c1
  @%p %w = cvt_x2.rz.bf16.f32 %c2, %c3
  %wa0, %wa1, %wa2, %wa3, %wa4, %wa5, %wa6, %wa7 = wmma_load.shared.f16 %s  [layout=row, matrix=a, shape=m16n16k16]
  %wb0, %wb1, %wb2, %wb3, %wb4, %wb5, %wb6, %wb7 = wmma_load.shared.f16 %s, 32:u32  [layout=col, matrix=b, shape=m16n16k16]
  %wc0, %wc1, %wc2, %wc3, %wc4, %wc5, %wc6, %wc7 = wmma_load.global.f32 %g  [layout=row, matrix=c, shape=m16n16k16]
  %wc0, %wc1, %wc2, %wc3, %wc4, %wc5, %wc6, %wc7 = wmma_mma.f32.f16 %wa0, %wa1, %wa2, %wa3, %wa4, %wa5, %wa6, %wa7, %wb0, %wb1, %wb2, %wb3, %wb4, %wb5, %wb6, %wb7, %wc0, %wc1, %wc2, %wc3, %wc4, %wc5, %wc6, %wc7  [alayout=row, blayout=col, shape=m16n16k16]
  wmma_store.shared.f32 %s, %wc0, %wc1, %wc2, %wc3, %wc4, %wc5, %wc6, %wc7, %s  [layout=row, shape=m16n16k16]
  wmma_store.global.f32 %g, %wc0, %wc1, %wc2, %wc3, %wc4, %wc5, %wc6, %wc7  [layout=col, shape=m16n16k16]
"""


def test_the_text_form_reads_back_to_the_same_kernel():
    k = kernel(*ITEMS)
    verify(k)
    text = lir.print_kernel(k)
    assert text.endswith(LINES + "}")
    assert parse_kernel(text) == k
    assert {lir.OPS[i.op] for i in ITEMS} == {"tensor", "convert"}
    assert lir.TENSOR == {"ldmatrix", "mma", "wmma_load", "wmma_mma", "wmma_store"}


REFUSED = [
    # ldmatrix
    (inst("ldmatrix", a[:3], (s,), space="shared", type="b16"), "1, 2 or 4 b32 registers"),
    (inst("ldmatrix", [Reg("f", "f32")], (s,), space="shared", type="b16"), "1, 2 or 4 b32"),
    (inst("ldmatrix", a, (g,), space="shared", type="b16"), "one u32 shared address register"),
    (inst("ldmatrix", a, (s, s), space="shared", type="b16"), "one u32 shared address register"),
    (inst("ldmatrix", a, (s,), space="global", type="b16"), "`ldmatrix.shared.b16`"),
    (inst("ldmatrix", a, (s,), space="shared", type="b32"), "`ldmatrix.shared.b16`"),
    (inst("ldmatrix", a, (s,), space="shared", type="b16", trans=2), "`trans` 0 or 1, not 2"),
    (inst("ldmatrix", a, (s,), space="shared", type="b16", trans=True), "`trans` 0 or 1"),
    (inst("ldmatrix", a, (s,), space="shared", type="b16", guard=p), "takes no guard"),
    # mma
    (inst("mma", c, (*a, *b, *c), shape="m16n8k8", type="f32", from_type="f16"),
     "no form m16n8k8 f16 -> f32; it has m16n8k16 f16 -> f32"),
    (inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="s8"),
     "no form m16n8k16 s8 -> f32"),
    (inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32"), "no form m16n8k16 None"),
    (inst("mma", c, (*a[:3], *b, *c), shape="m16n8k16", type="f32", from_type="f16"),
     "m16n8k16 f16 -> f32 reads 10 registers (A 4, B 2, C 4), not 9"),
    (inst("mma", c, (*a, *b, *c[:3]), shape="m16n8k16", type="f32", from_type="f16"),
     "reads 10 registers"),
    (inst("mma", c[:2], (*a, *b, *c), shape="m16n8k16", type="f32", from_type="f16"),
     "writes 4 f32 registers for D"),
    (inst("mma", i, (*a, *b, *c), shape="m16n8k32", type="s32", from_type="s8"),
     "takes 4 s32 registers for C"),
    (inst("mma", c[:2], (*a, *b, *c[:2]), shape="m16n8k16", type="f16", from_type="f16"),
     "2 b32 registers for C"),
    (inst("mma", c, (*a[:2], *c[:2], *b, *c), shape="m16n8k16", type="f32", from_type="f16"),
     "takes 4 b32 registers for A"),
    (inst("mma", c, (*a, *b, *c), shape="m16n8k16", type="f32", from_type="f16", guard=p),
     "`mma` runs on the whole warp and takes no guard"),
    (inst("mma", c, (*a, *b, c[0], c[1], c[2], Imm(0.0, "f32")), shape="m16n8k16", type="f32",
          from_type="f16"), "takes registers, not immediates"),
    # cvt_x2
    (inst("cvt_x2", (w,), (c[0], c[1]), type="f32", from_type="f32"), "to f16 or bf16"),
    (inst("cvt_x2", (w,), (c[0], c[1]), type="f16", from_type="f64"), "rounds f32"),
    (inst("cvt_x2", (w,), (c[0], c[1]), type="f16", from_type="f32", rounding="rm"),
     "by `rn` or `rz`, not `rm`"),
    (inst("cvt_x2", (w,), (c[0],), type="f16", from_type="f32"), "two f32 registers"),
    (inst("cvt_x2", (w,), (c[0], Imm(1.0, "f32")), type="f16", from_type="f32"),
     "two f32 registers"),
    (inst("cvt_x2", (c[2],), (c[0], c[1]), type="f16", from_type="f32"), "one b32 register"),
    # WMMA
    (inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="row",
          shape="m16n8k16"), "shape m16n16k16, not m16n8k16"),
    (inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="rows", **WMMA),
     "`layout` row or col, not rows"),
    (inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="d", layout="row", **WMMA),
     "`matrix` a or b of f16 or c of f32"),
    (inst("wmma_load", wa, (s,), space="shared", type="f32", matrix="a", layout="row", **WMMA),
     "`matrix` a or b of f16 or c of f32"),
    (inst("wmma_load", wc, (s,), space="shared", type="f16", matrix="b", layout="row", **WMMA),
     "8 b32 registers for B"),
    (inst("wmma_load", wa, (g,), space="shared", type="f16", matrix="a", layout="row", **WMMA),
     "a shared address is a u32 register, not u64"),
    (inst("wmma_load", wa, (s,), space="global", type="f16", matrix="a", layout="row", **WMMA),
     "a global address is a u64 register, not u32"),
    (inst("wmma_load", wa, (s,), space="local", type="f16", matrix="a", layout="row", **WMMA),
     "shared or global memory, not local"),
    (inst("wmma_load", wa, (s, Reg("f", "f32")), space="shared", type="f16", matrix="a",
          layout="row", **WMMA), "a stride is a 32-bit integer, not f32"),
    (inst("wmma_load", wa, (s, s, s), space="shared", type="f16", matrix="a", layout="row",
          **WMMA), "an address, no registers and an optional stride"),
    (inst("wmma_mma", wc, (*wa, *wb, *wc), type="f16", from_type="f16", alayout="row",
          blayout="col", **WMMA), "`wmma_mma.f32.f16`"),
    (inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="f16", alayout="row", **WMMA),
     "`blayout` row or col, not None"),
    (inst("wmma_mma", wc, (*wa, *wb[:7], *wc), type="f32", from_type="f16", alayout="row",
          blayout="col", **WMMA), "reads 24 registers (A 8, B 8, C 8), not 23"),
    (inst("wmma_store", (), (s, *wc[:7]), space="shared", type="f32", layout="row", **WMMA),
     "an address, 8 registers and an optional stride"),
    (inst("wmma_store", (), (s, *wa), space="shared", type="f32", layout="row", **WMMA),
     "8 f32 registers for D"),
    (inst("wmma_store", (), (s, *wc), space="shared", type="f16", layout="row", **WMMA),
     "`wmma_store.f32`"),
    (inst("wmma_store", (), (s, *wc), space="shared", type="f32", layout="row", guard=p, **WMMA),
     "`wmma_store` runs on the whole warp and takes no guard"),
]  # fmt: skip


@pytest.mark.parametrize("bad, says", REFUSED, ids=[says for _, says in REFUSED])
def test_the_verifier_refuses(bad, says):
    with pytest.raises(LirError, match=says.replace("(", r"\(").replace(")", r"\)")) as info:
        verify(kernel(bad))
    assert str(info.value).startswith("`tc`: ") and "in `" in str(info.value)
