"""Where each tile lives, and at which vector width each sweep runs.

Every `var` tile (and `let` of a tile value) gets a placement, logged with its reason:

| placement    | when                                                                 |
|--------------|----------------------------------------------------------------------|
| `replicated` | one element (`[1, 1]`): every thread keeps it in a register           |
| `registers`  | every use is an elementwise sweep (or a row reduction's sweep) over the tile's own shape at one vector width, and a thread holds at most 64 of its elements |
| `shared`     | anything else: read broadcast by another shape, sub-sliced, read per point, or too large for registers |

A sweep's vector width is the widest the alignment proves for every tensor slice it
touches (`widths.slice_vec`), at most 16 bytes an access, dividing the last extent;
a register tile's sweeps share one width (the narrowest of them). A sweep whose
tensor slices all hold 16-bit floats may take 8 elements a vector (one 16-byte
access of four 32-bit words); any other stays at 4 at most.

Under `@padstage`, a shared staging tile (`var t = <tensor slice>`, two axes or more)
whose rows are a multiple of 128 bytes gets 16 bytes more a row (`PAD`: 128 f32 ->
a row pitch of 132 elements, 64 f16 -> 72), so that the same column of successive rows
falls in other banks; its rows still start 16-byte aligned, so vector accesses keep
their width. A tile read through `flat` (which views its bytes as one row) and any
other tile keep the row pitch of their extent.

`normalize` first moves each row reduction nested in an expression into a
temporary tile of its own, so a sweep only ever evaluates elementwise expressions;
likewise a nested `cumsum`, `transpose`, `gather` or `tril`, and every `flat(t)` is
read through a `let` view (`phobos.lower.shape`).

    >>> REDUCTIONS
    ('rowsum', 'rowmax', 'rowargmax')
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass, field, replace
from math import prod

from phobos.lower import alloc, attend, dynamic, swizzle
from phobos.lower import shape as shape_ops
from phobos.lower.errors import NotLowered
from phobos.lower.hirwalk import numbered
from phobos.lower.hirwalk import walk as _walk
from phobos.lower.kinds import CONTRACTIONS, ELEMENTWISE, REDUCTIONS, max_vec
from phobos.lower.layout import Blocked, MmaAcc, MmaRows, Sweep
from phobos.lower.lir import Imm, SharedBuffer
from phobos.lower.options import TMA, switch_count
from phobos.lower.types import BYTES, elem_of
from phobos.lower.widths import PACKED, expr_vec, max_vec_for, memory_elems, proven, slice_vec
from phobos.sema import hir
from phobos.sema.attributes import MAX_RING_STAGES

log = logging.getLogger("phobos.lower")

MAX_TILE_REGS = 64  # SPEC.md (@registers): at most 64 elements a thread
# A tensor-core accumulator may take twice that: a warp's 64 x 64 block of mma fragments
# is 128 registers a thread, and the larger warp block loads fewer fragments an mma.
MAX_MMA_REGS = 128
# A wgmma holds its whole accumulator fragment at once, beside its descriptors and the
# addresses around it: where those do not fit under the registers `@launch` leaves a
# thread, ptxas stops with C7602 ("insufficient registers") instead of spilling. It
# asked 154 for a 64 x 256 f32 accumulator (128 registers a thread): 26 more.
WGMMA_REGS_BESIDE = 26
PAD = 16  # bytes `@padstage` adds to a staging tile's row (SPEC.md "Attributes")
PAD_PERIOD = 128  # ... whose row pitch is a multiple of this many bytes (32 banks of 4)
_temp_ids = itertools.count(1)


@dataclass
class Tile:
    """A tile's placement; `regs` are made when it is declared."""

    sym: hir.Sym
    shape: tuple[int, ...]
    elem: str
    place: str
    vec: int = 1
    reason: str = ""
    buffer: SharedBuffer | None = None
    regs: list | None = None
    pitch: int | None = None  # the row pitch in elements where padded (`@padstage`)
    swizzle: int | None = None  # the row's bytes where its 16-byte chunks are XOR-swizzled
    panels: int | None = None  # its rows, where stored as 128-byte panels (a wgmma operand)
    micro: tuple[int, int] | None = None  # (tm, tn): a product's `Blocked` register layout
    mma: tuple[int, int] | None = None  # (warps_m, warps_n): a tensor-core product's `MmaAcc`
    rows: int | None = None  # warps_m: per-row values beside an accumulator (`MmaRows`)
    stages: int = 1  # buffers of `nbytes` each: 2 to `MAX_STAGES` for a loop's cp.async ring
    tma: bool = False  # its ring's stages are written by TMA loads (`phobos.lower.tma`)
    base: object = None  # while a ring turns: the register holding this turn's stage
    words: list | None = None  # an f16 wgmma accumulator's b32 pairs, while a ring turns

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def row_pitch(self) -> int:
        """Elements from one row to the next: the last extent, or the padded pitch."""
        return self.pitch or self.shape[-1]

    @property
    def nbytes(self) -> int:
        """The bytes the tile takes in shared memory (its padding included)."""
        return prod(self.shape[:-1]) * self.row_pitch * BYTES[self.elem]

    def layout(self, threads: int) -> Sweep | Blocked | MmaAcc | MmaRows:
        """The register layout: `Blocked` for a product kept where it is computed on
        FMA, `MmaAcc` for one computed by mma.sync, `MmaRows` for the rows beside one,
        else the sweep."""
        if self.micro is not None:
            return Blocked(self.shape, threads, *self.micro, self.vec)
        if self.mma is not None:
            return MmaAcc(self.shape, threads, *self.mma, self.vec)
        if self.rows is not None:
            return MmaRows(self.shape, threads, self.rows)
        return Sweep(self.shape, threads, self.vec)

    @property
    def kept(self) -> bool:
        """Whether the tile is held in a product's register layout (not the sweep's)."""
        return self.micro is not None or self.mma is not None or self.rows is not None

    def access(self):
        from phobos.lower.memory import BIG, Access

        rank = len(self.shape)
        pitches = tuple(
            1 if a == rank - 1 else self.row_pitch * prod(self.shape[a + 1 : -1])
            for a in range(rank)
        )
        base = self.base if self.base is not None else Imm(self.buffer.offset, "u32")
        return Access("shared", base, self.elem,
                      tuple(Imm(0, "s32") for _ in range(rank)), tuple(() for _ in range(rank)),
                      self.shape, pitches, tuple(BIG for _ in range(rank)), self.buffer,
                      swizzle=self.swizzle, panels=self.panels)  # fmt: skip

    def point(self, lw, e):
        """A point read `t[i, j]` of a replicated tile."""
        if self.place == "replicated":
            return self.regs[0]
        raise NotLowered("a point read of a register tile", e.span)


@dataclass
class Plan:
    tiles: dict = field(default_factory=dict)  # Sym -> Tile
    # Decisions for a node are keyed by its label (`hirwalk.numbered`; `#n` in the
    # normalised hir's text).
    vec: dict = field(default_factory=dict)  # label of a sweep's node -> vector width
    layouts: dict = field(default_factory=dict)  # label -> Blocked or MmaAcc, where not a sweep
    paths: dict = field(default_factory=dict)  # label of a `dot` -> its path (`PATHS`)
    shared: list = field(default_factory=list)
    smem: int = 0
    scratch: SharedBuffer | None = None  # the reductions' exchange buffer
    stages: dict = field(default_factory=dict)  # label -> staging buffer (`shape`)
    # label of a slice -> (proven width, the dynamic pitch, the width taken): a sweep
    # versioned on that pitch (`widths.slice_vec`)
    widened: dict = field(default_factory=dict)
    slots: tuple = ()  # the scratch's slots (views of its bytes), taken in turn
    exchanges: int = 0  # CTA exchanges lowered so far
    mbarriers: SharedBuffer | None = None  # a TMA ring's: one 8-byte word a stage (two
    # where `specialized`: the stage's `full` then, S words on, its `empty`)
    specialized: bool = False  # a producer warpgroup issues the TMA ring's loads

    def next_slot(self) -> SharedBuffer:
        """The scratch slot of the next CTA exchange: consecutive exchanges alternate
        between two slots (when the kernel has more than one), so an exchange's writes
        never meet the previous one's reads and need no barrier before them.

        >>> p = Plan(slots=(SharedBuffer("scratch.0", 0, 32), SharedBuffer("scratch.1", 32, 32)))
        >>> [p.next_slot().offset for _ in range(3)]
        [0, 32, 0]
        """
        slot = self.slots[self.exchanges % len(self.slots)]
        self.exchanges += 1
        return slot


# ---------------------------------------------------------------------------
# normalize: reductions out of expressions


def normalize(body: hir.Block) -> hir.Block:
    """`body` with each row reduction nested in a tile expression bound to a temporary
    (and each tile of a dynamic shape fused into its reads: `phobos.lower.dynamic`),
    and each contraction a statement of its own whose operands are tiles: a product
    nested in an expression is bound to a temporary, and an operand that is a tensor
    slice or an expression is staged into a temporary tile first (SPEC.md: "a dot
    that reads it more than once stages it anyway"). A `let` view read by a product
    is staged once, where it is bound, when no statement writes its tensor."""
    body = dynamic.fuse(body)
    _VIEWS.clear()
    _VIEWS.update(_stageable_views(body))
    _SLICES.clear()
    _SLICES.update(_parameter_slices(body))
    try:
        return numbered(_normalize(body))
    finally:
        _VIEWS.clear()
        _SLICES.clear()


# The `let` views staged where they are bound: Sym -> its staging tile's Sym (None until
# the binding is met). Filled for one `normalize` call.
_VIEWS: dict = {}


# The `let` views that name a slice of a tensor parameter at starts no statement can
# change (lets, loop indices, parameters): Sym -> the slice. An operand read through
# one is staged from the slice itself, so a ring can load it by TMA (a box of the
# parameter) as it would `K[kt :+ 64, :]` written in place. Filled for one `normalize`.
_SLICES: dict = {}


def _parameter_slices(body) -> dict:
    out = {}
    for node in _walk(body):
        if not (isinstance(node, hir.Let) and isinstance(node.sym.type, hir.TensorT)):
            continue
        v = node.value
        if (isinstance(v, hir.Slice) and isinstance(v.base, hir.Ref)
                and v.base.sym.kind == "param" and _fixed(v.subs)):  # fmt: skip
            out[node.sym] = v
    return out


def _fixed(e) -> bool:
    """Whether every name `e` reads is one no statement assigns (not a `var`)."""
    return all(n.sym.kind != "var" for n in _walk(e) if isinstance(n, hir.Ref))


def _normalize(body: hir.Block) -> hir.Block:
    return hir.Block(tuple(_stmts(body.stmts)), span=body.span)


def _spliced(stmts):
    """`stmts` with each nested block's statements in its place: a block (a statement
    fn spliced in) is a scope, not a loop, and its names are resolved by now, so what
    it binds is bound where the block stands."""
    for s in stmts:
        if isinstance(s, hir.Block):
            yield from _spliced(s.stmts)
        else:
            yield s


def _stmts(stmts):
    for s in _spliced(stmts):
        out: list = []
        s2 = _stmt(s, out)
        yield from out
        yield s2
        if isinstance(s2, hir.Let) and s2.sym in _VIEWS:
            stage = _temp(f"{s2.sym.name}_staged", _tile_type(s2.sym.type), s2.sym.uni)
            _VIEWS[s2.sym] = stage
            yield hir.VarDecl(stage, hir.Ref(s2.sym, s2.sym.type, s2.sym.uni, span=s2.span),
                              span=s2.span)  # fmt: skip


def restart_names() -> None:
    """Number the temporaries `normalize` binds from 1 again, as each kernel's lowering
    starts."""
    global _temp_ids
    _temp_ids = itertools.count(1)


def _temp(name: str, type_, uni) -> hir.Sym:
    return hir.Sym(f"{name}_{next(_temp_ids)}", -next(_temp_ids), "var", type_, uni)


def _tile_type(t) -> hir.TileT:
    return hir.TileT(t.elem, tuple(t.dims))


def _stageable_views(body) -> dict:
    """The `let` views of static shape, bound at the kernel's top level, read as a
    product's operand, whose tensor no statement writes (so staging them where they
    are bound reads the same bytes)."""
    views, operands, written = {}, set(), set()
    for node in _walk(body):
        if isinstance(node, hir.Let) and isinstance(node.sym.type, hir.TensorT):
            views[node.sym] = node.value
        if isinstance(node, hir.Builtin) and node.name in CONTRACTIONS:
            operands.update(a.sym for a in node.args if isinstance(a, hir.Ref))
        elif isinstance(node, hir.Assign):
            written.add(_root(node.target, views))
        elif isinstance(node, hir.Builtin) and node.name in _WRITERS:
            written.update(_root(a, views) for a in node.args)
    # Only a view bound outside every loop: one bound in a loop is staged where it is
    # read, so that the staging tiles of one turn (`k`, then `v`) may share bytes.
    top = {s.sym for s in _spliced(body.stmts) if isinstance(s, hir.Let)}
    return {
        sym: None
        for sym, value in views.items()
        if sym in operands
        and sym in top
        and all(isinstance(d, int) for d in sym.type.dims)
        and len(sym.type.dims) == 2
        and _root(value, views) not in written
    }


_WRITERS = ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_exch")


def _root(e, views):
    """The parameter (or tile) a slice or view chain starts from."""
    seen = 0
    while seen < 64:
        seen += 1
        if isinstance(e, hir.Slice):
            e = e.base
        elif isinstance(e, hir.Ref) and e.sym in views:
            e = views[e.sym]
        else:
            break
    return e.sym if isinstance(e, hir.Ref) else None


def _stmt(s, out):
    if isinstance(s, hir.Block):
        return _normalize(s)
    s = shape_ops.unflat_stmt(s, out)  # `flat(t)` read through a `let` view
    if isinstance(s, (hir.VarDecl, hir.Let)) and s.value is not None:
        if not isinstance(s.sym.type, hir.Scalar):
            return replace(s, value=_top(s.value, out))
        return s
    if isinstance(s, hir.Assign) and not isinstance(s.target.type, hir.Scalar):
        if _is_dot(s.value) and isinstance(s.target, hir.Ref):  # `acc += dot(a, b)`
            return replace(s, value=_top(s.value, out))
        if s.op == "=" and (isinstance(s.target, hir.Ref) or shape_ops.writes_slices(s.value)):
            return replace(s, value=_top(s.value, out))
        return replace(s, value=_hoist(s.value, out))
    if isinstance(s, hir.For):
        return replace(s, body=_normalize(s.body))
    if isinstance(s, hir.While):
        return replace(s, body=_normalize(s.body))
    if isinstance(s, hir.If):
        orelse = _normalize(s.orelse) if s.orelse is not None else None
        return replace(s, then=_normalize(s.then), orelse=orelse)
    return s


def _is_dot(e) -> bool:
    return isinstance(e, hir.Builtin) and e.name in CONTRACTIONS


def _operand(a, out):
    """A product's operand as a tile: a declared tile stays; a staged `let` view reads
    its staging tile; anything else (a slice, a view, an expression) is staged into a
    temporary tile before the statement."""
    if isinstance(a, hir.Ref) and isinstance(a.type, hir.TileT):
        return a
    if isinstance(a, hir.Ref) and _VIEWS.get(a.sym) is not None:
        stage = _VIEWS[a.sym]
        return hir.Ref(stage, stage.type, stage.uni, span=a.span)
    if any(not isinstance(d, int) for d in a.type.dims):
        raise NotLowered("a product's operand with an extent bound at launch", a.span)
    if isinstance(a, hir.Ref) and a.sym in _SLICES:
        a = replace(_SLICES[a.sym], span=a.span)
    tmp = _temp("operand", _tile_type(a.type), a.uni)
    out.append(hir.VarDecl(tmp, _top(a, out), span=a.span))
    return hir.Ref(tmp, tmp.type, tmp.uni, span=a.span)


def _top(e, out):
    """A statement's whole value: a reduction may stay (it writes the target itself)."""
    if _is_dot(e):
        return replace(e, args=tuple(_operand(a, out) for a in e.args))
    if isinstance(e, hir.Builtin) and e.name in REDUCTIONS + shape_ops.OPS:
        return replace(e, args=tuple(_hoist(a, out) for a in e.args))
    if isinstance(e, hir.Builtin) and e.name == "tril":
        return _hoist(shape_ops.tril_where(e), out)
    return _hoist(e, out)


def _hoist(e, out):
    if isinstance(e.type, hir.Scalar):
        return e
    if isinstance(e, hir.Builtin) and e.name in REDUCTIONS + shape_ops.HOISTED + CONTRACTIONS:
        red = _top(e, out)
        tmp = _temp(e.name, e.type, e.uni)
        out.append(hir.VarDecl(tmp, red, span=e.span))
        return hir.Ref(tmp, e.type, e.uni, span=e.span)
    return map_operands(e, lambda a: _hoist(a, out))


def map_operands(e, f):
    """`e` with `f` applied to each operand, where `e` is an elementwise operation (a
    binary, unary or conversion, or an `ELEMENTWISE` built-in); else `e` itself."""
    if isinstance(e, hir.Binary):
        return replace(e, left=f(e.left), right=f(e.right))
    if isinstance(e, hir.Unary):
        return replace(e, operand=f(e.operand))
    if isinstance(e, hir.Convert):
        return replace(e, value=f(e.value))
    if isinstance(e, hir.Builtin) and e.name in ELEMENTWISE:
        return replace(e, args=tuple(f(a) for a in e.args))
    return e


# ---------------------------------------------------------------------------
# plan: placements and vector widths


@dataclass
class _Sweep:
    shape: tuple
    vec: int
    full: set = field(default_factory=set)  # register-tile candidates read or written whole
    touched: set = field(default_factory=set)  # every symbol the sweep names


class _Planner:
    def __init__(self, lw, body):
        self.lw = lw
        self.body = body
        self.tiles: dict = {}  # Sym -> (shape, elem)
        self.decl_order: list = []
        self.other: dict = {}  # Sym -> why it cannot be in registers
        self.marks: dict = {}  # Sym -> how many uses keep it from a sweep's registers
        # Sym -> the sweeps that read it broadcast, and those of the row reductions that
        # write it: the uses an `MmaRows` tile may have (`rows_beside`)
        self.row_uses: dict = {}
        # Sym -> [(product, target)]: a tile that is some product's A operand and may stay
        # in the registers of an mma.sync accumulator's layout (`register_a_refusal`).
        self.reg_a: dict = {}
        self.reg_a_live: set = set()  # those still in registers in `blocked`'s turn
        self.sweeps: dict = {}  # label of the node -> _Sweep
        self.lets: dict = {}  # Sym -> value of a let view
        self.spans: dict = {}  # Sym -> (first, last) statement numbers
        self.loops: list = []  # statement number where each open loop began
        self.n = 0
        self.scratch = 0
        self.reductions: list = []
        self.cta_folds = 0  # collectives over the CTA (`sum<over ctx.thread>` ...)
        self.staged: list = []  # (node, statement number): ops that may stage (`shape`)
        self.staging: set = set()  # tiles declared `var t = <tensor slice>` (`@padstage`)
        self.flat_read: set = set()  # tiles read through `flat`: their bytes are one row
        self.products: set = set()  # tiles a `dot`/`dot_t` writes
        self.rings: dict = {}  # staging tile Sym -> (statement, loop's first, last statement)
        self.ring_loops: dict = {}  # staging tile Sym -> its loop (a `hir.For`)
        self.asked = asked_stages(lw.k)  # `@pipeline(stages = S)` in this variant, or None
        # The stages a ring gets; fewer where they do not fit.
        self.depth = self.asked or ring_depth()
        self.deepened = False  # whether a TMA ring took `TMA_STAGES`
        self.dots: list = []  # (the `dot` node, its target's Sym, under a varying branch)
        self.varying = 0  # branches open whose condition may differ within a warp
        self.paths: dict = {}  # label of a `dot` -> (path, why): `tensor_cores`
        self.apart: dict = {}  # label of a `dot` -> why it stays off wgmma (`wgmma_apart`)
        self.wmma: set = set()  # labels of the `dot`s on WMMA (`on_wmma`)
        self.wmma_tiles: set = set()  # their operands and targets: on 32-byte boundaries

    # -- walking -------------------------------------------------------------

    def run(self) -> Plan:
        self.block(self.body)
        return self.decide()

    def block(self, blk):
        for s in blk.stmts:
            self.stmt(s)

    def touch(self, sym):
        if sym not in self.tiles:
            return
        first, last = self.spans.get(sym, (self.n, self.n))
        self.spans[sym] = (first, max(last, self.n))
        # Used inside a loop it was declared outside of: alive to the loop's end.
        for start in self.loops:
            if first < start:
                self.loop_users.setdefault(start, set()).add(sym)

    loop_users: dict

    def stmt(self, s):
        self.n += 1
        lw = self.lw
        if isinstance(s, hir.Let) and isinstance(s.sym.type, hir.Scalar):
            if s.sym.type.name in ("i32", "i64"):
                lw.divs[s.sym] = lw._divisor(s.value)
            self.scalar_uses(s.value)
            return
        if isinstance(s, (hir.Let, hir.VarDecl)) and not isinstance(s.sym.type, hir.Scalar):
            is_view = isinstance(s, hir.Let) and (
                isinstance(s.sym.type, hir.TensorT)
                or isinstance(s.value, (hir.Slice, hir.Ref))
                or shape_ops.is_flat(s.value)
            )
            if is_view:
                self.lets[s.sym] = s.value
                self.view_uses(s.value)
                if shape_ops.is_flat(s.value):
                    self.mark_other(s.value.args[0].sym, "`flat` views its bytes")
                    self.flat_read.add(s.value.args[0].sym)
                return
            if any(isinstance(d, hir.Dyn) for d in s.sym.type.dims):
                raise _dynamic(s.sym.type.dims, s.span)
            self.tiles[s.sym] = (tuple(s.sym.type.dims), s.sym.type.elem.name)
            self.decl_order.append(s.sym)
            self.spans[s.sym] = (self.n, self.n)
            if isinstance(s, hir.VarDecl) and self._tensor_slice(s.value):
                self.staging.add(s.sym)
            if s.value is not None:
                self.assignment(s, s.sym, s.sym.type.dims, s.value, "=")
            return
        if isinstance(s, hir.VarDecl):
            if s.value is not None:
                self.scalar_uses(s.value)
            return
        if isinstance(s, hir.Assign):
            t = s.target
            if isinstance(t.type, hir.Scalar):
                self.scalar_uses(s.value)
                if isinstance(t, hir.Slice):
                    self.scalar_uses(t)
                return
            if isinstance(t, hir.Ref) and t.sym in self.tiles:
                self.assignment(s, t.sym, t.type.dims, s.value, s.op)
            else:
                self.view_uses(t)
                self.assignment(s, None, t.type.dims, s.value, s.op, target=t)
            return
        if isinstance(s, hir.For):
            for e in (s.lo, s.hi, s.step):
                if isinstance(e, hir.Expr):
                    self.scalar_uses(e)
            step_div = lw._divisor(s.step) if isinstance(s.step, hir.Expr) else int(s.step)
            from math import gcd

            lw.divs[s.var] = gcd(lw._divisor(s.lo), step_div)
            start = self.n
            self.loop(s.body)
            self.ring_candidates(s, start, self.n)
            return
        if isinstance(s, hir.While):
            self.scalar_uses(s.cond)
            varying = s.cond.uni > hir.WARP  # mma.sync needs the whole warp
            self.varying += varying
            self.loop(s.body)
            self.varying -= varying
            return
        if isinstance(s, hir.If):
            self.scalar_uses(s.cond)
            varying = s.cond.uni > hir.WARP
            self.varying += varying
            self.block(s.then)
            if s.orelse is not None:
                self.block(s.orelse)
            self.varying -= varying
            return
        if isinstance(s, hir.ExprStmt):
            e = s.expr
            if isinstance(e, hir.Builtin) and e.name == attend.NAME:
                # its warps read q's rows and write the partials at their own addresses
                q, *_, wm, wl, wacc = e.args
                self.mark_other(q.sym, "`attend` reads it")
                for x in (wm, wl, wacc):
                    self.mark_other(x.sym, "`attend` writes it")
            self.scalar_uses(s.expr)
            return
        if isinstance(s, hir.Block):
            self.block(s)

    def ring_candidates(self, s: hir.For, start: int, end: int) -> None:
        """The staging statements of `s` a two-stage cp.async ring may stage
        (`phobos.lower.pipeline`): at the top level of a uniform loop with a constant
        step, `var t = <tensor slice>` of two static axes,
        from a tensor the kernel never writes, indexed by nothing bound in the body but
        the loop variable. Whether each gets its second stage is decided with the
        shared memory (`decide`)."""
        if s.unroll or max(s.lo.uni, s.hi.uni, getattr(s.step, "uni", hir.UNIFORM)) != hir.UNIFORM:
            return
        step = s.step.value if isinstance(s.step, hir.Const) else s.step
        if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
            return
        local = {n.sym for n in _walk(s.body) if isinstance(n, (hir.Let, hir.VarDecl))}
        written = written_tensors(self.lw.k.body)
        for st in s.body.stmts:
            if not (isinstance(st, hir.VarDecl) and st.sym in self.tiles and st.value is not None):
                continue
            shape, elem = self.tiles[st.sym]
            view = isinstance(st.value, hir.Ref) and st.value.sym in self.lets
            if len(shape) != 2:
                continue
            if not (
                self._tensor_slice(st.value)
                or (view and self._tensor_slice(self.lets[st.value.sym]))
            ):
                continue
            refs = {n.sym for n in _walk(st.value) if isinstance(n, hir.Ref)}
            views = {r for r in refs if r in self.lets}
            for v in views:
                refs |= {n.sym for n in _walk(self.lets[v]) if isinstance(n, hir.Ref)}
            refs -= views
            if any(r in written or (r in local and r is not s.var) for r in refs):
                continue
            self.rings[st.sym] = (st, start, end)
            self.ring_loops[st.sym] = s

    def _tensor_slice(self, e) -> bool:
        """Whether `e` is a slice of a tensor (or of a `let` view of one)."""
        if not isinstance(e, hir.Slice):
            return False
        while isinstance(e, hir.Slice) or (isinstance(e, hir.Ref) and e.sym in self.lets):
            e = e.base if isinstance(e, hir.Slice) else self.lets[e.sym]
        return isinstance(e, hir.Ref) and isinstance(e.sym.type, hir.TensorT)

    def pad(self, sym, shape, elem) -> int | None:
        """The padded row pitch `@padstage` gives the shared tile `sym`, or None."""
        if not getattr(self.lw.k.attrs, "padstage", False):
            return None
        row = shape[-1] * BYTES[elem] if len(shape) >= 2 else 0
        if sym not in self.staging or sym in self.flat_read or not row or row % PAD_PERIOD:
            return None
        pitch = shape[-1] + PAD // BYTES[elem]
        log.debug("@padstage: staging tile `%s` rows of %d bytes padded to a pitch of %d "
                  "elements", sym.name, row, pitch)  # fmt: skip
        return pitch

    def loop(self, body):
        start = self.n
        self.loops.append(start)
        self.block(body)
        self.loops.pop()
        for sym in self.loop_users.pop(start, ()):
            first, last = self.spans[sym]
            self.spans[sym] = (first, max(last, self.n))

    # -- uses ----------------------------------------------------------------

    def mark_other(self, sym, why, row_use=None):
        """`sym` cannot be in a sweep's registers, for `why`; `row_use`: the sweep of the
        use, one an `MmaRows` tile may have (a broadcast read, a row reduction's write)."""
        if sym in self.tiles:
            self.other.setdefault(sym, why)
            self.marks[sym] = self.marks.get(sym, 0) + 1
            if row_use is not None:
                self.row_uses.setdefault(sym, []).append(row_use)
            self.touch(sym)

    def scalar_uses(self, e):
        """Tiles read inside a scalar expression (a point read, a collective's operand)."""
        for node in _walk(e):
            if isinstance(node, hir.Builtin) and "over" in dict(node.config):
                over = dict(node.config)["over"]
                if getattr(over, "field", over) == "thread":
                    self.cta_folds += 1
            if isinstance(node, hir.Ref) and node.sym in self.tiles:
                self.mark_other(node.sym, "it is read per point")
            elif isinstance(node, hir.Ref) and node.sym in self.lets:
                self.touch_view(node.sym)

    def touch_view(self, sym):
        """A use of the `let` view `sym`: the tile under it lives to here too."""
        e, seen = self.lets.get(sym), set()
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            if isinstance(e, hir.Slice):
                e = e.base
            elif shape_ops.is_flat(e):
                e = e.args[0]
            elif isinstance(e, hir.Ref) and e.sym in self.lets:
                e = self.lets[e.sym]
            else:
                break
        if isinstance(e, hir.Ref):
            self.touch(e.sym)

    def view_uses(self, e):
        for node in _walk(e):
            if isinstance(node, hir.Ref) and node.sym in self.lets:
                self.touch_view(node.sym)
            if isinstance(node, hir.Slice):
                base = node.base
                if isinstance(base, hir.Ref) and base.sym in self.tiles:
                    self.mark_other(base.sym, "a slice of it is taken")
                for sub in node.subs:
                    self.scalar_uses(sub.start)

    def assignment(self, s, sym, dims, value, op, target=None):
        """A tile statement: an elementwise sweep over `dims`, or a row reduction."""
        if _is_dot(value):
            self.product(s, sym, value)
            return
        if isinstance(value, hir.Builtin) and value.name in shape_ops.OPS:
            shape_ops.plan_op(self, s, sym, dims, value, target)
            return
        if isinstance(value, hir.Builtin) and value.name in REDUCTIONS:
            arg = value.args[0]
            shape = tuple(arg.type.dims) if not isinstance(arg.type, hir.Scalar) else ()
            if len(shape) == 2 and any(isinstance(d, hir.Dyn) for d in shape):
                dynamic.plan_reduction(self, value, shape)  # folded in a strided loop
            elif len(shape) != 2:
                raise NotLowered(f"`{value.name}` of this shape", value.span)
            else:
                sw = self.sweep(value, shape, arg)
                self.reductions.append((value, shape, sw))
                self.staged.append((value, self.n))  # unless `reduce` folds it (`decide`)
            if sym is not None:
                self.touch(sym)
                if prod(dims) != 1:
                    row_use = sw if value.name in ("rowmax", "rowsum") and len(shape) == 2 else None
                    self.mark_other(sym, f"`{value.name}` writes it", row_use=row_use)
            return
        if any(isinstance(d, hir.Dyn) for d in dims):
            if sym is not None:
                raise _dynamic(dims, s.span)
            dynamic.plan_sweep(self, s, dims, value, target)  # never stored
            return
        sw = self.sweep(s, tuple(dims), value, target)
        if sym is not None:
            self.touch(sym)
            sw.full.add(sym)

    def product(self, s, sym, value):
        """`t = dot(a, b)`, `t += dot(a, b)`: the operands are read from shared memory by
        every thread (`normalize` made them tiles); the target may stay in registers in
        the product's `Blocked` layout."""
        if sym is None:
            raise NotLowered("a product written into a slice", s.span)
        for k, a in enumerate(value.args):
            if k == 0 and a.sym in self.tiles and os.environ.get("PHOBOS_REGISTER_A") != "0":
                # mma.sync may read A from the registers of an accumulator's layout
                self.reg_a.setdefault(a.sym, []).append((value, sym))
                self.touch(a.sym)
                continue
            self.mark_other(a.sym, f"`{value.name}` reads it from shared memory")
        if any(a.sym is sym for a in value.args):
            raise NotLowered(f"`{value.name}` into one of its own operands", s.span)
        self.touch(sym)
        self.products.add(sym)
        self.dots.append((value, sym, self.varying > 0))
        if self.on_wmma(value):
            self.wmma.add(value.label)
            self.wmma_tiles.update({sym, *(a.sym for a in value.args)})
            self.mark_other(sym, "a WMMA accumulator is opaque: it is kept in shared memory")

    def sweep(self, node, shape, value, target=None) -> _Sweep:
        lw = self.lw
        vec = max_vec(shape)
        sw = _Sweep(shape, vec)
        self.sweeps[_label(node)] = sw
        elems = memory_elems(value, self.lets)
        to_tensor = target is not None and not (
            isinstance(target, hir.Ref) and target.sym in self.tiles
        ) and not _is_tile_slice(target, self.tiles)  # fmt: skip
        if to_tensor:
            elems.append(elem_of(target.type))
            sw.vec = min(sw.vec, slice_vec(lw, target, shape, self.lets))
        packed = all(e in PACKED for e in elems)
        sw.vec = min(sw.vec, expr_vec(lw, value, shape, self.lets, packed))
        sw.touched = {n.sym for n in _walk((value, target)) if isinstance(n, hir.Ref)}
        self.expr_uses(value, shape, sw)
        return sw

    def expr_uses(self, e, shape, sw):
        if isinstance(e.type, hir.Scalar):
            self.scalar_uses(e)
            return
        if isinstance(e, hir.Ref):
            if e.sym in self.tiles:
                self.touch(e.sym)
                if tuple(e.type.dims) == tuple(shape):
                    sw.full.add(e.sym)
                else:
                    self.mark_other(e.sym, "it is read broadcast by a sweep of another shape",
                                    row_use=sw)  # fmt: skip
            elif e.sym in self.lets:
                self.touch_view(e.sym)
            return
        if isinstance(e, hir.Slice):
            self.view_uses(e)
            return
        if isinstance(e, hir.Binary):
            self.expr_uses(e.left, shape, sw)
            self.expr_uses(e.right, shape, sw)
        elif isinstance(e, hir.Unary):
            self.expr_uses(e.operand, shape, sw)
        elif isinstance(e, hir.Convert):
            self.expr_uses(e.value, shape, sw)
        elif isinstance(e, hir.Builtin) and e.name in ELEMENTWISE:
            for a in e.args:
                self.expr_uses(a, shape, sw)
        else:
            for node in _walk(e):
                if isinstance(node, hir.Ref) and node.sym in self.tiles:
                    self.mark_other(node.sym, f"`{getattr(e, 'name', '?')}` reads it")

    # -- deciding ------------------------------------------------------------

    def decide(self) -> Plan:
        lw = self.lw
        threads = lw.threads
        forced = set(lw.k.registers)
        cand = {}
        for sym in self.decl_order:
            shape, elem = self.tiles[sym]
            if prod(shape) == 1:
                cand[sym] = "replicated"
            elif sym in self.other:
                cand[sym] = "shared"
            else:
                cand[sym] = "registers"
        blocked = self.blocked(cand)
        rows = self.rows_beside(cand, blocked)
        for sym in rows:
            cand[sym] = "registers"
        # One vector width per register tile: the narrowest of its sweeps, to a fixpoint.
        vec_of = {s: max_vec(self.tiles[s][0]) for s in cand}
        for sym, lay in blocked.items():
            vec_of[sym] = min(vec_of[sym], lay.tn if isinstance(lay, Blocked) else lay.vec)
        # A sweep over a shared tile keeps to 16 bytes an access of it (8 elements a
        # vector is for 16-bit floats only).
        for sw in self.sweeps.values():
            for s in sw.touched:
                if cand.get(s) == "shared":
                    sw.vec = min(sw.vec, max_vec_for((self.tiles[s][1],)))
        for _ in range(8):
            changed = False
            for sw in self.sweeps.values():
                regs = [s for s in sw.full if cand.get(s) == "registers"]
                v = min([sw.vec] + [vec_of[s] for s in regs])
                if v != sw.vec:
                    sw.vec, changed = v, True
                for s in regs:
                    if vec_of[s] > v:
                        vec_of[s], changed = v, True
            if not changed:
                break
        plan = Plan(widened=lw.widened)
        requests = []
        for sym in self.decl_order:
            shape, elem = self.tiles[sym]
            place, vec = cand[sym], vec_of[sym]
            reason = {
                "replicated": "one element: every thread keeps it",
                "registers": "every use is a sweep over its shape",
                "shared": self.other.get(sym, ""),
            }[place]
            if sym in blocked:
                reason = "a product, kept in the registers it is computed in"
            if sym in rows:
                reason = ("per-row values of an accumulator, kept in the lanes that hold "
                          "its rows")  # fmt: skip
            if place == "registers":
                lay = Sweep(shape, threads, vec)
                if sym in blocked:
                    lay = replace(blocked[sym], vec=vec)
                limit = MAX_MMA_REGS if isinstance(lay, MmaAcc) else MAX_TILE_REGS
                if lay.regs_per_thread > limit:
                    place = "shared"
                    reason = f"{lay.regs_per_thread} elements a thread, more than {limit}"
            if sym in forced and place != "registers" and place != "replicated":
                raise NotLowered(
                    f"`{sym.name}`",
                    getattr(lw.k.attrs, "spans", {}).get("registers"),
                    code="E0502",
                    message=f"`@registers({sym.name})` cannot keep `{sym.name}` in registers: "
                    f"{reason}",
                )
            tile = Tile(sym, shape, elem, place, vec, reason)
            if place == "registers" and isinstance(blocked.get(sym), Blocked):
                tile.micro = (blocked[sym].tm, blocked[sym].tn)
            elif place == "registers" and isinstance(blocked.get(sym), MmaAcc):
                tile.mma = (blocked[sym].warps_m, blocked[sym].warps_n)
            elif place == "registers" and sym in rows:
                tile.rows = rows[sym]
            plan.tiles[sym] = tile
            log.debug("tile `%s` %s: %s (vector width %d%s)", sym.name, place, reason, vec,
                      f", micro-tile {tile.micro[0]}x{tile.micro[1]}" if tile.micro else
                      ", mma.sync fragments" if tile.mma else "")  # fmt: skip
            if place == "shared":
                tile.pitch = self.pad(sym, shape, elem)
                if tile.pitch is None:
                    tile.swizzle = self.ldmatrix_swizzle(sym, shape, elem)
                if tile.pitch is None and tile.swizzle is None:
                    tile.pitch = self.ldmatrix_pitch(sym, shape, elem)
                wide = tile.swizzle is not None and sym in self.wgmma_operands()
                if wide and tile.swizzle > swizzle.LINE:
                    tile.panels = shape[0]  # wgmma reads a wide operand as 128-byte panels
                first, last = self.spans.get(sym, (0, 0))
                if self.ring_fits(sym, tile, first, last):
                    tile.stages = self.depth
                    # The next turn's copies are in flight through the whole turn: the
                    # ring's bytes are live from the loop's first statement to its last.
                    _, first, last = self.rings[sym]
                    why = self.tma_refusal(sym, tile) if wide else "not a wgmma operand"
                    tile.tma = why is None
                    if why is not None and lw.chip == "sm_90a":
                        log.debug("`%s` staged by cp.async, not TMA: %s", sym.name, why)
                # A swizzle keeps its XOR inside the tile's own 128-byte lines; WMMA's
                # loads and stores take 32-byte aligned rows.
                align = (swizzle.LINE,) if tile.swizzle else (32,) if sym in self.wmma_tiles else ()
                if wide:  # a wgmma swizzle atom is 8 rows of up to 128 bytes
                    align = (8 * min(tile.swizzle, swizzle.LINE),)
                requests.append((sym, tile.nbytes * tile.stages, first, last, *align))
        for label, sw in self.sweeps.items():
            plan.vec[label] = sw.vec
            kept = [plan.tiles[s] for s in sw.full if s in plan.tiles and plan.tiles[s].kept]
            if kept:
                plan.layouts[label] = replace(kept[0].layout(threads), vec=sw.vec)
        for e, sym, _ in self.dots:
            path, why = self.paths.get(e.label) or ("fma", self.fma_reason(sym, plan))
            if e.label in self.wmma:
                path, why = "wmma", f"@tensorcore(wmma): {_wmma_frags(e)} fragments of 16x16"
            elif path == "fma":
                path, why = self.fallback(e, why)
            plan.paths[e.label] = path
            log.debug("%s #%d: %s: %s", e.name, e.label, path_name(path), why)
        names = [(f"tile_{r[0].name}_{i}", *r[1:]) for i, r in enumerate(requests)]
        exchange = bool(self.reductions) or self.cta_folds
        if exchange:
            slot = alloc.aligned(max([_scratch_bytes(lw, shape, sw.vec)
                                      for _, shape, sw in self.reductions]
                                     + [_scratch_bytes(lw, (1, 1), 1)]))  # fmt: skip
            turns = 2 if len(self.reductions) + self.cta_folds > 1 else 1
        self.accumulator_rows = {v.label for v, _, _ in self.reductions
                                 if isinstance(plan.layouts.get(v.label), MmaAcc)}  # fmt: skip
        staged = shape_ops.stage_requests(self, lambda node: self.sweeps[_label(node)].vec)
        names += [r[1:] for r in staged]
        # A loop's ring is TMA's whole or not at all: one ring of stages turns per loop.
        loops: dict = {}
        for sym, (_, start, end) in self.rings.items():
            if sym in plan.tiles and plan.tiles[sym].stages >= 2:
                loops.setdefault((start, end), []).append(plan.tiles[sym])
        for tiles in loops.values():
            if not all(t.tma for t in tiles):
                for t in tiles:
                    t.tma = False
        tma = [r[0] for r in requests if plan.tiles[r[0]].tma]
        if not tma and self.depth > MAX_STAGES and self.rings:
            log.debug("a cp.async ring takes at most %d stages, not %d", MAX_STAGES, self.depth)
            self.depth = MAX_STAGES  # deeper is for TMA rings only
            return self.decide()
        if exchange:
            names.append(("scratch", slot * turns, 0, self.n + 1))
        plan.specialized = bool(tma) and self.specializes(tma)
        if tma:  # each stage's mbarrier(s), live through the kernel (never initialised twice)
            names.append(("mbarriers", 8 * self.depth * (2 if plan.specialized else 1), 0,
                          self.n + 1, 8))  # fmt: skip
        buffers, total = alloc.allocate(names)
        if tma:
            plan.mbarriers = buffers[-1]
            asked = self.asked or "PHOBOS_STAGES" in os.environ
            if (self.depth < TMA_STAGES and not self.deepened and not asked
                    and all(self.sums_only(self.ring_loops[sym]) for sym in tma)):  # fmt: skip
                # A TMA ring keeps a wgmma group in flight: its stages run L = 2 turns
                # behind, so it takes more of them to keep loads ahead (`tma`). (Three
                # stages, two CTAs an SM for small tiles, measured faster on large
                # squares but 18 % slower where one CTA an SM walks a long K: run 32.)
                self.depth, self.deepened = TMA_STAGES, True
                return self.decide()
            if total > alloc.DYNAMIC_LIMIT and self.depth > 2:
                log.debug("a %d-stage TMA ring needs %d bytes of shared memory, more than %d",
                          self.depth, total, alloc.DYNAMIC_LIMIT)  # fmt: skip
                self.depth -= 1
                return self.decide()
        for (key, *_), buf in zip(staged, buffers[len(requests) :], strict=False):
            plan.stages[key] = buf
        for (sym, *_), buf in zip(requests, buffers, strict=False):
            plan.tiles[sym].buffer = buf
        if exchange:
            plan.scratch = buffers[-2 if tma else -1]
            plan.slots = tuple(SharedBuffer(f"scratch.{i}", plan.scratch.offset + i * slot, slot)
                               for i in range(turns))  # fmt: skip
        plan.shared = buffers
        plan.smem = total
        dyn = bool(getattr(lw.k.attrs, "dynshared", False))
        if total > alloc.STATIC_LIMIT and not dyn and self.rings:
            log.debug("%d cp.async stages need %d bytes of shared memory, more than the "
                      "static %d", self.depth, total, alloc.STATIC_LIMIT)  # fmt: skip
            if self.depth > 2:
                self.depth -= 1
            else:
                log.debug("no cp.async ring: its second stages do not fit")
                self.rings = {}
            return self.decide()
        if total > alloc.STATIC_LIMIT and not dyn:
            raise NotLowered(
                "shared memory",
                lw.k.span,
                code="E0501",
                message=f"the kernel's tiles need {total} bytes of shared memory, more than "
                f"the static {alloc.STATIC_LIMIT}",
            )
        if total > alloc.DYNAMIC_LIMIT:
            # No chip can launch it: refused here, before `generate` spends seconds on a
            # body of (say) a 64 x 65536 tile that no launch would ever take.
            raise NotLowered(
                "shared memory",
                lw.k.span,
                code="E0501",
                message=f"the kernel's tiles need {total} bytes of shared memory, more than "
                f"the {alloc.DYNAMIC_LIMIT} a CTA can take",
            )
        lw.tiles = plan.tiles
        return plan

    def ring_fits(self, sym, tile, first, last) -> bool:
        """Whether the staging tile `sym` gets a second stage: a ring candidate, alive
        only inside its loop, swept at 4, 8 or 16 bytes a vector (cp.async's sizes)."""
        ring = self.rings.get(sym)
        if ring is None or os.environ.get("PHOBOS_RING", "1") == "0":  # off: to measure
            return False
        st, start, end = ring
        vec = self.sweeps[st.label].vec if st.label in self.sweeps else 1
        value = st.value
        if isinstance(value, hir.Ref) and value.sym in self.lets:
            value = self.lets[value.sym]
        vec = proven(self.lw, value, vec)  # a copy moves what the alignment proves
        if not copy_unrolls(tile.shape, self.lw.threads, vec):
            # the ring would not take it (`pipeline.Ring`): no stage spent on it
            log.debug("`%s` not in a cp.async ring: its copy is more than %d groups of %d "
                      "threads", sym.name, COPY_UNROLL, self.lw.threads)  # fmt: skip
            return False
        return start <= first and last <= end and vec * BYTES[tile.elem] in (4, 8, 16)

    def blocked(self, cand) -> dict:
        """The register tiles kept in a product's layout, Sym -> `Blocked` or `MmaAcc`:
        every product written into a register tile, and every register tile a sweep over
        one of those reads or writes whole (a sweep runs in one layout). The tiles of
        one such group are on tensor cores together or on FMA together
        (`tensor_cores`). A row reduction reads its argument in the sweep's layout, so a
        product it reads is stored to shared memory (`cand` is updated), as is one with
        more registers than a thread may keep."""
        threads = self.lw.threads
        reduced = {s for _, _, sw in self.reductions for s in sw.full}
        # `rowsum` and `rowmax` fold an accumulator in its own layout (`reduce`).
        folded = {s for v, _, sw in self.reductions if v.name in ("rowsum", "rowmax")
                  for s in sw.full} - {s for v, _, sw in self.reductions
                                       if v.name not in ("rowsum", "rowmax") for s in sw.full}  # fmt: skip
        out: dict = {}
        for _ in range(16):
            out = {s: None for s in self.products if cand.get(s) == "registers"}
            grew = True
            while grew:
                grew = False
                for sw in self.sweeps.values():
                    regs = [s for s in sw.full if cand.get(s) == "registers"]
                    if any(s in out for s in regs):
                        for s in regs:
                            if s not in out:
                                out[s], grew = None, True
            demote = {}
            self.reg_a_live = {a for a in self.reg_a if cand.get(a) == "registers"}
            mma = self.tensor_cores(out)
            for a in self.reg_a_live:
                why = self.register_a_refusal(a, mma)
                if why is not None:
                    demote[a] = why
                    out.pop(a, None)
            for s in out:
                shape = self.tiles[s][0]
                if len(shape) != 2:
                    demote[s] = "a product of rank other than 2 is swept from shared memory"
                    continue
                lay = mma.get(s) or Blocked.choose(shape, threads)
                out[s] = lay
                if s in reduced and not (s in folded and isinstance(lay, MmaAcc)
                                         and lay.warps_n == 1):  # fmt: skip
                    demote[s] = "a row reduction reads the product in another layout"
                    refused = [self.paths[e.label][1] for e, sym, _ in self.dots if sym is s
                               and self.paths.get(e.label, ("",))[0] == "fma"]  # fmt: skip
                    if s in folded and refused:
                        demote[s] = f"a row reduction reads it, and on tensor cores {refused[0]}"
                elif lay.regs_per_thread > (limit := MAX_MMA_REGS if s in mma else MAX_TILE_REGS):
                    demote[s] = (f"the product takes {lay.regs_per_thread} registers a thread, "
                                 f"more than {limit}")  # fmt: skip
            if not demote:
                return out
            for s, why in demote.items():
                cand[s] = "shared"
                self.other.setdefault(s, why)
        return {}

    def rows_beside(self, cand, blocked) -> dict:
        """The [R, 1] f32 tiles kept in `MmaRows` registers beside an accumulator, Sym ->
        its warps down: every use that keeps one from a sweep's registers is a broadcast
        read by a sweep in an `MmaAcc` layout of R rows held one warp column wide (`acc
        = acc * corr`, `exp(s - m)`) or a `rowmax`/`rowsum` folding one (`m =
        rowmax(s)`), all of the same warps; and every sweep over [R, 1] it is in runs on
        such tiles alone and no tensor (`l = l * corr + rowsum(p)` stays in registers;
        a sweep that stores a row to memory would store it from four lanes). Flash
        attention's running max and sum then never touch shared memory. Off under
        `PHOBOS_ACC_ROWS=0`, to measure what it gains."""
        if os.environ.get("PHOBOS_ACC_ROWS") == "0":
            return {}

        def acc_of(sw):
            for s in sw.full:
                lay = blocked.get(s)
                if isinstance(lay, MmaAcc) and cand.get(s) == "registers":
                    return lay
            return None

        out = {}  # Sym -> its accumulator's warps down, or None where it has no row use
        for sym in self.decl_order:
            shape, elem = self.tiles[sym]
            uses = self.row_uses.get(sym, [])
            if (len(shape) != 2 or shape[1] != 1 or shape[0] == 1 or elem != "f32"
                    or len(uses) != self.marks.get(sym, 0)):  # fmt: skip
                continue
            lays = [acc_of(sw) for sw in uses]
            if all(lay is not None and lay.warps_n == 1 and lay.shape[0] == shape[0]
                   for lay in lays) and len({lay.warps_m for lay in lays}) <= 1:  # fmt: skip
                out[sym] = lays[0].warps_m if lays else None
        # The tiles swept together are in one layout: a sweep over them alone (no tensor),
        # their accumulators of the same warps; one with none is kept with those it is
        # swept with (`m = mnew`), and a group with none at all stays as it was.
        root = {s: s for s in out}

        def find(s):
            while root[s] is not s:
                s = root[s]
            return s

        poisoned = []
        for sw in self.sweeps.values():
            mine = [s for s in sw.full if s in out]
            if not mine:
                continue
            for s in mine[1:]:
                root[find(s)] = find(mine[0])
            if len(mine) != len(sw.full) or any(isinstance(s.type, hir.TensorT)
                                                for s in sw.touched):  # fmt: skip
                poisoned.append(mine[0])
        bad = {find(s) for s in poisoned}
        warps: dict = {}
        for s, w in out.items():
            if w is not None:
                warps.setdefault(find(s), set()).add(w)
        rows = {}
        for s in out:
            r = find(s)
            if r not in bad and len(warps.get(r, ())) == 1:
                rows[s] = next(iter(warps[r]))
        return rows

    def tensor_cores(self, out) -> dict:
        """The tiles of `out` kept as mma.sync accumulators, Sym -> `MmaAcc`: the groups
        of tiles swept together whose every product qualifies (`mma_refusal`) and whose
        accumulator the CTA's warps tile. Each product's path and why go to `paths`."""
        group = {s: s for s in out}
        reduced = {s for _, _, sw in self.reductions for s in sw.full}

        def find(s):
            while group[s] is not s:
                s = group[s]
            return s

        for sw in self.sweeps.values():
            regs = [s for s in sw.full if s in out]
            for s in regs[1:]:
                group[find(s)] = find(regs[0])
        members: dict = {}
        for s in out:
            members.setdefault(find(s), []).append(s)
        dots = [(e, sym, varying) for e, sym, varying in self.dots if sym in out]
        self.paths = {}
        layouts = {}
        for root, syms in members.items():
            mine = [(e, sym, varying) for e, sym, varying in dots if find(sym) is root]
            if not mine:
                continue
            refusals = {e.label: self.mma_refusal(e, varying) for e, _, varying in mine}
            lay = None
            shape = self.tiles[root][0]
            if not any(refusals.values()):
                on_wgmma = {e.label: self.apart.get(e.label) or self.wgmma_refusal(e, shape)
                            for e, _, _ in mine}  # fmt: skip
                if not any(on_wgmma.values()):
                    lay = MmaAcc(tuple(shape), self.lw.threads, self.lw.threads // 32, 1)
                    for e, _, _ in mine:
                        ab = self.tiles[e.args[0].sym][1]
                        sums = ".f16" if elem_of(e.type) == "f16" else ""
                        self.paths[e.label] = (
                            f"wgmma.m64n{shape[1]}k16.{ab}{sums}",
                            f"{self.lw.threads // 128} warpgroups of 64x{shape[1]}, operands "
                            "from swizzled shared memory",
                        )
                    layouts.update(dict.fromkeys(syms, lay))
                    continue
                if self.lw.chip == "sm_90a":
                    why = next(w for w in on_wgmma.values() if w)
                    log.debug("not on wgmma: %s; on mma.sync", why)
                # f16 sums (`acc += dot(..)` into an f16 tile, ours) run on wgmma alone.
                for e, _, _ in mine:
                    if elem_of(e.type) == "f16":
                        why = on_wgmma[e.label] if self.lw.chip == "sm_90a" else (
                            f"wgmma needs sm_90a, not {self.lw.chip}")  # fmt: skip
                        refusals[e.label] = (f"an f16 accumulator runs on wgmma only, and here "
                                             f"{why}")  # fmt: skip
            if not any(refusals.values()):
                shape = self.tiles[root][0]
                # A row reduction of the accumulator folds within a warp's rows.
                rows = any(s in reduced for s in syms)
                # A product reading A from registers: the warps' rows are the operand's.
                rows = rows or any(t in syms for a in self.reg_a_live for _, t in self.reg_a[a])
                lay = MmaAcc.choose(shape, self.lw.threads, whole_rows=rows)
                why = (f"the CTA's {self.lw.threads // 32} warps do not tile {list(shape)} "
                       f"with 16x8 fragments{', each warp whole rows' if rows else ''}"
                       if lay is None else None)  # fmt: skip
                if lay is not None and lay.regs_per_thread > MAX_MMA_REGS:
                    why = (f"the accumulator takes {lay.regs_per_thread} registers a thread, "
                           f"more than {MAX_MMA_REGS}")  # fmt: skip
                    lay = None
                if why:
                    refusals = dict.fromkeys(refusals, why)
            for e, _, _ in mine:
                if lay is not None:
                    ab = self.tiles[e.args[0].sym][1]
                    self.paths[e.label] = (
                        "mma.m16n8k32.s8" if ab == "i8" else f"mma.m16n8k16.{ab}",
                        f"{self.lw.threads // 32} warps of {lay.wm}x{lay.wn}, "
                        f"{lay.frags} fragments a warp",
                    )
                else:
                    why = refusals[e.label] or next(r for r in refusals.values() if r)
                    if not refusals[e.label]:
                        why = f"its accumulator is swept with a product on FMA ({why})"
                    self.paths[e.label] = ("fma", why)
            if lay is not None:
                layouts.update(dict.fromkeys(syms, lay))
        apart = self.wgmma_apart(dots)
        if apart:  # their groups on mma.sync, and the products beside them planned again
            self.apart.update(apart)
            return self.tensor_cores(out)
        return layouts

    def wgmma_apart(self, dots) -> dict:
        """The products on wgmma with an operand tile that a product on another path
        reads too, label -> why. Such a tile is stored for ldmatrix (or FMA), not in
        wgmma's canonical layout (`wgmma_operands`), so wgmma would read it wrong: the
        product goes to mma.sync with its group. kda in f16 at D = 64, C = 128 shares
        `v` between `dot(p, v)` on mma.sync and `dot(kt, v)` on wgmma."""
        out = {}
        register_a = os.environ.get("PHOBOS_WGMMA_REGISTER_A") != "0"
        for e, _, _ in dots:
            if not self.paths.get(e.label, ("",))[0].startswith("wgmma."):
                continue
            for k, x in enumerate(e.args):
                if k == 0 and register_a and isinstance(x, hir.Ref) and x.sym in self.reg_a_live:
                    continue  # A from registers: no tile
                if isinstance(x, hir.Ref) and not self.only_operand(x.sym, ("wgmma.",)):
                    out[e.label] = f"`{x.sym.name}` is also read by a product off wgmma"
                    break
        return out

    def register_a_refusal(self, a, mma) -> str | None:
        """Why the tile `a`, an A operand of products, does not stay in registers for
        them, or None: each product runs on mma.sync m16n8k16 or wgmma, `a` and its accumulator
        are in `MmaAcc` layouts of one warp column and the same warp rows, so a warp's
        A fragments are its own accumulator fragments of `a`, two 16 x 8 ones a k step
        of 16, rounded into words (`phobos.lower.mma`): no trip through shared memory."""
        lay = mma.get(a)
        shared = f"`{self.reg_a[a][0][0].name}` reads it from shared memory"
        if not isinstance(lay, MmaAcc) or lay.warps_n != 1:
            return shared
        for value, target in self.reg_a[a]:
            path = self.paths.get(value.label, ("",))[0]
            acc = mma.get(target)
            on = ("mma.m16n8k16", "wgmma.")  # wgmma takes A from four words as mma.sync
            if not path.startswith(on) or self.tiles[a][1] not in ("f16", "bf16"):
                return shared
            if not isinstance(acc, MmaAcc) or acc.warps_n != 1 or acc.warps_m != lay.warps_m:
                return f"{shared}: its product's warps do not own its rows"
        return None

    def mma_refusal(self, e, varying: bool) -> str | None:
        """Why the product `e` does not run on mma.sync m16n8k16, or None: it needs
        `@tensorcore`, sm_80, f16 or bf16 operands summed into f32, M and K multiples of
        16, N of 8, and every lane of the warp (no branch that may split a warp). A
        `dot_t` of i8 tiles into i32 has its own rule (`int8_refusal`)."""
        a = self.tiles.get(e.args[0].sym)
        if a is not None and a[1] == "i8":
            return self.int8_refusal(e, varying)
        attr = getattr(self.lw.k.attrs, "tensorcore", None)
        if not attr:
            return "no @tensorcore"
        if attr == "wmma":
            return "@tensorcore(wmma) asks for WMMA"
        chip = self.lw.chip
        if _sm(chip) < 80:
            return f"mma.sync m16n8k16 needs sm_80, not {chip}"
        a, b = (self.tiles.get(x.sym) for x in e.args)
        ab = a[1] if a else "?"
        out = elem_of(e.type)
        into = ("f32", "f16") if ab == "f16" else ("f32",)  # f16 sums: wgmma's (`tensor_cores`)
        if not (a and b and ab in ("f16", "bf16") and b[1] == ab and out in into):
            return f"operands of `{ab}` into `{out}` (mma.sync takes f16 or bf16 into f32)"
        (m, k), n = a[0], b[0][0] if e.name == "dot_t" else b[0][1]
        return _fragment_refusal(m, n, k, varying)

    def wgmma_refusal(self, e, shape) -> str | None:
        """Why the product `e` (already fit for mma.sync) does not run on wgmma, or None:
        it needs sm_90a, whole warpgroups of 64 accumulator rows each (one column of
        warps), N a multiple of 8 up to 256, and operand tiles whose rows are a power of
        two of 32 bytes or more that nothing but wgmma reads (they are stored in its
        canonical layouts: swizzled, and in 128-byte panels where wider)."""
        lw = self.lw
        if lw.chip != "sm_90a":
            return f"wgmma needs sm_90a, not {lw.chip}"
        if os.environ.get("PHOBOS_WGMMA") == "0":
            return "PHOBOS_WGMMA=0"
        if lw.threads % 128:
            return f"{lw.threads} threads are not whole warpgroups of 128"
        ab = self.tiles.get(e.args[0].sym, ((), "?"))[1] if isinstance(e.args[0], hir.Ref) else "?"
        if ab not in ("f16", "bf16"):
            return f"wgmma is lowered for f16 and bf16 operands, not {ab}"
        m, n = shape
        if m != 16 * (lw.threads // 32):
            return f"the accumulator's {m} rows are not 64 a warpgroup"
        if n % 8 or n > 256:
            return f"N = {n} is not a multiple of 8 up to 256"
        acc = m * n // lw.threads // (2 if elem_of(e.type) == "f16" else 1)
        cap = register_cap(lw)
        if acc + WGMMA_REGS_BESIDE > cap:
            return (f"its accumulator's {acc} registers a thread and the {WGMMA_REGS_BESIDE} "
                    f"a wgmma needs beside them pass the {cap} that `@launch` leaves")  # fmt: skip
        for k, x in enumerate(e.args):
            if (k == 0 and isinstance(x, hir.Ref) and x.sym in self.reg_a_live
                    and os.environ.get("PHOBOS_WGMMA_REGISTER_A") != "0"):  # fmt: skip
                # A from registers (`register_a_refusal` holds it to its layout); 0 puts
                # the product on mma.sync, to measure what wgmma gains
                continue
            if not isinstance(x, hir.Ref) or x.sym not in self.tiles:
                return "an operand is not a whole shared tile"
            rows, elem = self.tiles[x.sym]
            row = rows[-1] * BYTES[elem]
            if len(rows) != 2 or not swizzle.swizzles(row) or x.sym in self.flat_read:
                return f"`{x.sym.name}`'s rows of {row} bytes are not a power of two of 32 or more"
            if not self.only_operand(x.sym):
                return f"`{x.sym.name}` is read by more than products"
        return None

    def sums_only(self, loop) -> bool:
        """Whether `loop`'s turn is its ring's staging and `acc += dot(..)` alone (a GEMM's
        k loop), whose wgmma groups stay in flight a turn (`tma`'s lag 2) and so take a
        deeper ring. A turn that reads its products (attention's softmax) waits for them
        each turn: two stages keep the next turn's boxes in flight, and more only cost
        CTAs an SM (B4 H32 S4096 attention: 1.96 ms at 2 stages, 2.10 at 3, 2.40 at 5;
        benchmarks/NOTES.md run 55)."""
        for st in loop.body.stmts:
            if isinstance(st, hir.VarDecl) and st.sym in self.rings:
                continue
            v = getattr(st, "value", None)
            if not (isinstance(st, hir.Assign) and st.op == "+=" and _is_dot(v)):
                return False
        return True

    def specializes(self, tma) -> bool:
        """Whether the kernel's TMA ring gets a producer warpgroup of its own
        (`phobos.lower.tma`), under `PHOBOS_SPECIALIZE=1`: one ring, its loop a
        statement of the kernel's body (not nested), room for 128 more threads in the
        CTA. By default thread 0 of the kernel's own issues the ring's loads: on the
        H200 that measured faster (benchmarks/NOTES.md)."""
        lw = self.lw
        loops = {id(self.ring_loops[sym]) for sym in tma}
        why = None
        if os.environ.get("PHOBOS_SPECIALIZE") != "1":
            why = "thread 0 issues them (PHOBOS_SPECIALIZE=1 for a producer warpgroup)"
        elif len(loops) != 1:
            why = "more than one loop stages by TMA"
        elif not any(id(st) in loops for st in self.body.stmts):
            why = "the TMA ring's loop is inside another statement"
        elif lw.threads + WARPGROUP > 1024:
            why = f"{lw.threads} threads leave no room for a producer warpgroup"
        if why is not None:
            log.debug("no producer warpgroup for the TMA loads: %s", why)
        return why is None

    def tma_refusal(self, sym, tile) -> str | None:
        """Why the ring tile `sym` (a wgmma operand in its canonical layout) is not
        staged by TMA loads, or None: a TMA box is a rectangle of a row-major 2-D tensor
        the kernel only reads, its rows at most 256 and 16-byte aligned in the tensor
        (a static row's extent a multiple of 16 bytes; a dynamic one is checked at
        launch), its elements taken as they are, at 32-bit coordinates."""
        lw = self.lw
        if lw.chip != "sm_90a":
            return f"TMA rings are lowered for sm_90a, not {lw.chip}"
        if os.environ.get("PHOBOS_TMA") == "0" or not TMA.get():
            return (
                "PHOBOS_TMA=0" if os.environ.get("PHOBOS_TMA") == "0" else "the variant without TMA"
            )
        if lw.k.index_width != 32:
            return "TMA coordinates are 32-bit: the kernel has 64-bit indices"
        value = self.rings[sym][0].value
        # A box starts on a 16-byte boundary of its row: a column start the divisors
        # prove a multiple of 16 bytes (a tile's own multiple, in a GEMM).
        col = value.subs[-1].start if isinstance(value, hir.Slice) and value.subs else None
        if col is not None and (lw._divisor(col) * BYTES[tile.elem]) % 16:
            return "its column start is not proven a multiple of 16 bytes"
        if not (isinstance(value, hir.Slice) and isinstance(value.base, hir.Ref)
                and isinstance(value.base.sym.type, hir.TensorT)):  # fmt: skip
            return "its value is not a slice of a tensor parameter"
        t = value.base.sym.type
        if len(t.dims) != 2 or len(value.subs) != 2 or any(sub.point for sub in value.subs):
            return "TMA rings stage rectangles of 2-D tensors"
        if elem_of(t) != tile.elem:
            return f"its `{elem_of(t)}` elements are converted to `{tile.elem}`"
        if tile.shape[0] > 256 or tile.pitch is not None:
            return f"its {tile.shape[0]} rows are more than a TMA box's 256"
        # A dynamic row's pitch is checked at launch, which takes the variant without TMA
        # where it is not a multiple of 16 bytes (`phobos.runtime.tensormap`).
        cols = t.dims[1]
        if isinstance(cols, int) and (cols * BYTES[tile.elem]) % 16:
            return (f"`{value.base.sym.name}`'s rows of {cols} {tile.elem} elements are not a "
                    "multiple of 16 bytes")  # fmt: skip
        return None

    def on_wmma(self, e) -> bool:
        """Whether the product `e` runs on WMMA m16n16k16: under `@tensorcore(wmma)`, a
        product of float tiles does, or is refused here (E0514) when it cannot: f16
        operands summed into f32, M, N and K multiples of 16, every lane of the warp.
        (An i8 `dot_t` keeps its own paths.)"""
        if getattr(self.lw.k.attrs, "tensorcore", None) != "wmma":
            return False
        a, b = (self.tiles.get(x.sym) for x in e.args)
        if a is None or b is None or a[1] == "i8":
            return False
        out = elem_of(e.type)
        why = None
        if not (a[1] == "f16" and b[1] == "f16" and out == "f32"):
            why = f"its operands are `{a[1]}` into `{out}`; WMMA takes f16 into f32"
        else:
            (m, k), n = a[0], b[0][0] if e.name == "dot_t" else b[0][1]
            bad = [f"{name} = {x}" for name, x in (("M", m), ("N", n), ("K", k)) if x % 16]
            if bad:
                why = f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not a multiple of 16"
            elif self.varying:
                why = "it is under a branch the lanes of a warp may not all take"
        if why is None:
            return True
        raise NotLowered(
            f"`{e.name}` on WMMA",
            e.span,
            code="E0514",
            message=f"`@tensorcore(wmma)` cannot run this `{e.name}` on WMMA m16n16k16: {why}",
            note="WMMA m16n16k16 multiplies 16x16 f16 fragments into f32 ones, a warp each",
            help="make every extent of the product a multiple of 16, or use `@tensorcore`, "
            "which falls back to FMA where a product does not fit",
        )

    def int8_refusal(self, e, varying: bool) -> str | None:
        """Why the i8 product `e` does not run on integer mma.sync, or None. SPEC.md
        ("Dense contraction") takes it there without `@tensorcore`: a `dot_t` into i32 on
        sm_80 (m16n8k32 is sm_80's), M a multiple of 16 (the accumulator is m16n8k32's C
        fragments, `MmaAcc`), N of 8 and K of 16: each k step of 32 is one m16n8k32 a
        fragment, a last 16 two m8n8k16 (the upper and lower halves of the fragment)."""
        chip = self.lw.chip
        if _sm(chip) < 80:
            return f"integer mma.sync m16n8k32 needs sm_80, not {chip}"
        a, b = (self.tiles.get(x.sym) for x in e.args)
        out = elem_of(e.type)
        if e.name != "dot_t" or not (a and b and b[1] == "i8" and out == "i32"):
            return f"`{e.name}` of i8 into `{out}` (integer mma.sync takes dot_t into i32)"
        (m, k), n = a[0], b[0][0]
        return _fragment_refusal(m, n, k, varying)

    def fallback(self, e, why: str) -> tuple[str, str]:
        """The CUDA-core path of a product that is not on mma.sync: dp4a for an i8
        `dot_t` whose K is a multiple of 4 (a word of each operand row a step), else
        FMA (`mad` for integers), with the reason."""
        a = self.tiles.get(e.args[0].sym)
        if a is None or a[1] != "i8" or e.name != "dot_t":
            return "fma", why
        k = a[0][1]
        if k % 4:
            return "fma", f"K = {k} is not a multiple of 4 (dp4a takes four bytes a step)"
        return "dp4a", why

    def fma_reason(self, sym, plan) -> str:
        """Why a product not grouped with register tiles runs on FMA."""
        tile = plan.tiles.get(sym)
        if tile is None or tile.place == "registers":
            return "no @tensorcore" if not getattr(self.lw.k.attrs, "tensorcore", None) else ""
        return f"its target is {tile.place} ({tile.reason})"

    def mma_operands(self, prefixes=("mma.", "wgmma.")) -> set:
        """The tiles a product on mma.sync or wgmma reads as a whole operand."""
        return {x.sym for e, _, _ in self.dots if self.paths.get(e.label, ("fma",))[0]
                .startswith(prefixes) for x in e.args if isinstance(x, hir.Ref)}  # fmt: skip

    def only_operand(self, sym, paths=None) -> bool:
        """Whether every reference to the tile `sym` is a whole operand of a product (of
        one on a path starting with one of `paths`, where given)."""
        refs = sum(1 for n in _walk(self.body) if isinstance(n, hir.Ref) and n.sym is sym)
        whole = sum(1 for e, _, _ in self.dots
                    if paths is None or self.paths.get(e.label, ("fma",))[0].startswith(paths)
                    for x in e.args if isinstance(x, hir.Ref) and x.sym is sym)  # fmt: skip
        return refs == whole

    def wgmma_operands(self) -> set:
        """The tiles only products on wgmma read: stored as wgmma's canonical layouts."""
        return self.mma_operands(("wgmma.",)) - self.mma_operands(("mma.",))

    def ldmatrix_swizzle(self, sym, shape, elem) -> int | None:
        """The row bytes of a shared operand of a product on mma.sync whose 16-byte
        chunks are XOR-swizzled (`swizzle`), or None: its rows a power of two of at
        least 32 bytes, and every read of it a whole operand of such a product (its
        writes are the sweeps that stage it, which swizzle as the ldmatrix reads do)."""
        row = shape[-1] * BYTES[elem]
        if (
            len(shape) != 2
            or sym in self.flat_read
            or not swizzle.swizzles(row)
            or os.environ.get("PHOBOS_SWIZZLE") == "0"
            or sym not in self.mma_operands()
        ):
            return None  # fmt: skip
        if not self.only_operand(sym, ("mma.", "wgmma.")):
            return None
        log.debug("mma operand `%s`: rows of %d bytes, their 16-byte chunks XOR-swizzled "
                  "for ldmatrix", sym.name, row)  # fmt: skip
        return row

    def ldmatrix_pitch(self, sym, shape, elem) -> int | None:
        """The row pitch of a shared operand of a product on mma.sync: its rows padded by
        16 bytes where they are an even number of 16-byte chunks, so the 8 rows of an
        ldmatrix matrix (16 bytes each, at one column) fall in 8 distinct chunks of the
        32 banks' 128 bytes (`mma.conflict_free`)."""
        if sym in self.flat_read or len(shape) != 2:
            return None
        mma = {x.sym for e, _, _ in self.dots
               if self.paths.get(e.label, ("fma",))[0] != "fma" for x in e.args}  # fmt: skip
        row = shape[-1] * BYTES[elem]
        if sym not in mma or row % 16 or (row // 16) % 2:
            return None
        pitch = shape[-1] + 16 // BYTES[elem]
        log.debug("mma operand `%s`: rows of %d bytes padded to a pitch of %d elements, for "
                  "ldmatrix", sym.name, row, pitch)  # fmt: skip
        return pitch


def _wmma_frags(e) -> int:
    m = e.args[0].type.dims[0]
    n = e.args[1].type.dims[0 if e.name == "dot_t" else 1]
    return (m // 16) * (n // 16)


# The paths of a product (`Plan.paths`), as the log names them.
_PATH_NAMES = {
    "fma": "FMA",
    "mma.m16n8k16.f16": "mma.sync m16n8k16 f16 -> f32",
    "mma.m16n8k16.bf16": "mma.sync m16n8k16 bf16 -> f32",
    "mma.m16n8k32.s8": "mma.sync m16n8k32 s8 -> s32",
    "dp4a": "dp4a",
    "wmma": "WMMA m16n16k16 f16 -> f32",
}


def path_name(path: str) -> str:
    """How the log names a product's path (`wgmma.m64n256k16.f16` is named by its form).

    >>> path_name("wgmma.m64n128k16.bf16"), path_name("wgmma.m64n64k16.f16.f16")
    ('wgmma m64n128k16 bf16 -> f32', 'wgmma m64n64k16 f16 -> f16')
    """
    if path.startswith("wgmma."):
        _, shape, ab, *acc = path.split(".")  # `.f16` last: summed in f16 (ours)
        return f"wgmma {shape} {ab} -> {acc[0] if acc else 'f32'}"
    return _PATH_NAMES[path]


def written_tensors(body) -> set:
    """The tensor parameters (or tiles) some statement of `body` writes, through any
    view: assigned into, or named by a store or an atomic."""
    views = {n.sym: n.value for n in _walk(body) if isinstance(n, hir.Let)}
    out = set()
    for n in _walk(body):
        if isinstance(n, hir.Assign):
            out.add(_root(n.target, views))
        elif isinstance(n, hir.Builtin) and n.name in _WRITERS:
            out.update(_root(a, views) for a in n.args)
    return out


def _dynamic(dims, span) -> NotLowered:
    """The refusal of a tile whose extent is bound at launch (E0513)."""
    names = [d.name for d in dims if isinstance(d, hir.Dyn)]
    shape = "[" + ", ".join(str(getattr(d, "name", d)) for d in dims) + "]"
    return NotLowered(
        "a tile with an extent bound at launch",
        span,
        code="E0513",
        message=f"a tile of shape {shape} is not lowered yet: `{names[0]}` is bound at launch",
        note="a tile is swept at a static shape; walk the extent in static slices, "
        "`for c in range(0, N, C) { ... A[r :+ 1, c :+ C] ... }`",
        help="give the tile a static extent, `0 :+ BLOCK` (`BLOCK` a constant or an "
        "`@autotune` name), or read it through a `let` view",
    )


def _scratch_bytes(lw, shape, vec) -> int:
    warps = max(lw.threads // 32, 1)
    return max(shape[0], 1) * warps * 8


def _is_tile_slice(e, tiles) -> bool:
    while isinstance(e, hir.Slice):
        e = e.base
    return isinstance(e, hir.Ref) and e.sym in tiles


# Groups of a staging tile's sweep a ring's copy issues straight-line, at most: a copy is
# one cp.async a group with no register held, so it takes more than a sweep's `UNROLL`
# (decode's 64 x 128 f16 key tile on one warp is 32 groups; staged by plain loads
# instead, it ran 6x slower than 32 keys a tile in the ring, benchmarks/NOTES.md run 67).
COPY_UNROLL = 64

MAX_STAGES = 4  # the deepest cp.async ring: three turns of copies in flight
# The stages a ring gets unless asked: two, SPEC.md's double buffering. On the H200 the
# FMA GEMM measured the same at 2, 3 and 4 (run 23: its turns are long enough for one
# turn of copies in flight to land), and every stage more is shared memory taken from
# the other CTAs of the SM.
STAGES = 2
# A TMA ring's stages: with a wgmma group in flight its loads run S - 2 turns ahead. Five
# (three turns of loads in flight) where they fit: on the H200 the 128-row GEMM of
# 128 x 128 tiles took 44.4 µs at 4, 41.6 at 5, 43.0 at 6 and 43.7 at 7 (run 40).
TMA_STAGES = 5
MAX_TMA_STAGES = MAX_RING_STAGES  # the deepest TMA ring `PHOBOS_STAGES` asks for
WARPGROUP = 128  # the threads of a producer warpgroup


def copy_unrolls(shape, threads: int, vec: int) -> bool:
    """Whether a ring's copy of a tile of `shape` at `vec` elements a vector is issued
    straight-line by `threads` (`COPY_UNROLL` groups at most).

    >>> copy_unrolls((64, 128), 32, 8), copy_unrolls((256, 128), 32, 8)
    (True, False)
    """
    return Sweep(tuple(shape), threads, vec).groups <= COPY_UNROLL


def ring_depth() -> int:
    """The stages a loop's ring starts from: `STAGES`, or `PHOBOS_STAGES` where set (2
    to `MAX_TMA_STAGES`, a cp.async ring at most `MAX_STAGES`: to measure one depth
    against another). The planner takes one fewer at a time until the kernel's shared
    memory fits.

    >>> ring_depth() in range(2, MAX_TMA_STAGES + 1)
    True
    """
    asked = switch_count("PHOBOS_STAGES", 2, MAX_TMA_STAGES)
    return STAGES if asked is None else asked


def asked_stages(k) -> int | None:
    """The depth `@pipeline(stages = S)` asks of `k`'s rings in its variant, or None.

    >>> from types import SimpleNamespace as K
    >>> asked_stages(K(attrs=K(stages="S"), variant=(("S", 5),))), asked_stages(K(attrs=None))
    (5, None)
    """
    stages = getattr(getattr(k, "attrs", None), "stages", None)
    if isinstance(stages, str):
        return dict(k.variant).get(stages)
    return stages


def _sm(chip: str) -> int:
    """The compute capability a chip's name says, 0 for a name that says none.

    >>> _sm("sm_90a"), _sm("sm_75"), _sm("gpu")
    (90, 75, 0)
    """
    return int(chip[3:5]) if chip.startswith("sm_") and chip[3:5].isdigit() else 0


def _fragment_refusal(m: int, n: int, k: int, varying: bool) -> str | None:
    """Why an [m, k] x [k, n] product cannot run on mma.sync's 16 x 8 x 16 fragment steps
    (m16n8k16, and m16n8k32 with a last 16 as m8n8k16), or None."""
    for name, extent, unit in (("M", m, 16), ("N", n, 8), ("K", k, 16)):
        if extent % unit:
            return f"{name} = {extent} is not a multiple of {unit}"
    if varying:
        return "under a branch the lanes of a warp may not all take"
    return None


def _label(node) -> int:
    """The key of `node`'s decisions: its number from `normalize` (every node the
    planner decides for was numbered there)."""
    if node.label is None:
        raise AssertionError(f"the planner met a node `normalize` did not number: {node!r}")
    return node.label


def plan(lw, body: hir.Block) -> Plan:
    """Place every tile of `body` and pick each sweep's vector width."""
    p = _Planner(lw, body)
    p.loop_users = {}
    return p.run()


def launch_of(k):
    """`k`'s `@launch` with this variant's numbers (`@launch(256, MB)` under MB = 2 reads
    `Launch(256, 2)`), or None for a kernel without one."""
    launch = getattr(k.attrs, "launch", None)
    return None if launch is None else launch.resolve(dict(k.variant))


def register_cap(lw) -> int:
    """The registers a thread may take under the kernel's `@launch(threads, min_blocks,
    max_regs)`: 255, or what `max_regs` says, or the register file's 65,536 shared by
    `min_blocks` CTAs, in the 8-register steps ptxas allocates.

        >>> from types import SimpleNamespace as N
        >>> from phobos.sema.attributes import Launch
        >>> lw = N(threads=256, k=N(attrs=N(launch=Launch(256, 2)), variant=()))
        >>> register_cap(lw)
        128
    """
    launch = launch_of(lw.k)
    if launch is None:
        return 255
    cap = 255
    if launch.max_regs:
        cap = min(cap, launch.max_regs)
    if launch.min_blocks:
        threads = launch.threads if isinstance(launch.threads, int) else lw.threads
        cap = min(cap, 65536 // (threads * launch.min_blocks) // 8 * 8)
    return cap


__all__ = ["ELEMENTWISE", "REDUCTIONS", "Plan", "Tile", "elem_of", "normalize", "plan"]
