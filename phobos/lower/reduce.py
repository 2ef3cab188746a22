"""Row reductions (`rowsum`, `rowmax`) and collectives (`sum<over ctx.lane>` ...).

A row reduction sweeps its argument (a tile, a slice, or an elementwise expression of
them, evaluated per element and never stored) with the `Sweep` layout of the
argument's shape; each thread folds its own elements of each row, then the threads
that share a row combine:

| case                                         | combine                               | result |
|----------------------------------------------|---------------------------------------|--------|
| every thread meets every row (`R == 1`, or a row a whole multiple of the sweep) | `shfl.bfly` over the warp, then each warp's fold through shared memory, every thread folding the warps in one order | in every thread (replicated) |
| a row on `C / vec` lanes of one warp (a power of two at most 32) | `shfl.bfly` over those lanes | the row's first lane stores it |
| the argument swept in a tensor-core accumulator's layout (`MmaAcc`, a warp holding whole rows) | each thread folds its two rows of a fragment row, `shfl.bfly` over the 4 lanes of a quad | each quad's first lane stores its rows |

The fill past a tensor is 0 (SPEC.md "Bounds and masking"), as for a sweep; elements
past the tile are left out of the fold. Floats of 16 bits accumulate in f32.

A lane collective is a butterfly of `log2(width)` shuffles; a CTA collective adds the
exchange of each warp's fold through shared memory: one barrier between the warps'
writes and the reads, none after, as consecutive exchanges alternate two scratch slots.

    >>> IDENTITY["max"]("f32")
    Imm(value=-inf, type='f32')
"""

from __future__ import annotations

import logging

from phobos.lower import lir, scalars
from phobos.lower.builder import Builder
from phobos.lower.errors import NotLowered
from phobos.lower.layout import MmaAcc, MmaRows
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.sweep import Point, State, Sweeper, mma_points, points, run, versioned
from phobos.lower.types import REG, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")

# The accumulator of each element type: narrow floats fold in f32.
ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64", "i32": "i32", "i64": "i64",
       "i8": "i32", "u8": "u32", "u16": "u32", "u32": "u32"}  # fmt: skip


def _lowest(t: str) -> Imm:
    rt = REG[t]
    if rt.startswith("f"):
        return Imm(float("-inf"), rt)
    if rt.startswith("u"):
        return Imm(0, rt)
    return Imm(-(1 << (8 * lir.WIDTH[rt] - 1)), rt)


def _highest(t: str) -> Imm:
    rt = REG[t]
    if rt.startswith("f"):
        return Imm(float("inf"), rt)
    return Imm((1 << (8 * lir.WIDTH[rt] - (0 if rt.startswith("u") else 1))) - 1, rt)


def _zero(t: str) -> Imm:
    rt = REG[t]
    return Imm(0.0, rt) if rt.startswith("f") else Imm(0, rt)


IDENTITY = {"sum": _zero, "max": _lowest, "min": _highest}
ROW_OP = {"rowsum": "sum", "rowmax": "max"}


def row_start(b: Builder, op: str, t: str) -> Reg:
    """A register holding a row fold's start: the identity, but NaN for a float `max` or
    `min` (made as `inf - inf`), which the fold drops as `fmax` does, so a row of NaNs
    alone folds to NaN, as the tile interpreter's `rowmax` gives."""
    rt = REG[t]
    if op in ("max", "min") and rt in ("f32", "f64"):
        r = b.copy(Imm(float("inf"), rt), rt, hint="acc")
        b.emit("sub", (r,), (r, Imm(float("inf"), rt)), type=rt)
        return r
    return b.copy(IDENTITY[op](t), rt, hint="acc")


def fold(b: Builder, op: str, x: Value, y: Value, t: str) -> Value:
    if op == "sum":
        return scalars.binary(b, "+", x, y, t)
    if op in ("max", "min"):
        return scalars.minmax(b, op, x, y, t)
    if op == "any":
        return b.op("or", "pred", x, y)
    if op == "all":
        return b.op("and", "pred", x, y)
    raise NotLowered(f"the fold `{op}`")


def fold_into(b: Builder, op: str, acc: Reg, x: Value, t: str, guard=None) -> None:
    """`acc = acc op x`, where `guard` holds (None: always)."""
    rt = REG[t]
    instr = {"sum": "add", "max": "max", "min": "min"}[op]
    if isinstance(x, Imm):
        x = b.copy(x, rt)
    b.emit(instr, (acc,), (acc, x), type=rt, guard=guard)


def shfl(b: Builder, v: Value, mode: str, lane: Value, clamp: int = 31) -> Value:
    """`v` from another lane (`shfl.sync`): 32-bit values in one move, 64-bit in two."""
    if isinstance(v, Imm):
        v = b.copy(v, v.type)
    if isinstance(lane, Imm):
        lane = Imm(lane.value, "u32")
    elif lane.type != "u32":
        lane = b.op("mov", "b32", lane, dest_type="u32") if lir.WIDTH[lane.type] == 4 else \
            b.op("cvt", "u32", lane, from_type=lane.type)  # fmt: skip
    width = lir.WIDTH[v.type]
    if v.type == "pred":
        as_int = b.op("selp", "u32", Imm(1, "u32"), Imm(0, "u32"), v)
        moved = shfl(b, as_int, mode, lane, clamp)
        return b.op("setp", "pred", moved, Imm(0, "u32"), cmp="ne", type="u32")
    if width == 4:
        return b.op("shfl", "b32", v, lane, Imm(clamp, "u32"), dest_type=v.type, mode=mode)
    if width == 8:
        bits = b.op("mov", "b64", v, dest_type="u64")
        lo = b.op("cvt", "u32", bits, from_type="u64")
        hi = b.op("cvt", "u32", b.op("shr", "u64", bits, Imm(32, "u32")), from_type="u64")
        lo2 = b.op("shfl", "b32", lo, lane, Imm(clamp, "u32"), dest_type="u32", mode=mode)
        hi2 = b.op("shfl", "b32", hi, lane, Imm(clamp, "u32"), dest_type="u32", mode=mode)
        wide_hi = b.op("shl", "b64", b.op("cvt", "u64", hi2, from_type="u32"), Imm(32, "u32"),
                       dest_type="u64")  # fmt: skip
        both = b.op("or", "b64", wide_hi, b.op("cvt", "u64", lo2, from_type="u32"),
                    dest_type="u64")  # fmt: skip
        return b.op("mov", "b64", both, dest_type=v.type)
    # 16-bit values move widened
    wide = b.op("cvt", "f32", v, from_type=v.type) if v.type in ("f16", "bf16") else v
    moved = shfl(b, wide, mode, lane, clamp)
    return b.op("cvt", v.type, moved, from_type="f32", rounding="rn")


def butterfly(b: Builder, op: str, v: Value, t: str, width: int) -> Value:
    """The fold of `v` over each `width` lanes (a power of two), in every one of them."""
    m = width // 2
    while m >= 1:
        other = shfl(b, v, "bfly", Imm(m, "u32"))
        v = fold(b, op, v, other, t)
        m //= 2
    return v


def butterfly_by(b: Builder, combine, values: tuple, width: int) -> tuple:
    """`values` (moved together: a `reduce`'s one, `argmax`'s value and index) folded over
    each `width` lanes by `combine(own, other)`, in the order `lane_fold` keeps."""
    m = width // 2
    while m >= 1:
        other = tuple(shfl(b, v, "bfly", Imm(m, "u32")) for v in values)
        values = combine(values, other)
        m //= 2
    return values


def _check_threads(lw, span):
    if lw.threads % 32:
        raise NotLowered("a reduction in a CTA that is not a whole number of warps", span)


def cta_exchange(lw, op: str, values: list[Value], t: str, span=None, combine=None) -> list[Value]:
    """Each value folded over the whole CTA (already folded within each warp): every
    warp's lane 0 stores its fold into the next scratch slot, a barrier, then every
    thread folds the warps in one order (warp 0 first), by `op` or by `combine(acc, x)`.

    Consecutive exchanges take alternate slots (`Plan.next_slot`): exchange `k + 2`
    writes the slot exchange `k` read only after exchange `k + 1`'s barrier, which
    every thread passes after its reads, so no barrier goes before the writes. The
    tracker sees each slot as its own bytes and inserts none."""
    _check_threads(lw, span)
    if lw.threads // 32 == 1:
        return values
    out = []
    for parts in cta_gather(lw, values, [t] * len(values), span):
        acc = parts[0]
        for x in parts[1:]:
            acc = combine(acc, x) if combine is not None else fold(lw.b, op, acc, x, t)
        out.append(acc)
    return out


def cta_gather(lw, values: list[Value], types: list[str], span=None):
    """Every warp's lane 0 stores its `values` into the next scratch slot, each value's
    warps side by side after the previous value's; then, a list per value, every thread
    reads the warps' values back in warp order (emitted as each list is taken)."""
    b = lw.b
    warps = lw.threads // 32
    if lw.plan.scratch is None:
        raise NotLowered("a CTA-wide fold without its exchange buffer", span)
    scratch = lw.plan.next_slot()
    sizes = [lir.WIDTH[REG[t]] for t in types]
    starts = [scratch.offset + warps * sum(sizes[:r]) for r in range(len(values))]
    if warps * sum(sizes) > scratch.size:
        raise NotLowered("a CTA-wide fold wider than its exchange slot", span)
    lane0 = b.once(("lane0",), lambda: b.op("setp", "pred", lw.ctx_lane(), Imm(0, lw.idx),
                                           cmp="eq", type=lw.idx))  # fmt: skip
    warp = b.once(("warp_u32",), lambda: b.op("shr", "u32", lw.sreg("tid.x"), Imm(5, "u32")))
    lw.tracker.access(scratch, "write", ("lane0", len(values)))
    for v, t, size, start in zip(values, types, sizes, starts, strict=True):
        off = b.op("mul", "u32", warp, Imm(size, "u32"))
        addr = b.op("add", "u32", off, Imm(start, "u32"), hint="s")
        v = scalars.materialize(b, v, t)
        b.emit("st", (), (addr, v), space="shared", type=REG[t], vec=1, guard=lane0)
    lw.tracker.access(scratch, "read", ("all",))
    for t, size, start in zip(types, sizes, starts, strict=True):
        rt = REG[t]
        per = max(1, min(4, 16 // size))
        while warps % per:
            per //= 2
        parts: list[Value] = []
        for w in range(0, warps, per):
            addr = b.copy(Imm(start + w * size, "u32"), "u32", hint="s")
            dests = [b.reg(rt) for _ in range(per)]
            b.emit("ld", dests, (addr,), space="shared", type=rt, vec=per)
            parts += dests
        yield parts


# ---------------------------------------------------------------------------
# Row reductions


def row_reduction(lw, e: hir.Builtin, target) -> None:
    """`target = rowsum(arg)` / `rowmax(arg)`: sweep, fold per thread, combine, write."""
    name = e.name
    if name not in ROW_OP:
        raise NotLowered(f"`{name}`", e.span)
    _check_threads(lw, e.span)
    op = ROW_OP[name]
    arg = e.args[0]
    R, C = arg.type.dims
    vec = lw.plan.vec.get(e.label, 1)
    T = lw.threads
    tv = T * vec
    src = elem_of(arg.type)
    acc_t = ACC[src]
    out_t = elem_of(e.type)
    b = lw.b
    sw = Sweeper(lw, (R, C), vec)
    sw.prepare(arg, (R, C))
    sw.note_reads()
    lay = lw.plan.layouts.get(e.label)
    if isinstance(lay, MmaAcc):
        _accumulator_rows(lw, e, target, lay, sw, op, (src, acc_t, out_t))
        return
    tpr = C // vec if tv % C == 0 else None
    if R == 1 or C % tv == 0:
        partial = [row_start(b, op, acc_t) for _ in range(R)]

        def evaluate(p: Point):
            vals = [scalars.convert(b, v, src, acc_t) for v in sw.ev(arg, p)]
            x = vals[0]
            for v in vals[1:]:
                x = fold(b, op, x, v, acc_t)
            row = 0 if R == 1 else p.coords[0][1]
            fold_into(b, op, partial[row], x, acc_t, guard=p.valid)

        versioned(lw, sw, lambda: run(lw, (R, C), vec, evaluate, lambda p, v: None,
                                      unroll_any=R > 1))  # fmt: skip
        folded = [butterfly(b, op, v, acc_t, 32) for v in partial]
        result = cta_exchange(lw, op, folded, acc_t, e.span)
        log.debug("`%s` over [%d, %d] at vector width %d: every thread folds its elements, "
                  "shfl.bfly over the warp, %d warps through shared memory",
                  name, R, C, vec, T // 32)  # fmt: skip
        result = [scalars.convert(b, v, acc_t, out_t) for v in result]
        _write_rows(lw, target, result, e)
        return
    if tpr is not None and tpr <= 32 and tpr & (tpr - 1) == 0:
        state = State()
        pts = points(lw, (R, C), vec, state)
        vals = []
        nan = row_start(b, op, acc_t) if any(p.valid is not None for p in pts) else None
        for p in pts:
            lanes = [scalars.convert(b, v, src, acc_t) for v in sw.ev(arg, p)]
            x = lanes[0]
            for v in lanes[1:]:
                x = fold(b, op, x, v, acc_t)
            if p.valid is not None:
                x = scalars.select(b, p.valid, x, nan, acc_t)
            vals.append(x)
        folded = [butterfly(b, op, v, acc_t, tpr) for v in vals]
        log.debug("`%s` over [%d, %d] at vector width %d: a row on %d lanes, shfl.bfly",
                  name, R, C, vec, tpr)  # fmt: skip
        first = b.once(("lanegroup0", tpr), lambda: b.op(
            "setp", "pred", b.op("and", "b32", lw.sreg("tid.x"), Imm(tpr - 1, "b32"),
                                 dest_type="u32"), Imm(0, "u32"), cmp="eq", type="u32"))  # fmt: skip
        rows = [(p.coords[0], scalars.convert(b, v, acc_t, out_t),
                 first if p.valid is None else b.op("and", "pred", first, p.valid))
                for p, v in zip(pts, folded, strict=True)]  # fmt: skip
        _write_lane_rows(lw, target, rows, e)
        return
    raise NotLowered(
        f"`{name}` over a [{R}, {C}] tile with {T} threads",
        e.span,
        note="rows of a power of two vectors at most 32 lanes wide, one row, or rows a "
        "whole multiple of the CTA's sweep are lowered",
    )


def _accumulator_rows(lw, e, target, lay: MmaAcc, sw, op: str, types) -> None:
    """A row reduction swept in an accumulator's `MmaAcc` layout (the product it reads
    stays in the registers mma.sync wrote). A warp holds whole rows (`warps_n == 1`, as
    the planner chose for a reduced accumulator): a thread's registers of one row are its
    column pairs of that row's fragments, and the row's other columns are on the three
    other lanes of its quad (the lanes of one `g`, `lane // 4`). So each thread folds its
    registers row by row, two shuffles fold the quad, and its first lane stores the
    rows (`g` and `g + 8` of each 16-row fragment row)."""
    if lay.warps_n != 1:
        raise NotLowered(f"`{e.name}` of an accumulator whose rows span warps", e.span)
    src, acc_t, out_t = types
    b = lw.b
    partial: dict[int, Reg] = {}
    pts = mma_points(lw, lay, State())
    row_of = {}
    for p in pts:
        vals = [scalars.convert(b, v, src, acc_t) for v in sw.ev(e.args[0], p)]
        x = vals[0]
        for v in vals[1:]:
            x = fold(b, op, x, v, acc_t)
        dr = p.coords[0][1]
        if dr not in partial:
            partial[dr] = row_start(b, op, acc_t)
            row_of[dr] = p.coords[0]
        fold_into(b, op, partial[dr], x, acc_t)
    folded = {dr: butterfly(b, op, v, acc_t, 4) for dr, v in partial.items()}
    log.debug("`%s` over %s in the accumulator's layout: %d rows a thread folded, shfl.bfly "
              "over each quad", e.name, list(lay.shape), len(folded))  # fmt: skip
    first = b.once(("lanegroup0", 4), lambda: b.op(
        "setp", "pred", b.op("and", "b32", lw.sreg("tid.x"), Imm(3, "b32"), dest_type="u32"),
        Imm(0, "u32"), cmp="eq", type="u32"))  # fmt: skip
    tile = _target_tile(lw, target)
    if tile is not None and tile.rows is not None:
        # `MmaRows`: the quad's fold is in each of its lanes, the registers of their rows
        for dr, v in folded.items():
            reg = tile.regs[MmaRows.reg_of(dr)][0]
            b.mov(reg, scalars.materialize(b, scalars.convert(b, v, acc_t, out_t), tile.elem))
        return
    rows = [(row_of[dr], scalars.convert(b, v, acc_t, out_t), first) for dr, v in folded.items()]
    _write_lane_rows(lw, target, rows, e)


def _target_tile(lw, target):
    return lw.tiles.get(target.sym) if isinstance(target, hir.Ref) else None


def _write_rows(lw, target, result, e) -> None:
    """Rows known in every thread: a replicated target takes them; otherwise thread 0
    stores them."""
    from phobos.lower import memory

    b = lw.b
    tile = _target_tile(lw, target)
    if tile is not None and tile.place == "replicated":
        b.mov(tile.regs[0], result[0], {"f16": "b16", "bf16": "b16"}.get(tile.regs[0].type,
                                                                        tile.regs[0].type))  # fmt: skip
        return
    acc = tile.access() if tile is not None else memory.resolve(lw, target)
    t0 = b.once(("thread0",), lambda: b.op("setp", "pred", lw.tid(), Imm(0, lw.idx), cmp="eq",
                                           type=lw.idx))  # fmt: skip
    if acc.space == "shared":
        lw.tracker.access(acc.buffer, "write", None)
    sw = Sweeper(lw, tuple(target.type.dims), 1)
    state = State()
    zero = Imm(0, lw.idx)
    for r, v in enumerate(result):
        p = Point(tuple(target.type.dims), ((zero, r), (zero, 0)), 1, t0, None, state, None)
        sw.store(acc, p, [v])


def _write_lane_rows(lw, target, rows, e) -> None:
    """Store each (row coordinate, value, guard) of `rows` in column 0 of `target`, a
    shared tile or a tensor: the lanes a guard names hold their rows' results."""
    from phobos.lower import memory

    tile = _target_tile(lw, target)
    if tile is not None and tile.place != "shared":
        raise NotLowered(f"`{e.name}` into a register tile of several rows", e.span)
    acc = tile.access() if tile is not None else memory.resolve(lw, target)
    if acc.space == "shared":
        lw.tracker.access(acc.buffer, "write", None)
    sw = Sweeper(lw, tuple(target.type.dims), 1)
    state = State()
    for coord, v, guard in rows:
        q = Point(tuple(target.type.dims), (coord, (Imm(0, lw.idx), 0)), 1, guard, None,
                  state, None)  # fmt: skip
        sw.store(acc, q, [v])


# ---------------------------------------------------------------------------
# Collectives and shuffles on scalars


def collective(lw, e: hir.Builtin) -> Value:
    b = lw.b
    config = dict(e.config)
    t = elem_of(e.args[0].type)
    if e.name == "shfl":
        return _shuffle(lw, e, config, t)
    over = config.get("over")
    over = getattr(over, "field", over)
    name = e.name
    if name in ("argmax", "reduce"):
        return _fold_by(lw, e, config, over, t)
    if name not in ("sum", "max", "min", "any", "all"):
        raise NotLowered(f"`{name}<over ...>`", e.span)
    _check_threads(lw, e.span)
    v = lw.value(e.args[0])
    v = scalars.materialize(b, v, t)
    acc_t = t if t != "bool" else "bool"
    if t in ("f16", "bf16"):
        v, acc_t = scalars.convert(b, v, t, "f32"), "f32"
    width = config.get("width") or 32
    if isinstance(width, hir.Expr):
        width = int(width.value) if isinstance(width, hir.Const) else 32
    r = butterfly(b, name, v, acc_t, int(width) if over != "thread" else 32)
    if over == "thread":
        r = cta_exchange(lw, name, [r], acc_t, e.span)[0]
    elif over != "lane":
        raise NotLowered(f"a collective over `{over}`", e.span)
    return scalars.convert(b, r, acc_t, t) if acc_t != t else r


# `argmax` compares in these: narrow types widen, as `rowargmax` does
KEY = {"f16": "f32", "bf16": "f32", "i8": "i32", "u8": "u32", "u16": "u32"}


def _fold_by(lw, e: hir.Builtin, config: dict, over, t: str) -> Value:
    """`argmax` and `reduce`: a butterfly over the lanes, then for `over ctx.thread` the
    warps' folds through shared memory, folded in warp order by every thread."""
    _check_threads(lw, e.span)
    if over not in ("lane", "thread"):
        raise NotLowered(f"a collective over `{over}`", e.span)
    width = config.get("width") or 32
    if isinstance(width, hir.Expr):
        width = int(width.value) if isinstance(width, hir.Const) else 32
    width = int(width) if over == "lane" else 32
    b = lw.b
    v = scalars.materialize(b, lw.value(e.args[0]), t)
    if e.name == "reduce":
        step = _fn_step(lw, e, t)
        (r,) = butterfly_by(b, lambda own, other: (step(own[0], other[0]),), (v,), width)
        if over == "thread":
            r = cta_exchange(lw, "reduce", [r], t, e.span, combine=step)[0]
        return r
    kt = KEY.get(t, t)
    key = scalars.convert(b, v, t, kt)
    if kt in ("f32", "f64"):  # NaN counts as -inf: it never wins (SPEC.md `rowargmax`)
        nan = scalars.binary(b, "!=", key, key, kt)
        key = scalars.select(b, nan, Imm(float("-inf"), kt), key, kt)
    at = lw.tid() if over == "thread" else lw.ctx_lane()
    index = scalars.materialize(b, scalars.convert(b, at, _index_name(lw), "i32"), "i32")

    def pick(own, other):
        return _argmax_pick(b, own, other, kt)

    key, index = butterfly_by(b, pick, (key, index), width)
    if over == "thread":
        key, index = _cta_argmax(lw, key, index, kt, e.span)
    return scalars.convert(b, index, "i32", elem_of(e.type))


def _index_name(lw) -> str:
    return "i32" if lw.idx == "s32" else "i64"


def _fn_step(lw, e: hir.Builtin, t: str):
    """`f(own, other)`: the fn's body, inlined with its two parameters bound."""
    pa, pb = e.fn_params

    def step(x: Value, y: Value) -> Value:
        saved = {p: lw.env[p] for p in (pa, pb) if p in lw.env}
        lw.env[pa], lw.env[pb] = x, y
        try:
            r = lw.value(e.fn_body)
        finally:
            for p in (pa, pb):
                lw.env.pop(p, None)
            lw.env.update(saved)
        return scalars.materialize(lw.b, r, t)

    return step


def _argmax_pick(b: Builder, own: tuple, other: tuple, kt: str) -> tuple:
    """Of two (key, index) pairs, the larger key, the smaller index on a tie."""
    (k, i), (ok, oi) = own, other
    gt = scalars.binary(b, ">", ok, k, kt)
    eq = scalars.binary(b, "==", ok, k, kt)
    lt = scalars.binary(b, "<", oi, i, "i32")
    take = b.op("or", "pred", gt, b.op("and", "pred", eq, lt))
    return scalars.select(b, take, ok, k, kt), scalars.select(b, take, oi, i, "i32")


def _cta_argmax(lw, key: Value, index: Value, kt: str, span) -> tuple:
    """Each warp's (key, index) folded over the CTA, the warps in order. A 32-bit key
    and its index share one exchange (8 bytes a warp, the slot's least size); a 64-bit
    key goes first alone, its largest then picking the smallest index of the warps that
    hold it, in a second exchange."""
    b = lw.b
    if lw.threads // 32 == 1:
        return key, index
    if lir.WIDTH[REG[kt]] == 4:
        keys, indexes = cta_gather(lw, [key, index], [kt, "i32"], span)
        acc = (keys[0], indexes[0])
        for pair in zip(keys[1:], indexes[1:], strict=True):
            acc = _argmax_pick(b, acc, pair, kt)
        return acc
    best = cta_exchange(lw, "max", [key], kt, span)[0]
    held = scalars.binary(b, "==", key, best, kt)
    cand = scalars.select(b, held, index, Imm((1 << 31) - 1, "s32"), "i32")
    return best, cta_exchange(lw, "min", [cand], "i32", span)[0]


def _shuffle(lw, e, config, t) -> Value:
    b = lw.b
    width = config.get("width") or 32
    if isinstance(width, hir.Expr):
        width = int(width.value) if isinstance(width, hir.Const) else 32
    v = scalars.materialize(b, lw.value(e.args[0]), t)
    seg = (32 - int(width)) << 8
    for kind, mode, clamp in (("xor", "bfly", 31), ("from", "idx", 31), ("from_", "idx", 31),
                              ("down", "down", 31), ("up", "up", 0)):  # fmt: skip
        if kind in config:
            amount = config[kind]
            amount = lw.value(amount) if isinstance(amount, hir.Expr) else Imm(int(amount), "u32")
            return shfl(b, v, mode, amount, seg | clamp)
    raise NotLowered("this shuffle", e.span)
