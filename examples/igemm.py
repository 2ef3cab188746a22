"""An 8-bit integer GEMM on tensor cores, C = A @ Bᵀ with i8 operands and an exact i32
result (SPEC.md's `dot_t` of i8 tiles): one 128 x 128 tile of C per CTA, the k loop
staged by the cp.async ring, each product on integer mma.sync m16n8k32 where the shapes
allow (docs/contractions.md "On tensor cores"). `B` holds Bᵀ's rows: [N, K]."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(TILE_K=[64, 128])
@ph.launch(256)
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N=128, K="TILE_K")
def igemm(
    A: ph.tensor[ph.i8][M, K],
    B: ph.tensor[ph.i8][N, K],
    C: ph.tensor[ph.i32][M, N],
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.i32][128, 128]] = 0
    for kt in range(0, K, TILE_K):
        a: ph.var = A[pm * 128:+128, kt:+TILE_K]
        b: ph.var = B[pn * 128:+128, kt:+TILE_K]
        acc += ph.dot_t(a, b)
    C[pm * 128:+128, pn * 128:+128] = acc


if __name__ == "__main__":
    print(igemm.source)
