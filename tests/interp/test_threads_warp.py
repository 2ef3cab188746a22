"""interp.threads: warp shuffles (every mode, segments by width, the moved predicate)
and votes, against numpy."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.interp.threads_warp import shfl_source
from phobos.lower.lir import Block, If, Imm, Kernel, Param, Reg, inst
from phobos.lower.verify import verify

u32, f32, u64 = "u32", "f32", "u64"
t, a, x, y = Reg("t", u32), Reg("a", u64), Reg("x", f32), Reg("y", f32)
IN, OUT = Reg("inp", u64), Reg("out", u64)
p = Reg("p", "pred")


def prologue():
    """t = tid; a = 4 * t; x = inp[t]."""
    return (
        inst("sreg", (t,), (), name="tid.x"),
        inst("mul_wide", (a,), (t, Imm(4, u32)), type=u32),
        inst("add", (Reg("ai", u64),), (a, IN), type=u64),
        inst("ld", (x,), (Reg("ai", u64),), space="global", type=f32),
        inst("add", (a,), (a, OUT), type=u64),
    )


def run(items, data, threads, out_dtype=np.float32):
    kernel = Kernel(
        "k", (Param("inp", u64), Param("out", u64)), Block((*prologue(), *items)), threads=threads
    )
    verify(kernel)
    mem = GlobalMemory()
    pi = mem.place(data)
    po = mem.place(np.zeros(threads, out_dtype))
    run_lir(kernel, 1, {"inp": pi, "out": po}, mem)
    return mem.read(po)


def test_butterfly_reduction_sums_each_warp():
    threads = 96
    data = np.random.default_rng(1).standard_normal(threads).astype(np.float32)
    items = []
    for offset in (16, 8, 4, 2, 1):
        items.append(
            inst("shfl", (y,), (x, Imm(offset, u32), Imm(31, u32)), mode="bfly", type="b32")
        )
        items.append(inst("add", (x,), (x, y), type=f32))
    items.append(inst("st", (), (a, x), space="global", type=f32))
    got = run(items, data, threads)
    want = data.copy()
    lane = np.arange(threads) % 32
    for offset in (16, 8, 4, 2, 1):
        want = want + want[np.arange(threads) - lane + (lane ^ offset)]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got[::32], data.reshape(3, 32).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("width", [32, 16, 8, 4])
@pytest.mark.parametrize(
    ("mode", "b", "clamp"), [("idx", 3, 31), ("down", 1, 31), ("up", 2, 0), ("bfly", 1, 31)]
)
def test_shuffles_stay_in_their_segment(mode, b, clamp, width):
    threads = 64
    data = np.arange(threads, dtype=np.float32)
    c = ((32 - width) << 8) | clamp
    moved = Reg("moved", "pred")
    items = (
        inst("shfl", (y, moved), (x, Imm(b, u32), Imm(c, u32)), mode=mode, type="b32"),
        inst("selp", (y,), (y, Imm(-1.0, f32), moved), type=f32),
        inst("st", (), (a, y), space="global", type=f32),
    )
    got = run(items, data, threads)
    lane = np.arange(threads) % 32
    seg = lane - lane % width
    within = lane % width
    source = {
        "idx": seg + b % width,
        "down": np.where(within + b < width, lane + b, -1),
        "up": np.where(within - b >= 0, lane - b, -1),
        "bfly": np.where((within ^ b) < width, lane ^ b, -1),
    }[mode]
    want = np.where(source >= 0, np.arange(threads) - lane + source, -1).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_shfl_source_is_ptx_pseudocode():
    lanes = np.arange(32)
    assert shfl_source("idx", lanes, 40, 31).tolist() == [8] * 32  # b keeps its low 5 bits
    assert shfl_source("up", lanes, 1, 0).tolist() == [0] + list(range(31))


def test_reading_an_inactive_lane_is_an_error():
    items = (
        inst("setp", (p,), (t, Imm(16, u32)), cmp="lt", type=u32),
        If(
            p,
            Block((inst("shfl", (y,), (x, Imm(16, u32), Imm(31, u32)), mode="bfly", type="b32"),)),
        ),
    )
    with pytest.raises(InterpError, match="reads lane 16 of its warp, which is not running"):
        run(items, np.zeros(32, np.float32), 32)


def test_votes_over_the_running_lanes_of_each_warp():
    threads = 80  # the last warp is partial
    rng = np.random.default_rng(3)
    data = rng.standard_normal(threads).astype(np.float32)
    data[32:64] = np.abs(data[32:64]) + 1  # a warp where every lane votes yes
    data[64:] = -1  # and one where none does
    q, r = Reg("q", "pred"), Reg("r", "pred")
    ballot, bits = Reg("ballot", "b32"), Reg("bits", u32)
    items = (
        inst("setp", (p,), (x, Imm(0.0, f32)), cmp="gt", type=f32),
        inst("vote", (q,), (p,), mode="any"),
        inst("vote", (r,), (p,), mode="all"),
        inst("vote", (ballot,), (p,), mode="ballot", type="b32"),
        inst("selp", (Reg("qa", u32),), (Imm(1, u32), Imm(0, u32), q), type=u32),
        inst("selp", (Reg("ra", u32),), (Imm(2, u32), Imm(0, u32), r), type=u32),
        inst("or", (bits,), (Reg("qa", u32), Reg("ra", u32)), type="b32"),
        inst("mov", (Reg("both", "b64"),), (ballot, bits), type="b64"),  # packed, low first
        inst("mul_wide", (Reg("o4", u64),), (t, Imm(4, u32)), type=u32),
        inst("add", (a,), (a, Reg("o4", u64)), type=u64),  # out + 8 t
        inst("st", (), (a, Reg("both", "b64")), space="global", type="b64"),
    )
    got = run(items, data, threads, np.uint64)
    pos = data > 0
    for w in range(3):
        lanes = pos[32 * w : 32 * w + 32]
        ballot_want = sum(1 << k for k, v in enumerate(lanes) if v)
        flags = int(lanes.any()) | 2 * int(lanes.all())
        assert (got[32 * w : 32 * w + len(lanes)] == ballot_want | flags << 32).all()


def test_any_and_all_ignore_lanes_outside_the_branch():
    threads = 32
    data = np.arange(threads, dtype=np.float32)
    q, r = Reg("q", "pred"), Reg("r", "pred")
    res = Reg("res", u32)
    items = (
        inst("mov", (res,), (Imm(9, u32),), type=u32),
        inst("setp", (p,), (t, Imm(8, u32)), cmp="lt", type=u32),
        If(
            p,
            Block(
                (
                    inst("setp", (q,), (x, Imm(100.0, f32)), cmp="lt", type=f32),
                    inst("vote", (r,), (q,), mode="all"),
                    inst("selp", (res,), (Imm(1, u32), Imm(0, u32), r), type=u32),
                )
            ),
        ),
        inst("st", (), (a, res), space="global", type=u32),
    )
    got = run(items, data, threads, np.uint32)
    assert got.tolist() == [1] * 8 + [9] * 24


def test_vote_uni_holds_where_the_running_lanes_agree():
    threads = 64
    data = np.where(np.arange(threads) < 40, 1.0, -1.0).astype(np.float32)  # warp 1 splits
    u = Reg("u", "pred")
    items = (
        inst("setp", (p,), (x, Imm(0.0, f32)), cmp="gt", type=f32),
        inst("vote", (u,), (p,), mode="uni"),
        inst("selp", (Reg("r", u32),), (Imm(1, u32), Imm(0, u32), u), type=u32),
        inst("st", (), (a, Reg("r", u32)), space="global", type=u32),
    )
    got = run(items, data, threads, np.uint32)
    assert got.tolist() == [1] * 32 + [0] * 32


def test_lane_and_warp_ids():
    lane_, warp_ = Reg("lane", u32), Reg("warp", u32)
    items = (
        inst("sreg", (lane_,), (), name="laneid"),
        inst("sreg", (warp_,), (), name="warpid"),
        inst("mad", (lane_,), (warp_, Imm(100, u32), lane_), type=u32),
        inst("st", (), (a, lane_), space="global", type=u32),
    )
    got = run(items, np.zeros(70, np.float32), 70, np.uint32)
    assert got.tolist() == [k // 32 * 100 + k % 32 for k in range(70)]
