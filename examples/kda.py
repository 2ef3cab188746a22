"""Gated linear attention, chunkwise, using cumsum, tril and transpose (SPEC.md "Examples")."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(D=[64], C=[32, 128])
def kda(
    Q: ph.tensor[ph.f32][N, D],
    K: ph.tensor[ph.f32][N, D],
    V: ph.tensor[ph.f32][N, D],
    G: ph.tensor[ph.f32][N, 1],
    O: ph.tensor[ph.f32][N, D],
    scale: ph.f32,
):
    S: ph.var[ph.tile[ph.f32][D, D]] = 0.0  # recurrent state (keys x values)
    for c in range(0, N, C):
        q: ph.let = Q[c:+C, :]
        k: ph.let = K[c:+C, :]
        v: ph.let = V[c:+C, :]
        g: ph.let = G[c:+C, :]  # [C, 1] per-token log-gates

        b: ph.var[ph.tile[ph.f32][C, 1]] = ph.cumsum(g)  # cumulative in-chunk decay
        negb: ph.var = b * -1.0
        qd: ph.var[ph.tile[ph.f32][C, D]] = q * ph.exp(b)  # decay-folded queries
        qd = qd * scale
        kd: ph.var[ph.tile[ph.f32][C, D]] = k * ph.exp(negb)  # decay-folded keys

        p: ph.var[ph.tile[ph.f32][C, C]] = ph.dot_t(qd, kd)  # intra-chunk scores
        p = ph.tril(p)  # causal mask
        o: ph.var[ph.tile[ph.f32][C, D]] = ph.dot(p, v)
        o += ph.dot(qd, S)  # inter-chunk (carried state)
        O[c:+C, :] = o

        gt: ph.var = ph.transpose(g)
        total: ph.var[ph.tile[ph.f32][1, 1]] = ph.rowsum(gt)  # chunk-total decay
        kfin: ph.var = k * ph.exp(total - b)
        kt: ph.var = ph.transpose(kfin)  # [D, C]
        kv: ph.var[ph.tile[ph.f32][D, D]] = ph.dot(kt, v)  # sum_j kfin_j^T v_j
        S = S * ph.exp(total) + kv  # decay state, add K^T V


if __name__ == "__main__":
    print(kda.source)
