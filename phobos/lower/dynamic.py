"""Tile statements over an extent bound at launch: `Y[row, :] = X[row, :] * 2.0`,
`out[s:] = x[s:] + 1.0`, `rowsum(X[row, :])` with `N` a dimension of the launch.

A tile of such a shape has no static layout, so it is never stored: every tile
statement whose shape has a dynamic last extent `E` is a fused sweep whose trip count
is computed at run time. With `T` threads and vectors of `vec` elements (`vec`
divides `E`: a dimension is a multiple of 4 by the ABI, more under `@aligned`),

    for g in 0 .. E / (T * vec):            // whole groups, unmasked
        col = (g * T + thread) * vec;  commit(evaluate(col))
    col = (E / (T * vec) * T + thread) * vec  // the last, partial group,
    if col < E: commit(evaluate(col))         // masked: ceil(E / (T * vec)) groups in all

one such pair of loops for each coordinate of the static leading axes (all of
extent 1 for a row or a 1-D slice). A row reduction over such a row folds each
thread's strided elements in the same loops, then combines them as
`phobos.lower.reduce` does (`shfl.bfly` over the warp, the warps through shared
memory); a masked lane is left out of the fold.

Before placement, `fuse` removes every tile declaration of a dynamic shape
(`var t = X[row, :]`, `let u = t * 2.0`): each read of it becomes its value, which is
sound only while the value would read the same: the tile is never written, read
whole by elementwise operations or row reductions (never sliced, never read per
point), and nothing its value reads is written from its declaration to its last use.
Any other such tile would need shared memory of a size bound at launch: E0513.

    >>> shape_text((1, hir.Dyn("N")))
    '[1, N]'
"""

from __future__ import annotations

import logging
from dataclasses import fields, is_dataclass, replace
from math import gcd, prod

from phobos.lower import memory, reduce, scalars
from phobos.lower.builder import iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.hirwalk import walk as _walk
from phobos.lower.kinds import ELEMENTWISE
from phobos.lower.lir import For, Imm
from phobos.lower.sweep import Point, State, Sweeper, _ekey, _idiv, versioned
from phobos.lower.types import REG, elem_of
from phobos.lower.widths import _chain, _dim_div, operands
from phobos.sema import hir

log = logging.getLogger("phobos.lower")

MAX_ROWS = 8  # static leading coordinates a dynamic sweep walks (one loop pair each)
FOLDS = ("rowsum", "rowmax")  # reductions folded over a dynamic row
HELP = (
    "give the tile a static extent, `{src}[row, 0 :+ BLOCK]` (`BLOCK` a constant or an "
    "`@autotune` name), and walk a longer row in steps, "
    "`for c in range(0, N, BLOCK) {{ var t = {src}[row, c :+ BLOCK] ... }}` (the last step "
    "is masked); or read the row through a view, `let t = {src}[row, :]`"
)


def is_dynamic(dims) -> bool:
    """Whether a tile shape has an extent bound at launch."""
    return any(not isinstance(d, int) for d in dims)


def shape_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# ---------------------------------------------------------------------------
# fuse: tiles of a dynamic shape are never stored


def fuse(body: hir.Block) -> hir.Block:
    """`body` with each dynamic-shape tile declaration replaced by its value at every
    read; raises E0513 where that would not read the same."""
    views = {}
    for node in _walk(body):
        if isinstance(node, hir.Let) and isinstance(node.sym.type, hir.TensorT):
            views[node.sym] = node.value
    return _fuse_block(body, views)


def _fuse_block(blk: hir.Block, views) -> hir.Block:
    stmts = list(blk.stmts)
    out = []
    i = 0
    while i < len(stmts):
        s = stmts[i]
        if _dynamic_decl(s):
            rest = _fuse_rest(s, stmts[i + 1 :], views)
            stmts[i + 1 :] = rest
            i += 1
            continue
        out.append(_fuse_nested(s, views))
        i += 1
    return hir.Block(tuple(out), span=blk.span)


def _fuse_nested(s, views):
    if isinstance(s, hir.Block):
        return _fuse_block(s, views)
    if isinstance(s, (hir.For, hir.While)):
        return replace(s, body=_fuse_block(s.body, views))
    if isinstance(s, hir.If):
        orelse = _fuse_block(s.orelse, views) if s.orelse is not None else None
        return replace(s, then=_fuse_block(s.then, views), orelse=orelse)
    return s


def _dynamic_decl(s) -> bool:
    """A `var` or a `let` of a tile value (not a view) whose shape is dynamic."""
    if not isinstance(s, (hir.VarDecl, hir.Let)) or not isinstance(s.sym.type, hir.TileT):
        return False
    return is_dynamic(s.sym.type.dims)


def _fuse_rest(decl, rest, views) -> list:
    """The statements after `decl` with every read of its tile replaced by its value."""
    sym = decl.sym
    if decl.value is None:
        raise _refusal(decl, "it is declared without a value, to be written later")
    used = [k for k, s in enumerate(rest) if _mentions(s, sym)]
    why = None
    for s in rest:
        why = why or _use_problem(s, sym)
    if why is None and used:
        reads = _roots(_refs(decl.value), views)
        for s in rest[: used[-1] + 1]:
            written = _written(s, views) & reads
            if written:
                names = ", ".join(sorted(f"`{x.name}`" for x in written))
                why = f"{names} is written before its last read"
                break
    if why is not None:
        raise _refusal(decl, why)
    log.debug("`%s` %s fused into its %d reading statement(s): never stored", sym.name,
              shape_text(sym.type.dims), len(used))  # fmt: skip
    return [_subst(s, sym, decl.value) for s in rest]


def _refusal(decl, why) -> NotLowered:
    sym = decl.sym
    dims = sym.type.dims
    name = next(str(d) for d in dims if not isinstance(d, int))
    src = "X"
    for node in _walk(decl.value):
        if isinstance(node, hir.Ref) and isinstance(node.sym.type, hir.TensorT):
            src = node.sym.name
            break
    return NotLowered(
        "a tile with an extent bound at launch",
        decl.span,
        code="E0513",
        message=f"`{sym.name}` of shape {shape_text(dims)} would need shared memory of a size "
        f"not bounded before launch: `{name}` is bound at launch",
        note=f"it cannot stay fused into the statements that read it: {why}",
        help=HELP.format(src=src),
    )


def _use_problem(s, sym) -> str | None:
    """Why a read of `sym` in statement `s` could not be replaced by its value."""
    if isinstance(s, hir.Assign):
        if _mentions(s.target, sym):
            return "it is written after its declaration"
        return _expr_problem(s.value, sym)
    if isinstance(s, (hir.VarDecl, hir.Let)):
        return _expr_problem(s.value, sym) if s.value is not None else None
    if isinstance(s, hir.Block):
        return next((w for x in s.stmts if (w := _use_problem(x, sym))), None)
    if isinstance(s, hir.For):
        for e in (s.lo, s.hi, s.step):
            if isinstance(e, hir.Expr) and _mentions(e, sym):
                return "it is read as a scalar"
        return _use_problem(s.body, sym)
    if isinstance(s, hir.While):
        return _expr_problem(s.cond, sym) or _use_problem(s.body, sym)
    if isinstance(s, hir.If):
        return (_expr_problem(s.cond, sym) or _use_problem(s.then, sym)
                or (_use_problem(s.orelse, sym) if s.orelse is not None else None))  # fmt: skip
    if isinstance(s, hir.ExprStmt):
        return _expr_problem(s.expr, sym)
    return None


def _expr_problem(e, sym) -> str | None:
    if e is None or not _mentions(e, sym):
        return None
    if isinstance(e, hir.Ref):
        return None
    if isinstance(e, hir.Slice):
        return "a slice of it is taken" if _mentions(e.base, sym) else "it is read per point"
    elementwise = not isinstance(e, hir.Builtin) or e.name in ELEMENTWISE or e.name in FOLDS
    parts = operands(e) if elementwise else []
    if not parts:
        return f"`{getattr(e, 'name', type(e).__name__)}` reads it"
    return next((w for p in parts if (w := _expr_problem(p, sym))), None)


def _written(s, views) -> set:
    """The symbols (and the tensors under views) statement `s` may write."""
    out = set()
    for node in _walk(s):
        if isinstance(node, hir.Assign):
            t = node.target
            while isinstance(t, hir.Slice):
                t = t.base
            if isinstance(t, hir.Ref):
                out.add(t.sym)
        elif isinstance(node, hir.Builtin) and node.name.startswith("atomic"):
            out |= _refs(node.args)
    return _roots(out, views)


def _refs(e) -> set:
    return {n.sym for n in _walk(e) if isinstance(n, hir.Ref)}


def _roots(syms, views) -> set:
    """`syms` with every symbol a view of them reads (transitively) added."""
    out, todo = set(), list(syms)
    while todo:
        x = todo.pop()
        if x in out:
            continue
        out.add(x)
        if x in views:
            todo.extend(_refs(views[x]))
    return out


def _mentions(node, sym) -> bool:
    return any(isinstance(n, hir.Ref) and n.sym == sym for n in _walk(node))


def _subst(node, sym, value):
    """`node` with every `Ref` to `sym` replaced by `value` (types are not entered)."""
    if isinstance(node, hir.Ref):
        return value if node.sym == sym else node
    if isinstance(node, tuple):
        return tuple(_subst(x, sym, value) for x in node)
    if isinstance(node, list):
        return [_subst(x, sym, value) for x in node]
    if (
        is_dataclass(node)
        and not isinstance(node, (hir.Sym, type, hir.Sub))
        and isinstance(node, (hir.Expr, hir.Stmt))
    ):
        changes = {}
        for f in fields(node):
            if f.name in ("span", "type", "sym", "var"):
                continue
            old = getattr(node, f.name)
            new = _subst(old, sym, value)
            if new is not old:
                changes[f.name] = new
        return replace(node, **changes) if changes else node
    if isinstance(node, hir.Sub):
        start = _subst(node.start, sym, value)
        return replace(node, start=start) if start is not node.start else node
    return node


# ---------------------------------------------------------------------------
# planning: the vector width of a dynamic sweep


def extent_div(lw, e, lets) -> int:
    """A number the last extent of the view `e` (a slice, or a `let` view) is a
    multiple of: its tensor's dimension (4, or the `@aligned` tile), narrowed by each
    `s:` start (`N - s`), or a slice's own extent."""

    base, chain = _chain(e, lets)
    dims = getattr(base.type, "dims", ())
    if not dims:
        return 1
    last = len(dims) - 1
    d = _dim_div(lw, dims[last])
    for sl in chain:
        sub = sl.subs[last]
        if sub.point:
            return 1
        if sub.extent is None:
            d = gcd(d, lw.divisor(sub.start))
        else:
            d = _dim_div(lw, sub.extent)
    return d


def _views(e, lets, last):
    """The slices and views in `e` whose last extent is the sweep's `last`."""
    out = []
    for n in _walk(e):
        if not isinstance(n, hir.Expr):
            continue
        is_view = isinstance(n, hir.Slice) or (
            isinstance(n, hir.Ref) and (n.sym in lets or isinstance(n.sym.type, hir.TensorT))
        )
        dims = getattr(n.type, "dims", None)
        if is_view and dims and dims[-1] == last:
            out.append(n)
    return out


def plan_sweep(planner, node, dims, value, target=None):
    """Record the sweep of `node` over the dynamic shape `dims` (its width: the
    widest its accesses allow that divides the extent)."""
    lw = planner.lw
    dims = tuple(dims)
    lead = dims[:-1]
    if is_dynamic(lead):
        raise NotLowered(f"a sweep over {shape_text(dims)} (an extent bound at launch "
                         "other than the last)", node.span)  # fmt: skip
    if prod(lead) > MAX_ROWS:
        raise NotLowered(f"a sweep over {shape_text(dims)} (more than {MAX_ROWS} rows of an "
                         "extent bound at launch)", node.span)  # fmt: skip
    ext = _views((value, target), planner.lets, dims[-1])
    if not ext:
        raise NotLowered(f"a sweep over {shape_text(dims)} that reads no view of it",
                         node.span)  # fmt: skip
    d = max(extent_div(lw, e, planner.lets) for e in ext)
    proxy = (*lead, min(d, 8))  # a static stand-in: the widths must divide the extent
    sw = planner.sweep(node, proxy, value, target)
    line = node.span.source.line_col(node.span.start)[0] if node.span is not None else "?"
    log.debug("line %s: sweep over %s (an extent bound at launch, a multiple of %d) at vector "
              "width %d, its trip count computed at run time", line, shape_text(dims), d,
              sw.vec)  # fmt: skip
    return sw


def plan_reduction(planner, value, dims):
    """Record a row reduction over a dynamic row (folded by `row_reduction`)."""
    if value.name not in FOLDS:
        raise NotLowered(f"`{value.name}` over a row of an extent bound at launch", value.span)
    sw = plan_sweep(planner, value, dims, value.args[0])
    planner.reductions.append((value, tuple(dims), sw))
    return sw


# ---------------------------------------------------------------------------
# lowering


def _extent(lw, sw, nodes, span):
    """The run-time last extent: from the first view of the sweep's shape."""

    for n in nodes:
        acc = sw.accesses.get(_ekey(n))
        if acc is None:
            acc = memory.resolve(lw, n)
        ext = acc.shape[-1]
        if not isinstance(ext, int):
            return ext
        return Imm(ext, lw.idx)
    raise NotLowered("a sweep that reads no view of its shape", span)


def _rows(dims):
    """The static coordinates of the leading axes, each as (Imm 0, constant)."""
    lead = dims[:-1]
    out = []
    for flat in range(prod(lead)):
        rest, coords = flat, []
        for n in reversed(lead):
            coords.append(rest % n)
            rest //= n
        out.append(tuple(reversed(coords)))
    return out


def walk(lw, dims, vec, extent, visit) -> None:
    """Call `visit(point)` for every vector of a sweep over `dims` (last extent
    `extent`, a run-time value): the whole groups in a loop, unmasked, then the last
    group under the mask `col < extent`."""

    b, t = lw.b, lw.idx
    T = lw.threads
    tv = T * vec
    flat0 = b.once(("flat0", vec), lambda: imul(b, t, lw.tid(), vec))
    if not any(extent is v for v in lw.dims.values()):  # `N - s` may be below 0: empty
        extent = b.op("max", t, extent, Imm(0, t))
    whole = _idiv(lw, extent, tv)
    zero = Imm(0, t)
    for row in _rows(dims):
        lead = tuple((zero, k) for k in row)
        g = b.reg(t, "g")
        with b.region() as body:
            col = iadd(b, t, flat0, imul(b, t, g, tv))
            visit(Point(dims, (*lead, (col, 0)), vec, None, None, State(), ("dynamic", vec)))
        b.add(For(g, zero, whole, Imm(1, t), body.block, span=b.span))
        col = iadd(b, t, flat0, imul(b, t, whole, tv))
        valid = b.op("setp", "pred", col, extent, cmp="lt", type=t)
        visit(Point(dims, (*lead, (col, 0)), vec, valid, None, State(), ("dynamic", vec)))


def tile_statement(lw, s, target, op, value) -> None:
    """`X[..] = e` / `X[..] op= e` over a shape with a dynamic last extent."""

    dims = tuple(target.type.dims)
    if isinstance(target, hir.Ref) and target.sym in lw.tiles:
        raise NotLowered("a tile with an extent bound at launch", s.span, code="E0513")
    vec = lw.plan.vec.get(s.label, 1)
    sw = Sweeper(lw, dims, vec)
    sw.prepare(value, dims)
    if op != "=":
        sw.prepare(target, dims)
    acc = memory.resolve(lw, target)
    sw.note_width(target, acc)
    sw.note_reads()
    if acc.space == "shared":
        lw.tracker.access(acc.buffer, "write", None)
    extent = _extent(lw, sw, [target], s.span)
    t = elem_of(target.type)

    def visit(p):
        vals = sw.ev(value, p)
        if op != "=":
            old = sw.ev(target, p)
            vals = [scalars.binary(lw.b, op[:-1], x, y, t) for x, y in zip(old, vals, strict=True)]
        sw.store(acc, p, vals)

    versioned(lw, sw, lambda: walk(lw, dims, vec, extent, visit))


def row_reduction(lw, e: hir.Builtin, target) -> None:
    """`target = rowsum(arg)` / `rowmax(arg)` over rows of a dynamic extent: each thread
    folds its strided elements of each row, then the warp and CTA combine."""

    if e.name not in reduce.ROW_OP:
        raise NotLowered(f"`{e.name}` over a row of an extent bound at launch", e.span)
    reduce._check_threads(lw, e.span)
    op = reduce.ROW_OP[e.name]
    arg = e.args[0]
    dims = tuple(arg.type.dims)
    rows = _rows(dims)
    vec = lw.plan.vec.get(e.label, 1)
    src = elem_of(arg.type)
    acc_t = reduce.ACC[src]
    out_t = elem_of(e.type)
    b = lw.b
    sw = Sweeper(lw, dims, vec)
    sw.prepare(arg, dims)
    sw.note_reads()
    extent = _extent(lw, sw, _views(arg, {}, dims[-1]) or [arg], e.span)
    partial = [b.copy(reduce.IDENTITY[op](acc_t), REG[acc_t], hint="acc") for _ in rows]
    index = {r: k for k, r in enumerate(rows)}

    def visit(p):
        vals = [scalars.convert(b, v, src, acc_t) for v in sw.ev(arg, p)]
        x = vals[0]
        for v in vals[1:]:
            x = reduce.fold(b, op, x, v, acc_t)
        row = tuple(k for _, k in p.coords[:-1])
        reduce.fold_into(b, op, partial[index[row]], x, acc_t, guard=p.valid)

    versioned(lw, sw, lambda: walk(lw, dims, vec, extent, visit))
    folded = [reduce.butterfly(b, op, v, acc_t, 32) for v in partial]
    result = reduce.cta_exchange(lw, op, folded, acc_t, e.span)
    log.debug("`%s` over %s at vector width %d: every thread folds a strided loop over the "
              "row, shfl.bfly over the warp, %d warps through shared memory", e.name,
              shape_text(dims), vec, lw.threads // 32)  # fmt: skip
    result = [scalars.convert(b, v, acc_t, out_t) for v in result]
    reduce._write_rows(lw, target, result, e)
