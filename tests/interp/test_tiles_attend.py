"""`attend` on the tile interpreter against a float64 reference, and the documented merge.

The reference splits the keys as docs/attention.md defines: warp w of W takes the keys
j of [start, stop) inside [0, Nk) with (j - start) % W == w.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from phobos.interp import run_kernel
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse

ROOT = Path(__file__).resolve().parents[2]
rng = np.random.default_rng()
NK = 50
EMPTY = -1.0e30


def source(qg: int, d: int, warps: int, q_elem: str) -> str:
    """A kernel that writes one `attend`'s partials out, and their merge into O."""
    return f"""
@launch({32 * warps})
kernel k(Q: tensor<{q_elem}>[{qg}, {d}], K: tensor<f16>[NK, {d}], V: tensor<f16>[NK, {d}],
         WMo: tensor<f32>[{qg}, {warps}], WLo: tensor<f32>[{qg}, {warps}],
         WACCo: tensor<f32>[{qg * warps}, {d}], O: tensor<f32>[{qg}, {d}],
         start: i32, stop: i32) {{
  var q: tile<{q_elem}>[{qg}, {d}] = Q[0 :+ {qg}, 0 :+ {d}]
  var wm: tile<f32>[{qg}, {warps}]
  var wl: tile<f32>[{qg}, {warps}]
  var wacc: tile<f32>[{qg * warps}, {d}]
  attend(q, K, V, start, stop, wm, wl, wacc)
  WMo[0 :+ {qg}, 0 :+ {warps}] = wm
  WLo[0 :+ {qg}, 0 :+ {warps}] = wl
  WACCo[0 :+ {qg * warps}, 0 :+ {d}] = wacc
  var m: tile<f32>[{qg}, 1] = rowmax(wm)
  var c: tile<f32>[{qg}, {warps}] = exp(wm - m)
  var l: tile<f32>[{qg}, 1] = rowsum(wl * c)
  var o: tile<f32>[{qg}, {d}] = 0.0
  for w in range(0, {warps}) {{
    o += wacc[w * {qg} :+ {qg}, :] * c[:, w :+ 1]
  }}
  O[0 :+ {qg}, 0 :+ {d}] = o / l
}}
"""


def checked(text: str):
    program, diags = parse(SourceFile("k.ph", text))
    assert not diags, [d.message for d in diags]
    kernel, diags = check_kernel(program, "k")
    assert kernel is not None, [d.message for d in diags]
    return kernel


def inputs(qg: int, d: int, q_elem: str):
    dtype = np.float16 if q_elem == "f16" else np.float32
    q = (rng.standard_normal((qg, d)) / np.sqrt(d)).astype(dtype)
    k = rng.standard_normal((NK, d)).astype(np.float16)
    v = rng.standard_normal((NK, d)).astype(np.float16)
    return q, k, v


def reference_partials(q, k, v, start: int, stop: int, warps: int):
    """(WM, WL, WACC) in float64, one warp's keys at a time."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    qg, d = q.shape
    wm = np.full((qg, warps), EMPTY)
    wl = np.zeros((qg, warps))
    wacc = np.zeros((qg * warps, d))
    for w in range(warps):
        keys = [j for j in range(start, stop) if 0 <= j < len(k) and (j - start) % warps == w]
        if not keys:
            continue
        s = q @ k[keys].T
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        wm[:, w] = m[:, 0]
        wl[:, w] = p.sum(axis=1)
        wacc[w * qg : (w + 1) * qg] = p @ v[keys]
    return wm, wl, wacc


def reference_attention(q, k, v, start: int, stop: int):
    """softmax(q K^T) V over the keys of [start, stop) inside [0, Nk), in float64."""
    keys = [j for j in range(start, stop) if 0 <= j < len(k)]
    s = np.asarray(q, np.float64) @ np.asarray(k[keys], np.float64).T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ np.asarray(v[keys], np.float64)


SHAPES = [  # (W, QG, D, q's element type)
    (4, 1, 64, "f16"),
    (4, 4, 128, "f32"),
    (8, 4, 64, "f32"),
    (8, 1, 128, "f16"),
    (8, 4, 128, "f16"),
]
RANGES = [  # (start, stop) over Nk = 50 keys
    (0, NK),  # every key
    (3, 41),  # start > 0
    (7, 90),  # stop past Nk
    (44, 47),  # three keys: some warps have none
    (-6, 9),  # keys below 0 are skipped, and the split still counts from start
    (48, 200),  # two keys left past start, the rest past Nk
]


@pytest.mark.parametrize(("warps", "qg", "d", "q_elem"), SHAPES)
@pytest.mark.parametrize(("start", "stop"), RANGES)
def test_partials_and_their_merge(warps, qg, d, q_elem, start, stop):
    kernel = checked(source(qg, d, warps, q_elem))
    q, k, v = inputs(qg, d, q_elem)
    out = {
        "WMo": np.full((qg, warps), np.nan, np.float32),
        "WLo": np.full((qg, warps), np.nan, np.float32),
        "WACCo": np.full((qg * warps, d), np.nan, np.float32),
        "O": np.full((qg, d), np.nan, np.float32),
    }
    run_kernel(kernel, (1,), {"Q": q, "K": k, "V": v, **out, "start": start, "stop": stop})
    wm, wl, wacc = reference_partials(q, k, v, start, stop, warps)
    empty = wm == EMPTY
    assert np.all(out["WMo"][empty] == np.float32(EMPTY))  # a warp with no keys, exactly
    assert not out["WLo"][empty].any()
    np.testing.assert_allclose(out["WMo"], wm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["WLo"], wl, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["WACCo"], wacc, rtol=1e-4, atol=1e-4)
    want = reference_attention(q, k, v, start, stop)
    np.testing.assert_allclose(out["O"], want, rtol=1e-4, atol=1e-5)


def test_some_ranges_leave_warps_without_keys():
    wm, _, _ = reference_partials(*inputs(1, 64, "f32"), 44, 47, 8)
    assert (wm == EMPTY).sum() == 5  # the test above meets empty warps, not only full ones


def test_an_empty_range_leaves_every_warp_at_its_start():
    kernel = checked(source(4, 64, 4, "f32"))
    q, k, v = inputs(4, 64, "f32")
    out = {
        "WMo": np.zeros((4, 4), np.float32),
        "WLo": np.ones((4, 4), np.float32),
        "WACCo": np.ones((16, 64), np.float32),
        "O": np.zeros((4, 64), np.float32),
    }
    run_kernel(kernel, (1,), {"Q": q, "K": k, "V": v, **out, "start": 30, "stop": 30})
    assert np.all(out["WMo"] == np.float32(EMPTY))
    assert not out["WLo"].any() and not out["WACCo"].any()


def test_the_docs_kernel_runs_on_the_interpreter(tmp_path):
    page = (ROOT / "docs" / "attention.md").read_text(encoding="utf-8")
    fence = re.search(r"^```python\n(.*?)^```", page, re.M | re.S).group(1)
    path = tmp_path / "attention_doc.py"
    path.write_text(fence, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("attention_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    heads, nk, d = 8, 40, 128
    q = rng.standard_normal((heads, d)).astype(np.float16)
    k = rng.standard_normal((nk, d)).astype(np.float16)
    v = rng.standard_normal((nk, d)).astype(np.float16)
    for stop in (29, 61):  # the second reaches past Nk
        o = np.full((heads, d), np.nan, np.float32)
        module.decode[(heads // 4,)](q, k, v, o, stop)
        want = reference_attention(q.astype(np.float64) * d**-0.5, k, v, 0, stop)
        np.testing.assert_allclose(o, want, rtol=1e-3, atol=1e-4)
