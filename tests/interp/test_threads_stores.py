"""interp.threads runs Hopper's stores: `stmatrix` puts each register half where the PTX
ISA's m8n8 picture says (x1, x2, x4, plain and `.trans`) and is ldmatrix's inverse; a TMA
store writes its box, un-swizzled, where it lies inside the tensor and nothing past its
edges, in every swizzle mode (a box before the left or top edge faults on the H200, so it
is refused); writing its source before the wait is a race, and a CTA
ending before the wait is an error (storekit holds the kernels and the references)."""

import numpy as np
import pytest
import storekit

from phobos.interp import GlobalMemory, InterpError, run_lir


def run(k, arrays: dict, **options):
    mem = GlobalMemory()
    ptrs = {name: mem.place(a, name) for name, a in arrays.items()}
    report = run_lir(k, 1, ptrs, mem, **options)
    return {name: mem.read(p) for name, p in ptrs.items()}, report


# ---------------------------------------------------------------------------
# stmatrix

STMATRIX = [(n, trans) for n in (1, 2, 4) for trans in (False, True)]


@pytest.mark.parametrize("n, trans", STMATRIX)
def test_stmatrix_places_rows_as_the_isa_says(n, trans):
    arrays = storekit.stmatrix_inputs(n, seed=10 * n + trans)
    got, report = run(storekit.stmatrix_kernel(n, trans), arrays, check_races=True)
    want = storekit.stmatrix_reference(arrays["W"], arrays["A"], n, trans)
    assert report.race_free
    np.testing.assert_array_equal(got["out"].view(np.uint8), want)


def test_stmatrix_trans_differs_from_plain():
    arrays = storekit.stmatrix_inputs(4, seed=1)
    plain, _ = run(storekit.stmatrix_kernel(4, False), arrays)
    trans, _ = run(storekit.stmatrix_kernel(4, True), arrays)
    assert (plain["out"] != trans["out"]).any()


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_then_ldmatrix_gives_the_registers_back(trans):
    arrays = storekit.stmatrix_inputs(4, seed=7)
    got, report = run(storekit.roundtrip_kernel(trans), arrays, check_races=True)
    assert report.race_free
    np.testing.assert_array_equal(got["out"].reshape(32, 4), arrays["W"])


def test_a_misaligned_stmatrix_row_stops():
    arrays = storekit.stmatrix_inputs(2, seed=3)
    arrays["A"][11] = 136
    with pytest.raises(
        InterpError, match="thread 11 of block .* gives row address 136, not 16-byte"
    ):
        run(storekit.stmatrix_kernel(2, False), arrays)


def test_stmatrix_rows_written_by_other_lanes_race_without_a_barrier():
    # Without the first barrier the rows land on other lanes' poison writes.
    k = storekit.stmatrix_kernel(4, False, text=storekit.STMATRIX.replace("  bar 0:u32\n", "", 1))
    _, report = run(k, storekit.stmatrix_inputs(4, seed=2), check_races=True)
    assert not report.race_free
    assert {r.inst_a.op for r in report.races} | {r.inst_b.op for r in report.races} >= {
        "st",
        "stmatrix",
    }


# ---------------------------------------------------------------------------
# TMA store


def store(k, elem, shape, tile, x, y, mode, *, check_races=True):
    tensor = storekit.poisoned_tensor(elem, *shape)
    image = storekit.swizzle_image(tile, mode)
    arrays = {"S": image, "T": tensor}
    mem = GlobalMemory()
    ptrs = {name: mem.place(a, name) for name, a in arrays.items()}
    params = {**ptrs, "X": x, "Y": y, "R": shape[0], "C": shape[1]}
    report = run_lir(k, 1, params, mem, check_races=check_races)
    return mem.read(ptrs["T"]), tensor, report


CASES = [
    ("f16", (64, 64), "128B", (100, 152), (8, 16)),  # inside the tensor
    ("f16", (64, 64), "128B", (100, 152), (120, 70)),  # past the right and bottom edges
    ("f16", (16, 32), "64B", (37, 48), (32, 36)),  # past the right and bottom edges
    ("f16", (16, 32), "64B", (37, 48), (24, 30)),  # the last rows and columns dropped
    ("bf16", (32, 16), "32B", (40, 24), (8, 20)),
    ("f32", (8, 32), "128B", (13, 40), (4, 2)),
    ("f16", (8, 16), "none", (21, 24), (8, 17)),
    ("f16", (8, 16), "none", (21, 24), (200, 0)),  # wholly outside: nothing written
]


@pytest.mark.parametrize("elem, box, mode, shape, at", CASES)
def test_a_tma_store_writes_the_box_inside_the_tensor(elem, box, mode, shape, at):
    tile = storekit.box_values(elem, box, seed=sum(shape) + at[0])
    got, before, report = store(
        storekit.store_kernel(elem, box, mode), elem, shape, tile, *at, mode
    )
    want = storekit.store_reference(before, tile, *at)
    assert report.race_free
    assert (got.view(np.uint8) == want.view(np.uint8)).all(), np.argwhere(got != want)[:8]


def test_the_store_unswizzles_so_a_wrong_mode_writes_other_bytes():
    tile = storekit.box_values("f16", (64, 64), seed=5)
    k = storekit.store_kernel("f16", (64, 64), "128B")
    # the image laid out with no swizzle, read back through the 128B map: rows 1 on move
    got, before, _ = store(k, "f16", (64, 64), tile, 0, 0, "none")
    want = storekit.store_reference(before, tile, 0, 0)
    assert (got[0] == want[0]).all() and not (got == want).all()


@pytest.mark.parametrize("wait", ["bulk_wait  [pending=0]", "bulk_wait  [pending=0, read=1]"])
def test_either_wait_lands_the_store(wait):
    text = storekit.STORE.replace("bulk_wait  [pending=0, read=1]", wait)
    k = storekit.store_kernel("f16", (16, 32), "64B", text=text)
    tile = storekit.box_values("f16", (16, 32), seed=6)
    got, before, report = store(k, "f16", (16, 32), tile, 0, 0, "64B")
    assert report.race_free
    assert (got == storekit.store_reference(before, tile, 0, 0)).all()


def test_two_groups_and_pending_one_waits_for_the_older():
    # Two stores from the same source, each its own group; `pending=1` completes only the
    # first, so a write to the source after it still races with the second.
    text = storekit.STORE.replace(
        "    bulk_commit\n    bulk_wait  [pending=0, read=1]\n",
        "    bulk_commit\n    tma_store %m, 0:s32, 0:s32, %d\n    bulk_commit\n"
        "    bulk_wait  [pending=1, read=1]\n    st.shared.u32 %d, %t\n"
        "    bulk_wait  [pending=0, read=1]\n",
    )
    k = storekit.store_kernel("f16", (16, 32), "64B", text=text)
    tile = storekit.box_values("f16", (16, 32), seed=8)
    got, before, report = store(k, "f16", (16, 32), tile, 16, 8, "64B")
    race = report.races[0]
    assert race.kind == "async/write" and race.inst_a.op == "tma_store"
    assert race.inst_b.op == "st" and race.offset == 0
    want = storekit.store_reference(storekit.store_reference(before, tile, 16, 8), tile, 0, 0)
    assert (got == want).all()


def test_writing_the_source_before_the_wait_is_a_race():
    text = storekit.STORE.replace(
        "    bulk_commit\n", "    st.shared.u32 %d, %t\n    bulk_commit\n"
    )
    k = storekit.store_kernel("f16", (16, 32), "64B", text=text)
    tile = storekit.box_values("f16", (16, 32), seed=9)
    _, _, report = store(k, "f16", (16, 32), tile, 0, 0, "64B")
    race = report.races[0]
    assert race.kind == "async/write" and race.buffer == "box"
    assert race.inst_a.op == "tma_store" and race.inst_b.op == "st"
    assert "bulk_wait" in race.message()


def test_writing_the_source_after_the_wait_is_no_race():
    text = storekit.STORE.replace(
        "    bulk_wait  [pending=0, read=1]\n",
        "    bulk_wait  [pending=0, read=1]\n    st.shared.u32 %d, %t\n",
    )
    k = storekit.store_kernel("f16", (16, 32), "64B", text=text)
    tile = storekit.box_values("f16", (16, 32), seed=10)
    got, before, report = store(k, "f16", (16, 32), tile, 0, 0, "64B")
    assert report.race_free
    assert (got == storekit.store_reference(before, tile, 0, 0)).all()


@pytest.mark.parametrize(
    "drop, says",
    [
        ("    bulk_wait  [pending=0, read=1]\n", "no `bulk_wait` completed its group"),
        ("    bulk_commit\n", "its group was never committed"),
    ],
)
def test_a_cta_ending_with_a_store_still_reading_is_an_error(drop, says):
    k = storekit.store_kernel("f16", (16, 32), "64B", text=storekit.STORE.replace(drop, ""))
    tile = storekit.box_values("f16", (16, 32), seed=11)
    with pytest.raises(InterpError, match=f"may still read shared memory: {says}"):
        store(k, "f16", (16, 32), tile, 0, 0, "64B", check_races=False)


def test_a_tma_store_off_its_128_byte_alignment_is_an_error():
    text = storekit.STORE.replace("%d = mov.u32 0:u32", "%d = mov.u32 16:u32")
    k = storekit.store_kernel("f16", (16, 32), "64B", text=text)
    with pytest.raises(InterpError, match="not 128-byte aligned"):
        store(k, "f16", (16, 32), storekit.box_values("f16", (16, 32), 0), 0, 0, "64B")


def test_a_tma_store_box_off_a_16_byte_column_is_an_error():
    k = storekit.store_kernel("f16", (16, 32), "64B")
    with pytest.raises(InterpError, match="not on a 16-byte boundary"):
        store(k, "f16", (16, 32), storekit.box_values("f16", (16, 32), 0), -5, 0, "64B")


@pytest.mark.parametrize("at", [(-8, 0), (0, -1)])
def test_a_tma_store_at_a_negative_coordinate_is_an_error(at):
    # the H200 stopped with an illegal instruction on each of these (a load clips them)
    k = storekit.store_kernel("f16", (16, 32), "64B")
    with pytest.raises(InterpError, match="a store's coordinates are not negative"):
        store(k, "f16", (37, 48), storekit.box_values("f16", (16, 32), 0), *at, "64B")
