"""Flash attention on tensor cores: the spec's online-softmax loop (SPEC.md "Examples")
over f16 queries, keys and values, BR = 64 query rows per CTA of four warps. Under
`@tensorcore` both products run on mma.sync: the scores `s = dot_t(q, k)` stay in the
registers mma.sync wrote, `rowmax(s)` folds them there (each warp holds whole rows), and
`p`, rounded to f16, is the first operand of `dot(p, v)` (docs/contractions.md, "A row
reduction of the accumulator"). f32 accumulation and output."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BC=[64, 128])
@ph.tensorcore
@ph.launch(128)
def flash_attention_f16(
    Q: ph.tensor[ph.f16][Nq, 64],
    K: ph.tensor[ph.f16][Nk, 64],
    V: ph.tensor[ph.f16][Nk, 64],
    O: ph.tensor[ph.f32][Nq, 64],
    scale: ph.f32,
):
    row: ph.let = ph.ctx.block.x * 64
    q: ph.let = Q[row:+64, :]
    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0
    m: ph.var[ph.tile[ph.f32][64, 1]] = -1.0e30
    l: ph.var[ph.tile[ph.f32][64, 1]] = 0.0
    for kt in range(0, Nk, BC):
        k: ph.let = K[kt:+BC, :]
        v: ph.let = V[kt:+BC, :]
        s: ph.var[ph.tile[ph.f32][64, BC]] = ph.dot_t(q, k)
        s = s * scale
        s = ph.where(ph.iota(1) < Nk - kt, s, -1.0e30)  # a ragged last tile reads zeros
        mnew: ph.var[ph.tile[ph.f32][64, 1]] = ph.rowmax(s)
        mnew = ph.tmax(m, mnew)
        p: ph.var[ph.tile[ph.f16][64, BC]] = ph.f16(ph.exp(s - mnew))
        corr: ph.var[ph.tile[ph.f32][64, 1]] = ph.exp(m - mnew)
        l = l * corr
        l += ph.rowsum(ph.f32(p))
        acc = acc * corr
        acc += ph.dot(p, v)
        m = mnew
    acc = acc / l
    O[row:+64, :] = acc


if __name__ == "__main__":
    print(flash_attention_f16.source)
