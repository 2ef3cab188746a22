"""Bound predicates shared: one `setp` a (column, extent) test a block scope.

The X load, the W and B loads and the Y store of a row kernel test the same per-thread
columns against the same extent `N`; the tests are made once a block (each arm of a
versioned sweep its own) and reused by the later accesses and statements of that
block, never after a loop body or in the other arm. Results are unchanged: the
threads interpreter agrees with the tile interpreter at ragged and aligned `N`.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from lowerkit import insts, lowered, ptxas, run_both

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import kernels  # noqa: E402

# (kernel, BLOCK, T, setp in the lir): before sharing 26, 86, 15, 42, 15, 51
SETPS = [
    ("layer_norm", 1024, 128, 20),
    ("layer_norm", 8192, 256, 62),
    ("rms_norm", 1024, 128, 12),
    ("rms_norm", 8192, 256, 30),
    ("softmax_rows", 1024, 128, 15),
    ("softmax_rows", 8192, 256, 51),
]
IDS = [f"{n}-{b}" for n, b, _, _ in SETPS]


def built(name, block, threads):
    return getattr(kernels, name).variant(BLOCK=block, T=threads).compile(chip="sm_90")


@pytest.mark.parametrize(("name", "block", "threads", "setps"), SETPS, ids=IDS)
def test_setp_count(name, block, threads, setps):
    k = built(name, block, threads).lir
    assert sum(1 for i in insts(k.body) if i.op == "setp") == setps


@pytest.mark.parametrize(("name", "block", "threads", "setps"), SETPS, ids=IDS)
def test_assembles(name, block, threads, setps):
    k = built(name, block, threads).lir
    ptxas(k, "sm_90")
    ptxas(k, "sm_80")


def _inputs(name, m, n, rng):
    if name == "softmax_rows":
        x = rng.standard_normal((m, n)).astype(np.float32)
        return {"X": x, "Y": np.zeros_like(x)}, {}
    x = rng.standard_normal((m, n)).astype(np.float16)
    arrays = {"X": x, "Y": np.zeros_like(x), "W": rng.standard_normal((1, n)).astype(np.float16)}
    if name == "layer_norm":
        arrays["B"] = rng.standard_normal((1, n)).astype(np.float16)
    return arrays, {"eps": np.float32(1e-5)}


@pytest.mark.parametrize("n", [1000, 1020, 1024, 512])
@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "softmax_rows"])
def test_agrees_with_tiles(name, n):
    b = built(name, 1024, 128)
    arrays, scalars = _inputs(name, 2, n, np.random.default_rng(n))
    ref, got = run_both(b.hir, b.lir, (2, 1, 1), arrays, scalars)
    np.testing.assert_allclose(got["Y"].astype(np.float32), ref["Y"].astype(np.float32),
                               rtol=2e-3, atol=2e-3)  # fmt: skip


def _undefined(k) -> list[str]:
    """Registers read where some path from entry has not written them (a value made
    in a loop body is not counted after it, one made in an arm of an `if` only where
    both arms make it)."""
    from phobos.lower import lir

    missing = []

    def walk(block, known):
        for item in block.items:
            if isinstance(item, lir.Inst):
                regs = [s for s in item.srcs if isinstance(s, lir.Reg)]
                if item.guard is not None:
                    regs.append(item.guard)
                missing.extend(r.name for r in regs if r.name not in known)
                known |= {d.name for d in item.dests}
            elif isinstance(item, lir.If):
                if item.cond.name not in known:
                    missing.append(item.cond.name)
                then = walk(item.then, set(known))
                other = walk(item.orelse, set(known)) if item.orelse is not None else set(known)
                known |= then & other
            elif isinstance(item, lir.For):
                walk(item.body, known | {item.var.name})
            elif isinstance(item, lir.Loop):
                walk(item.body, set(known))
        return known

    walk(k.body, {p.name for p in k.params})
    return missing


@pytest.mark.parametrize(("name", "block", "threads", "setps"), SETPS, ids=IDS)
def test_every_shared_guard_is_made_before_its_reads(name, block, threads, setps):
    assert _undefined(built(name, block, threads).lir) == []


LOOPS = """
kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], Z: tensor<f32>[M, N]) {
  let r = ctx.block.x
  for c in range(0, M, 1) {
    Z[r :+ 1, 0 :+ 1024] = X[r :+ 1, 0 :+ 1024] * 3.0
  }
  Y[r :+ 1, 0 :+ 1024] = X[r :+ 1, 0 :+ 1024]
  for c in range(0, 2048, 1024) {
    Z[r :+ 1, c :+ 1024] = X[r :+ 1, c :+ 1024] + Y[r :+ 1, 0 :+ 1024]
  }
  Y[r :+ 1, 0 :+ 1024] = Y[r :+ 1, 0 :+ 1024] * 2.0
}
"""


@pytest.mark.parametrize("n", [1000, 1024, 2048, 1500])
def test_guards_made_in_a_loop_are_not_read_after_it(n):
    hk, k = lowered(LOOPS, variant=None)
    assert _undefined(k) == []
    x = np.random.default_rng(n).standard_normal((3, n)).astype(np.float32)
    arrays = {"X": x, "Y": np.zeros_like(x), "Z": np.zeros_like(x)}
    ref, got = run_both(hk, k, (3,), arrays)
    for name in ("Y", "Z"):
        np.testing.assert_array_equal(got[name], ref[name])
    ptxas(k)
