"""Staging through shared memory: a tile expression swept into a buffer the planner
gave a statement, and that buffer read back as a tile of any shape and pitch.

The statements that stage (`transpose`, `cumsum`, `gather`, the row reductions
folded a warp a row) share these, so none of them needs another's module.
"""

from __future__ import annotations

import itertools

from phobos.lower import lir, memory, sweep
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm
from phobos.lower.types import elem_of
from phobos.sema import hir

_ids = itertools.count(1)


def restart_names() -> None:
    """Number the symbols `temp` makes from 1 again, as each kernel's lowering starts."""
    global _ids
    _ids = itertools.count(1)


def temp(prefix: str, kind: str, type_, uni) -> hir.Sym:
    """A fresh symbol of the lowering's own (negative ids never meet the checker's)."""
    n = next(_ids)
    return hir.Sym(f"{prefix}_{n}", -1_000_000 - n, kind, type_, uni)


def buffer_of(lw, value) -> lir.SharedBuffer:
    buf = lw.plan.stages.get(value.label)
    if buf is None:
        raise NotLowered(f"`{value.name}` without its staging buffer", value.span)
    return buf


def view(buf, elem: str, shape, pitches) -> memory.Access:
    """An access of the shared buffer `buf` as a tile of `shape` at `pitches`."""
    rank = len(shape)
    return memory.Access("shared", Imm(buf.offset, "u32"), elem,
                         tuple(Imm(0, "s32") for _ in range(rank)), tuple(() for _ in range(rank)),
                         tuple(shape), tuple(pitches), tuple(memory.BIG for _ in range(rank)),
                         buf)  # fmt: skip


def bind(lw, acc: memory.Access, uni) -> hir.Ref:
    """A `let` name bound to `acc`, for a statement built here."""
    t = hir.TileT(hir.Scalar(acc.elem), tuple(acc.shape))
    sym = temp("staged", "let", t, uni)
    lw.env[sym] = acc
    return hir.Ref(sym, t, uni, span=lw.b.span)


def sweep_into(lw, target, value, vec: int) -> None:
    """`target = value` as an elementwise statement at vector width `vec`."""
    stmt = hir.Assign(target, "=", value, span=lw.b.span)
    sweep.elementwise(lw, stmt, target, "=", value, vec=vec)


def stage(lw, arg, buf, vec: int, row_pitch: int | None = None) -> memory.Access:
    """Sweep the tile expression `arg` into `buf` (rows at `row_pitch`); its access."""
    dims = tuple(arg.type.dims)
    pitches = (row_pitch or dims[1], 1) if len(dims) == 2 else (1,)
    acc = view(buf, elem_of(arg.type), dims, pitches)
    sweep_into(lw, bind(lw, acc, arg.uni), arg, vec)
    return acc
