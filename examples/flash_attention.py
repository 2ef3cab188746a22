"""Flash attention with an online softmax, BR query rows per CTA (SPEC.md "Examples")."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.cluster(BR=[1024, 4096], BC=[1024, 4096])
@ph.autotune(D=[64], BR=[32, 128], BC=[32, 128])
def flash_attention(
    Q: ph.tensor[ph.f32][Nq, D],
    K: ph.tensor[ph.f32][Nk, D],
    V: ph.tensor[ph.f32][Nk, D],
    O: ph.tensor[ph.f32][Nq, D],
    scale: ph.f32,
):
    pid: ph.let = ph.ctx.block.x
    row: ph.let = pid * BR

    # query tile stays resident; running softmax state for BR rows.
    q: ph.let = Q[row:+BR, :]
    acc: ph.var[ph.tile[ph.f32][BR, D]] = 0.0  # unnormalized output sum p*v
    m: ph.var[ph.tile[ph.f32][BR, 1]] = -1.0e30  # running row max
    l: ph.var[ph.tile[ph.f32][BR, 1]] = 0.0  # running denominator sum p

    for kt in range(0, Nk, BC):
        k: ph.let = K[kt:+BC, :]
        v: ph.let = V[kt:+BC, :]

        # scaled scores for this tile
        s: ph.var[ph.tile[ph.f32][BR, BC]] = ph.dot_t(q, k)  # [BR, BC] = q @ k.T
        s = s * scale
        s = ph.where(ph.iota(1) < Nk - kt, s, -1.0e30)  # a ragged last tile reads zeros past Nk

        # online softmax update
        mnew: ph.var[ph.tile[ph.f32][BR, 1]] = ph.rowmax(s)
        mnew = ph.tmax(m, mnew)  # new running max
        p: ph.var[ph.tile[ph.f32][BR, BC]] = ph.exp(s - mnew)  # probabilities (broadcast subtraction)
        corr: ph.var[ph.tile[ph.f32][BR, 1]] = ph.exp(m - mnew)  # rescale factor for old state

        l = l * corr
        l += ph.rowsum(p)

        acc = acc * corr  # broadcast output
        acc += ph.dot(p, v)  # add this tile's contribution

        m = mnew

    acc = acc / l  # normalize (broadcast divide)
    O[row:+BR, :] = acc


if __name__ == "__main__":
    print(flash_attention.source)
