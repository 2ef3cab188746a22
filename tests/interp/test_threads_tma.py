"""interp.threads runs TMA loads: the box a tensor map names (its first column on a
16-byte boundary: the H200 faulted on an f16 box at column -5, so the interpreter
refuses such a box and the lowering never issues one), zeros past the tensor's edges, the 16-byte chunks placed by each swizzle mode, the bytes completing on the
mbarrier; a TMA load's bytes read before its phase completes are a race; the PTX the same
kernel emits assembles for sm_90a (tests/ptx checks ptxas on every op)."""

import numpy as np
import pytest
import tmakit

from phobos.interp import GlobalMemory, InterpError, run_lir


def run(k, a, x, y, *, check_races=False):
    mem = GlobalMemory()
    pa = mem.place(a, "A")
    m = k.maps[0]
    nbytes = m.box[0] * m.box[1] * a.dtype.itemsize
    po = mem.place(np.full(nbytes, 0xEE, np.uint8), "out")  # poisoned: a hole shows
    params = {"A": pa, "out": po, "X": x, "Y": y, "R": a.shape[0], "C": a.shape[1]}
    report = run_lir(k, 1, params, mem, check_races=check_races)
    return mem.read(po), report


CASES = [
    ("f16", (64, 64), "128B", (100, 152), (8, 16)),  # inside the tensor
    ("f16", (64, 64), "128B", (100, 152), (120, 70)),  # past the right and bottom edges
    ("f16", (16, 32), "64B", (37, 48), (-8, -3)),  # before the left and top edges
    ("f16", (16, 32), "64B", (37, 48), (8, 4)),
    ("f16", (16, 64), "128B", (37, 72), (-16, -3)),
    ("bf16", (32, 16), "32B", (40, 24), (8, 20)),
    ("f32", (8, 32), "128B", (13, 40), (4, 2)),
    ("f16", (8, 16), "none", (21, 24), (8, 17)),
]


@pytest.mark.parametrize("elem, box, mode, shape, at", CASES)
def test_a_tma_load_is_the_box_with_zero_fill_in_its_swizzle(elem, box, mode, shape, at):
    k = tmakit.kernel(elem, box, mode)
    a = tmakit.tensor(elem, *shape, seed=sum(shape))
    got, report = run(k, a, *at, check_races=True)
    want = tmakit.reference(a, box, *at, mode)
    assert report.race_free
    assert (got == want).all(), np.nonzero(got != want)[0][:8]


def test_the_swizzle_moves_chunks_so_an_unswizzled_read_differs():
    k = tmakit.kernel("f16", (64, 64), "128B")
    a = tmakit.tensor("f16", 64, 64, seed=3)
    got, _ = run(k, a, 0, 0)
    assert not (got == a.reshape(-1).view(np.uint8)).all()
    assert (got[:128] == a[0].view(np.uint8)).all()  # row 0 is not moved by the XOR


def test_reading_a_tma_box_before_its_phase_completes_is_a_race():
    wait = "    %ok = mbarrier_try_wait_parity %b, 0:u32\n    break if %ok\n"
    assert wait in tmakit.TEXT
    k = tmakit.kernel("f16", (64, 64), "128B", text=tmakit.TEXT.replace(wait, "    break\n"))
    _, report = run(k, tmakit.tensor("f16", 64, 64, seed=4), 0, 0, check_races=True)
    race = report.races[0]
    assert race.kind == "async/read" and race.buffer == "box"
    assert race.inst_a.op == "tma_load" and race.inst_b.op == "ld"


def test_a_tma_load_off_its_128_byte_alignment_is_an_error():
    bad = tmakit.kernel(
        "f16",
        (64, 64),
        "128B",
        text=tmakit.TEXT.replace("%d = mov.u32 0:u32", "%d = mov.u32 16:u32"),
    )
    with pytest.raises(InterpError, match="not 128-byte aligned"):
        run(bad, tmakit.tensor("f16", 64, 64, seed=5), 0, 0)


def test_a_tensor_whose_rows_tma_cannot_read_is_an_error():
    k = tmakit.kernel("f16", (16, 32), "64B")
    with pytest.raises(
        InterpError, match=r"rows a multiple of 16 bytes, not 0x[0-9a-f]+ and 90 bytes"
    ):
        run(k, tmakit.tensor("f16", 20, 45, seed=6), 0, 0)


def test_a_box_whose_first_column_is_off_a_16_byte_boundary_is_an_error():
    k = tmakit.kernel("f16", (16, 32), "64B")
    with pytest.raises(
        InterpError, match=r"column -5 of `A_tmap`, -10 bytes into its rows: not on a 16"
    ):
        run(k, tmakit.tensor("f16", 37, 48, seed=7), -5, -3)
