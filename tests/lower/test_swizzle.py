"""The XOR swizzle of a shared tile's 16-byte chunks (`phobos.lower.swizzle`): conflict-free
for ldmatrix's eight rows at one column and for a warp's 16-byte copies, its own inverse,
inside each row, and unchanged by a move of its period, for every row size it takes."""

import pytest

from phobos.lower.swizzle import LINE, emit, period, physical, swizzles

ROWS = [32, 64, 128, 256, 512, 1024]


def _bank_chunk(off: int) -> int:
    return off % LINE // 16


@pytest.mark.parametrize("row", ROWS)
def test_eight_rows_at_one_column_meet_eight_chunks(row):
    for first in range(24):
        for col in range(row // 16):
            chunks = {_bank_chunk(physical((first + r) * row + 16 * col, row)) for r in range(8)}
            assert len(chunks) == 8, (row, first, col)


@pytest.mark.parametrize("row", ROWS)
def test_a_warps_copies_take_the_fewest_wavefronts(row):
    # 32 lanes copy 16 bytes each, one after another along the rows: 512 bytes, whose
    # chunks spread evenly over the 8 chunks of the banks (4 wavefronts).
    for start in range(0, 8 * row, 512):
        chunks = [_bank_chunk(physical(start + 16 * lane, row)) for lane in range(32)]
        assert sorted(chunks.count(c) for c in range(8)) == [4] * 8


@pytest.mark.parametrize("row", ROWS)
def test_a_permutation_of_each_row_and_its_own_inverse(row):
    for off in range(0, 16 * row, 16):
        moved = physical(off, row)
        assert moved // row == off // row and moved % 16 == 0
        assert physical(moved, row) == off
        assert physical(off + 5, row) == moved + 5  # bytes within a chunk stay


@pytest.mark.parametrize("row", ROWS)
def test_a_move_of_its_period_keeps_the_swizzle(row):
    p = period(row)
    for off in range(0, 16 * row, 16):
        assert physical(off + 3 * p, row) == physical(off, row) + 3 * p


def test_which_rows_take_it():
    assert [r for r in range(16, 2049, 16) if swizzles(r)] == ROWS + [2048]


def test_the_lir_computes_the_same_offsets():
    # `emit` on a register computes `physical`: its three instructions, run on offsets.
    from phobos.lower.lir import Imm

    class Fake:
        def __init__(self):
            self.insts = []

        def op(self, op, t, *srcs, dest_type=None, hint=None):
            self.insts.append((op, srcs))
            return (op, srcs)

    for row in ROWS:
        fake = Fake()
        emit(fake, "off", row)
        (shr, (_, s)), (and_, (_, m)), (xor, _) = fake.insts
        assert (shr, and_, xor) == ("shr", "and", "xor")
        for off in range(0, 8 * row, 16):
            assert off ^ ((off >> s.value) & m.value) == physical(off, row)
        assert emit(fake, Imm(row + 16, "u32"), row).value == physical(row + 16, row)


class _Eval:
    """A builder whose ops compute on Python ints (to run `emit`'s lir on offsets)."""

    def op(self, op, t, x, y, dest_type=None, hint=None):
        x, y = (v.value if hasattr(v, "value") else v for v in (x, y))
        return {"shr": x >> y, "shl": x << y, "and": x & y, "xor": x ^ y, "add": x + y,
                "mul": x * y}[op]  # fmt: skip


@pytest.mark.parametrize("row, rows", [(256, 64), (512, 64), (512, 24), (128, 32), (64, 16)])
def test_panels_are_a_permutation_the_lir_computes(row, rows):
    from phobos.lower.swizzle import panel

    seen = set()
    for off in range(0, row * rows, 16):
        at = panel(off, row, rows)
        assert at % 16 == 0 and 0 <= at < row * rows
        seen.add(at)
        moved = physical(off, row, rows)
        assert emit(_Eval(), off, row, rows) == moved
    assert len(seen) == row * rows // 16
    # a panel's eight consecutive rows at one column meet eight chunks of the banks
    for r0 in range(0, rows - 7, 8):
        for col in range(0, row, 16):
            chunks = {physical((r0 + r) * row + col, row, rows) % LINE // 16 for r in range(8)}
            assert len(chunks) == 8
