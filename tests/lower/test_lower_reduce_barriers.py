"""CTA-wide reductions take one barrier each: consecutive exchanges alternate two scratch
slots, so no barrier goes between one exchange's reads and the next one's writes.

The benchmarks' row kernels at each CTA size: the barrier count, a run on the threads
interpreter with the race check (no race, no access outside memory) agreeing with the
tile interpreter, and each barrier, taken out, reported as a race.
"""

import dataclasses

import numpy as np
import pytest
from lowerkit import lowered, ops

from benchmarks import kernels
from phobos.interp.threads import GlobalMemory, run_lir
from phobos.interp.tiles import run_kernel
from phobos.lower import lir

rng = np.random.default_rng(23)
M, N = 2, 1000  # N short of the tile: the last elements are masked

BARRIERS = {"softmax_rows": 2, "layer_norm": 2, "rms_norm": 1}  # one per reduction
BEFORE = {"softmax_rows": 3, "layer_norm": 3, "rms_norm": 1}  # one slot: a barrier between


def _inputs(name):
    f16 = np.float16
    if name == "softmax_rows":
        x = (rng.standard_normal((M, N)) * 4).astype(np.float32)
        return {"X": x, "Y": np.zeros_like(x)}, {}
    arrays = {"X": rng.standard_normal((M, N)).astype(f16), "Y": np.zeros((M, N), f16),
              "W": rng.random((1, N)).astype(f16)}  # fmt: skip
    if name == "layer_norm":
        arrays["B"] = rng.random((1, N)).astype(f16)
    return arrays, {"eps": 1e-5}


def _built(name, t):
    return getattr(kernels, name).compile(variant={"BLOCK": 1024, "T": t})


def _run(hk, k, arrays, scalars):
    """The tile interpreter's arrays, the threads interpreter's, and its race report."""
    ref = {n: a.copy() for n, a in arrays.items()}
    run_kernel(hk, (M,), {**ref, **scalars}, {"M": M, "N": N})
    mem = GlobalMemory()
    addrs = {n: mem.place(a.copy(), n) for n, a in arrays.items()}
    report = run_lir(k, (M,), {**addrs, **scalars, "M": M, "N": N}, mem, check_races=True)
    return ref, {n: mem.read(a) for n, a in addrs.items()}, report


def _without(block: lir.Block, n: int) -> lir.Block:
    """`block` with its `n`-th barrier (in program order, nested ones counted) removed."""
    seen = [0]

    def walk(b):
        items = []
        for item in b.items:
            if isinstance(item, lir.Inst) and item.op == "bar":
                seen[0] += 1
                if seen[0] - 1 == n:
                    continue
            for sub in ("then", "orelse", "body"):
                inner = getattr(item, sub, None)
                if isinstance(inner, lir.Block):
                    item = dataclasses.replace(item, **{sub: walk(inner)})
            items.append(item)
        return lir.Block(tuple(items))

    return walk(block)


CASES = [(name, t) for name in BARRIERS for t in (128, 256, 512)]


@pytest.mark.parametrize(("name", "t"), CASES)
def test_one_barrier_per_reduction_and_a_small_scratch(name, t):
    k = _built(name, t).lir
    assert len(ops(k, "bar")) == BARRIERS[name] == BEFORE[name] - (BEFORE[name] > 1)
    warps = t // 32
    slots = BARRIERS[name]  # two reductions alternate two slots; one keeps one
    assert [(b.name, b.size) for b in k.shared] == [("scratch", slots * warps * 8)]
    assert k.smem <= 256


@pytest.mark.parametrize(("name", "t"), CASES)
def test_race_free_and_agreeing_with_the_tile_interpreter(name, t):
    built = _built(name, t)
    arrays, scalars = _inputs(name)
    ref, got, report = _run(built.hir, built.lir, arrays, scalars)
    assert report.race_free, report.format_races()
    assert report.barriers == M * BARRIERS[name]
    tol = {"rtol": 1e-5, "atol": 1e-8} if name == "softmax_rows" else {"rtol": 1e-3, "atol": 1e-3}
    np.testing.assert_allclose(got["Y"].astype(np.float64), ref["Y"].astype(np.float64), **tol)


@pytest.mark.parametrize(("name", "t"), [("softmax_rows", 128), ("layer_norm", 256),
                                         ("rms_norm", 512)])  # fmt: skip
def test_each_remaining_barrier_guards_a_race(name, t):
    built = _built(name, t)
    arrays, scalars = _inputs(name)
    for n in range(BARRIERS[name]):
        broken = dataclasses.replace(built.lir, body=_without(built.lir.body, n))
        assert len(ops(broken, "bar")) == BARRIERS[name] - 1
        _, _, report = _run(built.hir, broken, arrays, scalars)
        assert not report.race_free, f"barrier {n} of `{name}` removed, yet no race reported"


COLLECTIVES = """
kernel k(X: tensor<f32>[N], O: tensor<f32>[4]) {
  let x = X[ctx.thread]
  let a = sum<over ctx.thread>(x)
  let b = max<over ctx.thread>(x)
  let c = sum<over ctx.thread>(x * x)
  if ctx.thread == 0 {
    O[0] = a
    O[1] = b
    O[2] = c
  }
}
"""


def test_three_collectives_take_turns_on_two_slots():
    hk, k = lowered(COLLECTIVES)
    assert len(ops(k, "bar")) == 3
    assert [(b.name, b.size) for b in k.shared] == [("scratch", 2 * k.threads // 32 * 8)]
    x = rng.standard_normal(k.threads).astype(np.float32)
    ref = {"X": x, "O": np.zeros(4, np.float32)}
    run_kernel(hk, (1,), ref, {"N": k.threads})
    mem = GlobalMemory()
    xa, oa = mem.place(x.copy(), "X"), mem.place(np.zeros(4, np.float32), "O")
    report = run_lir(k, (1,), {"X": xa, "O": oa, "N": k.threads}, mem, check_races=True)
    assert report.race_free, report.format_races()
    np.testing.assert_allclose(mem.read(oa), ref["O"], rtol=1e-5, atol=1e-6)
