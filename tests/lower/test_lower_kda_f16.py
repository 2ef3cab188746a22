"""kda in f16 on tensor cores (examples/kda_f16.py): every product on mma.sync (sm_80) or
wgmma (sm_90a), none on FMA; the lowered kernel agrees with the tile interpreter in the
threads interpreter, race-free, and with a float64 reference of the chunkwise algorithm,
at whole chunks and a ragged last one; the PTX assembles with no spill or local memory.

The two forms held closest are those whose products all run on wgmma on sm_90a: D = 64 by
chunks of 64 on one warpgroup, and D = 128 by chunks of 128 on two. Every other variant of
the space is run on sm_90a too, where its products mix paths."""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest
from lowerkit import ops, ptxas_clean
from mmakit import agree, inputs, nan, run

from phobos.lower.kernel import lower_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples.kda_f16 import kda_f16  # noqa: E402

FORMS = {"D64": {"D": 64, "C": 64, "T": 128}, "D128": {"D": 128, "C": 128, "T": 256}}
CHIPS = ["sm_80", "sm_90a"]
# dot_t(qd, kd), dot(p, v), dot(qd, sh), dot(kt, v): each one's path by chip and form
PATHS = {
    ("sm_80", "D64"): ["mma.m16n8k16.f16"] * 4,
    ("sm_80", "D128"): ["mma.m16n8k16.f16"] * 4,
    ("sm_90a", "D64"): ["wgmma.m64n64k16.f16"] * 4,
    ("sm_90a", "D128"): ["wgmma.m64n128k16.f16"] * 4,
}
rng = np.random.default_rng(41)


def reference(q, k, v, g, scale, c):
    """kda chunkwise in float64: (N, D) `q`, `k`, `v`, (N, 1) log-gates `g`, chunks of `c`
    tokens (the last one may be short)."""
    n, d = q.shape
    state = np.zeros((d, d))
    out = np.zeros((n, d))
    for t in range(0, n, c):
        qc, kc, vc, gc = q[t : t + c], k[t : t + c], v[t : t + c], g[t : t + c, 0]
        decay = np.cumsum(gc)[:, None]
        qd = qc * np.exp(decay) * scale
        kd = kc * np.exp(-decay)
        out[t : t + c] = np.tril(qd @ kd.T) @ vc + qd @ state
        total = gc.sum()
        state = np.exp(total) * state + (kc * np.exp(total - decay)).T @ vc
    return out


def recurrent(q, k, v, g, scale):
    """The same attention token by token: S_t = exp(g_t) S_{t-1} + k_t^T v_t, o_t = scale q_t S_t."""
    state = np.zeros((q.shape[1], v.shape[1]))
    out = np.zeros_like(q)
    for t in range(q.shape[0]):
        state = np.exp(g[t, 0]) * state + np.outer(k[t], v[t])
        out[t] = scale * q[t] @ state
    return out


def gates(n):
    """Log-gates in (-0.1, -0.001]: a chunk of 128 decays by at most e^-12.8, so the
    decayed keys (`k exp(-b)`) stay well inside f16."""
    g = -0.1 * rng.random((n, 1)) - 0.001
    return g.astype(np.float32)


def test_the_reference_is_the_recurrence():
    q, k, v = (rng.standard_normal((75, 16)) for _ in range(3))
    g = gates(75).astype(np.float64)
    for c in (16, 32):
        np.testing.assert_allclose(reference(q, k, v, g, 0.5, c), recurrent(q, k, v, g, 0.5),
                                   rtol=1e-10, atol=1e-10)  # fmt: skip


@functools.cache
def built(form, chip):
    return kda_f16.variant(**FORMS[form]).compile(chip=chip)


def paths(b, chip) -> list[str]:
    """Each product's path, as the plan records it."""
    made = {}
    lower_kernel(b.hir, chip, after=lambda p, lw, out: made.setdefault(p.name, out))
    return sorted(made["place"].paths.values())


def agrees(b, n: int, d: int, c: int) -> None:
    """The lowered kernel `b` at N = `n` against the tile interpreter and float64."""
    Q, K, V = (inputs("f16", (n, d)) for _ in range(3))
    g = gates(n)
    want, got = run(b.hir, b.lir, (1,), {"Q": Q, "K": K, "V": V, "G": (g, g), "O": nan(n, d)},
                    {"scale": 0.125})  # fmt: skip
    ref = reference(*(x[0].astype(np.float64) for x in (Q, K, V)), g.astype(np.float64), 0.125, c)
    scale = np.abs(ref).max()
    agree(got, want, rtol=2e-3, atol=5e-4 * scale, outputs=("O",))
    np.testing.assert_allclose(got["O"], ref, rtol=3e-3, atol=1e-3 * scale)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_product_runs_on_tensor_cores(form, chip):
    b = built(form, chip)
    assert paths(b, chip) == PATHS[chip, form]
    k = b.lir
    # no product on FMAs: the only fmas left are the exponentials' differences (`exp(a *
    # c - b)` as `ex2(fma(a, c, -b) * log2 e)`), each feeding the mul before an ex2
    powers = {s for i in ops(k, "ex2") for s in i.srcs}
    shifts = {s for i in ops(k, "mul") if i.dests[0] in powers for s in i.srcs}
    assert all(i.dests[0] in shifts for i in ops(k, "fma"))
    if chip == "sm_80":
        assert ops(k, "mma") and not ops(k, "wgmma_mma")
    else:
        assert ops(k, "wgmma_mma") and not ops(k, "mma")
        assert len(ops(k, "tma_load")) >= 1  # `v` by a TMA ring
    # sm_90a: `p` is the A of `dot(p, v)` from the registers of the scores
    assert any(s.name.startswith("tile_p") for s in k.shared) == (chip == "sm_80")


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("form, n", [("D64", 192), ("D64", 200), ("D128", 256), ("D128", 200)])
def test_kda_f16_agrees_with_the_tiles_and_float64(form, n, chip):
    # 200 tokens: a short last chunk (8 rows of 64, 72 of 128), read as zeros past N.
    agrees(built(form, chip), n, FORMS[form]["D"], FORMS[form]["C"])


VARIANTS = [dict(v) for v in kda_f16.checked().attrs.space.variants()]


def named(variant) -> str:
    return "-".join(f"{k}{x}" for k, x in variant.items())


@pytest.mark.parametrize("variant", VARIANTS, ids=named)
def test_every_variant_agrees_on_sm_90a(variant):
    # The space's other variants mix paths on sm_90a (64-row accumulators on wgmma beside
    # 128-row ones, or on two warpgroups); a tile two products share keeps both off wgmma.
    b = kda_f16.variant(**variant).compile(chip="sm_90a")
    found = paths(b, "sm_90a")
    assert len(found) == 4 and all(p.startswith(("mma.", "wgmma.")) for p in found), found
    agrees(b, 200, variant["D"], variant["C"])


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_kda_f16_ptx_assembles_without_a_spill(form, chip):
    ptxas_clean(built(form, chip).lir, chip)
