"""Dense contractions on tensor cores: `dot(a, b)` and `dot_t(a, b)` of f16 or bf16 tiles
into an f32 accumulator, as mma.sync m16n8k16 fed by ldmatrix; `dot_t` of i8 tiles into
an i32 one, as mma.sync m16n8k32 (a k step of 32) and m8n8k16 (a last 16).

The planner picks this path for a product (`placement._Planner.tensor_cores`, recorded in
`Plan.paths`) and keeps its target in the `MmaAcc` layout: the CTA's warps a grid over
the accumulator, each warp a `wm` x `wn` block of 16 x 8 C fragments. Per k step of 16,
a warp loads each 16 x 16 A fragment of its rows with one `ldmatrix.x4`, each pair of
16 x 8 B fragments of its columns with one `ldmatrix.x4` (`.trans` for `dot`, whose `b`
rows are k; plain for `dot_t`, whose rows are n; `.x2` for a last single fragment), and
issues one mma a fragment of its block, the accumulator's registers both C and D. The
operands stay in their shared staging tiles, whose rows the planner pads so that every
ldmatrix is free of bank conflicts (`conflict_free`).

Where each lane points comes from the ISA's tables (`fragments.ldmatrix_address`): every
such map is linear in the lane's bits, so its byte offset is a sum of one term a bit,
computed once at entry (`lane_terms`).

    >>> from phobos.lower.fragments import MMA
    >>> lane_terms(lambda lane: ldmatrix_address(MMA[("m16n8k16", "f16", "f32")].a, lane))
    ((0, 0), ((1, 0), (2, 0), (4, 0), (8, 0), (0, 8)))
    >>> conflict_free(48), conflict_free(64)
    (True, False)
"""

from __future__ import annotations

import logging

from phobos.lower import scalars, swizzle
from phobos.lower.errors import NotLowered
from phobos.lower.fragments import MMA, ldmatrix_address
from phobos.lower.lir import For, Imm, Reg, Value
from phobos.lower.types import BYTES
from phobos.lower.words import register_a

log = logging.getLogger("phobos.lower")
UNROLL = 4  # k steps written straight-line a turn of the k loop, at most


def conflict_free(pitch: int) -> bool:
    """Whether the 8 rows of an ldmatrix matrix, 16 bytes each at one column of rows
    `pitch` bytes apart, fall in 8 distinct 16-byte chunks of the banks' 128 bytes (so
    the load is one wavefront): `pitch` an odd number of 16-byte chunks."""
    return pitch % 16 == 0 and len({(r * pitch) % 128 for r in range(8)}) == 8


def lane_terms(place) -> tuple[tuple[int, int], tuple[tuple[int, int], ...]]:
    """`place(lane)` (a (row, col) for each lane 0-31) as its value at lane 0 and one
    (row, col) step a lane bit, the value at any lane being lane 0's plus the steps of
    its set bits; raises where `place` is not of that form."""
    o = place(0)
    steps = tuple(tuple(x - y for x, y in zip(place(1 << b), o, strict=True)) for b in range(5))
    for lane in range(32):
        want = tuple(
            v + sum(s[a] for b, s in enumerate(steps) if lane >> b & 1) for a, v in enumerate(o)
        )
        if place(lane) != want:
            raise ValueError(f"the lane map is not linear in the lane's bits at lane {lane}")
    return o, steps


def product(lw, s, target, op: str, e, path: str) -> None:
    """Lower `target op e` on mma.sync: `e` a `dot` or `dot_t` of two shared f16 or bf16
    tiles (`path` "mma.m16n8k16.f16" or ".bf16"), or a `dot_t` of two i8 tiles
    ("mma.m16n8k32.s8"), `target` a register tile in the `MmaAcc` layout."""
    a = lw.tiles.get(getattr(e.args[0], "sym", None))
    in_regs = a is not None and a.place == "registers"  # `placement.register_a_refusal`
    if not in_regs:
        a = _operand(lw, e.args[0])
    bt = _operand(lw, e.args[1])
    tile = lw.tiles.get(getattr(target, "sym", None))
    if tile is None or tile.mma is None or op not in ("=", "+=", "-="):
        raise NotLowered(f"`{e.name}` on mma.sync into this target", s.span)
    lay = tile.layout(lw.threads)
    if in_regs:
        a_lay = a.layout(lw.threads)
        if not (a.mma and a_lay.warps_n == 1 == lay.warps_n and a_lay.warps_m == lay.warps_m):
            raise NotLowered(f"`{e.name}`'s A in registers of another layout", s.span)
        a_regs = [r for group in a.regs for r in group]
    transposed = e.name == "dot_t"
    _, shape, ab = path.split(".")
    acc_t, sum_t = ("s32", "i32") if ab == "s8" else ("f32", "f32")
    form = MMA[(shape, ab, acc_t)]
    kstep = form.a.cols  # 16 for m16n8k16, 32 for m16n8k32
    zero = Imm(0, acc_t) if acc_t == "s32" else Imm(0.0, acc_t)
    K = a.shape[1]
    lw.tracker.statement(([] if in_regs else [(a.buffer, "read", None)])
                         + [(bt.buffer, "read", None)])  # fmt: skip
    span = s.span
    line = span.source.line_col(span.start)[0] if span is not None else "?"
    log.debug("`%s` line %s: `%s` on mma.sync %s %s -> %s: %d warps of %dx%d, K = %d, "
              "%s", lw.k.name, line, e.name, shape, ab, acc_t, lw.threads // 32, lay.wm,
              lay.wn, K, f"A from the registers of `{a.sym.name}`, B by ldmatrix" if in_regs
              else "operands by ldmatrix from shared memory")  # fmt: skip
    b = lw.b
    regs = [r for group in tile.regs for r in group]
    if op == "=":
        for r in regs:
            b.mov(r, zero, acc_t)
        acc = regs
    elif op == "+=":
        acc = regs
    else:
        acc = [b.copy(zero, acc_t, hint="sum") for _ in regs]
    warp_a, warp_b = _warp_offsets(lw, lay, a, bt, transposed)
    if transposed:  # b is n x k: a memory row is an n, its elements k
        b_lane = _lane_offset(lw, bt, lambda ln: _pair(form, ln, False), True)
    else:  # b is k x n: `.trans` hands each lane a column pair
        b_lane = _lane_offset(lw, bt, lambda ln: _pair(form, ln, True), False)
    size = BYTES[a.elem]
    steps, rest = divmod(K, kstep)
    full = steps * kstep
    # A from registers names them by k step: every step written out.
    unroll = steps if in_regs else next(u for u in (UNROLL, 2, 1) if steps % u == 0)
    # k moves along a's rows (a column move), along b's rows for `dot` and its columns
    # for `dot_t`; a fragment of a's is 16 rows on, a pair of b's 16 columns on for
    # `dot` and 16 rows on for `dot_t`.
    b_k = size if transposed else bt.row_pitch * size  # bytes a step of k
    b_n = (bt.row_pitch if transposed else 1) * size  # bytes a column of the output
    if not in_regs:
        a_lane = _lane_offset(lw, a, lambda ln: ldmatrix_address(form.a, ln), False)
        ra = _Reader(lw, a, warp_a, a_lane, size, True, kstep * unroll)
    rb = _Reader(lw, bt, warp_b, b_lane, b_k, transposed, kstep * unroll)

    def load(k: Value | None, kk: int):
        """The fragments of one k step of `kstep` at `k + kk` (`k` a u32 register, or
        None for 0)."""
        frags_a = []
        for i in range(lay.wm // 16):
            if in_regs:
                frags_a.append(register_a(b, a_regs, a_lay, i, kk // kstep))
                continue
            addr = ra.at(k, kk, 16 * i * a.row_pitch * size, False)
            frags_a.append(_ldmatrix(b, addr, 4, False))
        frags_b = []
        for j in range(0, lay.frags_n, 2):
            addr = rb.at(k, kk, 8 * j * b_n, not transposed)
            n = 4 if j + 1 < lay.frags_n else 2
            got = _ldmatrix(b, addr, n, not transposed)
            frags_b += [got[:2], got[2:]] if n == 4 else [got]
        return frags_a, frags_b

    def compute(frags) -> None:
        frags_a, frags_b = frags
        for q in range(lay.frags):
            i, j = divmod(q, lay.frags_n)
            c = acc[4 * q : 4 * q + 4]
            b.emit("mma", tuple(c), (*frags_a[i], *frags_b[j], *c), type=acc_t, from_type=ab,
                   shape=shape)  # fmt: skip

    def steps_of(k: Value | None, count: int) -> None:
        """`count` k steps, each step's fragments loaded before the previous step's mma
        are issued: an mma waits on the ldmatrix that feeds it (the warps' main stall on
        the H200), so the next step's loads are in flight while the tensor cores work."""
        frags = load(k, 0)
        for kk in range(count):
            nxt = load(k, kstep * (kk + 1)) if kk + 1 < count else None
            compute(frags)
            frags = nxt

    def half(kk: int) -> None:
        """The last 16 of an i8 K that is not a multiple of 32: each 16 x 8 fragment as
        two m8n8k16, its upper rows' registers c0 c1 and its lower rows' c2 c3 (the
        same elements as m8n8k16's C, `fragments.c_m8n8k16`). The lane addresses are
        m16n8k32's: an `.x2` of A reads lanes 0-15, rows 0-15 at column 0, so it loads
        the two 8 x 16 A halves; an `.x1` of B reads lanes 0-7, one fragment's n at k 0."""
        frags_a = [_ldmatrix(b, ra.at(None, kk, 16 * i * a.row_pitch * size, False), 2, False)
                   for i in range(lay.wm // 16)]  # fmt: skip
        frags_b = [_ldmatrix(b, rb.at(None, kk, 8 * j * b_n, False), 1, False)
                   for j in range(lay.frags_n)]  # fmt: skip
        for q in range(lay.frags):
            i, j = divmod(q, lay.frags_n)
            for h in range(2):
                c = acc[4 * q + 2 * h : 4 * q + 2 * h + 2]
                b.emit("mma", tuple(c), (frags_a[i][h], *frags_b[j], *c), type=acc_t,
                       from_type=ab, shape="m8n8k16")  # fmt: skip

    if steps and unroll == steps:
        steps_of(None, steps)
    elif steps:
        k = b.reg("u32", "k")
        with b.region() as body:
            steps_of(k, unroll)
        b.add(For(k, Imm(0, "u32"), Imm(full, "u32"), Imm(kstep * unroll, "u32"), body.block,
                  span=b.span))  # fmt: skip
    if rest:
        half(full)
    if op == "-=":
        for r, x in zip(regs, acc, strict=True):
            b.mov(r, scalars.binary(b, "-", r, x, sum_t), acc_t)


class _Reader:
    """Where this lane's ldmatrix reads an operand tile: the tile's (or the ring stage's)
    base, plus the moves that keep the swizzle (rows by whole fragments, columns by
    whole 128-byte lines), plus the swizzle of the lane's own offset moved by the rest.
    A lane's swizzle term is fixed by its row (`swizzle.term`), so a moved offset is one
    `xor` and the constant ones are computed once, at entry."""

    def __init__(self, lw, tile, warp: Value, lane: Value, per_k: int, k_col: bool, step: int):
        """`per_k` the bytes a unit of k moves the operand by, along its rows (`k_col`)
        or across them; `step` the units the k loop's register moves by a turn."""
        self.b, self.tile, self.row = lw.b, tile, tile.swizzle
        self.per_k, self.k_col, self.step = per_k, k_col, step
        key = ("mma.rel", _key(warp), _key(lane))
        self.rel = _register(self.b, self.b.once(key, lambda: iadd_u32(self.b, warp, lane)))
        self.term = None
        if self.row:
            row = self.row
            self.term = self.b.once(("mma.term", self.rel.name, row),
                                    lambda: swizzle.term(self.b, self.rel, row))  # fmt: skip

    def keeps(self, nbytes: int, col: bool) -> bool:
        """Whether a move of `nbytes` along a row (`col`) or across rows keeps a lane's
        swizzle: every row move here is whole fragments (8 rows or more)."""
        return not self.row or not col or nbytes % swizzle.LINE == 0

    def at(self, k: Value | None, kk: int, frag: int, frag_col: bool) -> Reg:
        """The address at the k loop's register `k` (None: 0) plus `kk` units of k, and
        `frag` bytes on for the fragment, along a row (`frag_col`) or across rows."""
        b, per_k, k_col = self.b, self.per_k, self.k_col
        keep: list[Value] = []
        vary: Value = Imm(0, "u32")
        if k is not None:
            moved = _umul(b, k, per_k) if per_k != 1 else k
            if self.keeps(self.step * per_k, k_col):
                keep.append(moved)
            else:
                vary = moved
        for n, col in ((kk * per_k, k_col), (frag, frag_col)):
            if n and self.keeps(n, col):
                keep.append(Imm(n, "u32"))
            elif n:
                vary = iadd_u32(b, vary, Imm(n, "u32"))
        if isinstance(vary, Imm):
            c = vary.value
            x = b.once(("mma.at", self.rel.name, self.row, c),
                       lambda: self._swizzled(iadd_u32(b, self.rel, Imm(c, "u32"))))  # fmt: skip
        else:
            x = self._swizzled(iadd_u32(b, self.rel, vary))
        total: Value = iadd_u32(b, _base(self.tile), x)
        for v in keep:
            total = iadd_u32(b, total, v)
        return _register(b, total)

    def _swizzled(self, off: Value) -> Value:
        if self.term is None:
            return off
        return self.b.op("xor", "b32", off, self.term, dest_type="u32", hint="s")


def _operand(lw, x):
    tile = lw.tiles.get(getattr(x, "sym", None))
    if tile is None or tile.place != "shared" or len(tile.shape) != 2:
        raise NotLowered("a product's operand outside shared memory", x.span)
    return tile


def _pair(form, lane: int, trans: bool) -> tuple[int, int]:
    """The B operand (k, n) lane `lane` points at when one ldmatrix.x4 loads two 16 x 8
    B fragments side by side: lanes 0-15 the first's rows, 16-31 the second's, 8 columns
    on (an `.x2` load of a single one reads lanes 0-15 alone)."""
    k, n = ldmatrix_address(form.b, lane % 16, trans)
    return k, n + 8 * (lane // 16)


def _base(tile) -> Value:
    return tile.base if tile.base is not None else Imm(tile.buffer.offset, "u32")


def _lane_offset(lw, tile, place, swap: bool) -> Value:
    """The byte offset, in `tile`'s rows, of where this thread's lane points: `place(lane)`
    an operand (row, col), read as (col, row) of the tile when `swap`. Computed once."""
    o, steps = lane_terms(place)
    size, pitch = BYTES[tile.elem], tile.row_pitch

    def bytes_of(rc) -> int:
        row, col = (rc[1], rc[0]) if swap else rc
        return (row * pitch + col) * size

    weights = [bytes_of(st) for st in steps]
    key = ("mma.lane", tuple(weights), bytes_of(o))
    return lw.b.once(key, lambda: _lane_sum(lw, weights, bytes_of(o)))


def _lane_sum(lw, weights, const) -> Value:
    """`const` plus `weights[b]` for each set bit b of the lane, as u32 (a run of bits
    whose weights double bit by bit is one `and` and one `mul`)."""
    b = lw.b
    lane = b.op("and", "b32", lw.sreg("tid.x"), Imm(31, "u32"), dest_type="u32", hint="lane")
    terms = []
    bit = 0
    while bit < 5:
        w = weights[bit]
        if w == 0:
            bit += 1
            continue
        if w % (1 << bit) == 0:
            unit, end = w >> bit, bit + 1
            while end < 5 and weights[end] == unit << end:
                end += 1
            mask = ((1 << end) - 1) ^ ((1 << bit) - 1)
            part = b.op("and", "b32", lane, Imm(mask, "u32"), dest_type="u32")
            terms.append(part if unit == 1 else b.op("mul", "u32", part, Imm(unit, "u32")))
            bit = end
            continue
        part = b.op("shr", "u32", lane, Imm(bit, "u32"))
        part = b.op("and", "b32", part, Imm(1, "u32"), dest_type="u32")
        terms.append(b.op("mul", "u32", part, Imm(w, "u32")))
        bit += 1
    total: Value = Imm(const, "u32")
    for t in terms:
        total = t if isinstance(total, Imm) and total.value == 0 else b.op("add", "u32", total, t)
    return total


def _warp_offsets(lw, lay, a, bt, transposed) -> tuple[Value, Value]:
    """The byte offsets of this warp's first rows of `a` and first columns of `b`."""
    b = lw.b
    size = BYTES[a.elem]
    b_n = (bt.row_pitch if transposed else 1) * size

    def make():
        warp = b.op("shr", "u32", lw.sreg("tid.x"), Imm(5, "u32"), hint="warp")
        wr = _udiv(b, warp, lay.warps_n)
        wc = _urem(b, warp, lay.warps_n)
        return (_umul(b, wr, lay.wm * a.row_pitch * size), _umul(b, wc, lay.wn * b_n))

    return b.once(("mma.warp", lay.key, a.row_pitch, bt.row_pitch, transposed, size), make)


def _udiv(b, x, n: int) -> Value:
    if n == 1:
        return x
    if n & (n - 1) == 0:
        return b.op("shr", "u32", x, Imm(n.bit_length() - 1, "u32"))
    return b.op("div", "u32", x, Imm(n, "u32"))


def _urem(b, x, n: int) -> Value:
    if n == 1:
        return Imm(0, "u32")
    if n & (n - 1) == 0:
        return b.op("and", "b32", x, Imm(n - 1, "u32"), dest_type="u32")
    return b.op("rem", "u32", x, Imm(n, "u32"))


def _umul(b, x, n: int) -> Value:
    if isinstance(x, Imm):
        return Imm(x.value * n, "u32")
    return b.op("mul", "u32", x, Imm(n, "u32"))


def iadd_u32(b, x: Value, y: Value) -> Value:
    """`x + y` in u32, folding immediates."""
    if isinstance(x, Imm) and isinstance(y, Imm):
        return Imm(x.value + y.value, "u32")
    if isinstance(x, Imm) and x.value == 0:
        return y
    if isinstance(y, Imm) and y.value == 0:
        return x
    return b.op("add", "u32", x, y)


def _register(b, x: Value) -> Reg:
    return b.copy(x, "u32", hint="s") if isinstance(x, Imm) else x


def _key(v: Value):
    return v.name if isinstance(v, Reg) else ("imm", v.value)


def _ldmatrix(b, addr: Reg, n: int, trans: bool) -> list[Reg]:
    regs = [b.reg("b32", "frag") for _ in range(n)]
    attrs = {"trans": 1} if trans else {}
    b.emit("ldmatrix", tuple(regs), (addr,), space="shared", type="b16", **attrs)
    return regs
