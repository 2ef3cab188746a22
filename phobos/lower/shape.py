"""The shape built-ins: `cumsum`, `tril`, `transpose`, `flat`, `gather`.

Each is rewritten before placement (by `placement.normalize`) or lowered as a
statement of its own, `target = op(...)`, its target a tile kept in shared memory
(one element: in every thread's register) or a slice written in place:

| built-in           | strategy                                                                 |
|--------------------|--------------------------------------------------------------------------|
| `tril(t)`          | elementwise: `where(iota(1) <= iota(0), t, 0)`, fused into its sweep        |
| `flat(t)`          | a view (`let`) of `t`'s bytes, `[1, R * C]` at pitch 1; `t` kept in shared memory |
| `transpose(t)`     | `t` swept into a staging buffer with padded rows (`pitch`: at width 1 an odd number of words, no bank conflict), a barrier, then the target swept reading the staged tile column-wise |
| `cumsum(t)`        | `t` staged, a barrier, one thread per column walks down it adding in the accumulator type (f32 for 16-bit floats) and writes each prefix back in place, a barrier, the staged tile copied to the target |
| `gather(table, i)` | `table` staged, a barrier, the target swept: each element one shared load at `i` |

A nested `cumsum`, `transpose`, `gather` or `tril` is first bound to a temporary tile,
as a row reduction is, so the lowering meets each at the top of a statement. The
staging buffers are requested from the planner (`plan_op`, `stage_requests`) and live
for their statement only; the barriers come from the tracker, since the staged bytes
are read by other threads than wrote them.

    >>> OPS
    ('cumsum', 'transpose', 'gather')
"""

from __future__ import annotations

import logging
from dataclasses import fields, is_dataclass, replace
from math import prod

from phobos.lower import alloc, lir, memory, rowfold, scalars
from phobos.lower.builder import iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.kinds import max_vec
from phobos.lower.lir import Imm
from phobos.lower.staging import bind, buffer_of, stage, sweep_into, temp, view
from phobos.lower.sweep import Sweeper, declare, reads_registers, replicated_points, run
from phobos.lower.types import BYTES, REG, elem_of
from phobos.lower.widths import max_vec_for
from phobos.sema import hir

log = logging.getLogger("phobos.lower")

OPS = ("cumsum", "transpose", "gather")  # lowered as statements of their own
HOISTED = (*OPS, "tril")  # bound to a temporary when nested in an expression
ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64"}  # cumsum's accumulator


# ---------------------------------------------------------------------------
# Before placement: tril rewritten, flat bound to a `let` view


def is_flat(e) -> bool:
    return isinstance(e, hir.Builtin) and e.name == "flat"


def tril_where(e: hir.Builtin) -> hir.Builtin:
    """`tril(t)` as `where(iota(1) <= iota(0), t, 0)` over `t`'s own shape."""
    (t,) = e.args
    dims = tuple(e.type.dims)
    i32 = hir.Scalar("i32")

    def iota(d):
        return hir.Builtin("iota", (hir.Const(d, i32),), hir.TileT(i32, dims), 0, span=e.span)

    cond = hir.Binary("<=", iota(1), iota(0), hir.TileT(hir.Scalar("bool"), dims), 0,
                      span=e.span)  # fmt: skip
    zero = hir.Const(0.0, e.type.elem, span=e.span)
    return hir.Builtin("where", (cond, t, zero), e.type, e.uni, span=e.span)


def unflat(node, out: list):
    """`node` (an expression, or a statement's own expressions) with every `flat(t)`
    replaced by a `let` view declared in `out` first."""
    if isinstance(node, hir.Builtin) and node.name == "flat":
        tmp = temp(f"flat_{getattr(node.args[0], 'sym', None) and node.args[0].sym.name}",
                    "let", node.type, node.uni)  # fmt: skip
        out.append(hir.Let(tmp, node, span=node.span))
        return hir.Ref(tmp, node.type, node.uni, span=node.span)
    if isinstance(node, tuple):
        new = tuple(unflat(x, out) for x in node)
        return node if all(a is b for a, b in zip(new, node, strict=True)) else new
    if isinstance(node, (hir.Expr, hir.Sub)) and is_dataclass(node):
        changes = {}
        for f in fields(node):
            if f.name in ("span", "type", "sym", "fn_params", "fn_body", "config"):
                continue
            v = getattr(node, f.name)
            nv = unflat(v, out)
            if nv is not v:
                changes[f.name] = nv
        return replace(node, **changes) if changes else node
    return node


def unflat_stmt(s, out: list):
    """A statement whose own expressions read no `flat(...)` call (a `let` of one stays)."""
    if isinstance(s, hir.Let) and is_flat(s.value):
        return s
    names = {
        hir.Let: ("value",), hir.VarDecl: ("value",), hir.Assign: ("target", "value"),
        hir.If: ("cond",), hir.While: ("cond",), hir.For: ("lo", "hi", "step"),
        hir.ExprStmt: ("expr",),
    }.get(type(s), ())  # fmt: skip
    changes = {}
    for name in names:
        v = getattr(s, name)
        if isinstance(v, hir.Expr):
            nv = unflat(v, out)
            if nv is not v:
                changes[name] = nv
    return replace(s, **changes) if changes else s


# ---------------------------------------------------------------------------
# Placement: the staging buffers each op needs


def writes_slices(value) -> bool:
    """Whether `X[...] = value` is lowered as it stands (the op writes the slice
    itself), rather than through a temporary tile."""
    return isinstance(value, hir.Builtin) and value.name in OPS


def plan_op(planner, s, sym, dims, value, target=None) -> None:
    """Plan `target = op(...)`: the sweeps it runs (their vector widths tie register
    tiles they read), its staging buffer, and its target kept in shared memory."""
    name = value.name
    if name == "gather":
        table, idx = value.args
        planner.sweep(value, tuple(table.type.dims), table)
        planner.sweep(idx, tuple(dims), idx, target)
    else:
        (arg,) = value.args
        planner.sweep(value, tuple(arg.type.dims), arg)
    planner.staged.append((value, planner.n))
    if sym is not None:
        planner.touch(sym)
        if prod(dims) != 1:
            planner.mark_other(sym, f"`{name}` writes it")


def stage_bytes(value, vec: int) -> int:
    """The bytes `value`'s staging buffer takes at the staging sweep's width `vec`."""
    name = value.name
    if name in ("rowsum", "rowmax", "rowargmax", "cumsum"):
        arg = value.args[0]
        return prod(arg.type.dims) * BYTES[elem_of(arg.type)]
    if name == "transpose":
        arg = value.args[0]
        r, c = arg.type.dims
        return r * pitch(c, vec, elem_of(arg.type)) * BYTES[elem_of(arg.type)]
    table = value.args[0]
    return prod(table.type.dims) * BYTES[elem_of(table.type)]


def pitch(c: int, vec: int, elem: str) -> int:
    """A staged row's pitch for `transpose`, in elements: padded past `c` so that a
    column read by a warp spreads over the banks. At width 1 a row is an odd number of
    32-bit words (every bank once); a wider staging sweep keeps rows aligned to its
    vectors, an odd number of them (a column then meets 32 / (words a vector) banks).

    >>> pitch(64, 1, "f32"), pitch(64, 4, "f32"), pitch(24, 8, "f16")
    (65, 68, 40)
    """
    size = BYTES[elem]
    p = c + vec
    if vec == 1 and size <= 4:
        while (p * size) % 4 or (p * size // 4) % 2 == 0:
            p += 1
    elif vec > 1:
        while (p // vec) % 2 == 0:
            p += vec
    return p


def stage_requests(planner, vec_of) -> list:
    """`(key, name, size, first, last)` for each staged statement; `vec_of(node)` is a
    sweep's final vector width. A reduction `reduce` folds itself stages nothing."""
    out = []
    for value, n in planner.staged:
        vec = vec_of(value)
        if value.name in rowfold.NAMES and rowfold.covered(planner.lw.threads, value, vec):
            continue
        if value.label in getattr(planner, "accumulator_rows", ()):  # folded in an MmaAcc
            continue
        size = stage_bytes(value, vec)
        if size > alloc.STATIC_LIMIT and not getattr(planner.lw.k.attrs, "dynshared", False):
            dims = list(value.args[0].type.dims)
            raise NotLowered(
                f"`{value.name}`",
                value.span,
                code="E0510",
                message=f"`{value.name}` of a {dims} tile stages {size} bytes through shared "
                f"memory, more than the static {alloc.STATIC_LIMIT}",
            )
        out.append((value.label, f"stage_{value.name}_{len(out)}", size, n, n))
    return out


# ---------------------------------------------------------------------------
# Lowering


def takes(lw, value) -> bool:
    """Whether `target = value` is lowered here (or by `rowfold`)."""
    if not isinstance(value, hir.Builtin):
        return False
    return value.name in OPS or value.label in lw.plan.stages


def lower(lw, value: hir.Builtin, target) -> None:
    """`target = value` for a shape built-in or a reduction `rowfold` lowers."""
    if value.name in rowfold.NAMES:
        rowfold.row_reduction(lw, value, target)
    elif value.name == "transpose":
        transpose(lw, value, target)
    elif value.name == "cumsum":
        cumsum(lw, value, target)
    elif value.name == "gather":
        gather(lw, value, target)
    else:
        raise NotLowered(f"`{value.name}`", value.span)


def _out_vec(lw, target, shape, elem) -> int:
    """The width the staged result is copied out at: a tile target's widest, else 1."""
    tile = lw.tiles.get(target.sym) if isinstance(target, hir.Ref) else None
    if tile is None or tile.place != "shared":
        return 1
    return min(max_vec(shape), max_vec_for((elem,)))


def transpose(lw, value, target) -> None:
    (arg,) = value.args
    r, c = arg.type.dims
    elem = elem_of(arg.type)
    buf = buffer_of(lw, value)
    vec = lw.plan.vec.get(value.label, 1)
    p = pitch(c, vec, elem)
    stage(lw, arg, buf, vec, p)
    log.debug("`transpose` of [%d, %d]: staged at row pitch %d (vector width %d), read "
              "column-wise", r, c, p, vec)  # fmt: skip
    out = view(buf, elem, (c, r), (1, p))
    sweep_into(lw, target, bind(lw, out, value.uni), 1)


def cumsum(lw, value, target) -> None:
    (arg,) = value.args
    r, c = arg.type.dims
    elem = elem_of(arg.type)
    acc_t = ACC.get(elem)
    if acc_t is None:
        raise NotLowered(f"`cumsum` of `{elem}`", value.span)
    buf = buffer_of(lw, value)
    vec = lw.plan.vec.get(value.label, 1)
    staged = stage(lw, arg, buf, vec)
    b, t, T = lw.b, lw.idx, lw.threads
    key = ("columns", value.label)
    lw.tracker.access(buf, "read", key)
    lw.tracker.access(buf, "write", key)
    blocks = -(-c // T)
    kk = b.reg(t, "k")
    with b.region() as outer:
        col = iadd(b, t, lw.tid(), imul(b, t, kk, T))
        with b.region() as walk:
            total = b.copy(scalars.const(0, acc_t), REG[acc_t], hint="cs")
            row = b.reg(t, "r")
            with b.region() as body:
                flat = iadd(b, t, imul(b, t, row, c), col)
                addr = memory.address(lw, staged, flat)
                x = memory.load(b, "shared", elem, addr, 1, None)[0]
                b.emit("add", (total,), (total, scalars.convert(b, x, elem, acc_t)),
                       type=REG[acc_t])  # fmt: skip
                y = scalars.convert(b, total, acc_t, elem)
                memory.store(b, "shared", elem, addr, (y,), None)
            b.add(lir.For(row, Imm(0, t), Imm(r, t), Imm(1, t), body.block, span=b.span))
        if c % T:
            inside = b.op("setp", "pred", col, Imm(c, t), cmp="lt", type=t)
            b.add(lir.If(inside, walk.block, span=b.span))
        else:
            for item in walk.block.items:
                b.add(item)
    b.add(lir.For(kk, Imm(0, t), Imm(blocks, t), Imm(1, t), outer.block, span=b.span))
    log.debug("`cumsum` of [%d, %d]: staged, one thread a column walks %d rows in %s",
              r, c, r, acc_t)  # fmt: skip
    out = view(buf, elem, (r, c), (c, 1))
    sweep_into(lw, target, bind(lw, out, value.uni), _out_vec(lw, target, (r, c), elem))


def gather(lw, value, target) -> None:
    table, idx = value.args
    elem = elem_of(table.type)
    buf = buffer_of(lw, value)
    staged = stage(lw, table, buf, lw.plan.vec.get(value.label, 1))
    b = lw.b
    shape = tuple(idx.type.dims)
    vec = lw.plan.vec.get(idx.label, 1)
    tile = lw.tiles.get(target.sym) if isinstance(target, hir.Ref) else None
    if tile is not None and tile.place == "registers":
        raise NotLowered("`gather` into a register tile", value.span)
    if tile is not None:
        declare(lw, tile)
    sw = Sweeper(lw, shape, vec)
    sw.prepare(idx, shape)
    sw.note_reads()
    lw.tracker.access(buf, "read", ("gather", value.label))
    target_acc = None
    if tile is None or tile.place == "shared":
        target_acc = tile.access() if tile is not None else memory.resolve(lw, target)
        if target_acc.space == "shared":
            lw.tracker.access(target_acc.buffer, "write", None)
    it = elem_of(idx.type)
    want = "i32" if lw.idx == "s32" else "i64"

    def evaluate(p):
        out = []
        for i in sw.ev(idx, p):
            i = scalars.convert(b, i, it, want) if it != want else i
            out.append(memory.load(b, "shared", elem, memory.address(lw, staged, i), 1, None)[0])
        return out

    def commit(p, vals):
        if tile is not None and tile.place == "replicated":
            r = tile.regs[0]
            b.mov(r, vals[0], {"f16": "b16", "bf16": "b16"}.get(r.type, r.type))
        else:
            sw.store(target_acc, p, vals)

    log.debug("`gather` over %s: the table staged, one shared load an element", list(shape))
    if tile is not None and tile.place == "replicated":
        for p in replicated_points(lw, shape):
            commit(p, evaluate(p))
        return
    run(lw, shape, vec, evaluate, commit, unroll_any=reads_registers(lw, idx))


def flat_access(lw, e: hir.Builtin) -> memory.Access:
    """The `[1, R * C]` view `flat(t)` of the shared tile `t`."""
    (t,) = e.args
    tile = lw.tiles.get(t.sym) if isinstance(t, hir.Ref) else None
    if tile is None or tile.place != "shared" or tile.buffer is None:
        raise NotLowered(
            "`flat`",
            e.span,
            code="E0511",
            message=f"`flat` needs `{getattr(getattr(t, 'sym', None), 'name', '?')}` in shared "
            "memory, and it is not",
        )
    n = prod(tile.shape)
    return view(tile.buffer, tile.elem, (1, n), (n, 1))


__all__ = ["HOISTED", "OPS", "flat_access", "lower", "plan_op", "stage_requests", "takes"]
