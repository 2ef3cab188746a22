"""Paired narrowing: two f32 -> f16 (or bf16) conversions packed into one 32-bit word
become one `cvt.rn.f16x2.f32` (emitted for sm_90 and later: `FROM_SM`).

The lowering converts element by element and packs at the store (`mov.b32 %w, {%lo,
%hi}`), so until the store every 16-bit result sits in a register of its own: a sweep
that evaluates all its groups before it stores any holds twice the registers it needs.
Converting straight into the packed word halves that, and is exact: each half is the
same round-to-nearest conversion.

A pair is fused only where nothing else can tell: both conversions and the pack in one
block, unguarded, round-to-nearest, without `sat`/`ftz`; each 16-bit register written
once and read only by the pack; the earlier conversion's f32 source not written
between the two (so it holds the same value where the fused line stands); the word
written once. The fused line takes the place of the later conversion; the earlier
one and the pack are dropped.

    >>> from phobos.lower.lir import Block, Kernel, Reg, inst
    >>> a, b = Reg("a", "f32"), Reg("b", "f32")
    >>> lo, hi, w = Reg("lo", "f16"), Reg("hi", "f16"), Reg("w", "b32")
    >>> body = Block((inst("cvt", (lo,), (a,), type="f16", from_type="f32", rounding="rn"),
    ...               inst("cvt", (hi,), (b,), type="f16", from_type="f32", rounding="rn"),
    ...               inst("mov", (w,), (lo, hi), type="b32")))
    >>> plan = pairs(Kernel("k", (), body, threads=32))
    >>> [plan[id(i)] for i in body.items]  # doctest: +NORMALIZE_WHITESPACE
    [None, ('f16', Reg(name='w', type='b32'), Reg(name='b', type='f32'),
            Reg(name='a', type='f32')), None]
"""

from __future__ import annotations

from collections import Counter

from phobos.lower import lir

X2 = {"f16": "f16x2", "bf16": "bf16x2"}  # the packed conversion for each 16-bit float
# The first chip the emitter fuses for. The instruction exists from sm_80, but there
# ptxas already caps these kernels at 64 registers and fused pairs made it spill
# (layer_norm, BLOCK 8192: 8 bytes) or grow (rms_norm: 48 -> 60); on sm_90 they shrink
# (layer_norm 67 -> 53, rms_norm 54 -> 51).
FROM_SM = 90


def _counts(kernel: lir.Kernel) -> tuple[Counter, Counter]:
    """(writes, reads) of every register name in `kernel`."""
    writes: Counter = Counter()
    reads: Counter = Counter()

    def read(v) -> None:
        if isinstance(v, lir.Reg):
            reads[v.name] += 1

    def walk(block: lir.Block) -> None:
        for item in block.items:
            if isinstance(item, lir.Inst):
                for d in item.dests:
                    writes[d.name] += 1
                for v in (*item.srcs, item.guard):
                    read(v)
            elif isinstance(item, lir.If):
                read(item.cond)
                walk(item.then)
                if item.orelse is not None:
                    walk(item.orelse)
            elif isinstance(item, lir.For):
                writes[item.var.name] += 2  # set and stepped: never a single write
                for v in (item.var, item.lo, item.hi, item.step):
                    read(v)
                walk(item.body)
            elif isinstance(item, lir.Loop):
                walk(item.body)
            else:
                read(getattr(item, "cond", None))

    walk(kernel.body)
    return writes, reads


def _written(items) -> set[str]:
    """The registers `items` (and the blocks inside them) write."""
    out: set[str] = set()
    for item in items:
        if isinstance(item, lir.Inst):
            out.update(d.name for d in item.dests)
        elif isinstance(item, lir.If):
            out |= _written(item.then.items)
            if item.orelse is not None:
                out |= _written(item.orelse.items)
        elif isinstance(item, lir.For):
            out.add(item.var.name)
            out |= _written(item.body.items)
        elif isinstance(item, lir.Loop):
            out |= _written(item.body.items)
    return out


def _narrowing(i: lir.Inst) -> bool:
    return (
        i.op == "cvt"
        and i.guard is None
        and len(i.dests) == 1
        and len(i.srcs) == 1
        and i.dests[0].type in X2
        and i.attr("type", i.dests[0].type) == i.dests[0].type
        and i.attr("from_type") == "f32"
        and i.attr("rounding") == "rn"
        and not i.attr("sat")
        and not i.attr("ftz")
        and isinstance(i.srcs[0], lir.Reg)
    )


def pairs(kernel: lir.Kernel) -> dict[int, tuple | None]:
    """The fusion plan: `id(inst)` -> None (drop it) or (elem, word, hi_src, lo_src), the
    fused conversion to write in its place."""
    writes, reads = _counts(kernel)
    plan: dict[int, tuple | None] = {}

    def block(b: lir.Block) -> None:
        narrow: dict[str, tuple[int, lir.Inst]] = {}  # 16-bit register -> (position, cvt)
        for pos, item in enumerate(b.items):
            if isinstance(item, lir.Inst):
                if _narrowing(item):
                    d = item.dests[0]
                    if writes[d.name] == 1 and reads[d.name] == 1:
                        narrow[d.name] = (pos, item)
                elif (
                    item.op == "mov"
                    and item.guard is None
                    and len(item.srcs) == 2
                    and len(item.dests) == 1
                    and item.dests[0].type == "b32"
                    and writes[item.dests[0].name] == 1
                    and all(isinstance(v, lir.Reg) and v.name in narrow for v in item.srcs)
                    and item.srcs[0].name != item.srcs[1].name
                ):
                    (pa, ca), (pb, cb) = (narrow.pop(v.name) for v in item.srcs)
                    elem = ca.dests[0].type
                    if cb.dests[0].type != elem:
                        continue
                    later, earlier = (ca, cb) if pa > pb else (cb, ca)
                    between = _written(b.items[min(pa, pb) + 1 : max(pa, pb)])
                    if earlier.srcs[0].name in between:  # it would read a newer value
                        continue
                    plan[id(earlier)] = None
                    plan[id(item)] = None
                    plan[id(later)] = (elem, item.dests[0], cb.srcs[0], ca.srcs[0])
            elif isinstance(item, lir.If):
                block(item.then)
                if item.orelse is not None:
                    block(item.orelse)
            elif isinstance(item, (lir.For, lir.Loop)):
                block(item.body)

    block(kernel.body)
    return plan
