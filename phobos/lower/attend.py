"""`attend(q, K, V, start, stop, WM, WL, WACC)`: each warp's attention partials over its
share of the keys (ours: SPEC.md's Attention row, docs/attention.md).

The CTA's W warps split the keys of [start, stop) by turns: warp w takes
j = start + w, start + w + W, ... (those in [0, rows of K)). A key's row is read 16
bytes a lane (`PER` f16), so it takes D / 8 lanes of the warp (`lanes`: 16 for D = 128,
8 for 64), and the warp's 32 / lanes slots of lanes take that many of its turns' keys at
once, slot h the key h turns on. Each lane keeps, for each of the QG query rows, its
`PER` elements of q and of the running sum in registers. A key's score for row i is
the slot's dot product folded by shuffles within the slot. A warp takes `UNROLL` rounds
of keys a turn while all of them are in range (their rows' loads in flight together),
then a round at a time with the keys past the range masked, and updates each row's
state once for a turn's keys, in every lane alike:

    s_u = q_i . K_ju                      (f32; K widened from f16)
    mn  = max(m_i, s_0, .., s_U-1);   c = exp(m_i - mn);   p_u = exp(s_u - mn)
    l_i = l_i c + sum_u p_u;          acc_i = acc_i c + sum_u p_u V_ju;   m_i = mn

The slots' states are then merged by butterflies across them (each the same online
merge), and warp w writes WM[i, w] = m_i, WL[i, w] = l_i (lane 0) and its rows
w QG + i of WACC (slot 0's lanes, their columns). A warp with no keys writes -1.0e30, 0
and zeros, the state it starts from. q, WM, WL and WACC are shared tiles (`placement`
marks them), read and written through the barrier tracker like any statement's.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.lower import lir, memory
from phobos.lower.builder import iadd, imul
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm
from phobos.lower.scalars import LOG2E
from phobos.sema import hir

NAME = "attend"
LAYOUT = ("attend",)  # which thread touches which byte: its own, for the barrier pass
EMPTY = -1.0e30  # a warp's running max before its first key (the spec's examples' -inf)
UNROLL = 2  # rounds a turn: at 4, D 128 took 177 registers (one CTA an SM), at 2, 128
PER = 8  # elements of a key's row a lane reads: 16 bytes of f16


def lower(lw, e: hir.Builtin) -> None:
    """One `attend` statement, every warp its keys' partials."""
    q, k, v, start, stop, wm, wl, wacc = e.args
    tiles = [lw.tiles.get(getattr(x, "sym", None)) for x in (q, wm, wl, wacc)]
    if any(t is None or t.place != "shared" for t in tiles):
        raise NotLowered("`attend` on tiles outside shared memory", e.span)
    qt, wmt, wlt, acct = tiles
    qg, d = qt.shape
    warps = lw.threads // 32
    lanes = max(1, min(32, d // PER))  # a key's row: 16 bytes of f16 a lane
    per, slots = d // lanes, 32 // lanes
    b = lw.b
    lw.tracker.statement([(qt.buffer, "read", LAYOUT), (wmt.buffer, "write", LAYOUT),
                          (wlt.buffer, "write", LAYOUT), (acct.buffer, "write", LAYOUT)])  # fmt: skip
    idx = lw.idx
    warp = b.op("shr", idx, lw.tid(), Imm(5, "u32"))
    lane = lw.ctx_lane()
    slot = b.op("shr", idx, lane, Imm(lanes.bit_length() - 1, "u32")) if slots > 1 else Imm(0, idx)
    col = imul(b, idx, b.op("and", idx, lane, Imm(lanes - 1, idx)) if slots > 1 else lane, per)
    # q's rows, this lane's columns of each, in f32
    qa = qt.access()
    qs = []
    for i in range(qg):
        at = memory.address(lw, qa, memory.flat_index(lw, qa, (Imm(i, idx), col)))
        vals = memory.load(b, "shared", qt.elem, at, per, None)
        qs.append([_f32(b, x, qt.elem) for x in vals])
    state = State(
        [b.copy(Imm(EMPTY, "f32"), "f32", hint="m") for _ in range(qg)],
        [b.copy(Imm(0.0, "f32"), "f32", hint="l") for _ in range(qg)],
        [[b.copy(Imm(0.0, "f32"), "f32", hint="o") for _ in range(per)] for _ in range(qg)],
    )
    ka, va = (memory.resolve(lw, x) for x in (k, v))
    rows = ka.shape[0]
    rows = rows if not isinstance(rows, int) else Imm(rows, idx)
    lo = _index(lw, lw.value(start))
    hi = _index(lw, lw.value(stop))
    if isinstance(hi, Imm) and isinstance(rows, Imm):
        hi = Imm(min(hi.value, rows.value), idx)
    else:
        hi = b.op("min", idx, _reg(b, hi, idx), rows)
    # j: the warp's next turn's key; this lane's slot takes the key `slot` turns on
    j = b.copy(b.op("add", idx, _reg(b, lo, idx), warp), idx, hint="j")
    step = Imm(warps, idx)
    with b.region() as skip:  # the first turn at or past key 0
        b.add(lir.Break(b.op("setp", "pred", j, Imm(0, idx), cmp="ge", type=idx)))
        b.emit("add", (j,), (j, step), type=idx)
    b.add(lir.Loop(skip.block, span=b.span))
    mine = b.copy(iadd(b, idx, j, imul(b, idx, slot, warps)), idx, hint="jk")  # this slot's
    # UNROLL rounds of `slots` turns while every key of them is below `hi` (their loads
    # in flight together, one rescale for them), then a round at a time, masked
    for n, masked in ((UNROLL, False), (1, True)):
        with b.region() as body:
            if masked:
                b.add(lir.Break(b.op("setp", "pred", j, hi, cmp="ge", type=idx)))
            else:
                last = iadd(b, idx, j, (n * slots - 1) * warps)
                b.add(lir.Break(b.op("setp", "pred", last, hi, cmp="ge", type=idx)))
            keys = [iadd(b, idx, mine, u * slots * warps) for u in range(n)]
            _keys(lw, ka, va, keys, hi if masked else None, col, lanes, qs, state)
            b.emit("add", (j,), (j, Imm(n * slots * warps, idx)), type=idx)
            b.emit("add", (mine,), (mine, Imm(n * slots * warps, idx)), type=idx)
        b.add(lir.Loop(body.block, span=b.span))
    # the slots' states merged (each took its own keys), by butterflies across them
    offset = 16
    while offset >= lanes:
        _merge(b, state, offset)
        offset //= 2
    # the partials: row i's max and denominator by lane 0, its sum by slot 0's lanes
    first = b.op("setp", "pred", lane, Imm(0, idx), cmp="eq", type=idx)
    ours = first if slots == 1 else b.op("setp", "pred", lane, Imm(lanes, idx), cmp="lt",
                                         type=idx)  # fmt: skip
    for i in range(qg):
        for t, val in ((wmt, state.m[i]), (wlt, state.l[i])):
            a = t.access()
            at = memory.address(lw, a, memory.flat_index(lw, a, (Imm(i, idx), warp)))
            memory.store(b, "shared", "f32", at, [val], first)
        row = iadd(b, idx, imul(b, idx, warp, qg), i)
        a = acct.access()
        at = memory.address(lw, a, memory.flat_index(lw, a, (row, col)))
        memory.store(b, "shared", "f32", at, state.acc[i], None if slots == 1 else ours)


@dataclass
class State:
    """A lane's running state: each query row's max, denominator and weighted values."""

    m: list
    l: list  # noqa: E741
    acc: list


def _keys(lw, ka, va, js, hi, col, lanes, qs, st: State) -> None:
    """The keys `js`' update of every query row's state: their rows loaded first, then
    for each query row their scores, one new max, the state rescaled once and each
    key's weight added. `hi`: the keys are masked by it (a key at or past it reads
    zeros and weighs nothing); None: every key is a valid row."""
    b, idx = lw.b, lw.idx
    per = len(qs[0])
    valid = [b.op("setp", "pred", j, hi, cmp="lt", type=idx) for j in js] if hi is not None \
        else [None] * len(js)  # fmt: skip

    def row(a, j, ok):
        at = memory.address(lw, a, memory.flat_index(lw, a, (j, col)))
        return [_f32(b, x, a.elem) for x in memory.load(b, "global", a.elem, at, per, ok)]

    ks = [row(ka, j, ok) for j, ok in zip(js, valid, strict=True)]
    vs = [row(va, j, ok) for j, ok in zip(js, valid, strict=True)]
    for i, qi in enumerate(qs):
        scores = []
        for kf, ok in zip(ks, valid, strict=True):
            s = b.op("mul", "f32", qi[0], kf[0])
            for x, y in zip(qi[1:], kf[1:], strict=True):
                s = b.op("fma", "f32", x, y, s, rounding="rn")
            off = lanes // 2  # the score folded over the slot's lanes
            while off >= 1:
                other = b.op("shfl", "b32", s, Imm(off, "u32"), Imm(31, "u32"), dest_type="f32",
                             mode="bfly")  # fmt: skip
                s = b.op("add", "f32", s, other)
                off //= 2
            if ok is not None:  # a key past the range weighs exp(-inf) = 0
                s = b.op("selp", "f32", s, Imm(float("-inf"), "f32"), ok)
            scores.append(s)
        mn = st.m[i]
        for s in scores:
            mn = b.op("max", "f32", mn, s)
        c = _exp(b, b.op("sub", "f32", st.m[i], mn))
        b.emit("mul", (st.l[i],), (st.l[i], c), type="f32")
        for a in st.acc[i]:
            b.emit("mul", (a,), (a, c), type="f32")
        for s, vf in zip(scores, vs, strict=True):
            p = _exp(b, b.op("sub", "f32", s, mn))
            b.emit("add", (st.l[i],), (st.l[i], p), type="f32")
            for a, x in zip(st.acc[i], vf, strict=True):
                b.emit("fma", (a,), (p, x, a), type="f32", rounding="rn")
        b.mov(st.m[i], mn)


def _merge(b, st: State, offset: int) -> None:
    """Each lane's state merged with the lane's `offset` lanes away (another slot's)."""

    def other(x):
        return b.op("shfl", "b32", x, Imm(offset, "u32"), Imm(31, "u32"), dest_type="f32",
                    mode="bfly")  # fmt: skip

    for i in range(len(st.m)):
        m2, l2 = other(st.m[i]), other(st.l[i])
        acc2 = [other(a) for a in st.acc[i]]
        mn = b.op("max", "f32", st.m[i], m2)
        c1 = _exp(b, b.op("sub", "f32", st.m[i], mn))
        c2 = _exp(b, b.op("sub", "f32", m2, mn))
        b.emit("mul", (st.l[i],), (st.l[i], c1), type="f32")
        b.emit("fma", (st.l[i],), (l2, c2, st.l[i]), type="f32", rounding="rn")
        for a, a2 in zip(st.acc[i], acc2, strict=True):
            b.emit("mul", (a,), (a, c1), type="f32")
            b.emit("fma", (a,), (a2, c2, a), type="f32", rounding="rn")
        b.mov(st.m[i], mn)


def _exp(b, x):
    return b.op("ex2", "f32", b.op("mul", "f32", x, Imm(LOG2E, "f32")),
                rounding="approx")  # fmt: skip


def _f32(b, x, elem: str):
    return x if elem == "f32" else b.op("cvt", "f32", x, from_type=elem)


def _index(lw, v):
    """A scalar as an index value (i32 scalars widen where indices are 64-bit)."""
    if isinstance(v, Imm):
        return Imm(int(v.value), lw.idx)
    if v.type == lw.idx:
        return v
    return lw.b.op("cvt", lw.idx, v, from_type=v.type)


def _reg(b, v, t: str):
    return b.copy(v, t) if isinstance(v, Imm) else v
