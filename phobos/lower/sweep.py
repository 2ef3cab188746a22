"""Elementwise tile statements: one fused sweep per statement.

A statement `target = e` over a tile shape S runs as a sweep of the `Sweep(S, threads,
vec)` layout (`phobos.lower.layout`): each thread walks its register groups, and for
each group evaluates `e` on `vec` consecutive elements of one row, reading every
tensor slice with one vector load of `vec` elements (16 bytes at most), and writes the
target with one vector store. Nothing of `e` is stored in between: the expression is
fused. An operand of extent 1 on an axis where S is wider is broadcast (its
coordinate on that axis is 0; on the last axis one element serves the whole vector);
a scalar is computed once before the sweep.

The vector width is the widest the alignment proves (`phobos.lower.widths`): the slice's start
on the last axis a multiple of it (folded constants, multiples of tile constants,
`@aligned`), the pitch of its rows too (a dynamic extent is a multiple of 4 by the
ABI), and any bound the last axis is masked against. A mask is kept only where the
slice may run past its tensor (`phobos.lower.memory`); masked lanes read 0.

Where a 16-bit row is held below 16 bytes only by a dynamic row pitch (`X[row, c :+ B]`
with `N` bound at launch: `row * N` is a multiple of 4 elements, not 8), the sweep is
versioned (`versioned`): `if (N % 8 == 0)` it runs with 16-byte accesses, else with
each vector split into 8-byte halves; one branch a statement, on a uniform condition.

Up to `UNROLL` groups (or any number, for a sweep over register tiles, which
`placement` keeps at 64 registers at most) are written straight-line; more run as a
loop over the groups.

    >>> from phobos.lower.layout import Sweep
    >>> lay = Sweep((2, 8), threads=2, vec=4)  # thread 1's two groups: the right halves
    >>> [lay.coord(1, r) for r in (0, 4)], lay.groups
    ([(0, 4), (1, 4)], 2)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from math import prod

from phobos.lower import memory, scalars, swizzle
from phobos.lower.builder import iadd, imul, isub
from phobos.lower.errors import NotLowered
from phobos.lower.hirwalk import walk
from phobos.lower.kinds import ELEMENTWISE, REDUCTIONS
from phobos.lower.layout import Blocked, MmaAcc, MmaRows, Sweep
from phobos.lower.lir import For, If, Imm, Reg, Value
from phobos.lower.types import BYTES, REG, elem_of, mov_type
from phobos.lower.widths import VERSION
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
UNROLL = 16


@dataclass
class State:
    """What a sweep computes once and reuses across its groups."""

    memo: dict = field(default_factory=dict)


@dataclass
class Point:
    shape: tuple
    coords: tuple  # per axis: (Value, int): a per-thread part and a constant part
    lanes: int
    valid: Reg | None
    group: int | None
    state: State
    layout: object

    def narrow(self, shape) -> Point:
        """This point as seen by an operand of `shape` (extent-1 axes broadcast)."""
        if tuple(shape) == tuple(self.shape):
            return self
        coords = []
        for a, (n, m) in enumerate(zip(shape, self.shape, strict=True)):
            if n == 1 and m != 1:
                coords.append((Imm(0, self.coords[a][0].type), 0))
            else:
                coords.append(self.coords[a])
        lanes = 1 if shape[-1] == 1 and self.shape[-1] != 1 else self.lanes
        return Point(tuple(shape), tuple(coords), lanes, self.valid, self.group, self.state,
                     ("narrow", self.layout, tuple(shape)))  # fmt: skip


def _idiv(lw, x, n: int):
    b, t = lw.b, lw.idx
    if isinstance(x, Imm):
        return Imm(x.value // n, t)
    if n == 1:
        return x
    if n & (n - 1) == 0:
        return b.op("shr", t, x, Imm(n.bit_length() - 1, "u32"))
    return b.op("div", t, x, Imm(n, t))


def _irem(lw, x, n: int):
    b, t = lw.b, lw.idx
    if isinstance(x, Imm):
        return Imm(x.value % n, t)
    if n == 1:
        return Imm(0, t)
    if n & (n - 1) == 0:
        return b.op("and", "b32" if t == "s32" else "b64", x, Imm(n - 1, t), dest_type=t)
    return b.op("rem", t, x, Imm(n, t))


def _unflatten(lw, flat, shape):
    coords = []
    for n in reversed(shape[1:]):
        coords.append((_irem(lw, flat, n), 0))
        flat = _idiv(lw, flat, n)
    coords.append((flat, 0))
    return tuple(reversed(coords))


def points(lw, shape, vec, state) -> list[Point]:
    """The register groups of `Sweep(shape, threads, vec)`, unrolled: coordinates and
    validity computed once per thread, constant offsets per group."""
    T = lw.threads
    lay = Sweep(shape, T, vec)
    b, t = lw.b, lw.idx
    tv = T * vec
    flat0 = b.once(("flat0", vec), lambda: imul(b, t, lw.tid(), vec))
    out = []
    for g in range(lay.groups):
        if len(shape) == 1:
            coords = ((flat0, g * tv),)
        elif len(shape) == 2 and tv == shape[1]:  # flat0 < T * vec: every thread in row 0
            coords = ((Imm(0, t), g), (flat0, 0))
        elif len(shape) == 2 and tv % shape[1] == 0:
            C = shape[1]
            row = b.once(("row0", vec, C), lambda C=C: _idiv(lw, flat0, C))
            col = b.once(("col0", vec, C), lambda C=C: _irem(lw, flat0, C))
            coords = ((row, g * (tv // C)), (col, 0))
        elif len(shape) == 2 and shape[1] % tv == 0:
            gpr = shape[1] // tv
            coords = ((Imm(0, t), g // gpr), (flat0, (g % gpr) * tv))
        else:
            flat = iadd(b, t, flat0, g * tv)
            coords = _unflatten(lw, flat, shape)
        valid = None
        if (g + 1) * T > lay.vectors:
            n = lay.vectors - g * T
            valid = b.once(("valid", n, t), lambda n=n: b.op("setp", "pred", lw.tid(), Imm(n, t),
                                                              cmp="lt", type=t))  # fmt: skip
        out.append(Point(tuple(shape), coords, vec, valid, g, state, ("sweep", tuple(shape), vec)))
    return out


def cell_origins(lw, lay: Blocked) -> list[tuple[Value, Value, Reg | None]]:
    """For each repetition of `lay`: the first row and column of this thread's cell, and
    the predicate it holds a cell at all (None: always), computed once at entry."""
    b, t = lw.b, lw.idx
    T = lw.threads
    out = []
    for rep in range(lay.reps):

        def origin(rep=rep):
            cell = iadd(b, t, lw.tid(), rep * T) if rep else lw.tid()
            row = imul(b, t, _idiv(lw, cell, lay.cols), lay.tm)
            col = imul(b, t, _irem(lw, cell, lay.cols), lay.vec)
            return row, col

        row, col = b.once(("cell", lay.key, rep), origin)
        valid = None
        if (rep + 1) * T > lay.cells:
            valid = b.once(("valid", lay.cells - rep * T, t),
                           lambda n=lay.cells - rep * T: b.op("setp", "pred", lw.tid(), Imm(n, t),
                                                                cmp="lt", type=t))  # fmt: skip
        out.append((row, col, valid))
    return out


def blocked_points(lw, lay: Blocked, state) -> list[Point]:
    """The register groups of a `Blocked` layout: per repetition, per row of the cell,
    per `vec` columns; group numbers as `Blocked.coord` counts them."""
    out = []
    g = 0
    for row, col, valid in cell_origins(lw, lay):
        for i in range(lay.tm):
            for jv in range(lay.tn // lay.vec):
                out.append(Point(lay.shape, ((row, i), (col, lay.col_offset(jv * lay.vec))), lay.vec, valid, g,
                                 state, lay.key))  # fmt: skip
                g += 1
    return out


def mma_points(lw, lay: MmaAcc, state) -> list[Point]:
    """The register groups of an `MmaAcc` layout: the thread's origin (its warp's block,
    then its lane's place in a C fragment) computed once at entry, each group a constant
    offset from it (`MmaAcc.offset`)."""
    b, t = lw.b, lw.idx

    def origin():
        tid = lw.tid()
        warp, lane = _idiv(lw, tid, 32), _irem(lw, tid, 32)
        (g, q), (wr, wc) = _split(lw, lane, 4), _split(lw, warp, lay.warps_n)
        row = iadd(b, t, imul(b, t, wr, lay.wm), g)
        col = iadd(b, t, imul(b, t, wc, lay.wn), imul(b, t, q, 2))
        return row, col

    row, col = b.once(("mma.origin", lay.key), origin)
    return [Point(lay.shape, ((row, dr), (col, dc)), lay.vec, None, g, state, lay.key)
            for g, (dr, dc) in enumerate(lay.offset(g * lay.vec) for g in range(lay.groups))]  # fmt: skip


def rows_points(lw, lay: MmaRows, state) -> list[Point]:
    """The registers of an `MmaRows` layout: the row origin of `mma_points` (the thread's
    warp block, then `lane // 4`), each register a constant row below it."""
    b, t = lw.b, lw.idx

    def origin():
        tid = lw.tid()
        warp, lane = _idiv(lw, tid, 32), _irem(lw, tid, 32)
        return iadd(b, t, imul(b, t, warp, lay.wm), _idiv(lw, lane, 4))

    row = b.once(("mma-rows.origin", lay.key), origin)
    zero = Imm(0, t)
    return [Point(lay.shape, ((row, lay.offset(g)[0]), (zero, 0)), 1, None, g, state, lay.key)
            for g in range(lay.groups)]  # fmt: skip


def _beside(tile, layout_key) -> bool:
    """Whether a sweep in the layout `layout_key` is of an `MmaAcc` whose rows the
    `MmaRows` tile `tile` holds (one warp column, the same warps down), the point seen
    by the tile's [R, 1] shape (`Point.narrow`)."""
    if isinstance(layout_key, tuple) and layout_key[0] == "narrow":
        layout_key = layout_key[1]
    return (isinstance(layout_key, tuple) and layout_key[0] == "mma"
            and layout_key[1][0] == tile.shape[0] and layout_key[2] == tile.rows
            and layout_key[3] == 1)  # fmt: skip


def _split(lw, x, n: int):
    """(x // n, x % n)."""
    return _idiv(lw, x, n), _irem(lw, x, n)


def run(lw, shape, vec, evaluate, commit, *, unroll_any=False, layout=None) -> None:
    """Evaluate every group, then commit every group (loads issue before stores)."""
    shape = tuple(shape)
    if isinstance(layout, (Blocked, MmaAcc, MmaRows)):
        make = {Blocked: blocked_points, MmaAcc: mma_points, MmaRows: rows_points}[type(layout)]
        pts = make(lw, layout, State())
        values = [evaluate(p) for p in pts]
        for p, v in zip(pts, values, strict=True):
            commit(p, v)
        return
    T = lw.threads
    lay = Sweep(shape, T, vec)
    if prod(shape) == 1 or lay.groups <= UNROLL or unroll_any:
        pts = points(lw, shape, vec, State())
        values = [evaluate(p) for p in pts]
        for p, v in zip(pts, values, strict=True):
            commit(p, v)
        return
    b, t = lw.b, lw.idx
    g = b.reg(t, "g")
    with b.region() as body:
        flat0 = b.once(("flat0", vec), lambda: imul(b, t, lw.tid(), vec))
        flat = iadd(b, t, flat0, imul(b, t, g, T * vec))
        coords = _unflatten(lw, flat, shape) if len(shape) > 1 else ((flat, 0),)
        valid = None
        if not lay.whole:
            valid = b.op("setp", "pred", flat, Imm(lay.size, t), cmp="lt", type=t)
        p = Point(shape, coords, vec, valid, None, State(), ("sweep", shape, vec))
        commit(p, evaluate(p))
    b.add(For(g, Imm(0, t), Imm(lay.groups, t), Imm(1, t), body.block, span=b.span))


def versioned(lw, sw: Sweeper, emit) -> None:
    """`emit()` the sweep once; or, where some access of `sw` is wider than proven only
    for want of a dynamic row pitch `N` being a multiple of 8 (`slice_vec`), twice:

        if (N % 8 == 0) { the sweep at 16 bytes } else { the sweep at 8 bytes }

    The extents are kernel parameters, so the condition is uniform (computed once, at
    entry) and every thread takes the same branch. Both versions run the same layout
    and write the same registers; only the width of the accesses differs.
    """
    if not sw.split:
        emit()
        return
    lw, b = sw.lw, sw.lw.b
    names = tuple(sorted(sw.pitches))
    cond = b.once(("pitch_multiple", VERSION, names), lambda: _multiples(lw, names))
    with b.region() as wide:
        sw.wide = True
        emit()
    with b.region() as narrow:
        sw.wide = False
        emit()
    b.add(If(cond, wide.block, narrow.block, span=b.span))
    span = b.span
    line = span.source.line_col(span.start)[0] if span is not None else "?"
    log.debug("`%s` line %s: versioned on %s", lw.k.name, line,
              " && ".join(f"{n} % {VERSION} == 0" for n in names))  # fmt: skip


def _multiples(lw, names):
    """A pred: every dynamic extent in `names` is a multiple of `VERSION`."""
    b, t = lw.b, lw.idx
    out = None
    for n in names:
        low = b.op("and", "b32" if t == "s32" else "b64", lw.dim_value(n), Imm(VERSION - 1, t),
                   dest_type=t)  # fmt: skip
        ok = b.op("setp", "pred", low, Imm(0, t), cmp="eq", type=t)
        out = ok if out is None else b.op("and", "pred", out, ok)
    return out


def replicated_points(lw, shape) -> list[Point]:
    """Every element of a small tile, computed by every thread (a replicated target)."""
    t = lw.idx
    state = State()
    out = []
    for flat in range(prod(shape)):
        rest, coords = flat, []
        for n in reversed(shape):
            coords.append((Imm(0, t), rest % n))
            rest //= n
        out.append(Point(tuple(shape), tuple(reversed(coords)), 1, None, None, state, ("all",)))
    return out


# ---------------------------------------------------------------------------
# Evaluating an elementwise expression at a point


class Sweeper:
    """Lowers one tile statement: prepares its scalars and accesses, then sweeps."""

    def __init__(self, lw, shape, vec, layout=None):
        self.lw = lw
        self.shape = tuple(shape)
        self.vec = vec
        self.key = layout.key if layout is not None else ("sweep", self.shape, vec)
        self.scalars: dict[int, Value] = {}
        self.accesses: dict[int, memory.Access] = {}
        self.shared_reads: list = []
        self.split: dict[int, int] = {}  # Access.key -> its proven width (narrower than vec)
        self.pitches: dict[str, hir.Dyn] = {}  # the dynamic row pitches the widths wait on
        self.wide = False  # in the branch where every pitch in `pitches` is a multiple of 8

    def note_width(self, e, acc) -> None:
        """Where placement widened `e`'s vectors past what is proven (`slice_vec`), its
        accesses split to the proven width unless the sweep runs `wide`."""
        noted = self.lw.widened.get(e.label)
        if noted is None or acc.space != "global":
            return
        proven, dim, wider = noted
        if self.vec > proven and self.vec <= wider:
            self.split[acc.key] = min(proven, self.split.get(acc.key, proven))
            self.pitches[dim.name] = dim

    # -- before the sweep ----------------------------------------------------

    def prepare(self, e, shape) -> None:
        """Scalars computed once; slices resolved (their starts computed once)."""
        lw = self.lw
        if isinstance(e.type, hir.Scalar):
            self.scalars[id(e)] = lw.value(e)
            return
        if isinstance(e, hir.Builtin) and e.name == "iota":
            return
        if isinstance(e, (hir.Slice,)) or (isinstance(e, hir.Ref) and _is_view(lw, e)):
            if _ekey(e) in self.accesses:  # the same slice read twice: one load
                self.note_width(e, self.accesses[_ekey(e)])
                return
            acc = memory.resolve(lw, e)
            self.accesses[_ekey(e)] = acc
            self.note_width(e, acc)
            if acc.space == "shared":
                own = tuple(e.type.dims)
                key = self.key if own == self.shape and _whole(acc) else None
                self.shared_reads.append((acc.buffer, key))
            return
        if isinstance(e, hir.Ref):
            tile = lw.tiles.get(e.sym)
            if tile is None:
                raise NotLowered(f"reading `{e.sym.name}` in a tile expression", e.span)
            if tile.place == "shared":
                acc = tile.access()
                self.accesses[_ekey(e)] = acc
                key = self.key if tile.shape == self.shape else None
                self.shared_reads.append((acc.buffer, key))
            elif tile.place == "registers" and tile.regs is None:
                raise NotLowered(f"`{e.sym.name}` read before it has a value", e.span)
            return
        if isinstance(e, hir.Binary):
            self.prepare(e.left, shape)
            self.prepare(e.right, shape)
        elif isinstance(e, hir.Unary):
            self.prepare(e.operand, shape)
        elif isinstance(e, hir.Convert):
            self.prepare(e.value, shape)
        elif isinstance(e, hir.Builtin):
            if e.name in REDUCTIONS:
                raise NotLowered(f"`{e.name}` here", e.span)
            if e.name not in ELEMENTWISE:
                raise NotLowered(f"`{e.name}`", e.span)
            for a in e.args:
                self.prepare(a, shape)
        else:
            raise NotLowered(f"`{type(e).__name__}` in a tile expression", e.span)

    def note_reads(self, also=()) -> None:
        """Record the statement's shared reads (and `also`, its write) as one step."""
        self.lw.tracker.statement([(buf, "read", key) for buf, key in self.shared_reads]
                                  + list(also))  # fmt: skip

    # -- at a point ----------------------------------------------------------

    def ev(self, e, p: Point) -> list[Value]:
        if id(e) in self.scalars:
            return [self.scalars[id(e)]] * p.lanes
        q = p.narrow(tuple(e.type.dims))
        vals = self.ev_at(e, q)
        if len(vals) < p.lanes:
            vals = vals * p.lanes
        return vals

    def ev_at(self, e, p: Point) -> list[Value]:
        lw, b = self.lw, self.lw.b
        t = elem_of(e.type)
        if _ekey(e) in self.accesses:
            acc = self.accesses[_ekey(e)]
            key = ("load", acc.key, p.group, p.lanes, tuple((_key(r), k) for r, k in p.coords))
            memo = p.state.memo
            if key not in memo:
                memo[key] = self.load(acc, p)
            return memo[key]
        if isinstance(e, hir.Ref):
            tile = lw.tiles[e.sym]
            if tile.place == "replicated":
                return [tile.regs[0]]
            if tile.rows is not None and _beside(tile, p.layout):
                # the row's value, in the thread's own register of the accumulator's row
                return [tile.regs[MmaRows.reg_of(p.coords[0][1])][0]]
            if p.group is None or tile.vec != p.lanes or _layout_key(tile, lw) != p.layout:
                raise NotLowered(f"`{e.sym.name}` read by another layout", e.span)
            return list(tile.regs[p.group])
        if isinstance(e, hir.Convert):
            src = elem_of(e.value.type)
            return [scalars.convert(b, v, src, t) for v in self.ev(e.value, p)]
        if isinstance(e, hir.Unary):
            return [scalars.unary(b, e.op, v, t) for v in self.ev(e.operand, p)]
        if isinstance(e, hir.Binary):
            xs, ys = self.ev(e.left, p), self.ev(e.right, p)
            lt = elem_of(e.left.type)
            return [scalars.binary(b, e.op, x, y, lt) for x, y in zip(xs, ys, strict=True)]
        if isinstance(e, hir.Builtin):
            return self.builtin(e, p, t)
        raise NotLowered(f"`{type(e).__name__}` in a tile expression", e.span)

    def builtin(self, e, p, t) -> list[Value]:
        b = self.lw.b
        name = e.name
        if name == "iota":
            d = int(e.args[0].value)
            reg, k = p.coords[d]
            out = []
            for lane in range(p.lanes):
                off = k + (lane if d == len(p.shape) - 1 else 0)
                v = iadd(b, self.lw.idx, reg, off)
                out.append(v if self.lw.idx == "s32" else scalars.convert(b, v, "i64", "i32"))
            return out
        if name == "exp" and t == "f32":
            shifted = self.exp_shifted(e.args[0], p)
            if shifted is not None:
                return shifted
        args = [self.ev(a, p) for a in e.args]
        lanes = list(zip(*args, strict=True))
        at = [elem_of(a.type) for a in e.args]
        if name in ("exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt",
                    "sin", "cos"):  # fmt: skip
            return [scalars.math1(b, name, x[0], t) for x in lanes]
        if name == "pow":
            return [scalars.power(b, x, y, t) for x, y in lanes]
        if name in ("min", "max", "tmax"):
            which = "min" if name == "min" else "max"
            return [scalars.minmax(b, which, x, y, t) for x, y in lanes]
        if name == "where":
            return [scalars.select(b, scalars.materialize(b, c, "bool"), x, y, t)
                    for c, x, y in lanes]  # fmt: skip
        if name == "argsel":
            out = []
            for va, vb, ia, ib in lanes:
                ge = scalars.binary(b, ">=", va, vb, at[0])
                out.append(scalars.select(b, ge, ia, ib, t))
            return out
        if name in REG:  # a conversion spelled as a call
            return [scalars.convert(b, x[0], at[0], t) for x in lanes]
        raise NotLowered(f"`{name}`", e.span)

    def exp_shifted(self, arg, p) -> list[Value] | None:
        """`exp(a - b)` and `exp(a * c - b)` (c a scalar), softmax's `exp(s * scale -
        rowmax)`: the difference in one instruction an element, `sub` or `fma(a, c, -b)`
        (`-b` made once a row where `b` is a row's register), then `* log2 e` and the
        `ex2`, where the plain form takes a `mul` more for `a * c`. The difference is
        rounded once, before the change of base: folding `b log2 e` into the `fma` as well
        would round `b log2 e` on its own, which at the -1e30 of an empty row's maximum
        is off by 2^76 in the exponent (`exp(m - m)` would not be 1). The `ex2` flushes
        results under 2^-126 to zero (`.ftz`): the plain `ex2.approx.f32` keeps them by
        scaling around the instruction, three more instructions an element on sm_90 (a
        softmax's terms that small are nothing beside its row's largest, 1). None: not
        of that form."""
        f32 = ("f32", "f32")
        if not (isinstance(arg, hir.Binary) and arg.op == "-"
                and (elem_of(arg.left.type), elem_of(arg.right.type)) == f32):  # fmt: skip
            return None
        b, memo = self.lw.b, p.state.memo
        log2e = Imm(scalars.LOG2E, "f32")
        left, scale = arg.left, None
        if isinstance(left, hir.Binary) and left.op == "*" and elem_of(left.type) == "f32":
            for x, c in ((left.left, left.right), (left.right, left.left)):
                if id(c) in self.scalars and elem_of(c.type) == "f32":
                    left, scale = x, self.scalars[id(c)]
                    break
        if scale is not None and isinstance(scale, Imm):
            scale = b.copy(scale, "f32")
        out = []
        for x, y in zip(self.ev(left, p), self.ev(arg.right, p), strict=True):
            x = b.copy(x, "f32") if isinstance(x, Imm) else x
            if scale is None:
                diff = scalars.binary(b, "-", x, y, "f32")
            else:
                if isinstance(y, Imm):
                    neg = Imm(-y.value, "f32")
                else:
                    neg = self._shared(("exp_neg", y.name), memo,
                                       lambda y=y: b.op("neg", "f32", y))  # fmt: skip
                diff = b.op("fma", "f32", x, scale, neg, rounding="rn")
            power = b.op("mul", "f32", diff, log2e)
            out.append(b.op("ex2", "f32", power, rounding="approx", ftz=1))
        return out

    # -- memory --------------------------------------------------------------

    def _base(self, acc, p):
        """The address of `acc` at the per-thread part of `p`'s coordinates (memoised)."""
        lw = self.lw
        regs = tuple(c[0] for c in p.coords)
        key = ("base", acc.key, regs)
        memo = p.state.memo
        if key not in memo:
            deps = (*acc.starts, *regs, *(q for q in acc.pitches if not isinstance(q, int)))
            fkey = ("flat", tuple(_key(v) for v in deps), tuple(map(str, acc.pitches)))
            flat = self._shared(fkey, memo, lambda: memory.flat_index(lw, acc, regs))
            if acc.space == "global" and isinstance(flat, Reg):  # the byte offset shared too
                size = BYTES[acc.elem]
                off = self._shared(("bytes", flat.name, size), memo,
                                   lambda: memory.byte_offset(lw, flat, size))  # fmt: skip
                memo[key] = lw.b.op("add", "u64", acc.base, off, hint="a")
            else:
                memo[key] = memory.address(lw, acc, flat)
        return memo[key]

    def _const_offset(self, acc, p):
        b, t = self.lw.b, self.lw.idx
        total = 0
        for a, (_, k) in enumerate(p.coords):
            if k == 0:
                continue
            pitch = acc.pitches[a]
            if isinstance(pitch, int):
                total = (
                    total + k * pitch if isinstance(total, int) else iadd(b, t, total, k * pitch)
                )
            else:
                total = iadd(b, t, total, imul(b, t, pitch, k))
        return total

    def address(self, acc, p):
        off = self._const_offset(acc, p)
        if isinstance(off, Imm):
            off = off.value
        if acc.swizzle and (
            acc.panels
            or not (
                isinstance(off, int) and off * BYTES[acc.elem] % swizzle.period(acc.swizzle) == 0
            )
        ):
            return self._swizzled(acc, p, off)  # fmt: skip
        return memory.offset_address(self.lw, self._base(acc, p), acc, off)

    def _swizzled(self, acc, p, off):
        """The address of a swizzled tile at `p`: the swizzle of the whole offset (the
        constant part included), as a point's constant moves a chunk to another."""
        lw = self.lw
        regs = tuple(c[0] for c in p.coords)
        deps = (*acc.starts, *regs)
        flat = self._shared(("flat", tuple(_key(v) for v in deps), tuple(map(str, acc.pitches))),
                            p.state.memo, lambda: memory.flat_index(lw, acc, regs))  # fmt: skip
        return memory.address(lw, acc, iadd(lw.b, lw.idx, flat, off))

    def guard(self, acc, p):
        """The predicate a vector of `acc` at `p` is in bounds under; (None, True) when it
        always is, (None, False) when it never is.

        A bound is a multiple of the vector width (`slice_vec`), so the first element
        decides for the whole vector; but an 8-wide vector may meet a bound on the last
        axis that is only a multiple of 4 (a dynamic extent), so there each half has
        its own test, and the guard is `memory.Halves`: the full 16 bytes where the
        second half is in bounds, the first 8 bytes alone where only it is.
        """
        b, t = self.lw.b, self.lw.idx
        memo = p.state.memo
        preds = [] if p.valid is None else [p.valid]
        last = len(acc.bounds) - 1
        halves = p.lanes > 4 and not (self.wide and _bounds_on(self.lw, acc, self.pitches))
        second: list = []  # tests of the second half (Halves only)
        second_never = False
        for a, limits in enumerate(acc.bounds):
            reg, k = p.coords[a]
            for lim_v in limits:
                lim = self._shared(("lim", _key(lim_v), _key(acc.starts[a]), _key(reg)), memo,
                                   lambda lim_v=lim_v, s=acc.starts[a], r=reg:
                                   isub(b, t, lim_v, iadd(b, t, s, r)))  # fmt: skip
                tests = [(k, preds)]
                if halves and a == last:
                    tests.append((k + p.lanes // 2, second))
                for at, into in tests:
                    if isinstance(lim, Imm):
                        if at < lim.value:
                            continue
                        if into is preds:
                            return None, False
                        second_never = True
                        continue
                    into.append(self._shared(("in", lim.name, at), memo,
                                             lambda lim=lim, at=at: b.op("setp", "pred", lim,
                                             Imm(at, t), cmp="gt", type=t)))  # fmt: skip
        first = self._all(preds, memo)
        if second_never:
            return memory.Halves(None, first if first is not None else self._true()), True
        if second:
            full = self._all(preds + second, memo)
            off = self._shared(("not", full.name), memo,
                               lambda: b.op("not", "pred", full))  # fmt: skip
            only = off if first is None else self._all([first, off], memo)
            return memory.Halves(full, only), True
        return first, True

    def _true(self):
        b, t = self.lw.b, self.lw.idx
        return b.once(("true",), lambda: b.op("setp", "pred", Imm(0, t), Imm(0, t), cmp="eq",
                                              type=t))  # fmt: skip

    def _all(self, preds, memo):
        """The conjunction of `preds` (shared, `_shared`); None when there are none."""
        if not preds:
            return None
        out = preds[0]
        for q in preds[1:]:
            out = self._shared(("and", out.name, q.name), memo,
                               lambda out=out, q=q: self.lw.b.op("and", "pred", out, q))  # fmt: skip
        return out

    def _shared(self, key, memo, make):
        """The guard value `key`, made by `make()` once for the statement (its point's
        `State`): the W load, the B load and the Y store of one statement test the same
        columns against `N` with one `setp`. Not shared across statements: a predicate
        kept live across a kernel's reductions costs registers (softmax at BLOCK=16384,
        T=512 went from 61 to 64 and, on the card, lost half its occupancy)."""
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def pieces(self, acc, p) -> list[Point] | None:
        """`p` cut into pieces of `acc`'s proven width, when its vectors are wider than
        proven and the sweep is not in its `wide` version; None: one access."""
        w = self.split.get(acc.key)
        if self.wide or w is None or p.lanes <= w:
            return None
        reg, k = p.coords[-1]
        return [Point(p.shape, (*p.coords[:-1], (reg, k + c)), w, p.valid, p.group, p.state,
                      p.layout) for c in range(0, p.lanes, w)]  # fmt: skip

    def load(self, acc, p) -> list[Value]:
        parts = self.pieces(acc, p)
        if parts is not None:
            return [v for q in parts for v in self.load(acc, q)]
        b = self.lw.b
        guard, live = self.guard(acc, p)
        rt = REG[acc.elem]
        if not live:
            zero = Imm(0.0, rt) if rt.startswith("f") or rt == "bf16" else Imm(0, rt)
            return [
                scalars.materialize(b, zero, acc.elem) if rt in ("f16", "bf16") else zero
            ] * p.lanes
        addr = self.address(acc, p)
        return memory.load(b, acc.space, acc.elem, addr, p.lanes, guard)

    def store(self, acc, p, values) -> None:
        parts = self.pieces(acc, p)
        if parts is not None:
            for q in parts:
                c = q.coords[-1][1] - p.coords[-1][1]
                self.store(acc, q, values[c : c + q.lanes])
            return
        b = self.lw.b
        guard, live = self.guard(acc, p)
        if not live:
            return
        addr = self.address(acc, p)
        values = [scalars.materialize(b, v, acc.elem) for v in values]
        memory.store(b, acc.space, acc.elem, addr, values, guard)


def _bounds_on(lw, acc, pitches) -> bool:
    """Whether every bound of `acc`'s last axis is an extent in `pitches` (in the `wide`
    branch, a multiple of 8) or a constant multiple of 8: an 8-wide vector (its start a
    multiple of 8) then lies wholly on one side, and its halves need no test apart."""
    regs = {lw.dims[n].name for n in pitches if isinstance(lw.dims.get(n), Reg)}
    return all(
        (isinstance(lim, Imm) and lim.value % VERSION == 0)
        or (isinstance(lim, Reg) and lim.name in regs)
        for lim in acc.bounds[-1]
    )


def _ekey(e):
    """A tile expression as a dictionary key: equal slices share one."""
    try:
        hash(e)
    except TypeError:
        return id(e)
    return e


def _key(v):
    return v.name if isinstance(v, Reg) else (v.value if isinstance(v, Imm) else v)


def _is_view(lw, e) -> bool:
    return isinstance(lw.env.get(e.sym), memory.Access) or (
        isinstance(e.sym.type, hir.TensorT) and e.sym.kind == "param"
    )


def _whole(acc) -> bool:
    return all(isinstance(s, Imm) and s.value == 0 for s in acc.starts)


# ---------------------------------------------------------------------------
# Tile statements


def elementwise(lw, s, target, op, value, vec: int | None = None) -> None:
    """`target op value` for an elementwise `value` over a static shape: one fused
    sweep (the statement `s` names the plan's vector width and layout; `vec`, where
    given, is the width of a sweep the lowering builds itself)."""
    shape = tuple(target.type.dims)
    tile = lw.tiles.get(target.sym) if isinstance(target, hir.Ref) else None
    if vec is None:
        vec = lw.plan.vec.get(s.label, 1)
    if tile is not None and tile.place == "registers":
        vec = tile.vec
    layout = lw.plan.layouts.get(s.label)
    if tile is not None and tile.kept:
        layout = tile.layout(lw.threads)
    if layout is not None:
        vec = layout.vec
    sw = Sweeper(lw, shape, vec, layout)
    sw.prepare(value, shape)
    if op != "=":
        sw.prepare(target, shape)
    target_acc = None
    if tile is None or tile.place == "shared":
        target_acc = tile.access() if tile is not None else memory.resolve(lw, target)
        if tile is None:
            sw.note_width(target, target_acc)
    key = layout.key if layout is not None else ("sweep", shape, vec)
    write = ()
    if target_acc is not None and target_acc.space == "shared":
        whole = tile is not None
        write = ((target_acc.buffer, "write", key if whole else None),)
    sw.note_reads(write)
    masks = [a for a in range(len(shape)) if target_acc is not None and target_acc.masked(a)]
    log.debug("sweep over %s at vector width %d%s%s", list(shape), vec,
              f", target masked on axes {masks}" if masks else "",
              f" into {tile.place} `{tile.sym.name}`" if tile is not None else "")  # fmt: skip

    def evaluate(p):
        vals = sw.ev(value, p)
        if op != "=":
            old = sw.ev(target, p)
            t = elem_of(target.type)
            vals = [scalars.binary(lw.b, op[:-1], x, y, t) for x, y in zip(old, vals, strict=True)]
        return vals

    def commit(p, vals):
        if tile is not None and tile.place == "replicated":
            lw.b.mov(tile.regs[0], scalars.materialize(lw.b, vals[0], tile.elem),
                     mov_type(tile.regs[0].type))  # fmt: skip
        elif tile is not None and tile.place == "registers":
            for r, v in zip(tile.regs[p.group], vals, strict=True):
                lw.b.mov(r, scalars.materialize(lw.b, v, tile.elem), mov_type(r.type))
        else:
            sw.store(target_acc, p, vals)

    if tile is not None and tile.place == "replicated":
        for p in replicated_points(lw, shape):
            commit(p, evaluate(p))
        return
    unroll_any = tile is not None and tile.place == "registers" or reads_registers(lw, value)
    versioned(lw, sw, lambda: run(lw, shape, vec, evaluate, commit, unroll_any=unroll_any,
                                  layout=layout))  # fmt: skip


def _layout_key(tile, lw) -> tuple:
    """The `Point.layout` of a sweep in `tile`'s register layout."""
    lay = tile.layout(lw.threads)
    if isinstance(lay, (Blocked, MmaAcc, MmaRows)):
        return lay.key
    return ("sweep", tuple(tile.shape), tile.vec)


def reads_registers(lw, e) -> bool:
    return any(
        isinstance(n, hir.Ref) and getattr(lw.tiles.get(n.sym), "place", None) == "registers"
        for n in walk(e)
    )


def declare(lw, tile) -> None:
    """Give a register or replicated tile its registers (once, where it is declared)."""
    if tile.regs is not None:
        return
    rt = REG[tile.elem]
    if tile.place == "replicated":
        tile.regs = [lw.b.reg(rt, tile.sym.name)]
    elif tile.place == "registers":
        lay = tile.layout(lw.threads)
        tile.regs = [[lw.b.reg(rt, tile.sym.name) for _ in range(tile.vec)]
                     for _ in range(lay.groups)]  # fmt: skip
