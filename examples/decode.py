"""Split-KV decode attention (flash-decoding) with the `attend` built-in (ours,
docs/attention.md): one new token's query heads against a long cache of keys and
values, the keys split between CTAs so that a few heads still fill the card.

The layout is a model's with grouped-query attention: `Q` holds each batch's query
heads by rows ([B * HQ, D]), `K` and `V` each KV head's S cached rows ([B * HKV * S,
D]), and the G = HQ / HKV query heads of KV head kv are rows kv G .. kv G + G - 1 of Q
(here G = 4: 32 query heads on 8 KV heads). `decode_split` runs on a grid of (splits,
B * HKV) CTAs of eight warps: CTA (x, kv) attends KV head kv's keys
[x CH, (x + 1) CH), its eight warps' partials merged in the CTA, and writes the
split's output (normalised) and its log-sum-exp. `decode_split_mma` computes the same
split on tensor cores, in the spec's flash-attention style: one warp a CTA, the G rows
padded to the 16 of an mma.sync (`dot_t`, then `dot` with the probabilities kept in the
scores' registers), key tiles of BC; it writes a slot of 16 rows a split, whose first G
the merge reads. `decode_mma` is the same split followed by the merge in the one
launch: each CTA counts itself in on its KV head's counter (`CNT`, zeroed once, a
multiple of 4 long) and the last to count merges the head's partials and re-arms the
counter (docs/attention.md, "The merge in the last split"). `decode_merge` merges the
splits of each KV head's G rows, as SPEC.md says the caller does, from slots of 4 or
16 rows (the partials' rows tell which):

    M = max_x lse_x;   O = sum_x exp(lse_x - M) O_x / sum_x exp(lse_x - M)

Every split must hold a key (`CH` at most S / splits rounded up): a split of none has
no log-sum-exp to merge.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q = rng.standard_normal((4, 64)).astype(np.float16)
    >>> k, v = (rng.standard_normal((40, 64)).astype(np.float16) for _ in range(2))
    >>> po, pl = np.zeros((3 * 4, 64), np.float32), np.zeros((3 * 4, 1), np.float32)
    >>> decode_split.variant(D=64)[(3, 1)](q, k, v, po, pl, 40, 16, 0.125)
    >>> o = np.zeros((4, 64), np.float32)
    >>> decode_merge.variant(D=64)[(1,)](po, pl, o, 3)
    >>> s = q.astype(np.float64) @ k.astype(np.float64).T * 0.125
    >>> p = np.exp(s - s.max(axis=1, keepdims=True))
    >>> want = p / p.sum(axis=1, keepdims=True) @ v.astype(np.float64)
    >>> bool(np.abs(o - want).max() < 1e-3)
    True
    >>> po, pl = np.zeros((3 * 16, 64), np.float32), np.zeros((3 * 16, 1), np.float32)
    >>> decode_split_mma.variant(D=64)[(3, 1)](q, k, v, po, pl, 40, 16, 0.125)
    >>> o = np.zeros((4, 64), np.float32)
    >>> decode_merge.variant(D=64)[(1,)](po, pl, o, 3)
    >>> bool(np.abs(o - want).max() < 1e-3)
    True
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(D=[64, 128])
@ph.launch(256)
def decode_split(
    Q: ph.tensor[ph.f16][RQ, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    PO: ph.tensor[ph.f32][RP, D],
    PL: ph.tensor[ph.f32][RP, 1],
    S: ph.i32,
    CH: ph.i32,
    scale: ph.f32,
):
    kv: ph.let = ph.ctx.block.y
    split: ph.let = ph.ctx.block.x
    first: ph.let = kv * S + split * CH
    last: ph.let = ph.min(first + CH, kv * S + S)
    q: ph.var[ph.tile[ph.f32][4, D]] = ph.f32(Q[kv * 4:+4, :]) * scale
    wm: ph.var[ph.tile[ph.f32][4, 8]]
    wl: ph.var[ph.tile[ph.f32][4, 8]]
    wacc: ph.var[ph.tile[ph.f32][32, D]]
    ph.attend(q, K, V, first, last, wm, wl, wacc)
    # the eight warps' partials, merged
    m: ph.var[ph.tile[ph.f32][4, 1]] = ph.rowmax(wm)
    c: ph.var[ph.tile[ph.f32][4, 8]] = ph.exp(wm - m)
    l: ph.var[ph.tile[ph.f32][4, 1]] = ph.rowsum(wl * c)
    o: ph.var[ph.tile[ph.f32][4, D]] = 0.0
    for w in range(8):
        o += wacc[w * 4:+4, :] * c[:, w:+1]
    row: ph.let = (kv * ph.ctx.blocks.x + split) * 4
    PO[row:+4, :] = o / l
    PL[row:+4, :] = m + ph.log(l)


@ph.fn(uses=("D", "BC"))
def split_on_tensor_cores(Q, K, V, PO, PL, S, CH, scale):
    kv: ph.let = ph.ctx.block.y
    split: ph.let = ph.ctx.block.x
    first: ph.let = kv * S + split * CH
    n: ph.let = ph.min(CH, S - split * CH)
    # 16 query rows, an mma's M: the 4 of this KV head, then 12 that no row written reads
    q: ph.let = Q[kv * 4:+16, :]
    acc: ph.var[ph.tile[ph.f32][16, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][16, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][16, 1]] = 0.0
    for kt in range(0, n, BC):
        k: ph.let = K[first + kt:+BC, :]
        v: ph.let = V[first + kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][16, BC]] = ph.dot_t(q, k)
        s = ph.where(ph.iota(1) + kt < n, s, -1.0e30)
        mnew: ph.var[ph.tile[ph.f32][16, 1]] = ph.rowmax(s)
        mnew = ph.tmax(m, mnew * scale)
        e: ph.var[ph.tile[ph.f32][16, BC]] = ph.exp(s * scale - mnew)
        p: ph.var[ph.tile[ph.f16][16, BC]] = ph.f16(e)
        corr: ph.var[ph.tile[ph.f32][16, 1]] = ph.exp(m - mnew)
        l = l * corr
        l += ph.rowsum(e)
        acc = acc * corr
        acc += ph.dot(p, v)
        m = mnew
    # all 16 rows, so `acc` stays in its fragments: a slot of 16 rows a split
    row: ph.let = (kv * ph.ctx.blocks.x + split) * 16
    PO[row:+16, :] = acc / l
    PL[row:+16, :] = m + ph.log(l)


@ph.kernel
@ph.autotune(D=[64, 128], BC=[32, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(32)
def decode_split_mma(
    Q: ph.tensor[ph.f16][RQ, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    PO: ph.tensor[ph.f32][RP, D],
    PL: ph.tensor[ph.f32][RP, 1],
    S: ph.i32,
    CH: ph.i32,
    scale: ph.f32,
):
    split_on_tensor_cores(Q, K, V, PO, PL, S, CH, scale)


@ph.kernel
@ph.autotune(D=[64, 128], BC=[32, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(32)
def decode_mma(
    Q: ph.tensor[ph.f16][RQ, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    PO: ph.tensor[ph.f32][RP, D],
    PL: ph.tensor[ph.f32][RP, 1],
    O: ph.tensor[ph.f32][RO, D],
    CNT: ph.tensor[ph.i32][NKV],
    S: ph.i32,
    CH: ph.i32,
    scale: ph.f32,
):
    split_on_tensor_cores(Q, K, V, PO, PL, S, CH, scale)
    # The split's partials are out; the last split of this KV head to count itself in
    # (the atomic is acquire-release: every partial counted before it is visible) merges
    # them all, so the merge needs no launch of its own.
    kv: ph.let = ph.ctx.block.y
    splits: ph.let = ph.ctx.blocks.x
    done: ph.let = ph.atomic_add(CNT, kv, 1)
    if done == splits - 1:
        # 4 rows of D / 4 runs of four columns: D / 32 runs a lane
        for j in range(0, D // 32):
            run: ph.let = ph.ctx.thread + j * 32
            merge_run(PO, PL, O, kv, splits, 16, run // (D // 4), run % (D // 4) * 4)
        # re-armed for the next launch (nothing else counts this head's splits now)
        ph.atomic_add(CNT, kv, -splits)


@ph.kernel
@ph.autotune(D=[64, 128])
@ph.launch(128)
def decode_merge(
    PO: ph.tensor[ph.f32][RP, D],
    PL: ph.tensor[ph.f32][RP, 1],
    O: ph.tensor[ph.f32][RO, D],
    splits: ph.i32,
):
    kv: ph.let = ph.ctx.block.x
    # a split's rows, 4 or 16 (mma); no splits reads none, so any slot will do
    slot: ph.let = RP // ph.max(ph.ctx.blocks.x * splits, 1)
    # per thread: one of the 4 rows and a run of 4 of its columns, the row's running
    # maximum and sum in registers, so nothing is shared and no barrier orders the
    # splits; four splits a turn, whose loads need nothing of the turn before, are in
    # flight together (a split a turn waited out one load's latency each)
    r: ph.let = ph.ctx.thread // (D // 4)
    c: ph.let = ph.ctx.thread % (D // 4) * 4
    if r < 4:
        merge_run(PO, PL, O, kv, splits, slot, r, c)


@ph.fn
def merge_run(PO, PL, O, kv, splits, slot, r, c):
    # row r's four columns from c of KV head kv's merged output, over its splits' slots
    # of `slot` rows: the row's running maximum and sum in registers
    m: ph.var[ph.f32] = -1.0e30
    l: ph.var[ph.f32] = 0.0
    o0: ph.var[ph.f32] = 0.0
    o1: ph.var[ph.f32] = 0.0
    o2: ph.var[ph.f32] = 0.0
    o3: ph.var[ph.f32] = 0.0
    for x in ph.unroll(4, range(0, splits)):
        row: ph.let = (kv * splits + x) * slot + r
        lse: ph.let = PL[row, 0]
        mn: ph.let = ph.max(m, lse)
        old: ph.let = ph.exp(m - mn)
        new: ph.let = ph.exp(lse - mn)
        l = l * old + new
        o0 = o0 * old + ph.elem(PO[row, c:+4], 0) * new
        o1 = o1 * old + ph.elem(PO[row, c:+4], 1) * new
        o2 = o2 * old + ph.elem(PO[row, c:+4], 2) * new
        o3 = o3 * old + ph.elem(PO[row, c:+4], 3) * new
        m = mn
    ph.store(O[kv * 4 + r, c:+4], o0 / l, o1 / l, o2 / l, o3 / l)
