"""Dense contractions on CUDA cores: `dot(a, b)` and `dot_t(a, b)` as FMA over
register micro-tiles.

`placement.normalize` makes every product a statement of its own whose operands are
shared tiles (a tensor slice or a `let` view is staged first), so a product here is

    t = dot(a, b)    t += dot(a, b)    t -= dot(a, b)      (a [M, K], b [K, N] or [N, K])

The output is cut into the cells of a `Blocked` layout: a thread owns a `tm` x `tn`
micro-tile (one cell a repetition; its columns are vectors interleaved with the other
cells', `Blocked.col_offset`) and keeps its `tm * tn` sums in registers. Each
step along the contraction reads `tm` elements of `a`'s rows and `tn` of `b`, as
vectors along the contraction where the rows allow it (`dot_t` reads both operands
along k; `dot` reads `b`'s rows across its columns), and does `tm * tn` FMAs. The
k loop runs `KSTEP` elements a turn, straight-line inside.

Where the target is a register tile in the product's layout, the sums are its own
registers (`+=` accumulates into them). Otherwise (a shared tile, or another type)
they start at 0 and are written out at the end, combined with the target by `op`.
Products of 16-bit floats sum in f32 and round once when written, as the tile
interpreter computes them; i8 products sum in i32.

    >>> KSTEP
    8
"""

from __future__ import annotations

import logging

from phobos.lower import memory, mma, scalars, wgmma, wmma
from phobos.lower.builder import iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.layout import Blocked
from phobos.lower.lir import For, If, Imm, Reg, Value
from phobos.lower.sweep import cell_origins
from phobos.lower.types import BYTES, REG, elem_of, mov_type
from phobos.lower.widths import max_vec_for

log = logging.getLogger("phobos.lower")
KSTEP = 8  # contraction elements a turn of the k loop (fewer when K is not a multiple)
SUM = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64", "i32": "i32"}


def product(lw, s, target, op: str, e) -> None:
    """Lower `target op e`, `e` a `dot` or `dot_t` of two shared tiles, on the path the
    planner chose for it (`Plan.paths`: mma.sync, `phobos.lower.mma`; wgmma,
    `phobos.lower.wgmma`; WMMA,
    `phobos.lower.wmma`; or FMA, or dp4a for i8, here)."""
    path = lw.plan.paths.get(e.label, "fma")
    if path.startswith("mma."):
        mma.product(lw, s, target, op, e, path)
        return
    if path.startswith("wgmma."):
        wgmma.product(lw, s, target, op, e, path)
        return
    if path == "wmma":
        wmma.product(lw, s, target, op, e)
        return
    words = path == "dp4a"
    a, bt = (_operand(lw, x) for x in e.args)
    transposed = e.name == "dot_t"
    M, K = a.shape
    N = bt.shape[0] if transposed else bt.shape[1]
    out_t = elem_of(e.type)
    sum_t = SUM.get(out_t)
    if sum_t is None:
        raise NotLowered(f"`{e.name}` into `{out_t}`", e.span)
    tile = lw.tiles.get(getattr(target, "sym", None))
    if tile is None:
        raise NotLowered(f"`{e.name}` into this target", s.span)
    T = lw.threads
    if tile.place == "registers" and tile.micro is not None:
        lay = tile.layout(T)
    elif tile.place == "replicated":
        lay = None
    elif tile.place == "shared":
        lay = Blocked.choose((M, N), T, vec=max_vec_for((tile.elem,)))
    else:
        raise NotLowered(f"`{e.name}` into a register tile of the sweep's layout", s.span)
    accesses = [(a.buffer, "read", None), (bt.buffer, "read", None)]
    if tile.place == "shared":
        accesses.append((tile.buffer, "write", lay.key))
    lw.tracker.statement(accesses)
    _log(lw, s, e, lay, K, words)
    if lay is None:  # a [1, 1] product: every thread computes it
        one = Blocked((1, 1), 1, 1, 1, 1)
        _cell(lw, one, 0, (Imm(0, lw.idx), Imm(0, lw.idx)), a, bt, transposed, K, tile, op,
              sum_t, words)  # fmt: skip
        return
    b = lw.b
    for rep, (row, col, valid) in enumerate(cell_origins(lw, lay)):
        if valid is None:
            _cell(lw, lay, rep, (row, col), a, bt, transposed, K, tile, op, sum_t, words)
            continue
        with b.region() as body:
            _cell(lw, lay, rep, (row, col), a, bt, transposed, K, tile, op, sum_t, words)
        b.add(If(valid, body.block, None, span=b.span))


def _operand(lw, x):
    tile = lw.tiles.get(getattr(x, "sym", None))
    if tile is None or tile.place != "shared" or len(tile.shape) != 2:
        raise NotLowered("a product's operand outside shared memory", x.span)
    return tile


def _log(lw, s, e, lay, K, words) -> None:
    span = s.span
    line = span.source.line_col(span.start)[0] if span is not None else "?"
    how = "dp4a" if words else "FMA"
    if lay is None:
        log.debug("`%s` line %s: `%s` on %s, every thread the one element (K = %d)",
                  lw.k.name, line, e.name, "dp4a" if words else "FMA", K)  # fmt: skip
        return
    log.debug("`%s` line %s: `%s` on %s: %dx%d micro-tile a thread, %d cells on %d threads, "
              "K = %d, operands from shared memory", lw.k.name, line, e.name, how, lay.tm,
              lay.tn, lay.cells, lw.threads, K)  # fmt: skip


def _cell(lw, lay, rep, origin, a, bt, transposed, K, tile, op, sum_t, words=False) -> None:
    """One cell: the sums over K, then written into the target."""
    b = lw.b
    rt = REG[sum_t]
    tm, tn, vec = lay.tm, lay.tn, lay.vec
    direct = tile.place == "registers" and op in ("=", "+=") and REG[tile.elem] == rt
    groups = tn // vec
    if direct:
        base = rep * lay.per_cell
        sums = [[tile.regs[base + i * groups + j // vec][j % vec] for j in range(tn)]
                for i in range(tm)]  # fmt: skip
        if op == "=":
            for r in (r for row in sums for r in row):
                b.mov(r, _zero(rt), rt)
    else:
        sums = [[b.copy(_zero(rt), rt, hint="sum") for _ in range(tn)] for _ in range(tm)]
    if words:
        _word_loop(lw, lay, origin, a, bt, K, sums)
    else:
        _k_loop(lw, lay, origin, a, bt, transposed, K, sums, sum_t)
    if not direct:
        _write(lw, lay, rep, origin, tile, op, sums, sum_t)


def _zero(rt: str) -> Imm:
    return Imm(0.0, rt) if rt.startswith("f") else Imm(0, rt)


def _kvec(K: int, *tiles) -> int:
    """The widest vector along k every operand read along k allows."""
    for v in (8, 4, 2, 1):
        if K % v == 0 and all(v <= max_vec_for((t.elem,)) and t.row_pitch % v == 0
                              for t in tiles):  # fmt: skip
            return v
    return 1


def _row_bases(lw, tile, first: Value, offsets) -> list[Reg]:
    """The shared address of element 0 of the rows `first + o` of `tile`, `o` in
    `offsets`."""
    b, t = lw.b, lw.idx
    size = BYTES[tile.elem]
    out = []
    for i in offsets:
        off = imul(b, t, iadd(b, t, first, i), tile.row_pitch * size)
        out.append(_shared_address(lw, tile, off))
    return out


def _shared_address(lw, tile, off: Value) -> Reg:
    b = lw.b
    base = tile.base if tile.base is not None else Imm(tile.buffer.offset, "u32")
    if isinstance(off, Imm) and isinstance(base, Imm):
        return b.copy(Imm(off.value + base.value, "u32"), "u32", hint="s")
    if isinstance(off, Imm):
        return b.op("add", "u32", base, Imm(off.value, "u32"), hint="s")
    if lw.idx == "s64":
        off = b.op("cvt", "u32", off, from_type="s64")
    return b.op("add", "u32", off, base, hint="s")


def _k_loop(lw, lay, origin, a, bt, transposed, K, sums, sum_t) -> None:
    b = lw.b
    tm, tn = lay.tm, lay.tn
    row, col = origin
    along = (a, bt) if transposed else (a,)
    kv = _kvec(K, *along)
    kstep = next(s for s in (KSTEP, 4, 2, 1) if K % s == 0 and s % kv == 0) if K % kv == 0 else kv
    kstep = max(kstep, kv)
    a_rows = _row_bases(lw, a, row, range(tm))
    if transposed:
        b_rows = _row_bases(lw, bt, col, [lay.col_offset(j) for j in range(tn)])
    else:
        b_col = _shared_address(lw, bt, imul(b, lw.idx, col, BYTES[bt.elem]))
        nv = max(v for v in (8, 4, 2, 1)
                 if lay.vec % v == 0 and v <= max_vec_for((bt.elem,)) and bt.row_pitch % v == 0)  # fmt: skip

    def turn(k: Value) -> None:
        """`kstep` steps from `k` (an element index, u32 or an int)."""
        for k0 in range(0, kstep, kv):
            avals = [_load_along(lw, a, base, k, k0, kv, sum_t) for base in a_rows]
            if transposed:
                bvals = [_load_along(lw, bt, base, k, k0, kv, sum_t) for base in b_rows]
            for kk in range(kv):
                if not transposed:
                    brow = _b_row(lw, bt, b_col, k, k0 + kk, lay, nv, sum_t)
                for i in range(tm):
                    for j in range(tn):
                        y = bvals[j][kk] if transposed else brow[j]
                        _fma(b, sums[i][j], avals[i][kk], y, sum_t)

    _turns(b, K, kstep, turn)


def _turns(b, K: int, kstep: int, turn) -> None:
    """`turn(k)` for k = 0, kstep, ... below K: straight-line where one turn covers K,
    else as a lir loop over a u32 `k`."""
    if kstep >= K:
        turn(0)
        return
    k = b.reg("u32", "k")
    with b.region() as body:
        turn(k)
    b.add(For(k, Imm(0, "u32"), Imm(K, "u32"), Imm(kstep, "u32"), body.block, span=b.span))


def _word_loop(lw, lay, origin, a, bt, K, sums) -> None:
    """The k loop of an i8 `dot_t` on dp4a: per step, each of the cell's `tm` rows of `a`
    and `tn` rows of `b` gives `kv` bytes along k as `kv / 4` u32 words (one shared
    load of up to 16 bytes a row), and each pair of words is one `dp4a.s32` into the
    sum. K and the rows' pitches are multiples of 4 (`placement`), the buffers 16-byte
    aligned, so every word is aligned."""
    b = lw.b
    tm, tn = lay.tm, lay.tn
    row, col = origin
    kv = next(v for v in (16, 8, 4) if K % v == 0 and a.row_pitch % v == 0
              and bt.row_pitch % v == 0)  # fmt: skip
    # Up to 32 bytes a turn, straight-line (a short K is one turn).
    kstep = K if K <= 4 * KSTEP else next(
        s for s in (4 * KSTEP, 2 * KSTEP, KSTEP, kv) if K % s == 0 and s % kv == 0)  # fmt: skip
    a_rows = _row_bases(lw, a, row, range(tm))
    b_rows = _row_bases(lw, bt, col, [lay.col_offset(j) for j in range(tn)])

    def turn(k: Value) -> None:
        for k0 in range(0, kstep, kv):
            aw = [memory.load(b, "shared", "u32", _moved(lw, r, k, k0, 1), kv // 4, None)
                  for r in a_rows]  # fmt: skip
            bw = [memory.load(b, "shared", "u32", _moved(lw, r, k, k0, 1), kv // 4, None)
                  for r in b_rows]  # fmt: skip
            for w in range(kv // 4):
                for i in range(tm):
                    for j in range(tn):
                        acc = sums[i][j]
                        b.emit("dp4a", (acc,), (aw[i][w], bw[j][w], acc), type="s32")

    _turns(b, K, kstep, turn)


def _moved(lw, base: Reg, k, elems: int, size: int) -> Reg:
    """`base` plus `k + elems` elements of `size` bytes (k a u32 register or an int)."""
    b = lw.b
    if isinstance(k, int):
        delta = (k + elems) * size
        return base if delta == 0 else b.op("add", "u32", base, Imm(delta, "u32"), hint="s")
    kb = b.op("mul", "u32", k, Imm(size, "u32"), hint="kb") if size != 1 else k
    at = b.op("add", "u32", base, kb, hint="s")
    return at if elems == 0 else b.op("add", "u32", at, Imm(elems * size, "u32"), hint="s")


def _load_along(lw, tile, base, k, k0, kv, sum_t) -> list[Value]:
    """`kv` consecutive elements along k of one row, as `sum_t` values."""
    at = _moved(lw, base, k, k0, BYTES[tile.elem])
    vals = memory.load(lw.b, "shared", tile.elem, at, kv, None)
    return [_widen(lw, v, tile.elem, sum_t) for v in vals]


def _b_row(lw, bt, b_col, k, kk, lay, nv, sum_t) -> list[Value]:
    """The cell's `tn` columns of row `k + kk` of `b` (a `dot`'s right operand, read
    across its row), a vector of `lay.vec` columns at a time (`nv` an access)."""
    b = lw.b
    size = BYTES[bt.elem]
    pitch = bt.row_pitch * size
    if isinstance(k, int):
        row = b_col if (k + kk) == 0 else b.op("add", "u32", b_col, Imm((k + kk) * pitch, "u32"))
    else:
        off = b.op("mul", "u32", k, Imm(pitch, "u32"), hint="kb")
        row = b.op("add", "u32", b_col, off, hint="s")
        if kk:
            row = b.op("add", "u32", row, Imm(kk * pitch, "u32"), hint="s")
    out = []
    for j in range(0, lay.tn, nv):
        off = lay.col_offset(j)
        at = row if off == 0 else b.op("add", "u32", row, Imm(off * size, "u32"), hint="s")
        out += memory.load(b, "shared", bt.elem, at, nv, None)
    return [_widen(lw, v, bt.elem, sum_t) for v in out]


def _widen(lw, v: Value, src: str, sum_t: str) -> Value:
    """An operand element as a `sum_t` value. Under `@tensorcore` a float operand is
    rounded to f16 first, as the tile interpreter rounds it (the tensor-core path that
    would do so in hardware is not lowered yet; this one keeps the same numbers)."""
    b = lw.b
    if getattr(lw.k.attrs, "tensorcore", None) and src in ("f32", "f64"):
        v = scalars.convert(b, scalars.convert(b, v, src, "f16"), "f16", src)
    if src == sum_t:
        return v
    return scalars.convert(b, v, src, sum_t)


def _fma(b, acc: Reg, x: Value, y: Value, sum_t: str) -> None:
    rt = REG[sum_t]
    if rt.startswith("f"):
        b.emit("fma", (acc,), (x, y, acc), type=rt, rounding="rn")
    else:
        b.emit("mad", (acc,), (x, y, acc), type=rt)


def _write(lw, lay, rep, origin, tile, op, sums, sum_t) -> None:
    """The cell's sums into the target: its registers, or its shared bytes."""
    b = lw.b
    elem = tile.elem
    tm, tn = len(sums), len(sums[0])

    def combine(old, v):
        v = scalars.convert(b, v, sum_t, elem) if sum_t != elem else v
        return v if op == "=" else scalars.binary(b, op[:-1], old, v, elem)

    if tile.place == "replicated":
        r = tile.regs[0]
        b.mov(r, scalars.materialize(b, combine(r, sums[0][0]), elem), mov_type(r.type))
        return
    if tile.place == "registers":
        groups = tn // lay.vec
        base = rep * lay.per_cell
        for i in range(tm):
            for j in range(tn):
                r = tile.regs[base + i * groups + j // lay.vec][j % lay.vec]
                b.mov(r, scalars.materialize(b, combine(r, sums[i][j]), elem), mov_type(r.type))
        return
    row, col = origin
    rows = _row_bases(lw, tile, row, range(tm))
    size = BYTES[elem]
    vec = lay.vec if tile.row_pitch % lay.vec == 0 else 1
    col_off = imul(b, lw.idx, col, size)
    if lw.idx == "s64" and not isinstance(col_off, Imm):
        col_off = b.op("cvt", "u32", col_off, from_type="s64")
    for i in range(tm):
        start = rows[i] if isinstance(col_off, Imm) and col_off.value == 0 else (
            b.op("add", "u32", rows[i], col_off if not isinstance(col_off, Imm)
                 else Imm(col_off.value, "u32"), hint="s"))  # fmt: skip
        for j in range(0, tn, vec):
            off = lay.col_offset(j)
            at = start if off == 0 else b.op("add", "u32", start, Imm(off * size, "u32"), hint="s")
            olds = memory.load(b, "shared", elem, at, vec, None) if op != "=" else [None] * vec
            vals = [scalars.materialize(b, combine(o, sums[i][j + c]), elem)
                    for c, o in enumerate(olds)]  # fmt: skip
            memory.store(b, "shared", elem, at, vals, None)
