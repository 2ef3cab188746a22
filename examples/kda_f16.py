"""kda (gated linear attention, chunkwise; SPEC.md "Examples") in f16 on tensor cores: the
spec's kernel over f16 `Q`, `K`, `V`, f32 sums and output. examples/kda.py is the f32
kernel, on FMA.

Each product takes f16 operands, so the decay-folded tiles are rounded to f16 as they are
made (`qd`, `kd`, `kfin`), the masked scores before `dot(p, v)`, and the state `S`, kept
in f32 across chunks, before `dot(qd, sh)`. The state is decayed in place and the chunk's
`kt v` summed into it (`S += dot(kt, v)`), so no second [D, D] accumulator is live.
`G` stays f32: `b = cumsum(g)` is exponentiated, so an absolute error in `b` is a
relative error in every decayed query and key, and f16's spacing at |b| of 4 to 8 (64
gates of about -0.1) is 2^-9 to 2^-8; `G` is 4 bytes a token beside the 384 of `Q`, `K`, `V`
at D = 64.

Under `@tensorcore` all four products run on tensor cores: mma.sync m16n8k16 on sm_80,
and on sm_90a wgmma where every accumulator has 64 rows a warpgroup, D = 64 by chunks of
64 on one warpgroup (T = 128) and D = 128 by chunks of 128 on two (T = 256), `p` the A of
`dot(p, v)` from registers and `v` by a TMA ring. In the other variants some product's
accumulator does not fit wgmma, and as the products share `qd` and `v` (a tile wgmma
reads is stored for wgmma alone) all four run on mma.sync. One CTA walks the whole
sequence (the chunks are sequential through `S`), so a launch is `(1,)` a head. D = 128
wants T = 256: on 128 threads its state and output accumulators leave too few registers,
and ptxas spills. A ragged N reads zeros past the tensors (the last chunk's `O` rows past
N are not written). A launch takes each constant's first choice (C = 64 on 128 threads)
until `kda_f16.tune` has timed the space: C = 128 on 256 threads walks half the chunks.
"""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(D=[64, 128], C=[64, 128], T=[128, 256])
@ph.tensorcore
@ph.dynshared
@ph.launch("T")
def kda_f16(
    Q: ph.tensor[ph.f16][N, D],
    K: ph.tensor[ph.f16][N, D],
    V: ph.tensor[ph.f16][N, D],
    G: ph.tensor[ph.f32][N, 1],
    O: ph.tensor[ph.f32][N, D],
    scale: ph.f32,
):
    S: ph.var[ph.tile[ph.f32][D, D]] = 0.0  # recurrent state (keys x values), f32
    for c in range(0, N, C):
        q: ph.let = Q[c:+C, :]
        k: ph.let = K[c:+C, :]
        v: ph.var = V[c:+C, :]  # one staged tile for both products that read it
        g: ph.let = G[c:+C, :]  # [C, 1] per-token log-gates

        b: ph.var[ph.tile[ph.f32][C, 1]] = ph.cumsum(g)  # cumulative in-chunk decay
        negb: ph.var = b * -1.0
        qd: ph.var[ph.tile[ph.f16][C, D]] = ph.f16(ph.f32(q) * ph.exp(b) * scale)
        kd: ph.var[ph.tile[ph.f16][C, D]] = ph.f16(ph.f32(k) * ph.exp(negb))

        s: ph.var[ph.tile[ph.f32][C, C]] = ph.dot_t(qd, kd)  # intra-chunk scores
        p: ph.var[ph.tile[ph.f16][C, C]] = ph.f16(ph.tril(s))  # causal mask
        o: ph.var[ph.tile[ph.f32][C, D]] = ph.dot(p, v)
        sh: ph.var[ph.tile[ph.f16][D, D]] = ph.f16(S)
        o += ph.dot(qd, sh)  # inter-chunk (carried state)
        O[c:+C, :] = o

        gt: ph.var = ph.transpose(g)
        total: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(gt)  # chunk-total decay
        kfin: ph.var[ph.tile[ph.f16][C, D]] = ph.f16(ph.f32(k) * ph.exp(total - b))
        kt: ph.var = ph.transpose(kfin)  # [D, C]
        S = S * ph.exp(total)  # decay the state, then add K^T V
        S += ph.dot(kt, v)


if __name__ == "__main__":
    print(kda_f16.source)
