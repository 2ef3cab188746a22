# `ph.attend(q, K, V, start, stop, WM, WL, WACC)` (ours): each warp's softmax partials of
# q against its share of the keys [start, stop). q is a [QG, D] tile of its own, K and V
# f16 tensor parameters [Nk, D], WM and WL f32 tiles [QG, W], WACC [QG * W, D], with
# W = @ph.launch threads / 32 (4 here), D % 32 == 0 and QG * D <= 2048.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.launch(128)
def decode(
    Q: ph.tensor[ph.f16][H, 128],
    K: ph.tensor[ph.f16][NK, 128],
    V: ph.tensor[ph.f16][NK, 128],
    K32: ph.tensor[ph.f32][NK, 128],
    K64: ph.tensor[ph.f16][NK, 64],
    V2: ph.tensor[ph.f16][NV, 128],
    n: ph.i32,
):
    h: ph.let = ph.ctx.block.x * 4
    q: ph.var[ph.tile[ph.f32][4, 128]] = ph.f32(Q[h:+4, :])
    q16: ph.var[ph.tile[ph.f16][4, 128]] = Q[h:+4, :]
    qi: ph.var[ph.tile[ph.i32][4, 128]] = 0
    q48: ph.var[ph.tile[ph.f32][4, 48]] = 0.0
    qbig: ph.var[ph.tile[ph.f32][32, 128]] = 0.0
    kt: ph.var[ph.tile[ph.f16][64, 128]] = K[0:+64, :]
    wm: ph.var[ph.tile[ph.f32][4, 4]]
    wl: ph.var[ph.tile[ph.f32][4, 4]]
    wacc: ph.var[ph.tile[ph.f32][16, 128]]
    wm8: ph.var[ph.tile[ph.f32][4, 8]]
    wm16: ph.var[ph.tile[ph.f16][4, 4]]
    qv: ph.let = q[0:+2, :]
    ph.attend(q, K, V, 0, n, wm, wl, wacc)
    ph.attend(q16, K, V, h, n + 64, wm, wl, wacc)
    ph.attend(Q[h:+4, :], K, V, 0, n, wm, wl, wacc)  #~ ERROR takes `q` as a declared tile
    ph.attend(qv, K, V, 0, n, wm, wl, wacc)  #~ ERROR takes `q` as a declared tile
    ph.attend(qi, K, V, 0, n, wm, wl, wacc)  #~ ERROR takes `q` of `f16` or `f32`
    ph.attend(q48, K, V, 0, n, wm, wl, wacc)  #~ ERROR with D a multiple of 32
    ph.attend(qbig, K, V, 0, n, wm, wl, wacc)  #~ ERROR keeps QG * D = 4096 sums
    ph.attend(q, kt, V, 0, n, wm, wl, wacc)  #~ ERROR takes `K` as a named tensor parameter
    ph.attend(q, K32, V, 0, n, wm, wl, wacc)  #~ ERROR takes `K` of `f16`
    ph.attend(q, K64, V, 0, n, wm, wl, wacc)  #~ ERROR with `q`'s D = 128
    ph.attend(q, K, V2, 0, n, wm, wl, wacc)  #~ ERROR with the same rows
    ph.attend(q, K, V, 0.5, n, wm, wl, wacc)  #~ ERROR `attend`'s `start` must be an index
    ph.attend(q, K, V, 0, n, wm8, wl, wacc)  #~ ERROR takes `WM` of shape [QG, W] = [4, 4]
    ph.attend(q, K, V, 0, n, wm16, wl, wacc)  #~ ERROR writes `WM` in `f32`
    ph.attend(q, K, V, 0, n, wm, wl, wacc[0:+16, :])  #~ ERROR so it takes a declared `var` tile
    ph.attend(q, K, V, 0, n, wm, wm, wacc)  #~ ERROR but both are `wm`
    ph.attend(q, K, V, 0, n, wm, wl, wm)  #~ ERROR takes `WACC` of shape [QG * W, D]
    ph.attend(q, K, V, ph.ctx.warp, n, wm, wl, wacc)  #~ ERROR `attend` takes `ctx.warp`
    ph.attend(q, K, V, 0, n)  #~ ERROR `attend` takes 8 arguments
    r: ph.let = ph.attend(q, K, V, 0, n, wm, wl, wacc)  #~ ERROR `attend` is a statement
    if ph.ctx.thread < 64:
        ph.attend(q, K, V, 0, n, wm, wl, wacc)  #~ ERROR `attend` runs once per CTA


@ph.kernel
@ph.launch(48)
def ragged(K: ph.tensor[ph.f16][NK, 128], V: ph.tensor[ph.f16][NK, 128]):
    q: ph.var[ph.tile[ph.f32][1, 128]] = 0.0
    wm: ph.var[ph.tile[ph.f32][1, 1]]
    wl: ph.var[ph.tile[ph.f32][1, 1]]
    wacc: ph.var[ph.tile[ph.f32][1, 128]]
    ph.attend(q, K, V, 0, 8, wm, wl, wacc)  #~ ERROR splits its keys over whole warps
