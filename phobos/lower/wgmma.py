"""Dense contractions on Hopper's warpgroup MMA: `dot(a, b)` and `dot_t(a, b)` of f16 or
bf16 shared tiles into an f32 register accumulator, as `wgmma.mma_async` m64nNk16 from
shared-memory descriptors (sm_90a).

The planner picks this path (`placement._Planner.wgmma_refusal`, recorded in
`Plan.paths`): the CTA is whole warpgroups, warpgroup `g` owning accumulator rows 64g to
64g + 63 and every column (the `MmaAcc` layout of one warp column: its registers are
wgmma's, `warpgroup.acc_place`), and each operand tile is stored as wgmma reads it: its
16-byte chunks swizzled (`phobos.lower.swizzle`, the 128-, 64- or 32-byte mode by the
row's bytes), rows wider than 128 bytes cut into 128-byte panels, every tile on its
swizzle atom's boundary. A k step of 16 is one wgmma per warpgroup, its descriptors
built by `wgmma_desc` from the step's start in the tiles:

| operand            | major | start of k step `kk` (bytes from the tile)                  | LBO, SBO |
|--------------------|-------|--------------------------------------------------------------|----------|
| `a` `[M, K]`       | K     | panel `32 kk / 128` + warpgroup `g`'s 64 rows + `32 kk % 128` | -, 8 rows |
| `b` of `dot_t` `[N, K]` | K | panel `32 kk / 128` + `32 kk % 128`                        | -, 8 rows |
| `b` of `dot` `[K, N]`   | MN | 16 rows a step: `16 kk` rows of a panel                    | a panel, 8 rows |

Before the first step: the staged tiles' generic writes fenced for the async proxy
(`fence.shared [proxy=async]`) and a barrier, then `wgmma_fence`; after the last, one
`wgmma_commit` and `wgmma_wait 0`, so the accumulator is the product's when the
statement ends and the tiles may be written again.
"""

from __future__ import annotations

import logging

from phobos.lower import scalars
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg, Value
from phobos.lower.swizzle import LINE
from phobos.lower.types import BYTES
from phobos.lower.words import pack, register_a, unpack

log = logging.getLogger("phobos.lower")
MAX_OFFSET = 1 << 18  # a descriptor's byte offsets: 14 bits of 16-byte units
STEP = 16  # k a wgmma takes


def product(lw, s, target, op: str, e, path: str) -> None:
    """Lower `target op e` on wgmma (`path` "wgmma.m64nNk16.f16" or ".bf16")."""
    a = lw.tiles.get(getattr(e.args[0], "sym", None))
    in_regs = a is not None and a.place == "registers"  # `placement.register_a_refusal`
    if not in_regs:
        a = _operand(lw, e.args[0])
    bt = _operand(lw, e.args[1])
    tile = lw.tiles.get(getattr(target, "sym", None))
    if tile is None or tile.mma is None or op not in ("=", "+=", "-="):
        raise NotLowered(f"`{e.name}` on wgmma into this target", s.span)
    _, shape, ab, *_ = path.split(".")
    transposed = e.name == "dot_t"
    K = a.shape[1]
    lw.tracker.statement(([] if in_regs else [(a.buffer, "read", None)])
                         + [(bt.buffer, "read", None)])  # fmt: skip
    b = lw.b
    shared = {bt.buffer.name} if in_regs else {a.buffer.name, bt.buffer.name}
    if not shared <= lw.async_written:
        # cp.async and plain stores wrote the tiles through the generic proxy; wgmma reads
        # them through the async one: every thread fences its writes, then all meet.
        # (TMA writes through the async proxy: its ring's mbarrier orders them.)
        b.emit("fence", space="shared", proxy="async")
        b.emit("bar", (), lw.barrier_srcs())
    span = s.span
    line = span.source.line_col(span.start)[0] if span is not None else "?"
    log.debug("`%s` line %s: `%s` on wgmma %s %s -> %s: %d warpgroups, K = %d, %s",
              lw.k.name, line, e.name, shape, ab, tile.elem, lw.threads // 128, K,
              f"A from the registers of `{a.sym.name}`, B from swizzled shared memory"
              if in_regs else "operands from swizzled shared memory")  # fmt: skip
    regs = [r for group in tile.regs for r in group]
    acc = regs
    half = tile.elem == "f16"  # f16 sums: wgmma's accumulator is b32 pairs of the elements
    if half and op == "-=":
        raise NotLowered("an f16 accumulator's `-=` on wgmma", s.span)
    if half:
        # Packed for the statement, or, in a TMA ring's loop, once around the loop
        # (`phobos.lower.tma`: the group stays in flight into the next turn).
        acc = tile.words if tile.words is not None else pack(b, regs)
    elif op == "-=":  # the product into registers of its own, then subtracted
        acc = [b.copy(Imm(0.0, "f32"), "f32", hint="sum") for _ in regs]
    yes, no = _preds(lw)
    group = b.once(("wgmma.group",), lambda: b.op("shr", "u32", lw.sreg("tid.x"), Imm(7, "u32"),
                                                 hint="wg"))  # fmt: skip
    size = BYTES[a.elem]
    if in_regs:
        # A's k steps as four words each, a warp's rows as mma.sync's A fragment
        # (`warpgroup.a_place`): written before the fence, as wgmma reads them.
        lay_a = a.layout(lw.threads)
        regs_a = [r for group_ in a.regs for r in group_]
        words = [register_a(b, regs_a, lay_a, 0, kk) for kk in range(K // STEP)]
    else:
        a_rows = b.once(("wgmma.arows", a.buffer.name),
                        lambda: b.op("mul", "u32", group, Imm(64 * min(a.swizzle, LINE), "u32")))  # fmt: skip
    b.emit("wgmma_fence")
    for kk in range(K // STEP):
        if in_regs:
            db = _desc(lw, bt, _k_major_start(bt, kk, size, None)) if transposed else _desc(
                lw, bt, _mn_major_start(bt, kk), mn=True)  # fmt: skip
            scale = no if kk == 0 and op != "+=" else yes
            b.emit("wgmma_mma", tuple(acc), (*words[kk], db, scale, *acc), shape=shape,
                   type="f16" if half else "f32", from_type=ab,
                   major_b="K" if transposed else "MN")  # fmt: skip
            continue
        da = _desc(lw, a, _k_major_start(a, kk, size, a_rows))
        if transposed:
            db = _desc(lw, bt, _k_major_start(bt, kk, size, None))
        else:
            db = _desc(lw, bt, _mn_major_start(bt, kk), mn=True)
        scale = no if kk == 0 and op != "+=" else yes
        b.emit("wgmma_mma", tuple(acc), (da, db, scale, *acc), shape=shape,
               type="f16" if half else "f32", from_type=ab, major_a="K",
               major_b="K" if transposed else "MN")  # fmt: skip
    b.emit("wgmma_commit")
    # A TMA ring whose turns only stage and sum may leave this group in flight through
    # the next turn's barrier (`phobos.lower.tma`); it waits for the last after its loop.
    carried = op == "+=" and (not half or tile.words is not None)
    b.emit("wgmma_wait", pending=lw.wgmma_pending if carried else 0)
    if half and tile.words is None:
        unpack(b, acc, regs)
    if op == "-=":
        for r, x in zip(regs, acc, strict=True):
            b.mov(r, scalars.binary(b, "-", r, x, "f32"), "f32")


def _operand(lw, x):
    tile = lw.tiles.get(getattr(x, "sym", None))
    if tile is None or tile.place != "shared" or tile.swizzle is None:
        raise NotLowered("a wgmma operand outside a swizzled shared tile", x.span)
    return tile


def _preds(lw) -> tuple[Reg, Reg]:
    """(true, false) in pred registers: wgmma's scale is a predicate operand."""
    b = lw.b
    tid = lw.sreg("tid.x")
    yes = b.once(("wgmma.yes",), lambda: b.op("setp", "pred", tid, tid, cmp="eq", type="u32"))
    no = b.once(("wgmma.no",), lambda: b.op("setp", "pred", tid, tid, cmp="ne", type="u32"))
    return yes, no


def _base(tile) -> Value:
    return tile.base if tile.base is not None else Imm(tile.buffer.offset, "u32")


def _k_major_start(tile, kk: int, size: int, rows: Value | None) -> tuple[int, Value | None]:
    """(constant bytes, a register of bytes or None) from the tile's start to k step
    `kk` of a K-major operand (`rows` the warpgroup's first row's bytes, for `a`)."""
    col = STEP * size * kk
    row = min(tile.swizzle, LINE)
    panel_bytes = tile.shape[0] * LINE if tile.panels else 0
    return (col // LINE) * panel_bytes + col % row, rows


def _mn_major_start(tile, kk: int) -> tuple[int, None]:
    """The bytes from the tile's start to k step `kk` of an MN-major `b` ([K, N])."""
    return STEP * kk * min(tile.swizzle, LINE), None


def _desc(lw, tile, start: tuple[int, Value | None], mn: bool = False) -> Reg:
    """The descriptor of the operand `tile` at `start` (constant bytes, and a register of
    bytes or None, from the tile's start: the ring's stage is the tile's base)."""
    b = lw.b
    const, reg = start
    base = _base(tile)
    if isinstance(base, Imm):
        const += base.value
        base = None
    parts = [x for x in (base, reg) if x is not None]
    at: Value = parts[0] if parts else Imm(const, "u32")
    for x in parts[1:]:
        at = b.op("add", "u32", at, x, hint="s")
    if parts and const:
        at = b.op("add", "u32", at, Imm(const, "u32"), hint="s")
    if isinstance(at, Imm):
        at = b.copy(at, "u32", hint="s")
    row = min(tile.swizzle, LINE)
    mode = {128: "128B", 64: "64B", 32: "32B"}[row]
    lbo = tile.shape[0] * LINE if (mn and tile.panels) else 16
    if lbo >= MAX_OFFSET:
        raise NotLowered(
            "", lw.b.span,
            message=f"a wgmma operand of {tile.shape[0]} rows is past what a wgmma descriptor "
            "can address",
            note=f"its 128-byte panels lie {lbo} bytes apart, and a descriptor holds at most "
            f"{MAX_OFFSET - 16}",
            help="use tiles of at most 2047 rows (a smaller `@autotune` choice)",
        )  # fmt: skip
    desc = b.reg("u64", "desc")
    b.emit("wgmma_desc", (desc,), (at,), lbo=lbo, sbo=8 * row, swizzle=mode)
    return desc


__all__ = ["product"]
