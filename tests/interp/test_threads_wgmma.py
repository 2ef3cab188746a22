"""interp.threads runs wgmma: the hand-written kernels of wgmmakit.py (every swizzle of a
K-major operand, an MN-major B, a register A, N from 16 to 128, f16 and bf16, the scale
false) agree with numpy's product, race-free (tests/gpu/test_wgmma_gpu.py runs the same
lir on the card); and the PTX rules the interpreter holds a warpgroup to are errors at
the instruction: no fence before the first wgmma or after its registers are written, an
accumulator touched while its wgmma is in flight, a kernel ending with one in flight, a
warpgroup running one in part."""

import numpy as np
import pytest
import tensorkit
import wgmmakit

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower.lirparse import parse_kernel
from phobos.lower.warpgroup import Descriptor, a_place, acc_place, address


def run(k, arrays, grid=1):
    mem = GlobalMemory()
    params = {n: mem.place(a.copy(), n) for n, a in arrays.items()}
    report = run_lir(k, (grid,), params, mem, check_races=True)
    return report, {n: mem.read(a) for n, a in params.items()}


@pytest.mark.parametrize("case", wgmmakit.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_wgmma_computes_numpys_product(case, seed):
    arrays, want = case.inputs(np.random.default_rng(seed))
    report, got = run(case.kernel(), arrays)
    assert report.race_free, report.format_races()
    tensorkit.agree(case, got, want)


def test_the_accumulator_and_register_a_places_cover_the_tile():
    for n in (8, 64, 256):
        seen = {acc_place(t, r, n) for t in range(128) for r in range(n // 2)}
        assert seen == {(i, j) for i in range(64) for j in range(n)}
    seen = {a_place(t, r, p) for t in range(128) for r in range(4) for p in range(2)}
    assert seen == {(i, j) for i in range(64) for j in range(16)}


def test_a_128_byte_swizzled_k_major_operand_is_what_tma_writes():
    # Rows of 128 bytes, 8 to a 1024-byte atom, chunk c of row r at chunk c ^ (r % 8).
    d = Descriptor(start=2048, lbo=16, sbo=1024, swizzle="128B")
    for mn in range(64):
        for k in range(0, 64, 8):
            chunk = (k // 8) ^ (mn % 8)
            assert address(d, "K", mn, k, 2) == 2048 + mn * 128 + chunk * 16


def _case_text(edit) -> str:
    return edit(wgmmakit.CASES[0].text)


def _fails(text, match):
    case = wgmmakit.CASES[0]
    arrays, _ = case.inputs(np.random.default_rng(0))
    with pytest.raises(InterpError, match=match):
        run(parse_kernel(text), arrays)


def test_a_wgmma_without_a_fence_is_an_error():
    _fails(_case_text(lambda t: t.replace("  wgmma_fence\n", "")), "no `wgmma_fence` before it")


def test_a_register_written_after_the_fence_is_an_error():
    text = _case_text(
        lambda t: t.replace("  wgmma_fence\n", "  wgmma_fence\n  %d3 = mov.f32 1.0:f32\n")
    )
    _fails(text, r"register `%d3` was written since warpgroup 0's last `wgmma_fence`")


def test_an_accumulator_read_in_flight_is_an_error():
    text = _case_text(lambda t: t.replace("  wgmma_wait  [pending=0]\n", "").replace(
        "  wgmma_commit\n", "  wgmma_commit\n  %x = mov.b32 %d0\n"))  # fmt: skip
    _fails(text, r"`%d0` is the accumulator of a wgmma in flight in warpgroup 0")


def test_a_kernel_ending_with_a_wgmma_in_flight_is_an_error():
    case = wgmmakit.CASES[0]
    text = case.text
    head, _ = text.split("  wgmma_commit\n")
    _fails(head + "  wgmma_commit\n}", "ends with a wgmma in flight")


def test_a_warpgroup_running_it_in_part_is_an_error():
    text = _case_text(lambda t: t.replace("  wgmma_fence\n", "  %p = setp.lt.u32 %t, 64:u32\n"
                                          "  if %p {\n  wgmma_fence\n  }\n"))  # fmt: skip
    _fails(text, "runs on whole warpgroups")
