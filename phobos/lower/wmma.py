"""Dense contractions on WMMA, `@tensorcore(wmma)`: `dot(a, b)` and `dot_t(a, b)` of f16
tiles into an f32 tile, as wmma m16n16k16.

PTX leaves a WMMA fragment's distribution over the lanes unspecified
(`phobos.lower.fragments`), so nothing may read an accumulator fragment element by
element: a sweep cannot take its points from it. The planner therefore keeps the product's
target in shared memory (`placement._Planner.product`), and a product is, for each 16 x 16
fragment of the target a warp owns,

    c = wmma_load.c(target)        (or 0 for `=`; negated for `-=`)
    for each k step of 16:  c = wmma_mma(wmma_load.a(a), wmma_load.b(b), c)
    wmma_store(target, c)          (negated back for `-=`)

the accumulator in registers through the whole k loop; the statements around it (`acc =
acc * s`, the store of `C`) sweep the target from shared memory. The fragments go to the
warps in turn: warp `w` takes fragments `w`, `w + warps`, ...; a last round the warps do
not all take is under a condition on the warp's number, the same in every lane of it.
`dot`'s b (k x n) is row-major, `dot_t`'s (n x k) is b column-major; every stride is the
operand tile's row pitch.

    >>> fragments_of((32, 48))
    6
"""

from __future__ import annotations

import logging

from phobos.lower.errors import NotLowered
from phobos.lower.lir import For, If, Imm, Reg, Value
from phobos.lower.mma import iadd_u32
from phobos.lower.types import BYTES

log = logging.getLogger("phobos.lower")
STEP = 16  # m16n16k16: every side of a fragment
UNROLL = 4  # k steps written straight-line, at most; more run as a loop


def fragments_of(shape) -> int:
    """The 16 x 16 fragments of an `[M, N]` accumulator."""
    return (shape[0] // STEP) * (shape[1] // STEP)


def product(lw, s, target, op: str, e) -> None:
    """Lower `target op e` on WMMA: `e` a `dot` or `dot_t` of two shared f16 tiles,
    `target` a shared f32 tile (the planner keeps it there)."""
    a, bt = (_shared(lw, x) for x in e.args)
    tile = lw.tiles.get(getattr(target, "sym", None))
    if tile is None or tile.place != "shared" or op not in ("=", "+=", "-="):
        raise NotLowered(f"`{e.name}` on WMMA into this target", s.span)
    for t in (a, bt, tile):
        if (t.row_pitch * BYTES[t.elem]) % 32 or t.buffer.offset % 32:
            raise NotLowered(f"`{e.name}` on WMMA from rows not 32-byte aligned", s.span)
    transposed = e.name == "dot_t"
    M, K = a.shape
    N = tile.shape[1]
    accesses = [(a.buffer, "read", None), (bt.buffer, "read", None)]
    if op != "=":
        accesses.append((tile.buffer, "read", ("wmma", tile.shape)))
    accesses.append((tile.buffer, "write", ("wmma", tile.shape)))
    lw.tracker.statement(accesses)
    warps = lw.threads // 32
    count = fragments_of((M, N))
    span = s.span
    line = span.source.line_col(span.start)[0] if span is not None else "?"
    log.debug("`%s` line %s: `%s` on WMMA m16n16k16 f16 -> f32: %d fragments on %d warps, "
              "K = %d, the accumulator stored to shared memory after its k loop", lw.k.name,
              line, e.name, count, warps, K)  # fmt: skip
    b = lw.b
    warp = b.once(("wmma.warp",), lambda: b.op("shr", "u32", lw.sreg("tid.x"), Imm(5, "u32"),
                                                hint="warp"))  # fmt: skip
    for first in range(0, count, warps):
        q = warp if first == 0 else b.op("add", "u32", warp, Imm(first, "u32"), hint="q")
        if first + warps <= count:
            _fragment(lw, q, a, bt, tile, op, transposed)
            continue
        with b.region() as body:
            _fragment(lw, q, a, bt, tile, op, transposed)
        inside = b.op("setp", "pred", q, Imm(count, "u32"), cmp="lt", type="u32")
        b.add(If(inside, body.block, None, span=b.span))


def _shared(lw, x):
    tile = lw.tiles.get(getattr(x, "sym", None))
    if tile is None or tile.place != "shared" or len(tile.shape) != 2:
        raise NotLowered("a product's operand outside shared memory", x.span)
    return tile


def _address(b, tile, row: Value, col: Value) -> Reg:
    """The shared address of `tile[row, col]` (u32 values of elements)."""
    size = BYTES[tile.elem]
    base = tile.base if tile.base is not None else Imm(tile.buffer.offset, "u32")
    at = b.op("mad", "u32", row, Imm(tile.row_pitch, "u32"), col)
    at = b.op("mul", "u32", at, Imm(size, "u32")) if size != 1 else at
    return iadd_u32(b, base, at)


def _fragment(lw, q: Value, a, bt, tile, op: str, transposed: bool) -> None:
    """Fragment `q` (a u32 register: row-major over the target's 16 x 16 blocks)."""
    b = lw.b
    per_row = tile.shape[1] // STEP
    row = b.op("mul", "u32", b.op("div", "u32", q, Imm(per_row, "u32")), Imm(STEP, "u32"))
    col = b.op("mul", "u32", b.op("rem", "u32", q, Imm(per_row, "u32")), Imm(STEP, "u32"))
    at_c = _address(b, tile, row, col)
    pitch_c = Imm(tile.row_pitch, "u32")
    shape = {"shape": "m16n16k16"}
    c = [b.reg("f32", "wacc") for _ in range(8)]
    if op == "=":
        for r in c:
            b.mov(r, Imm(0.0, "f32"), "f32")
    else:
        b.emit("wmma_load", tuple(c), (at_c, pitch_c), space="shared", type="f32", matrix="c",
               layout="row", **shape)  # fmt: skip
        if op == "-=":  # c - a b = -(a b + (-c)): a sign change of every element
            _negate(b, c)
    a_row = _address(b, a, row, Imm(0, "u32"))
    # dot_t's b is n x k: the fragment's n are its rows; dot's is k x n: its columns.
    b_at = _address(b, bt, col, Imm(0, "u32")) if transposed else _address(
        b, bt, Imm(0, "u32"), col)  # fmt: skip
    b_k = BYTES[bt.elem] * (1 if transposed else bt.row_pitch)  # bytes a step of k
    K = a.shape[1]

    def step(k: Value | None, kk: int) -> None:
        at_a = _offset(b, a_row, k, BYTES[a.elem], kk * BYTES[a.elem])
        at_b = _offset(b, b_at, k, b_k, kk * b_k)
        fa = [b.reg("b32", "wa") for _ in range(8)]
        fb = [b.reg("b32", "wb") for _ in range(8)]
        b.emit("wmma_load", tuple(fa), (at_a, Imm(a.row_pitch, "u32")), space="shared",
               type="f16", matrix="a", layout="row", **shape)  # fmt: skip
        b.emit("wmma_load", tuple(fb), (at_b, Imm(bt.row_pitch, "u32")), space="shared",
               type="f16", matrix="b", layout="col" if transposed else "row", **shape)  # fmt: skip
        b.emit("wmma_mma", tuple(c), (*fa, *fb, *c), type="f32", from_type="f16",
               alayout="row", blayout="col" if transposed else "row", **shape)  # fmt: skip

    steps = K // STEP
    if steps <= UNROLL:
        for kk in range(steps):
            step(None, STEP * kk)
    else:
        unroll = next(u for u in (UNROLL, 2, 1) if steps % u == 0)
        k = b.reg("u32", "k")
        with b.region() as body:
            for kk in range(unroll):
                step(k, STEP * kk)
        b.add(For(k, Imm(0, "u32"), Imm(K, "u32"), Imm(STEP * unroll, "u32"), body.block,
                  span=b.span))  # fmt: skip
    if op == "-=":
        _negate(b, c)
    b.emit("wmma_store", (), (at_c, *c, pitch_c), space="shared", type="f32", layout="row",
           **shape)  # fmt: skip


def _negate(b, regs) -> None:
    for r in regs:
        b.emit("neg", (r,), (r,), type="f32")


def _offset(b, base: Reg, k: Value | None, per_k: int, delta: int) -> Reg:
    """`base + k * per_k + delta` (`k` a u32 register of elements, or None for 0)."""
    if k is not None:
        step = k if per_k == 1 else b.op("mul", "u32", k, Imm(per_k, "u32"))
        base = b.op("add", "u32", base, step, hint="s")
    return base if delta == 0 else b.op("add", "u32", base, Imm(delta, "u32"), hint="s")
