"""Split-KV decode attention on the card (examples/decode.py: the `attend` built-in, and
`decode_split_mma` on tensor cores, its 16-row slots merged by the same kernel; and
`decode_mma`, whose last split of a head merges them in the same launch):
one token's 4 query heads a KV head, the cache split between CTAs (the last split
ragged), launched as a user launches it, outputs poisoned with NaN first, against a
float64 reference."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples.decode import decode_merge, decode_mma, decode_split, decode_split_mma  # noqa: E402


@pytest.mark.parametrize(
    "form", ["attend", "mma BC=32", "mma BC=64", "merged BC=32", "merged BC=128"]
)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("heads, s, ch", [(8, 1000, 256), (3, 4100, 512), (16, 300, 1024)])
def test_split_kv_decode_on_the_card(heads, s, ch, d, form):
    splits = -(-s // ch)
    scale = d**-0.5
    q = torch.randn(heads * 4, d).half()
    k, v = (torch.randn(heads * s, d).half() for _ in range(2))
    slot = 4 if form == "attend" else 16  # a split's rows of partials
    po = torch.full((heads * splits * slot, d), float("nan"), device="cuda")
    pl = torch.full((heads * splits * slot, 1), float("nan"), device="cuda")
    o = torch.full((heads * 4, d), float("nan"), device="cuda")
    if form == "attend":
        split = decode_split.variant(D=d)
    elif form.startswith("mma"):
        split = decode_split_mma.variant(D=d, BC=int(form.split("=")[1]))
    if not form.startswith("merged"):
        split[(splits, heads)](q.cuda(), k.cuda(), v.cuda(), po, pl, s, ch, scale)
        decode_merge.variant(D=d)[(heads,)](po, pl, o, splits)
    else:
        # twice on the same counters, O poisoned before each: the second launch merges
        # only if the first left every count re-armed at zero
        merged = decode_mma.variant(D=d, BC=int(form.split("=")[1]))
        cnt = torch.zeros(-(-heads // 4) * 4, dtype=torch.int32, device="cuda")  # padded
        for _ in range(2):
            o.fill_(float("nan"))
            merged[(splits, heads)](q.cuda(), k.cuda(), v.cuda(), po, pl, o, cnt, s, ch, scale)
        assert not cnt.any()
    torch.cuda.synchronize()
    got = o.cpu().numpy()
    assert not np.isnan(got).any(), "elements never written"
    q64, k64, v64 = (x.double().numpy() for x in (q, k, v))
    for h in range(heads):
        sc = q64[4 * h : 4 * h + 4] @ k64[h * s : (h + 1) * s].T * scale
        p = np.exp(sc - sc.max(axis=1, keepdims=True))
        want = p / p.sum(axis=1, keepdims=True) @ v64[h * s : (h + 1) * s]
        np.testing.assert_allclose(got[4 * h : 4 * h + 4], want, rtol=2e-3, atol=2e-3)
