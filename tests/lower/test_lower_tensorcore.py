"""`dot` and `dot_t` under `@tensorcore` on mma.sync m16n8k16: the accumulator's layout as
a map (a bijection, the ISA's C fragments), each form's instruction mix pinned by the
CHECK lines in the kernel's own source (`filecheck`, against its lir and PTX), and its
result in the threads interpreter against the tile interpreter at ragged sizes, race-free."""

import pytest

from phobos.lower.fragments import c_m16n8k16
from phobos.lower.layout import MmaAcc

# ---------------------------------------------------------------------------
# The accumulator's layout


@pytest.mark.parametrize(
    "shape, threads",
    [((16, 8), 32), ((64, 32), 128), ((64, 64), 128), ((128, 128), 256), ((32, 16), 64),
     ((16, 64), 128), ((64, 8), 128)],
)  # fmt: skip
def test_mma_accumulator_is_a_bijection(shape, threads):
    lay = MmaAcc.choose(shape, threads)
    assert lay is not None
    seen = set()
    for t in range(threads):
        origin = lay.thread_origin(t)
        for r in range(lay.regs_per_thread):
            c = lay.coord(t, r)
            assert lay.owner(c) == (t, r)
            dr, dc = lay.offset(r)
            assert c == (origin[0] + dr, origin[1] + dc)
            seen.add(c)
    assert len(seen) == shape[0] * shape[1]
    assert lay.regs_per_thread * threads == shape[0] * shape[1]


def test_mma_accumulator_registers_are_the_isa_c_fragments():
    # A warp's first fragment is the ISA's C picture; the next is 8 columns on.
    lay = MmaAcc((16, 16), 32, 1, 1)
    for lane in range(32):
        for reg in range(4):
            assert lay.coord(lane, reg) == c_m16n8k16(lane, reg)
            row, col = c_m16n8k16(lane, reg)
            assert lay.coord(lane, 4 + reg) == (row, col + 8)
    # A group of two is a column pair of one row.
    for r in range(0, lay.regs_per_thread, 2):
        (r0, c0), (r1, c1) = lay.coord(3, r), lay.coord(3, r + 1)
        assert (r1, c1) == (r0, c0 + 1)


def test_mma_accumulator_warp_grid():
    # Four warps over 64 x 64: a 2 x 2 grid of 32 x 32 blocks, each 2 x 4 fragments.
    lay = MmaAcc.choose((64, 64), 128)
    assert (lay.warps_m, lay.warps_n, lay.wm, lay.wn, lay.frags) == (2, 2, 32, 32, 8)
    assert lay.coord(32, 0) == (0, 32) and lay.coord(64, 0) == (32, 0)
    # Over 64 x 32 a warp's 16 x 32 block loads as few fragments per mma as a 32 x 16 one.
    assert MmaAcc.choose((64, 32), 128).wn == 32
    # No grid of 8 warps tiles 16 x 16 with 16 x 8 fragments, nor of 3 warps 64 x 64.
    assert MmaAcc.choose((16, 16), 256) is None
    assert MmaAcc.choose((64, 64), 96) is None
    with pytest.raises(ValueError):
        MmaAcc((16, 12), 32, 1, 1)
