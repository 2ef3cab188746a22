"""Which lowering takes a tile statement: the one place that tells them apart.

A tile statement (`var t = e`, `let t = e`, `t = e`, `t op= e`, `X[..] = e`, `X[..] op= e`)
goes, by what its value is, to

| its value                              | lowered by                        |
|----------------------------------------|-----------------------------------|
| `dot`, `dot_t`                         | `phobos.lower.contract`           |
| a shape built-in, or a staged reduction | `phobos.lower.shape` (and `rowfold`) |
| `rowsum`, `rowmax`, `rowargmax`        | `phobos.lower.reduce` (`dynamic` over an extent bound at launch) |
| anything elementwise, of dynamic shape | `phobos.lower.dynamic`            |
| anything elementwise                   | `phobos.lower.sweep`              |

Sitting above all of them, it keeps their imports one way: none of them needs this
module, so none needs another's dispatch.
"""

from __future__ import annotations

from phobos.lower import contract, dynamic, reduce, scalars, sweep
from phobos.lower import shape as shape_ops
from phobos.lower.kinds import CONTRACTIONS, REDUCTIONS
from phobos.lower.types import mov_type
from phobos.sema import hir


def tile_statement(lw, s) -> None:
    """Lower the tile statement `s` (see the table above)."""
    if isinstance(s, (hir.VarDecl, hir.Let)):
        tile = lw.tiles[s.sym]
        sweep.declare(lw, tile)
        if s.value is None:
            if tile.place != "shared":  # every register holds a value before any read
                zero = scalars.const(0, tile.elem)
                regs = tile.regs if tile.place == "replicated" else sum(tile.regs, [])
                for r in regs:
                    lw.b.mov(r, scalars.materialize(lw.b, zero, tile.elem),
                             mov_type(r.type))  # fmt: skip
            return
        target, op, value = hir.Ref(s.sym, s.sym.type, s.sym.uni), "=", s.value
    else:
        target, op, value = s.target, s.op, s.value
    if isinstance(value, hir.Builtin) and value.name in CONTRACTIONS:
        contract.product(lw, s, target, op, value)
    elif op == "=" and shape_ops.takes(lw, value):  # shape built-ins, rows folded a warp each
        shape_ops.lower(lw, value, target)
    elif isinstance(value, hir.Builtin) and value.name in REDUCTIONS and op == "=":
        if dynamic.is_dynamic(getattr(value.args[0].type, "dims", ())):
            dynamic.row_reduction(lw, value, target)  # a strided fold over the row
        else:
            reduce.row_reduction(lw, value, target)
    elif dynamic.is_dynamic(tuple(target.type.dims)):
        dynamic.tile_statement(lw, s, target, op, value)  # a loop of run-time trip count
    else:
        sweep.elementwise(lw, s, target, op, value)
