"""Staging a loop's next tiles while this turn computes: a two-stage pipeline through
registers.

A GEMM-shaped loop stages tensor slices into shared tiles and reads them there:

    for kt in range(0, K, TK) {
      var a = A[pm * TM :+ TM, kt :+ TK]      // staging statements
      var b = B[kt :+ TK, pn * TN :+ TN]
      acc += dot(a, b)
    }

Lowered plainly, each turn waits for its global loads before its product starts. Here
each staging statement of the loop body instead stores registers loaded one turn
earlier, then loads the next turn's slice into them, so the loads are in flight while
the product runs:

    P = A[.., lo :+ TK]                      // before the loop (when it runs at all)
    for kt ... {
      a = P                                  // the store into shared memory
      if kt + TK < hi { P = A[.., kt + TK :+ TK] }
      ...
    }

A statement qualifies when it is at the top level of the body, writes a whole shared
tile of static shape with an elementwise expression of tensor slices, reads no tile,
no tensor the kernel writes, and no scalar bound inside the body other than the loop
variable (a `let` view bound in the body is read through its slice); and when its
sweep runs straight-line at one proven width; and only while the kernel's register tiles
leave room for the registers loaded ahead (`Prefetcher.affordable`). The barriers are the synchronise pass's
as before: the stores into shared memory stay where the statements were.

    >>> Prefetcher.__name__
    'Prefetcher'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from phobos.lower import scalars
from phobos.lower.layout import Sweep
from phobos.lower.lir import If, Imm
from phobos.lower.placement import ELEMENTWISE, _walk, map_operands, written_tensors
from phobos.lower.sweep import UNROLL, State, Sweeper, points
from phobos.lower.types import REG, elem_of, mov_type
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
ROOM = 32  # register-tile registers a thread beyond which nothing is loaded ahead


@dataclass
class Staged:
    stmt: hir.Stmt
    value: hir.Expr  # the statement's value, `let` views of the body read through
    tile: object
    vec: int
    regs: list | None = None  # per register group: the loaded values of the next turn


class Prefetcher:
    """The staging statements of one loop and the registers holding their next turn."""

    def __init__(self, lw, loop: hir.For, hi, step: int):
        self.lw = lw
        self.loop = loop
        self.hi = hi
        self.step = step
        self.staged: list[Staged] = []  # in the body's order
        views: dict = {}
        local = {loop.var}
        for st in loop.body.stmts:
            self._consider(st, views, local)
            for node in _walk(st):
                if isinstance(node, (hir.Let, hir.VarDecl)):
                    local.add(node.sym)
            if isinstance(st, hir.Let) and isinstance(st.sym.type, hir.TensorT):
                views[st.sym] = st.value

    def _consider(self, st, views, local) -> None:
        lw = self.lw
        if not isinstance(st, hir.VarDecl) or st.value is None:
            return
        tile = lw.tiles.get(st.sym)
        if tile is None or tile.place != "shared" or tile.pitch is not None:
            return
        if not all(isinstance(d, int) for d in tile.shape):
            return
        value = _expand(st.value, views)
        if not _elementwise(value):
            return
        written = written_tensors(lw.k.body)
        for node in _walk(value):
            if isinstance(node, hir.Ref):
                sym = node.sym
                if sym in lw.tiles or sym in written:
                    return
                if sym in local and sym is not self.loop.var:
                    return
        vec = lw.plan.vec.get(st.label, 1)
        lay = Sweep(tile.shape, lw.threads, vec)
        if lay.groups > UNROLL:
            return
        self.staged.append(Staged(st, value, tile, vec))

    def __bool__(self) -> bool:
        return bool(self.staged) and self.affordable()

    def affordable(self) -> bool:
        """Whether the registers loaded ahead leave room: the kernel's register tiles
        hold at most `ROOM` registers a thread. Measured on the H200 (NOTES.md): a
        128x128 SGEMM tile (64 accumulators a thread) went from 127 registers to 173
        and from two CTAs an SM to one, and lost 4-5%; a 64x64 one (16) gained 3%, the
        spec's flash attention 6-12%."""
        held = sum(
            t.layout(self.lw.threads).regs_per_thread
            for t in self.lw.tiles.values()
            if t.place == "registers"
        )
        if held > ROOM:
            log.debug("`%s`: no staging a turn ahead: the register tiles hold %d registers "
                      "a thread, more than %d", self.lw.k.name, held, ROOM)  # fmt: skip
            return False
        return True

    # -- emission ------------------------------------------------------------

    def prologue(self, lo) -> None:
        """Load the first turn's slices (where the loop runs a turn at all)."""
        lw, b = self.lw, self.lw.b
        et = elem_of(self.loop.var.type)
        cond = scalars.binary(b, "<", lo, self.hi, et)
        with b.region() as first:
            for st in list(self.staged):
                self._load(st, lo)
        b.add(If(scalars.materialize(b, cond, "bool"), first.block, None, span=b.span))
        for st in self.staged:
            log.debug("`%s`: the staging of `%s` loads a turn ahead, into %d registers",
                      lw.k.name, st.tile.sym.name, sum(map(len, st.regs)))  # fmt: skip

    def lower(self, s) -> bool:
        """Lower the staging statement `s` (False: not one of this loop's)."""
        st = next((st for st in self.staged if st.stmt is s), None)
        if st is None or st.regs is None:
            return False
        self._store(st)
        lw, b = self.lw, self.lw.b
        var = lw.env[self.loop.var]
        et = elem_of(self.loop.var.type)
        nxt = scalars.binary(b, "+", var, Imm(self.step, var.type), et)
        cond = scalars.binary(b, "<", nxt, self.hi, et)
        with b.region() as ahead:
            self._load(st, nxt)
        b.add(If(scalars.materialize(b, cond, "bool"), ahead.block, None, span=b.span))
        return True

    def _load(self, st: Staged, at) -> None:
        lw, b = self.lw, self.lw.b
        saved = lw.env.get(self.loop.var)
        lw.env[self.loop.var] = at
        try:
            shape = st.tile.shape
            sw = Sweeper(lw, shape, st.vec)
            sw.prepare(st.value, shape)
            if sw.split:  # a versioned sweep: staged as written instead
                self.staged.remove(st)
                return
            pts = points(lw, shape, st.vec, State())
            values = [sw.ev(st.value, p) for p in pts]
        finally:
            lw.env[self.loop.var] = saved
        elem = st.tile.elem
        rt = REG[elem]
        if st.regs is None:
            st.regs = [[b.reg(rt, "next") for _ in vals] for vals in values]
        for regs, vals in zip(st.regs, values, strict=True):
            for r, v in zip(regs, vals, strict=True):
                v = scalars.convert(b, v, elem_of(st.value.type), elem)
                b.mov(r, scalars.materialize(b, v, elem), mov_type(rt))

    def _store(self, st: Staged) -> None:
        lw = self.lw
        tile = st.tile
        shape = tile.shape
        acc = tile.access()
        lw.tracker.access(acc.buffer, "write", ("sweep", shape, st.vec))
        sw = Sweeper(lw, shape, st.vec)
        for p, regs in zip(points(lw, shape, st.vec, State()), st.regs, strict=True):
            sw.store(acc, p, regs)


def _expand(e, views):
    """`e` with each `let` view of `views` replaced by the slice it names."""
    if isinstance(e, hir.Ref) and e.sym in views:
        return _expand(views[e.sym], views)
    if isinstance(e, hir.Slice):
        return replace(e, base=_expand(e.base, views))
    return map_operands(e, lambda a: _expand(a, views))


def _elementwise(e) -> bool:
    """Whether `e` reads tensor slices through elementwise operations only."""
    if isinstance(e.type, hir.Scalar):
        return not any(isinstance(n, hir.Builtin) and "over" in dict(n.config) for n in _walk(e))
    if isinstance(e, hir.Slice):
        return _elementwise_base(e.base)
    if isinstance(e, hir.Ref):
        return isinstance(e.sym.type, hir.TensorT) and e.sym.kind == "param"
    if isinstance(e, hir.Binary):
        return _elementwise(e.left) and _elementwise(e.right)
    if isinstance(e, hir.Unary):
        return _elementwise(e.operand)
    if isinstance(e, hir.Convert):
        return _elementwise(e.value)
    if isinstance(e, hir.Builtin) and e.name in ELEMENTWISE and e.name != "iota":
        return all(_elementwise(a) for a in e.args)
    return False


def _elementwise_base(e) -> bool:
    while isinstance(e, hir.Slice):
        e = e.base
    return isinstance(e, hir.Ref) and isinstance(e.sym.type, hir.TensorT) and e.sym.kind == "param"
