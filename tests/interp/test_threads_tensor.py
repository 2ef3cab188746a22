"""interp.threads runs the tensor-core ops a warp at a time: the hand-written kernels of
tensorkit (ldmatrix plain and `.trans`, every mma form, cvt_x2 and the unpacking mov,
WMMA's load, mma and store) give numpy's matmul; ldmatrix alone gives what the PTX ISA
says; each fragment table covers its matrix; a warp running one of them in part, an
address PTX leaves undefined, or a row read before another warp's write is fenced
stops the run or is reported."""

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.interp.threads_tensor import WMMA_A, WMMA_B, WMMA_C
from phobos.lower import fragments
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tensorkit  # noqa: E402


def kernel(text: str):
    k = parse_kernel(text)
    verify(k)
    return k


def run(k, arrays: dict, grid=1, **options):
    mem = GlobalMemory()
    ptrs = {name: mem.place(a, name) for name, a in arrays.items()}
    report = run_lir(k, grid, ptrs, mem, **options)
    return {name: mem.read(p) for name, p in ptrs.items()}, report


# ---------------------------------------------------------------------------
# The kernels against numpy


@pytest.mark.parametrize("case", tensorkit.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_kernel_computes_numpys_product(case, seed):
    arrays, want = case.inputs(np.random.default_rng(seed))
    got, report = run(case.kernel(), arrays, case.grid, check_races=True)
    tensorkit.agree(case, got, want)
    assert report.race_free, report.format_races()


def test_the_s32_sums_wrapped():
    # The m8n8k16 case's C spans all of s32: some of its sums leave it, and wrap.
    case = tensorkit.case("mma_s8_small")
    arrays, _ = case.inputs(np.random.default_rng(0))
    a = arrays["A"].astype(np.int64)
    b = arrays["B"].astype(np.int64).transpose(0, 2, 1)
    exact = a @ b + arrays["C"]
    assert ((exact > 2**31 - 1) | (exact < -(2**31))).any()


# ---------------------------------------------------------------------------
# The fragment tables: every element of the matrix in exactly one lane's register part
# (WMMA's A and B, which this interpreter keeps in two lanes each, in exactly two)


@pytest.mark.parametrize("key", sorted(fragments.MMA), ids=" ".join)
def test_each_mma_fragment_covers_its_matrix_once(key):
    form = fragments.MMA[key]
    for name, frag in (("A", form.a), ("B", form.b), ("C", form.c)):
        seen = Counter()
        for lane in range(32):
            for reg in range(frag.regs):
                for part in range(frag.parts):
                    seen[frag.place(lane, reg, part)] += 1
        every = {(r, c) for r in range(frag.rows) for c in range(frag.cols)}
        assert set(seen) == every, (key, name)
        assert set(seen.values()) == {1}, (key, name)
        assert 32 * frag.regs * frag.parts == frag.rows * frag.cols


def test_the_shapes_agree_with_their_names():
    for (shape, ab, acc), form in fragments.MMA.items():
        m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
        assert (form.a.rows, form.a.cols, form.b.rows, form.b.cols) == (m, k, k, n)
        assert (form.c.rows, form.c.cols) == (m, n)
        assert (form.ab, form.acc) == (ab, acc)


@pytest.mark.parametrize("frag, copies", [(WMMA_A, 2), (WMMA_B, 2), (WMMA_C, 1)])
def test_the_interpreters_wmma_fragments_cover_their_matrix(frag, copies):
    seen = Counter((r, c) for *_, r, c in frag.elements())
    assert set(seen) == {(r, c) for r in range(16) for c in range(16)}
    assert set(seen.values()) == {copies}


def test_ldmatrix_hands_out_each_element_of_its_matrix_once():
    for trans in (False, True):
        seen = Counter(fragments.ldmatrix_m8n8(lane, part, trans) for lane in range(32)
                       for part in (0, 1))  # fmt: skip
        assert set(seen) == {(r, c) for r in range(8) for c in range(8)}
        assert set(seen.values()) == {1}
    assert sorted(fragments.ldmatrix_row(lane) for lane in range(32)) == [
        (m, r) for m in range(4) for r in range(8)
    ]


def test_ldmatrix_address_is_what_the_kernels_spell():
    # tensorkit's kernels compute these addresses themselves, from the ISA's pictures.
    f16 = fragments.MMA[("m16n8k16", "f16", "f32")]
    i8 = fragments.MMA[("m16n8k32", "s8", "s32")]
    for lane in range(32):
        assert fragments.ldmatrix_address(f16.a, lane) == (lane % 16, 8 * (lane // 16))
        k, m = lane % 8 + 8 * (lane // 16), 8 * ((lane // 8) % 2)
        assert fragments.ldmatrix_address(f16.a, lane, trans=True) == (m, k)
        assert fragments.ldmatrix_address(i8.a, lane) == (lane % 16, 16 * (lane // 16))
        if lane < 16:
            assert fragments.ldmatrix_address(f16.b, lane, trans=True) == (lane, 0)
            assert fragments.ldmatrix_address(f16.b, lane) == (8 * (lane // 8), lane % 8)
            assert fragments.ldmatrix_address(i8.b, lane) == (16 * (lane // 8), lane % 8)
    with pytest.raises(ValueError, match="does not fill an 8-bit fragment"):
        fragments.ldmatrix_address(i8.a, 0, trans=True)


# ---------------------------------------------------------------------------
# ldmatrix alone


@pytest.mark.parametrize("case", tensorkit.LDMATRIX_CASES, ids=lambda c: c.name)
def test_ldmatrix_alone_is_what_the_isa_says(case):
    arrays, want = case.inputs(np.random.default_rng(len(case.name)))
    # Lanes past the 8n whose addresses ldmatrix reads give nonsense: nobody reads them.
    n = int(case.name.split("_x")[1][0])
    arrays["rows"][8 * n :] = 0xFFFF_FFF0
    got, report = run(case.kernel(), arrays, check_races=True)
    tensorkit.agree(case, got, want)
    assert report.race_free


def test_a_misaligned_ldmatrix_row_stops():
    case = tensorkit.case("ldmatrix_x4")
    arrays, _ = case.inputs(np.random.default_rng(0))
    arrays["rows"][9] = 148
    with pytest.raises(
        InterpError, match="thread 9 of block .* gives row address 148, not 16-byte"
    ):
        run(case.kernel(), arrays)


# ---------------------------------------------------------------------------
# cvt_x2: the first source in the low half, rounded as asked


CVT = """kernel pack(%X: u64, %out: u64) threads=32 smem=0 {
  reg %t: u32
  reg %go: u64
  reg %ga: u64
  reg %lo: f32
  reg %hi: f32
  reg %w: b32
  %t = sreg.tid.x
  %go = mul_wide.u32 %t, 8:u32
  %ga = add.u64 %X, %go
  %lo, %hi = ld.global.v2.f32 %ga
  %w = cvt_x2.ROUND.TYPE.f32 %lo, %hi
  %go = mul_wide.u32 %t, 4:u32
  %ga = add.u64 %out, %go
  st.global.b32 %ga, %w
}"""


@pytest.mark.parametrize("t", ["f16", "bf16"])
@pytest.mark.parametrize("rounding", ["rn", "rz"])
def test_cvt_x2_rounds_the_low_half_first(t, rounding):
    rng = np.random.default_rng(3)
    x = tensorkit.nonzero(rng, (32, 2)).astype(np.float32)
    text = CVT.replace("ROUND", rounding).replace("TYPE", t)
    got, _ = run(kernel(text), {"X": x, "out": np.zeros(32, np.uint32)})
    word = got["out"]
    lo, hi = word & 0xFFFF, word >> 16
    if t == "f16":
        halves = np.stack([lo, hi], 1).astype(np.uint16).view(np.float16).astype(np.float64)
        if rounding == "rn":
            np.testing.assert_array_equal(halves, x.astype(np.float16))
    else:
        bits = np.stack([lo, hi], 1).astype(np.uint32) << 16
        halves = bits.view(np.float32).astype(np.float64)
        if rounding == "rn":
            np.testing.assert_array_equal(halves, tensorkit.bf16_round(x))
    assert (np.abs(halves - x) <= np.abs(x) * 2.0 ** (-10 if t == "f16" else -7)).all()
    if rounding == "rz":  # toward zero: never larger in magnitude
        assert (np.abs(halves) <= np.abs(x)).all()


# ---------------------------------------------------------------------------
# What PTX leaves undefined stops the run at the instruction


def mma_f16_text():
    return tensorkit.case("mma_f16_row").text


def inputs(seed=0):
    return tensorkit.case("mma_f16_row").inputs(np.random.default_rng(seed))[0]


def test_a_warp_running_mma_on_part_of_its_lanes_stops():
    text = mma_f16_text()
    text = (
        text.replace("  reg %t: u32", "  reg %t: u32\n  reg %p: pred")
        .replace(
            "  %c0, %c1, %c2, %c3 = mma",
            "  %p = setp.lt.u32 %lane, 16:u32\n  if %p {\n  %c0, %c1, %c2, %c3 = mma",
        )
        .replace("[shape=m16n8k16]\n", "[shape=m16n8k16]\n  }\n")
    )
    with pytest.raises(InterpError, match=r"runs it on 16 of its 32 lanes: lane 16 .* left it out"):
        run(kernel(text), inputs(), 2)


def test_a_warp_with_a_returned_lane_stops():
    text = mma_f16_text()
    text = text.replace("  reg %t: u32", "  reg %t: u32\n  reg %p: pred").replace(
        "  bar 0:u32\n", "  bar 0:u32\n  %p = setp.eq.u32 %lane, 5:u32\n  return if %p\n"
    )
    with pytest.raises(InterpError, match=r"runs it on 31 of its 32 lanes: lane 5 .* has returned"):
        run(kernel(text), inputs(), 2)


def test_a_guard_on_a_warp_collective_op_is_refused_by_the_verifier():
    from phobos.lower.verify import LirError

    text = mma_f16_text()
    text = text.replace("  reg %t: u32", "  reg %t: u32\n  reg %p: pred").replace(
        "  %c0, %c1, %c2, %c3 = mma",
        "  %p = setp.lt.u32 %lane, 16:u32\n  @%p %c0, %c1, %c2, %c3 = mma",
    )
    with pytest.raises(LirError, match="runs on the whole warp and takes no guard"):
        kernel(text)


def test_a_short_last_warp_stops():
    small = tensorkit.case("mma_s8_small")
    text = small.text.replace("threads=64", "threads=48")
    arrays = small.inputs(np.random.default_rng(0))[0]
    with pytest.raises(InterpError, match="warp 1 of the block's 48 threads has 16 lanes"):
        run(kernel(text), arrays, 2)


def wmma_text():
    return tensorkit.case("wmma_row_col").text


def wmma_inputs():
    return tensorkit.case("wmma_row_col").inputs(np.random.default_rng(0))[0]


def test_wmma_lanes_giving_different_addresses_stop():
    text = wmma_text().replace(
        "  %x = add.u32 %s, 512:u32\n", "  %x = add.u32 %s, 512:u32\n  %x = add.u32 %x, %lane\n", 1
    )
    with pytest.raises(InterpError, match="every lane of a warp gives the same address"):
        run(kernel(text), wmma_inputs(), 2)


def test_a_wmma_stride_short_of_a_row_stops():
    text = wmma_text().replace("%ld = mov.u32 24:u32", "%ld = mov.u32 8:u32")
    with pytest.raises(InterpError, match="stride 8 is below the 16 elements of a row"):
        run(kernel(text), wmma_inputs(), 2)


def test_a_wmma_fragment_changed_unevenly_stops():
    # Lane 3 alone changes its first A register: the two copies of its elements differ.
    text = (
        wmma_text()
        .replace("  reg %t: u32", "  reg %t: u32\n  reg %p: pred")
        .replace(
            "  %go = mul_wide.u32 %tile, 1024:u32\n",
            "  %p = setp.eq.u32 %lane, 3:u32\n  %a0 = selp.b32 0:b32, %a0, %p\n"
            "  %go = mul_wide.u32 %tile, 1024:u32\n",
            1,
        )
    )
    with pytest.raises(InterpError, match=r"A's element \(3, [01]\) differs between the two lanes"):
        run(kernel(text), wmma_inputs(), 2)


def test_ldmatrix_before_the_barrier_races_with_the_copies():
    # Without the wait and barrier, the rows are read while other lanes' copies are in flight.
    text = mma_f16_text().replace("  cp_async_wait  [pending=0]\n  bar 0:u32\n", "", 1)
    text = text.replace(
        "  %c0, %c1 = ld.global", "  cp_async_wait  [pending=0]\n  %c0, %c1 = ld.global"
    )
    _, report = run(kernel(text), inputs(), 2, check_races=True)
    # ldmatrix reads bytes in flight; and the copies land, at the later wait, on bytes it read.
    assert {r.kind for r in report.races} == {"async/read", "read/write"}
    assert all("ldmatrix" in (r.inst_a.op, r.inst_b.op) for r in report.races)
