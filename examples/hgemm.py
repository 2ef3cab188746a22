"""A half-precision GEMM on tensor cores, C = A @ B with f16 (or bf16) operands and an
f32 result: one 128 x TILE_N tile of C per CTA, the k loop staged by the cp.async
ring, each product on mma.sync (`@tensorcore`; docs/contractions.md "On tensor cores"), or
on an H100 or H200 on wgmma where the CTA is two warpgroups (`T = 256`), the k loop then
staged by a TMA ring ("On Hopper").
Its shared memory is dynamic (`@dynshared`), so the ring's stages of the deeper k tiles
fit past the static 48 KB; its CTA size `T` is tuned with the tile (4 warps of 64 x 64 on
a 128 x 128 tile, 8 of 32 x 64 on it, or 8 of 64 x 64 on 128 x 256). The space is kept to
the tiles worth timing: each variant is race-checked in the tests.
`hgemm_bf16` is the same kernel over bf16 operands (beyond SPEC.md: ours), and `hgemm_h`
writes its f32 sums rounded to f16 (`f16(acc)` fused into the stores), as `torch.mm` of
f16 operands does. `hgemm_hh` sums in f16 (ours: `acc += dot(a, b)` into an f16 tile under
`@tensorcore`), on wgmma's f16 accumulator on an H100 or H200."""

from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(TILE_N=[128, 256], TILE_K=[32, 64], T=[128, 256])
@ph.tensorcore
@ph.launch("T")
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K="TILE_K")
def hgemm(
    A: ph.tensor[ph.f16][M, K],
    B: ph.tensor[ph.f16][K, N],
    C: ph.tensor[ph.f32][M, N],
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, TILE_N]] = 0.0
    for kt in range(0, K, TILE_K):
        a: ph.var = A[pm * 128:+128, kt:+TILE_K]
        b: ph.var = B[kt:+TILE_K, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = acc


@ph.kernel
@ph.autotune(TILE_N=[128, 256], TILE_K=[32, 64], T=[128, 256])
@ph.tensorcore
@ph.launch("T")
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K="TILE_K")
def hgemm_bf16(
    A: ph.tensor[ph.bf16][M, K],
    B: ph.tensor[ph.bf16][K, N],
    C: ph.tensor[ph.f32][M, N],
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, TILE_N]] = 0.0
    for kt in range(0, K, TILE_K):
        a: ph.var = A[pm * 128:+128, kt:+TILE_K]
        b: ph.var = B[kt:+TILE_K, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = acc


@ph.kernel
@ph.autotune(TILE_N=[128, 256], TILE_K=[32, 64], T=[128, 256])
@ph.tensorcore
@ph.launch("T")
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K="TILE_K")
def hgemm_h(
    A: ph.tensor[ph.f16][M, K],
    B: ph.tensor[ph.f16][K, N],
    C: ph.tensor[ph.f16][M, N],
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, TILE_N]] = 0.0
    for kt in range(0, K, TILE_K):
        a: ph.var = A[pm * 128:+128, kt:+TILE_K]
        b: ph.var = B[kt:+TILE_K, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = ph.f16(acc)


@ph.kernel
@ph.autotune(TILE_N=[128, 256])
@ph.tensorcore
@ph.launch(256)
@ph.pipeline
@ph.dynshared
@ph.aligned(M=128, N="TILE_N", K=64)
def hgemm_hh(
    A: ph.tensor[ph.f16][M, K],
    B: ph.tensor[ph.f16][K, N],
    C: ph.tensor[ph.f16][M, N],
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f16][128, TILE_N]] = 0.0
    for kt in range(0, K, 64):
        a: ph.var = A[pm * 128:+128, kt:+64]
        b: ph.var = B[kt:+64, pn * TILE_N:+TILE_N]
        acc += ph.dot(a, b)
    C[pm * 128:+128, pn * TILE_N:+TILE_N] = acc


if __name__ == "__main__":
    print(hgemm.source)
