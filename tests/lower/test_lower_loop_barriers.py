"""A loop's entry barrier stays only where a turn's first shared accesses meet the
previous turn's last ones (or what came before the loop): each case is also run on the
threads interpreter, which records every shared-memory race, against the tile interpreter."""

import numpy as np
import pytest
from lowerkit import RaceFound, lowered, run_both

from phobos.lower import lir

rng = np.random.default_rng(23)

# A shared tile updated in place by one sweep a turn: each thread touches only its own
# elements, turn after turn, so no turn waits for another's threads.
ACCUMULATE = """
@launch(THREADS)
kernel k(X: tensor<f32>[M, 8192], Y: tensor<f32>[1, 8192], S: tensor<f32>[M, 1]) {
  var acc: tile<f32>[1, 8192] = X[0 :+ 1, 0 :+ 8192]
  for r in range(1, M) {
    acc = acc + X[r :+ 1, 0 :+ 8192]
    S[r :+ 1, 0 :+ 1] = rowsum(acc)
  }
  Y[0 :+ 1, 0 :+ 8192] = acc
}
"""

# The turn ends reading its neighbours' elements: the next turn's write must wait.
TAIL_READ = """
kernel k(X: tensor<f32>[M, 256], Y: tensor<f32>[M, 256]) {
  var t: tile<f32>[1, 256]
  for r in range(0, M) {
    t = X[r :+ 1, 0 :+ 256] * 2.0
    Y[r, ctx.thread] = t[0, (ctx.thread + 1) % 256]
  }
}
"""


def loop_bars(block: lir.Block, inside: bool = False) -> int:
    """Barriers inside loops (each runs once a turn)."""
    n = 0
    for item in block.items:
        if isinstance(item, lir.Inst) and item.op == "bar" and inside:
            n += 1
        for part in ("body", "then", "orelse"):
            sub = getattr(item, part, None)
            if isinstance(sub, lir.Block):
                n += loop_bars(sub, inside or isinstance(item, (lir.For, lir.Loop)))
    return n


@pytest.mark.parametrize(("threads", "bars"), [(32, 0), (64, 2)])
def test_a_tile_updated_by_one_sweep_a_turn_needs_no_entry_barrier(threads, bars):
    # One warp: the row sum is shuffles alone, and no turn needs a barrier. Two: the sum's
    # exchange has its barrier, and the next turn's exchange writes the slot this turn's
    # read, so the entry barrier stays too.
    hk, k = lowered(ACCUMULATE.replace("THREADS", str(threads)))
    assert loop_bars(k.body) == bars
    m = 5
    arrays = {"X": rng.standard_normal((m, 8192)).astype(np.float32),
              "Y": np.full((1, 8192), np.nan, np.float32),
              "S": np.full((m, 1), np.nan, np.float32)}  # fmt: skip
    ref, got = run_both(hk, k, (1,), arrays, dims={"M": m})  # fails on a race
    np.testing.assert_allclose(got["Y"], ref["Y"], rtol=1e-6)
    np.testing.assert_allclose(got["S"][1:], ref["S"][1:], rtol=1e-5)


def test_a_turn_that_ends_reading_other_threads_elements_keeps_its_entry_barrier():
    hk, k = lowered(TAIL_READ)
    assert loop_bars(k.body) == 2  # at the turn's entry, and between its write and read
    m = 4
    arrays = {"X": rng.standard_normal((m, 256)).astype(np.float32),
              "Y": np.full((m, 256), np.nan, np.float32)}  # fmt: skip
    ref, got = run_both(hk, k, (1,), arrays, dims={"M": m})
    np.testing.assert_array_equal(got["Y"], ref["Y"])


def test_without_the_entry_barrier_the_threads_interpreter_sees_the_race():
    # The checks above mean something: drop the kept entry barrier and the recorder
    # reports the write of turn r+1 racing the read of turn r.
    hk, k = lowered(TAIL_READ)
    loop = next(i for i in k.body.items if isinstance(i, (lir.For, lir.Loop)))
    first = next(i for i in loop.body.items if isinstance(i, lir.Inst) and i.op == "bar")
    body = lir.Block(tuple(i for i in loop.body.items if i is not first))
    import dataclasses

    broken = dataclasses.replace(
        k,
        body=lir.Block(
            tuple(dataclasses.replace(i, body=body) if i is loop else i for i in k.body.items)
        ),  # fmt: skip
    )
    m = 3
    arrays = {"X": rng.standard_normal((m, 256)).astype(np.float32),
              "Y": np.zeros((m, 256), np.float32)}  # fmt: skip
    with pytest.raises(RaceFound, match="race"):
        run_both(hk, broken, (1,), arrays, dims={"M": m})
