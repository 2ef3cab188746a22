"""`attend` lowered (phobos.lower.attend): each warp's keys of [start, stop) read as rows
of f16 a lane's D / 32 columns, the scores folded by shuffles, the running max, sum and
weighted values in registers, the partials stored to shared tiles. Run in the threads
interpreter against the tile interpreter and a float64 reference, race-free, at ragged
ranges (a negative start, a stop past the keys, a warp with none), for f16 and f32 `q`,
one and four query rows, D 64 and 128, W 4 and 8; the PTX assembles with no spill.

    // CHECK: shfl.sync.bfly
    // CHECK: ex2.approx
    // CHECK-NOT: mma
"""

import numpy as np
import pytest
from filecheck import filecheck
from lowerkit import lowered, ops, ptxas_clean
from mmakit import agree, inputs, nan, run

from phobos.ptx.emit import emit_module

KERNEL = """
@launch(THREADS)
kernel k(Q: tensor<f16>[H, D], K: tensor<f16>[NK, D], V: tensor<f16>[NK, D],
         M: tensor<f32>[RM, W], L: tensor<f32>[RM, W], A: tensor<f32>[RA, D],
         start: i32, stop: i32) {
  let h = ctx.block.x * QG
  var q: tile<QELEM>[QG, D] = Q[h :+ QG, :]
  var wm: tile<f32>[QG, W]
  var wl: tile<f32>[QG, W]
  var wacc: tile<f32>[QG * W, D]
  attend(q, K, V, start + ctx.block.x, stop, wm, wl, wacc)
  M[h :+ QG, :] = wm
  L[h :+ QG, :] = wl
  A[ctx.block.x * QG * W :+ QG * W, :] = wacc
}
"""


def source(qg: int, d: int, warps: int, qelem: str) -> str:
    return (KERNEL.replace("THREADS", str(32 * warps)).replace("QG * W", str(qg * warps))
            .replace("QELEM", qelem).replace("QG", str(qg)).replace("D]", f"{d}]")
            .replace(" W]", f" {warps}]"))  # fmt: skip


def reference(q, k, v, start, stop, warps):
    """The partials by the definition (docs/attention.md), in float64."""
    qg, d = q.shape
    wm = np.full((qg, warps), -1.0e30)
    wl = np.zeros((qg, warps))
    wacc = np.zeros((qg * warps, d))
    for w in range(warps):
        keys = [j for j in range(start + w, stop, warps) if 0 <= j < k.shape[0]]
        if not keys:
            continue
        s = q @ k[keys].T
        wm[:, w] = s.max(axis=1)
        p = np.exp(s - wm[:, w : w + 1])
        wl[:, w] = p.sum(axis=1)
        wacc[w * qg : (w + 1) * qg] = p @ v[keys]
    return wm, wl, wacc


CASES = [  # (QG, D, W, q's element, NK, start, stop, blocks)
    (4, 128, 4, "f32", 37, 0, 37, 1),
    (1, 64, 8, "f16", 50, -3, 45, 2),
    (4, 64, 8, "f32", 20, 2, 90, 2),  # stop past the keys; warps with none in block 1
    (2, 128, 4, "f16", 9, 5, 7, 1),  # two keys: two warps with none
]


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("qg, d, warps, qelem, nk, start, stop, blocks", CASES)
def test_attend_agrees_with_the_tile_interpreter(chip, qg, d, warps, qelem, nk, start, stop,
                                                  blocks):  # fmt: skip
    hk, k = lowered(source(qg, d, warps, qelem), chip=chip)
    assert ops(k, "shfl") and not ops(k, "mma")
    h = qg * blocks
    Q, K, V = inputs("f16", (h, d)), inputs("f16", (nk, d)), inputs("f16", (nk, d))
    Q = tuple(x * 0.25 for x in Q)  # scores of a few units: exp stays well inside f32
    arrays = {"Q": Q, "K": K, "V": V, "M": nan(h, warps), "L": nan(h, warps),
              "A": nan(blocks * qg * warps, d)}  # fmt: skip
    want, got = run(hk, k, (blocks,), arrays, {"start": start, "stop": stop})
    agree(got, want, rtol=2e-5, atol=2e-5, outputs=("M", "L", "A"))
    q64, k64, v64 = (x[0].astype(np.float64) for x in (Q, K, V))
    for b in range(blocks):
        rows = slice(b * qg, (b + 1) * qg)
        wm, wl, wacc = reference(q64[rows], k64, v64, start + b, stop, warps)
        np.testing.assert_allclose(got["M"][rows], wm, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got["L"][rows], wl, rtol=1e-4, atol=1e-4)
        acc = got["A"][b * qg * warps : (b + 1) * qg * warps]
        np.testing.assert_allclose(acc, wacc, rtol=1e-4, atol=1e-4)


def test_attend_lowers_to_shuffles_and_assembles():
    _, k = lowered(source(4, 128, 8, "f32"), chip="sm_90a")
    filecheck(__doc__, emit_module([k], "sm_90a"))
    ptxas_clean(k)


def _decode_agrees(
    name: str, slot: int, chip: str, d: int, seed: int, bc: int | None = None, launches: int = 1
):
    """examples/decode.py's split kernel `name`, then its merge from slots of `slot` rows, in the
    threads interpreter, race-free and against float64: two KV heads of 45 keys in splits
    of 16 (the last ragged), four query heads each; returns the split's compiled kernel.
    `decode_mma` merges in its last split instead of a second launch: it runs `launches`
    times on the same counters, which each launch must leave at zero."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import examples.decode as decode
    from phobos.interp.threads import GlobalMemory, run_lir

    heads, s, ch = 2, 45, 16
    splits = -(-s // ch)
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((heads * 4, d)) * 0.5).astype(np.float16)
    k, v = (rng.standard_normal((heads * s, d)).astype(np.float16) for _ in range(2))
    mem = GlobalMemory()
    rows = heads * splits * slot
    # CNT: decode_mma's counter a head, padded to 4 as every extent bound at launch is
    at = {n: mem.place(a, n) for n, a in (
        ("Q", q), ("K", k), ("V", v),
        ("PO", np.full((rows, d), np.nan, np.float32)),
        ("PL", np.full((rows, 1), np.nan, np.float32)),
        ("O", np.full((heads * 4, d), np.nan, np.float32)),
        ("CNT", np.zeros(4, np.int32)))}  # fmt: skip
    dims = {"RQ": heads * 4, "RK": heads * s, "RP": rows, "RO": heads * 4, "NKV": 4}
    consts = {"D": d} if bc is None else {"D": d, "BC": bc}
    built = getattr(decode, name).variant(**consts).compile(chip=chip)
    params = {**at, **dims, "S": s, "CH": ch, "scale": 0.125}
    dynamic = built.lir.smem if built.lir.dynamic_smem else 0
    for _ in range(launches):
        mem.write(at["O"], np.full((heads * 4, d), np.nan, np.float32))  # poisoned again
        result = run_lir(built.lir, (splits, heads), params, mem, check_races=True,
                         dynamic_smem=dynamic)  # fmt: skip
        assert result.race_free, result.format_races()
    if name == "decode_mma":
        assert mem.read(at["CNT"]).tolist() == [0] * 4  # re-armed
    else:
        merge = decode.decode_merge.variant(D=d).compile(chip=chip).lir
        result = run_lir(merge, (heads,), {**at, **dims, "splits": splits}, mem,
                         check_races=True)  # fmt: skip
        assert result.race_free, result.format_races()
    got = mem.read(at["O"])
    for h in range(heads):
        sc = q[4 * h : 4 * h + 4].astype(np.float64) @ k[h * s : (h + 1) * s].T.astype(np.float64)
        p = np.exp(sc * 0.125 - (sc * 0.125).max(axis=1, keepdims=True))
        want = p / p.sum(axis=1, keepdims=True) @ v[h * s : (h + 1) * s].astype(np.float64)
        np.testing.assert_allclose(got[4 * h : 4 * h + 4], want, rtol=2e-3, atol=2e-3)
    return built


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
def test_split_kv_decode_example_agrees_with_float64(chip):
    # `decode_split` (`attend`, eight warps) and the merge from its 4-row slots
    _decode_agrees("decode_split", 4, chip, 64, seed=5)


MMA_SPLIT = """
    // the key and value tiles by a cp.async ring (a 64 x 128 tile on one warp is 32
    // groups: it once fell to plain loads); the scores on mma.sync; each row's max over
    // its quad's lanes by shuffles; the exponentials on the fragments; the weighted values
    // on mma.sync
    // CHECK: cp.async.cg.shared.global
    // CHECK: cp.async.commit_group
    // CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
    // CHECK: shfl.sync.bfly.b32
    // CHECK: ex2.approx
    // CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
"""


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("d, bc", [(64, 32), (128, 64), (128, 128)])
def test_split_kv_decode_on_tensor_cores_agrees_with_float64(chip, d, bc):
    # `decode_split_mma` and the merge from its 16-row slots: every key tile masked past
    # the split, the second head's 16 query rows reading past Q
    built = _decode_agrees("decode_split_mma", 16, chip, d, seed=11, bc=bc)
    filecheck(MMA_SPLIT, built.ptx)
    ptxas_clean(built.lir, chip)


MMA_MERGED = """
    // the split as `decode_split_mma` computes it, then one acquire-release count a
    // CTA, and the merge in the CTA that counts last: its partials read back from global
    // memory, the output written by four-wide stores, the count re-armed
    // CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
    // CHECK: bar.sync
    // CHECK: atom.acq_rel.gpu.global.add.s32
    // CHECK: bar.sync
    // CHECK: ld.global.f32
    // CHECK: st.global.v4.f32
    // CHECK: atom.acq_rel.gpu.global.add.s32
"""


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("d, bc", [(64, 32), (128, 128)])
def test_split_kv_decode_merged_in_its_last_split_agrees_with_float64(chip, d, bc):
    # `decode_mma`: one launch, twice on the same counters, O poisoned before each: the
    # second must find them re-armed, or no split merges and O stays NaN
    built = _decode_agrees("decode_mma", 16, chip, d, seed=13, bc=bc, launches=2)
    filecheck(MMA_MERGED, built.ptx)
    ptxas_clean(built.lir, chip)
