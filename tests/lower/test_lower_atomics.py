"""Once-per-block operations: atomics, `load_acquire`/`store_release` and `grid_barrier`,
lowered, verified, assembled, and run on the threads interpreter agreeing exactly with
the tile interpreter.

A kernel that spins on another block's write (`grid_barrier`) runs its CTAs side by side
in the threads interpreter, as a co-resident grid does: the two-phase reduction runs on
one CTA and on four, and a barrier whose count never completes is a hang named at it.
"""

import numpy as np
import pytest
from lowerkit import checked, insts, lowered, ops, ptxas, run_both

from phobos.diagnostics.codes import title
from phobos.lower import lir
from phobos.lower.kernel import lower_kernel

rng = np.random.default_rng(11)


def agree(hk, k, grid, arrays, skip=(), dynamic_smem=0):
    ref, got = run_both(hk, k, grid, arrays, dynamic_smem=dynamic_smem)
    for name in ref:
        if name not in skip:
            assert np.array_equal(ref[name], got[name]), name
    for arch in ("sm_90", "sm_80"):
        ptxas(k, arch)
    return ref, got


def test_histogram_with_atomic_add():
    hk, k = lowered("""
@launch(64)
kernel k(X: tensor<i32>[G], H: tensor<i32>[8], S: tensor<f32>[4], O: tensor<i32>[T]) {
  let v = X[ctx.block.x]
  let old = atomic_add(H, v & 7, 1)
  let f = atomic_add(S, 1, f32(v & 3) + 0.25)
  O[ctx.block.x * ctx.threads + ctx.thread] = old * 16 + i32(f)
}""")
    [add] = ops(k, "atom", atom="add", type="s32")
    [fadd] = ops(k, "atom", atom="add", type="f32")
    for atom in (add, fadd):  # ordered, so a block may read what the counted-in wrote
        assert (atom.attr("sem"), atom.attr("scope")) == ("acq_rel", "gpu")
    assert len(ops(k, "bar")) == 4  # two barriers around each atomic
    x = rng.integers(1, 1000, 12).astype(np.int32)
    ref, _ = agree(hk, k, 12, {"X": x, "H": np.ones(8, np.int32),
                               "S": np.ones(4, np.float32), "O": np.ones(12 * 64, np.int32)})  # fmt: skip
    assert ref["H"].sum() == 8 + 12


DYNSHARED_HISTOGRAM = """
@dynshared
@launch(64)
kernel k(X: tensor<i32>[N], H: tensor<i32>[8], F: tensor<i32>[2], O: tensor<i32>[T]) {
  let v = X[ctx.block.x * 64 + ctx.thread]
  let s = sum<over ctx.thread>(v & 7)
  let old = atomic_add(H, s & 7, 1)
  let seen = load_acquire(F, 0)
  store_release(F, 1, ctx.block.x)
  O[ctx.block.x * ctx.threads + ctx.thread] = old * 1024 + s * 4 + seen
}"""


def test_histogram_in_a_dynshared_kernel_broadcasts_through_its_dynamic_window():
    from phobos.build import build_checked

    hk, k = lowered(DYNSHARED_HISTOGRAM)
    assert k.dynamic_smem
    [slot] = [b for b in k.shared if b.name == "bcast"]
    others = [b for b in k.shared if b is not slot]
    assert others and slot.offset >= max(b.offset + b.size for b in others)  # after the tiles
    assert slot.offset % 16 == 0 and slot.offset + slot.size <= k.smem
    contract = build_checked(hk, chip="sm_90").contract
    assert contract.dynamic_smem == k.smem and contract.static_smem == 0  # the launch's size
    x = rng.integers(0, 1000, 4 * 64).astype(np.int32)
    arrays = {"X": x, "H": np.zeros(8, np.int32), "F": np.array([5, 0], np.int32),
              "O": np.ones(4 * 64, np.int32)}  # fmt: skip
    ref, _ = agree(hk, k, 4, arrays, dynamic_smem=contract.dynamic_smem)
    assert ref["H"].sum() == 4 and ref["F"].tolist() == [5, 3]


LAST_BLOCK_SUMS = """
kernel k(X: tensor<f32>[N], P: tensor<f32>[G], C: tensor<i32>[1], O: tensor<f32>[1]) {
  let b = ctx.block.x
  let s = sum<over ctx.thread>(X[b * 256 + ctx.thread])
  if ctx.thread == 0 { P[b] = s }
  barrier()
  let done = atomic_add(C, 0, 1)
  if done == ctx.blocks.x - 1 {
    // the last block to count itself in reads every block's partial
    var t: f32 = 0.0
    for j in range(0, ctx.blocks.x) {
      t += P[j]
    }
    if ctx.thread == 0 { O[0] = t }
    let rearmed = atomic_add(C, 0, 0 - ctx.blocks.x)
  }
}"""


def test_the_last_block_to_count_in_reads_the_others_partials():
    hk, k = lowered(LAST_BLOCK_SUMS)
    adds = ops(k, "atom", atom="add")
    assert len(adds) == 2 and all(a.attr("sem") == "acq_rel" for a in adds)
    x = rng.standard_normal(5 * 256).astype(np.float32)
    arrays = {"X": x, "P": np.full(5, np.nan, np.float32), "C": np.zeros(1, np.int32),
              "O": np.full(1, np.nan, np.float32)}  # fmt: skip
    ref, _ = agree(hk, k, 5, arrays)
    assert ref["C"].tolist() == [0]  # re-armed for the next launch
    assert abs(ref["O"][0] - x.astype(np.float64).sum()) < 1e-3


def test_atomic_cas_gives_every_thread_old():
    hk, k = lowered("""
kernel k(L: tensor<i32>[2], O: tensor<i32>[T]) {
  let got = atomic_cas(L, 1, 7, ctx.block.x + 100)
  O[ctx.block.x * ctx.threads + ctx.thread] = got
}""")
    assert ops(k, "atom", atom="cas")
    agree(hk, k, 3, {"L": np.array([5, 7], np.int32), "O": np.ones(3 * 256, np.int32)})


def test_flag_handshake_within_one_launch():
    # block 0 publishes data and releases the flag; the other blocks acquire it first
    hk, k = lowered("""
@launch(32)
kernel k(F: tensor<i32>[4], D: tensor<f32>[32], X: tensor<f32>[32], O: tensor<f32>[T]) {
  if ctx.block.x == 0 {
    D[ctx.thread] = X[ctx.thread] * 2.0
    store_release(F, 0, 1)
  } else {
    while load_acquire(F, 0) == 0 {
    }
    O[ctx.block.x * ctx.threads + ctx.thread] = D[31 - ctx.thread]
  }
}""")
    [ld] = ops(k, "ld", sem="acquire")
    [st] = ops(k, "st", sem="release")
    assert ld.attr("scope") == st.attr("scope") == "sys"
    x = rng.standard_normal(32).astype(np.float32)
    agree(hk, k, 4, {"F": np.zeros(4, np.int32), "D": np.ones(32, np.float32), "X": x,
                     "O": np.ones(4 * 32, np.float32)})  # fmt: skip


REDUCE = """
@persistent
@launch(64)
kernel k(X: tensor<f32>[N], P: tensor<f32>[G], bar: tensor<i32>[2], O: tensor<f32>[4]) {
  let s = sum<over ctx.thread>(X[ctx.block.x * 64 + ctx.thread])
  if ctx.thread == 0 {
    P[ctx.block.x] = s
  }
  grid_barrier(bar)
  if ctx.block.x == 0 {
    if ctx.thread == 0 {
      var acc: f32 = 0.0
      for i in range(0, ctx.blocks.x) {
        acc += P[i]
      }
      O[0] = acc
    }
  }
  grid_barrier(bar)
  O[1] = 1.0
}"""


def test_two_phase_reduction_over_grid_barrier_runs_on_one_cta():
    hk, k = lowered(REDUCE)
    x = rng.standard_normal(64).astype(np.float32)
    arrays = {"X": x, "P": np.ones(4, np.float32), "bar": np.zeros(2, np.int32),
              "O": np.ones(4, np.float32)}  # fmt: skip
    _, got = agree(hk, k, 1, arrays, skip=("bar",))
    assert got["bar"].tolist() == [0, 2]  # the count re-armed, two generations passed


def test_two_phase_reduction_over_grid_barrier_runs_on_four_ctas():
    hk, k = lowered(REDUCE)
    x = rng.standard_normal(4 * 64).astype(np.float32)
    arrays = {"X": x, "P": np.ones(4, np.float32), "bar": np.zeros(2, np.int32),
              "O": np.ones(4, np.float32)}  # fmt: skip
    _, got = agree(hk, k, 4, arrays, skip=("bar",))
    assert got["bar"].tolist() == [0, 2]
    partial = x.reshape(4, 64).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(got["O"][0], partial.sum(), rtol=1e-5)


def test_a_grid_barrier_that_cannot_complete_is_a_hang_named_at_it():
    from phobos.interp import GlobalMemory, InterpError, run_lir

    _, k = lowered(REDUCE)
    mem = GlobalMemory()
    params = {"X": mem.place(np.ones(128, np.float32)), "P": mem.place(np.ones(4, np.float32)),
              "bar": mem.place(np.array([5, 0], np.int32)),  # a count left at 5: never 1
              "O": mem.place(np.ones(4, np.float32)), "N": 128, "G": 4}  # fmt: skip
    with pytest.raises(InterpError, match="waits for a write no other block can make"):
        run_lir(k, 2, params, mem)


def test_grid_barrier_structure():
    _, k = lowered(REDUCE)
    acquire = ops(k, "ld", sem="acquire", scope="gpu")
    assert len(acquire) == 4  # per barrier: the generation read, and the spin's
    arrive = ops(k, "atom", atom="add", sem="acq_rel", scope="gpu")
    assert len(arrive) == 2
    assert len(ops(k, "st", sem="release", scope="gpu")) == 2
    assert len(ops(k, "st", sem="relaxed", scope="gpu")) == 2  # the count re-armed

    def spins(block):
        for item in block.items:
            if isinstance(item, lir.Loop):
                yield item
            for sub in ("then", "orelse", "body"):
                inner = getattr(item, sub, None)
                if isinstance(inner, lir.Block):
                    yield from spins(inner)

    loops = list(spins(k.body))
    assert len(loops) == 2
    for loop in loops:
        [ld] = [i for i in insts(loop.body) if i.op == "ld"]
        assert ld.attr("sem") == "acquire"
        assert isinstance(loop.body.items[-1], lir.Break)


def test_refusals_are_precise():
    hk = checked("""
kernel k(bar: tensor<i32>[2], X: tensor<f32>[N]) {
  X[ctx.thread] = 1.0
  grid_barrier(bar)
}""")
    k, [d] = lower_kernel(hk)
    assert k is None and d.code == "E0531" and "@persistent" in d.message
    assert d.primary.span.source.line_col(d.primary.span.start)[0] == 4
    for code in ("E0530", "E0531", "E0532"):
        assert title(code)
