"""Row reductions of any shape, and `rowargmax`: a warp a row, through shared memory.

`phobos.lower.reduce` folds a row where the sweep's layout already gathers it (rows
spanning the CTA, or a row on a power of two lanes of one warp, at most 32). Every
other `rowsum`/`rowmax`, and every `rowargmax`, is lowered here in two stages:

1. The argument (an elementwise expression, evaluated per element as a sweep would)
   is swept into a staging buffer `[R, C]` of its element type. A barrier follows.
2. Warp `w` folds rows `w, w + W, ...` (a loop over rows): lane `l` folds the
   columns `l, l + 32, ...` (consecutive lanes, consecutive words: no bank conflict),
   then `shfl.bfly` over the warp; lane 0 writes the row's result. A one-row target
   kept in every thread's registers is folded by every warp, each lane keeping it.

| built-in    | a lane's fold                                   | combining two lanes                  |
|-------------|-------------------------------------------------|--------------------------------------|
| `rowsum`    | `add` in the accumulator type (f32 for 16 bits) | `add`                                |
| `rowmax`    | `max` from NaN (a NaN loses, as `fmax`; a row of NaNs is NaN) | `max`                   |
| `rowargmax` | the first column holding the largest value (NaN counts as -inf), in column order | the larger value, the smaller column on a tie |

    >>> covered(256, (16, 64), 4)
    True
    >>> covered(256, (8, 100), 1)
    False
"""

from __future__ import annotations

import logging

from phobos.lower import lir, reduce, scalars, staging
from phobos.lower.builder import iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg
from phobos.lower.sweep import Point, State, Sweeper, declare
from phobos.lower.types import REG, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")

NAMES = ("rowsum", "rowmax", "rowargmax")
UNROLL = 8  # column steps a lane folds straight-line; more run as a loop


def covered(threads: int, value_or_shape, vec: int) -> bool:
    """Whether `phobos.lower.reduce` folds this reduction itself (its two cases)."""
    if isinstance(value_or_shape, hir.Builtin):
        if value_or_shape.name not in ("rowsum", "rowmax"):
            return False
        shape = tuple(value_or_shape.args[0].type.dims)
    else:
        shape = tuple(value_or_shape)
    r, c = shape
    tv = threads * vec
    if r == 1 or c % tv == 0:
        return True
    tpr = c // vec if tv % c == 0 else None
    return tpr is not None and tpr <= 32 and tpr & (tpr - 1) == 0


def row_reduction(lw, e: hir.Builtin, target) -> None:
    """`target = rowsum(arg)` / `rowmax(arg)` / `rowargmax(arg)`, staged, a warp a row."""
    name = e.name
    if lw.threads % 32:
        raise NotLowered(
            f"`{name}`",
            e.span,
            code="E0512",
            message=f"`{name}` folds a row on a warp, and a CTA of {lw.threads} threads is "
            "not a whole number of warps",
        )
    arg = e.args[0]
    R, C = arg.type.dims
    src = elem_of(arg.type)
    out_t = elem_of(e.type)
    buf = staging.buffer_of(lw, e)
    vec = lw.plan.vec.get(e.label, 1)
    staged = staging.stage(lw, arg, buf, vec)
    b, t = lw.b, lw.idx
    warps = lw.threads // 32
    tile = lw.tiles.get(target.sym) if isinstance(target, hir.Ref) else None
    everyone = tile is not None and tile.place == "replicated"
    if tile is not None:
        declare(lw, tile)
    lw.tracker.access(buf, "read", ("rowfold", e.label))
    target_acc = None
    if not everyone:
        if tile is not None and tile.place != "shared":
            raise NotLowered(f"`{name}` into a register tile of several rows", e.span)
        from phobos.lower import memory

        target_acc = tile.access() if tile is not None else memory.resolve(lw, target)
        if target_acc.space == "shared":
            lw.tracker.access(target_acc.buffer, "write", None)
    lane = lw.ctx_lane()
    warp = b.once(("warp",), lambda: b.op("shr", t, lw.tid(), Imm(5, "u32")))
    acc_t = reduce.ACC[src] if name != "rowargmax" else _key_type(src)

    def fold_row(row) -> tuple:
        """The row's fold (and column, for rowargmax) in every lane of the warp."""
        best = b.copy(_start(name, acc_t), REG[acc_t], hint="acc")
        if name == "rowmax" and acc_t in ("f32", "f64"):  # start at NaN: `max` drops it
            b.emit("sub", (best,), (best, Imm(float("inf"), acc_t)), type=acc_t)
        col_best = b.copy(Imm(0, "s32"), "s32", hint="am") if name == "rowargmax" else None
        steps = -(-C // 32)
        base = imul(b, t, row, C)

        def step(k):
            col = iadd(b, t, lane, k)
            valid = None
            if C % 32 or isinstance(k, Reg):
                valid = b.op("setp", "pred", col, Imm(C, t), cmp="lt", type=t)
            from phobos.lower import memory

            addr = memory.address(lw, staged, iadd(b, t, base, col))
            x = memory.load(b, "shared", src, addr, 1, valid)[0]
            _fold_in(b, name, best, col_best, x, src, acc_t, col, valid, t)

        if steps <= UNROLL:
            for s in range(steps):
                step(32 * s)
        else:
            k = b.reg(t, "k")
            with b.region() as body:
                step(k)
            b.add(lir.For(k, Imm(0, t), Imm(32 * steps, t), Imm(32, t), body.block, span=b.span))
        if name == "rowargmax":
            return _argmax_butterfly(b, best, col_best, acc_t)
        return reduce.butterfly(b, reduce.ROW_OP[name], best, acc_t, 32), None

    def result(v, col):
        if name == "rowargmax":
            return col if out_t == "i32" else scalars.convert(b, col, "i32", out_t)
        return scalars.convert(b, v, acc_t, out_t)

    if everyone:  # one row, wanted in every thread: every warp folds it
        v, col = fold_row(Imm(0, t))
        r = tile.regs[0]
        b.mov(r, scalars.materialize(b, result(v, col), out_t),
              {"f16": "b16", "bf16": "b16"}.get(r.type, r.type))  # fmt: skip
        log.debug("`%s` over [%d, %d]: staged, every warp folds the row", name, R, C)
        return
    lane0 = b.once(("lane0",), lambda: b.op("setp", "pred", lane, Imm(0, t), cmp="eq", type=t))
    sw = Sweeper(lw, (R, 1), 1)
    i = b.reg(t, "i")
    with b.region() as outer:
        row = iadd(b, t, warp, imul(b, t, i, warps))
        with b.region() as one:
            v, col = fold_row(row)
            p = Point((R, 1), ((row, 0), (Imm(0, t), 0)), 1, lane0, None, State(), None)
            sw.store(target_acc, p, [result(v, col)])
        if R % warps:
            inside = b.op("setp", "pred", row, Imm(R, t), cmp="lt", type=t)
            b.add(lir.If(inside, one.block, span=b.span))
        else:
            for item in one.block.items:
                b.add(item)
    b.add(lir.For(i, Imm(0, t), Imm(-(-R // warps), t), Imm(1, t), outer.block, span=b.span))
    log.debug("`%s` over [%d, %d]: staged, %d warps fold a row each in turn", name, R, C, warps)


def _key_type(src: str) -> str:
    """The type `rowargmax` compares in: 16-bit floats widen to f32."""
    return {"f16": "f32", "bf16": "f32", "i8": "i32", "u8": "u32", "u16": "u32"}.get(src, src)


def _start(name: str, t: str) -> Imm:
    """A lane's first value: 0 for a sum, the least value for `rowargmax`, and for a
    float `rowmax` +inf, made NaN by the caller (`inf - inf`): `max` drops a NaN, so a
    row of NaNs alone folds to NaN, as `fmax` does."""
    if name == "rowsum":
        return reduce.IDENTITY["sum"](t)
    if name == "rowmax" and t in ("f32", "f64"):
        return Imm(float("inf"), t)
    return reduce.IDENTITY["max"](t)


def _fold_in(b, name, best, col_best, x, src, acc_t, col, valid, t) -> None:
    x = scalars.convert(b, x, src, acc_t)
    if name != "rowargmax":
        reduce.fold_into(b, reduce.ROW_OP[name], best, x, acc_t, guard=valid)
        return
    if acc_t in ("f32", "f64"):  # NaN counts as -inf: it never wins
        nan = scalars.binary(b, "!=", x, x, acc_t)
        x = scalars.select(b, nan, Imm(float("-inf"), acc_t), x, acc_t)
    better = scalars.binary(b, ">", x, best, acc_t)
    if valid is not None:
        better = b.op("and", "pred", better, valid)
    b.mov(best, x, REG[acc_t], guard=better)
    c32 = col if t == "s32" else scalars.convert(b, col, "i64", "i32")
    if isinstance(c32, Imm):
        c32 = b.copy(c32, "s32")
    b.mov(col_best, c32, "s32", guard=better)


def _argmax_butterfly(b, best, col_best, t: str):
    """(value, column) folded over the warp: the larger value, the smaller column on a tie."""
    v, c = best, col_best
    m = 16
    while m >= 1:
        ov = reduce.shfl(b, v, "bfly", Imm(m, "u32"))
        oc = reduce.shfl(b, c, "bfly", Imm(m, "u32"))
        gt = scalars.binary(b, ">", ov, v, t)
        eq = scalars.binary(b, "==", ov, v, t)
        lt = scalars.binary(b, "<", oc, c, "i32")
        take = b.op("or", "pred", gt, b.op("and", "pred", eq, lt))
        v = scalars.select(b, take, ov, v, t)
        c = scalars.select(b, take, oc, c, "i32")
        m //= 2
    return v, c


__all__ = ["NAMES", "covered", "row_reduction"]
