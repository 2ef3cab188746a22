"""The quantized built-ins in the Python spelling: each refusal at its Python line."""

from __future__ import annotations

import phobos.lang as ph


@ph.launch(128)
@ph.kernel
def quantized(A: ph.tensor[ph.i8][M, K], G: ph.tensor[ph.i8][1, 512]):
    a: ph.var[ph.tile[ph.i8][128, 512]] = A[0:+128, 0:+512]
    sa: ph.var[ph.tile[ph.f32][128, 16]] = 0.0
    w: ph.var[ph.tile[ph.i8][64, 512]] = 0
    sw: ph.var[ph.tile[ph.f32][64, 16]] = 0.0
    qb: ph.var[ph.tile[ph.i8][64, 148]] = 0
    d: ph.var[ph.tile[ph.f16][64, 2]] = 0.0
    ok: ph.var = ph.qdot_t(a, sa, w, sw)
    q1: ph.var = ph.qmma_t(a, sa, w, sw)  #~ ERROR `qmma_t` takes `w_scales` of shape [K/32, N], here [16, 64]
    q2: ph.var = ph.iq2xs_qgemm_t(a, sa, qb, d, G, G)  #~ ERROR `iq2xs_qgemm_t` needs `@launch(256)`, but the CTA has 128 threads
