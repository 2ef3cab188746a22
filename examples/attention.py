"""Flash attention over heads (ours, in the spec's style): f16 `Q`, `K`, `V` of every head
stacked by rows (head h's S rows at h S, as a contiguous [B, H, S, D] tensor lays them
out), one query tile of 128 rows a CTA of eight warps (two warpgroups), key tiles of `BC`
(64 or 128, tuned), two CTAs an SM asked of ptxas, the grid's y the head; head h reads KV head h / G, so `G` query heads share a KV head
(grouped-query attention; G = 1 is multi-head; G a constant of the variant, 1, 2, 4 or 8,
as a model fixes it). Under `@tensorcore` the scores run on wgmma (sm_90a) or mma.sync,
`p` stays in their registers as the second product's A, f32 accumulation and output.
`attention_causal` runs one loop over the key tiles wholly below the diagonal, unmasked,
and a second over the diagonal's 128 keys, masked by `where(iota ..)`: the key tiles a
query tile cannot see are never read, and only the diagonal's pay for the mask.

The scale is applied to the row maxima (`rowmax(s) * scale`, the same for a positive
scale) and inside the exponential, `exp(s * scale - mnew)`, which the lowering makes one
`fma` an element (`ex2(s c - mnew log2 e)`, c = scale log2 e); the row sums add the
probabilities before their rounding to f16, as the fast kernels do. S is a multiple of
`ROWS` (a tile never reaches the next head's rows), the grid `(S // ROWS, heads)`;
examples/flash_attention_f16.py is the one-head kernel for ragged lengths.

On the H200 (benchmarks/NOTES.md, run 58) 128 by 128 tiles on 256 threads ran 3-22 %
faster than 64 by 64 on 128 threads at B 4, H 32, S 4096; the fused exponential and the
sums before rounding 11-29 % faster again, and the diagonal alone masked 3-11 %; in run
59 the exponential's flush of subnormals 10 % at D 64, and `@launch(256, 2)` with BC = 64
at D 128 4-10 % (BC = 128 stays best at D 64)."""

from __future__ import annotations

import phobos.lang as ph

ROWS = 128  # the query rows of a CTA: the grid's x is S // ROWS


@ph.fn
def online_softmax(s, v, m, l, acc, scale):
    # one key tile's scores `s` folded in: the row maxima `m` and sums `l` brought up to
    # date, `acc` rescaled to the new maxima, then `p v` added, `p` rounded to f16
    mnew: ph.var = ph.rowmax(s)
    mnew = ph.tmax(m, mnew * scale)
    e: ph.var = ph.exp(s * scale - mnew)
    p: ph.var = ph.f16(e)
    corr: ph.var = ph.exp(m - mnew)
    l = l * corr
    l += ph.rowsum(e)
    acc = acc * corr
    acc += ph.dot(p, v)
    m = mnew


@ph.kernel
@ph.autotune(G=[1, 8], D=[64, 128], BC=[64, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(256, 2)
def attention(
    Q: ph.tensor[ph.f16][R, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    O: ph.tensor[ph.f32][R, D],
    S: ph.i32,
    scale: ph.f32,
):
    head: ph.let = ph.ctx.block.y
    row: ph.let = ph.ctx.block.x * 128
    base: ph.let = head * S + row
    kv: ph.let = head // G * S
    q: ph.let = Q[base:+128, :]
    acc: ph.var[ph.tile[ph.f32][128, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][128, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][128, 1]] = 0.0
    for kt in range(0, S, BC):
        k: ph.let = K[kv + kt:+BC, :]
        v: ph.let = V[kv + kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][128, BC]] = ph.dot_t(q, k)
        online_softmax(s, v, m, l, acc, scale)
    acc = acc / l
    O[base:+128, :] = acc


@ph.kernel
@ph.autotune(G=[1, 8], D=[64, 128], BC=[64, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(256, 2)
def attention_causal(
    Q: ph.tensor[ph.f16][R, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    O: ph.tensor[ph.f32][R, D],
    S: ph.i32,
    scale: ph.f32,
):
    head: ph.let = ph.ctx.block.y
    row: ph.let = ph.ctx.block.x * 128
    base: ph.let = head * S + row
    kv: ph.let = head // G * S
    q: ph.let = Q[base:+128, :]
    acc: ph.var[ph.tile[ph.f32][128, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][128, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][128, 1]] = 0.0
    for kt in range(0, row, BC):  # the key tiles below the diagonal: no mask
        k: ph.let = K[kv + kt:+BC, :]
        v: ph.let = V[kv + kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][128, BC]] = ph.dot_t(q, k)
        online_softmax(s, v, m, l, acc, scale)
    for kd in range(row, row + 128, BC):  # the diagonal's key tiles, masked
        k2: ph.let = K[kv + kd:+BC, :]
        v2: ph.let = V[kv + kd:+BC, :]
        s2: ph.var[ph.tile[ph.f32][128, BC]] = ph.dot_t(q, k2)
        s2 = ph.where(ph.iota(1) + kd <= ph.iota(0) + row, s2, -1.0e30)
        online_softmax(s2, v2, m, l, acc, scale)
    acc = acc / l
    O[base:+128, :] = acc


@ph.kernel
@ph.autotune(G=[1, 8], D=[64, 128], BC=[64, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(256)
def attention_ahead(
    Q: ph.tensor[ph.f16][R, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    O: ph.tensor[ph.f32][R, D],
    S: ph.i32,
    scale: ph.f32,
):
    # `attention` with the scores one key tile ahead: each turn computes the next
    # tile's scores before this tile's softmax, which reads none of them, so the
    # product runs under the softmax (the wgmma's wait is put off to the next product;
    # docs/attention.md). Two score tiles are live: one CTA an SM, for the registers.
    head: ph.let = ph.ctx.block.y
    row: ph.let = ph.ctx.block.x * 128
    base: ph.let = head * S + row
    kv: ph.let = head // G * S
    q: ph.let = Q[base:+128, :]
    acc: ph.var[ph.tile[ph.f32][128, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][128, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][128, 1]] = 0.0
    s: ph.var[ph.tile[ph.f32][128, BC]] = ph.dot_t(q, K[kv:+BC, :])
    for kt in range(0, S, BC):
        # past the last tile this reads the next head's keys (or zeros past K): unused
        k: ph.let = K[kv + kt + BC:+BC, :]
        v: ph.let = V[kv + kt:+BC, :]
        ahead: ph.var[ph.tile[ph.f32][128, BC]] = ph.dot_t(q, k)
        online_softmax(s, v, m, l, acc, scale)
        s = ahead
    acc = acc / l
    O[base:+128, :] = acc


if __name__ == "__main__":
    print(attention_causal.source)
