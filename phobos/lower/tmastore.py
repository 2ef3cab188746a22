"""A walking GEMM's epilogue stored by TMA (sm_90a): `C[r :+ 128, c :+ N] = f16(acc)` (or
bf16) of a wgmma accumulator goes through shared memory, written by `stmatrix`, and out
by one TMA store a 64-column panel, so the warps hand the stores off instead of issuing
one 4-byte store per element pair.

`C[..] = acc` of an f16 accumulator (f16 sums, ours) into an f16 tensor goes the same way,
its element pairs the words as they are.

Where the CTAs walk the grid's blocks (`phobos.lower.walk`), the epilogue runs after
the next block's first turns are issued into S - L of the ring's stages; the other L
stages are free until the next block's first refill, and the panels (128 rows of 128
bytes, in the 128-byte swizzle, 16 KB each) are laid into them:

    each warp: for each 16 columns: four f16x2 words (cvt_x2), one stmatrix.x4 at the
               swizzled rows of its 16 rows
    fence.shared [proxy=async]; bar.sync
    thread 0: tma_store of each panel at (c + 64 p, r); bulk_commit
    (at the next block's start, before any refill: thread 0 bulk_wait [pending=0, read=1])

TMA writes only the elements inside the tensor, so ragged edges need no masks. Taken
when the statement is the kernel's last, its target a 2-D tensor parameter of 16-bit
elements and the accumulator's 128 rows and N columns (N a multiple of 64), the ring's lag
2, and the two free stages hold the panels; `PHOBOS_TMA_STORE=0` turns it off (the
stores then leave from registers).

    >>> PANEL
    16384
"""

from __future__ import annotations

import logging
import os

from phobos.lower import scalars
from phobos.lower.lir import If, Imm
from phobos.lower.tma import coord, tensor_map
from phobos.lower.words import pack
from phobos.sema import hir

log = logging.getLogger("phobos.lower")
PANEL = 128 * 128  # bytes of one panel: 128 rows of 64 16-bit columns
COLS = 64  # a panel's columns


def stored_by_tma(lw, walk, s) -> bool:
    """Whether `s`, the walked kernel's epilogue, qualifies (see the module's text)."""
    why = _refusal(lw, walk, s)
    if why is not None:
        log.debug("`%s`: the epilogue stored from registers: %s", lw.k.name, why)
    return why is None


def _refusal(lw, walk, s) -> str | None:
    if os.environ.get("PHOBOS_TMA_STORE") == "0":
        return "PHOBOS_TMA_STORE=0"
    if not (isinstance(s, hir.Assign) and s.op == "=" and isinstance(s.target, hir.Slice)):
        return "the statement after the loop is not one store of a tile"
    base = s.target.base
    tensor = getattr(base, "sym", None)
    if not isinstance(getattr(tensor, "type", None), hir.TensorT) or len(tensor.type.dims) != 2:
        return "the store's target is not a 2-D tensor parameter"
    arg = _accumulator(s)
    if arg is None:
        return ("the stored value is not a conversion to the tensor's 16-bit type, or an f16 "
                "accumulator into an f16 tensor")  # fmt: skip
    tile = lw.tiles.get(getattr(arg, "sym", None)) if isinstance(arg, hir.Ref) else None
    if tile is None or tile.shape[0] != 128 or tile.shape[1] % COLS or lw.threads != 256:
        return "the value is not a 128-row accumulator of two warpgroups"
    if not any(p.startswith("wgmma") for p in lw.plan.paths.values()):
        return "the accumulator is not wgmma's"
    if any(
        sub.point or sub.extent != dim for sub, dim in zip(s.target.subs, tile.shape, strict=True)
    ):
        return "the target slice is not the accumulator's shape"
    ring = walk.ring
    if ring.lag != 2:
        return "the ring's lag is not 2"
    if any(t.nbytes % PANEL for _, t in ring.staged):
        return "the ring's stages are not whole panels"
    free = ring.lag * sum(t.nbytes for _, t in ring.staged) // PANEL
    if free < tile.shape[1] // COLS:
        return f"the free stages hold {free} panels, not {tile.shape[1] // COLS}"
    return None


def _accumulator(s):
    """The accumulator `s` stores: `f16(acc)` (or bf16) of an f32 one, or an f16 one into
    an f16 tensor (f16 sums, ours); None for any other value."""
    v, elem = s.value, s.target.base.sym.type.elem.name
    if isinstance(v, hir.Convert) and elem in ("f16", "bf16") and v.type.elem.name == elem:
        v = v.value
        return v if isinstance(v, hir.Ref) and v.type.elem.name == "f32" else None
    if isinstance(v, hir.Ref) and elem == "f16" and getattr(v.type, "elem", None) is not None:
        return v if v.type.elem.name == "f16" else None
    return None


def lower(lw, walk, s) -> None:
    """The epilogue `s` through shared memory and TMA stores (the module's text)."""
    b = lw.b
    ring = walk.ring
    tensor = s.target.base.sym
    acc = lw.tiles[_accumulator(s).sym]
    n = acc.shape[1]
    panels = _panels(lw, ring, n // COLS)
    regs = [r for group in acc.regs for r in group]
    elem = tensor.type.elem.name
    tid = lw.sreg("tid.x")
    lane = b.op("and", "b32", tid, Imm(31, "u32"), dest_type="u32", hint="lane")
    warp = b.op("shr", "u32", tid, Imm(5, "u32"), hint="warp")
    # Lane l names row l % 8 of matrix l // 8: rows 8 (m % 2) on, columns 8 (m // 2) on.
    half = b.op("and", "b32", b.op("shr", "u32", lane, Imm(3, "u32")), Imm(1, "u32"),
                dest_type="u32")  # fmt: skip
    row = b.op("add", "u32", b.op("mul", "u32", warp, Imm(16, "u32")),
               b.op("add", "u32", b.op("mul", "u32", half, Imm(8, "u32")),
                    b.op("and", "b32", lane, Imm(7, "u32"), dest_type="u32")), hint="row")  # fmt: skip
    rowoff = b.op("mul", "u32", row, Imm(128, "u32"), hint="rowoff")
    colhalf = b.op("and", "b32", b.op("shr", "u32", lane, Imm(4, "u32")), Imm(1, "u32"),
                   dest_type="u32")  # fmt: skip
    line = b.op("and", "b32", lane, Imm(7, "u32"), dest_type="u32")
    chunks = []
    for q in range(4):  # the 16-byte chunk of column block q (of 4 a panel), swizzled
        c = b.op("add", "u32", colhalf, Imm(2 * q, "u32"))
        x = b.op("xor", "b32", c, line, dest_type="u32")
        chunks.append(b.op("add", "u32", rowoff, b.op("shl", "b32", x, Imm(4, "u32"),
                                                      dest_type="u32")))  # fmt: skip
    for i in range(n // 16):
        j0, j1 = 2 * i, 2 * i + 1
        if acc.elem == "f16":  # f16 sums: the pairs as they are, a word each
            words = [w for j in (j0, j1) for w in pack(b, regs[4 * j : 4 * j + 4], hint="h2")]
        else:
            words = [
                b.op(
                    "cvt_x2",
                    elem,
                    regs[4 * j + k],
                    regs[4 * j + k + 1],
                    dest_type="b32",
                    from_type="f32",
                    rounding="rn",
                    hint="h2",
                )  # fmt: skip
                for j in (j0, j1)
                for k in (0, 2)
            ]
        addr = b.op("add", "u32", panels[i // 4], chunks[i % 4], hint="st")
        b.emit("stmatrix", (), (addr, *words))
    b.emit("fence", space="shared", proxy="async")
    lw.tracker.barrier(force=True)  # every warp's rows are in the panels
    _, maddr = tensor_map(lw, tensor, elem, (128, COLS), "128B")
    r0, c0 = (coord(lw, sub.start) for sub in s.target.subs)
    with b.region() as lead:
        for p in range(n // COLS):
            x = c0 if not p else scalars.materialize(
                b, scalars.binary(b, "+", c0, Imm(p * COLS, "s32"), "i32"), "i32")  # fmt: skip
            b.emit("tma_store", (), (maddr, x, r0, panels[p]))
        b.emit("bulk_commit")
    b.add(If(ring.leader, lead.block, None, span=b.span))
    log.debug("`%s`: the epilogue written by stmatrix and stored by TMA, %d panels",
              lw.k.name, n // COLS)  # fmt: skip


def drain(lw, walk) -> None:
    """Thread 0 waits until its stores have read their panels: before the next block's
    refills overwrite the free stages, and before the CTA ends."""
    b = lw.b
    with b.region() as lead:
        b.emit("bulk_wait", pending=0, read=1)
    b.add(If(walk.ring.leader, lead.block, None, span=b.span))


def _panels(lw, ring, count: int) -> list:
    """Shared offsets of `count` panels in the L stages past the ring's first S - L."""
    b = lw.b
    out = []
    for k in range(ring.lag):
        slot = ring._ahead(ring.stages - ring.lag + k)
        for _, tile in ring.staged:
            start = b.op("mad", "u32", slot, Imm(tile.nbytes, "u32"),
                         Imm(tile.buffer.offset, "u32"), hint="panel")  # fmt: skip
            for i in range(tile.nbytes // PANEL):
                out.append(start if not i else b.op("add", "u32", start, Imm(i * PANEL, "u32")))
                if len(out) == count:
                    return out
    return out


__all__ = ["drain", "lower", "stored_by_tma"]
