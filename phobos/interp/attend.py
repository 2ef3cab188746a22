"""`attend` on the tile interpreter: each warp's softmax partials, computed with numpy.

The CTA's W warps split the keys of [start, stop) by turns: warp w takes
j = start + w, start + w + W, ... below stop, skipping those outside [0, Nk). For
query row i, with s_ij = q_i . K_j in f32 (K widened from f16, and q from f16),

    WM[i, w]          = max_j s_ij                          (-1.0e30 with no keys)
    WL[i, w]          = sum_j exp(s_ij - WM[i, w])          (0 with no keys)
    WACC[w * QG + i]  = sum_j exp(s_ij - WM[i, w]) V_j      (0 with no keys)

over warp w's keys j. Merging the partials is the caller's (docs/attention.md).

    >>> import numpy as np
    >>> q = np.ones((1, 32), np.float32)
    >>> k = np.zeros((3, 32), np.float16)
    >>> v = np.arange(96, dtype=np.float16).reshape(3, 32)
    >>> wm, wl, wacc = partials(q, k, v, 0, 3, 2)
    >>> wm.tolist(), wl.tolist(), wacc[:, 0].tolist()
    ([[0.0, 0.0]], [[2.0, 1.0]], [64.0, 32.0])
"""

from __future__ import annotations

import numpy as np

EMPTY = -1.0e30  # a warp's max with no keys: exp(s - EMPTY) would be 0 for any score


def warp_keys(start: int, stop: int, rows: int, warp: int, warps: int) -> np.ndarray:
    """The keys warp `warp` of `warps` takes: start + warp + t * warps in [0, rows), below stop.

    >>> warp_keys(-3, 100, 5, 1, 4).tolist(), warp_keys(6, 9, 8, 3, 4).tolist()
    ([2], [])
    """
    first = start + warp
    if first < 0:  # the first of the warp's turns at or past key 0
        first += -(first // warps) * warps
    return np.arange(first, min(stop, rows), warps, dtype=np.int64)


def partials(q, k, v, start: int, stop: int, warps: int):
    """(WM, WL, WACC) of one `attend`: float32 arrays [QG, W], [QG, W], [QG * W, D]."""
    q = np.asarray(q).astype(np.float32)
    k = np.asarray(k).astype(np.float32)
    v = np.asarray(v).astype(np.float32)
    qg, d = q.shape
    wm = np.full((qg, warps), EMPTY, np.float32)
    wl = np.zeros((qg, warps), np.float32)
    wacc = np.zeros((qg * warps, d), np.float32)
    for w in range(warps):
        keys = warp_keys(int(start), int(stop), k.shape[0], w, warps)
        if not len(keys):
            continue
        s = q @ k[keys].T  # [QG, n] in f32
        m = s.max(axis=1)
        p = np.exp((s - m[:, None]).astype(np.float64)).astype(np.float32)
        wm[:, w] = m
        wl[:, w] = p.sum(axis=1, dtype=np.float32)
        wacc[w * qg : (w + 1) * qg] = p @ v[keys]
    return wm, wl, wacc
