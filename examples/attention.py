"""Flash attention over heads (ours, in the spec's style): f16 `Q`, `K`, `V` of every head
stacked by rows (head h's S rows at h S, as a contiguous [B, H, S, D] tensor lays them
out), one query tile of 64 rows a CTA of four warps, the grid's y the head; head h reads
KV head h / G, so `G` query heads share a KV head (grouped-query attention; G = 1 is
multi-head; G a constant of the variant, 1, 2, 4 or 8, as a model fixes it). Under `@tensorcore` the scores run on wgmma (sm_90a) or mma.sync, `p` stays
in their registers as the second product's A, f32 accumulation and output.
`attention_causal` masks by `where(iota ..)` and stops its loop at the query tile's last
row, so the key tiles it cannot see are never read. S is a multiple of 64 (a tile never
reaches the next head's rows); examples/flash_attention_f16.py is the one-head kernel
for ragged lengths."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(G=[1, 8], D=[64, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(128)
def attention(
    Q: ph.tensor[ph.f16][R, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    O: ph.tensor[ph.f32][R, D],
    S: ph.i32,
    scale: ph.f32,
):
    head: ph.let = ph.ctx.block.y
    row: ph.let = ph.ctx.block.x * 64
    base: ph.let = head * S + row
    kv: ph.let = head // G * S
    q: ph.let = Q[base:+64, :]
    acc: ph.var[ph.tile[ph.f32][64, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][64, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][64, 1]] = 0.0
    for kt in range(0, S, 64):
        k: ph.let = K[kv + kt:+64, :]
        v: ph.let = V[kv + kt:+64, :]
        s: ph.var[ph.tile[ph.f32][64, 64]] = ph.dot_t(q, k)
        s = s * scale
        mnew: ph.var[ph.tile[ph.f32][64, 1]] = ph.rowmax(s)
        mnew = ph.tmax(m, mnew)
        p: ph.var[ph.tile[ph.f16][64, 64]] = ph.f16(ph.exp(s - mnew))
        corr: ph.var[ph.tile[ph.f32][64, 1]] = ph.exp(m - mnew)
        l = l * corr
        l += ph.rowsum(ph.f32(p))
        acc = acc * corr
        acc += ph.dot(p, v)
        m = mnew
    acc = acc / l
    O[base:+64, :] = acc


@ph.kernel
@ph.autotune(G=[1, 8], D=[64, 128])
@ph.tensorcore
@ph.dynshared
@ph.launch(128)
def attention_causal(
    Q: ph.tensor[ph.f16][R, D],
    K: ph.tensor[ph.f16][RK, D],
    V: ph.tensor[ph.f16][RK, D],
    O: ph.tensor[ph.f32][R, D],
    S: ph.i32,
    scale: ph.f32,
):
    head: ph.let = ph.ctx.block.y
    row: ph.let = ph.ctx.block.x * 64
    base: ph.let = head * S + row
    kv: ph.let = head // G * S
    q: ph.let = Q[base:+64, :]
    acc: ph.var[ph.tile[ph.f32][64, D]] = 0.0
    m: ph.var[ph.tile[ph.f32][64, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][64, 1]] = 0.0
    for kt in range(0, row + 64, 64):  # the key tiles up to the diagonal
        k: ph.let = K[kv + kt:+64, :]
        v: ph.let = V[kv + kt:+64, :]
        s: ph.var[ph.tile[ph.f32][64, 64]] = ph.dot_t(q, k)
        s = s * scale
        s = ph.where(ph.iota(1) + kt <= ph.iota(0) + row, s, -1.0e30)
        mnew: ph.var[ph.tile[ph.f32][64, 1]] = ph.rowmax(s)
        mnew = ph.tmax(m, mnew)
        p: ph.var[ph.tile[ph.f16][64, 64]] = ph.f16(ph.exp(s - mnew))
        corr: ph.var[ph.tile[ph.f32][64, 1]] = ph.exp(m - mnew)
        l = l * corr
        l += ph.rowsum(ph.f32(p))
        acc = acc * corr
        acc += ph.dot(p, v)
        m = mnew
    acc = acc / l
    O[base:+64, :] = acc


if __name__ == "__main__":
    print(attention_causal.source)
