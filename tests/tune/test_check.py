"""A variant's output against the reference: exact for integers, by each float type's
rounding otherwise; canaries that show any byte written past a tensor."""

import numpy as np
import pytest

from phobos.tune.check import CANARY_BYTES, canary, canary_report, compare, tolerances


@pytest.mark.parametrize(
    ("dtype", "elem", "ulps_ok", "ulps_bad"),
    [(np.float16, "f16", 2, 30), (np.float32, "f32", 2, 30), (np.float64, "f64", 2, 30)],
)
def test_floats_pass_within_their_own_rounding(dtype, elem, ulps_ok, ulps_bad):
    rng = np.random.default_rng()
    ref = np.clip(rng.standard_normal(1000) + 3, 1, 5).astype(dtype)  # scale at most 5
    ref[17] = 3
    eps = np.finfo(dtype).eps  # allowed at [17]: 4 eps * 3 + 4 eps * 5 = 32 eps; 30 ulps: 90
    assert compare("y", (ref * (1 + ulps_ok * eps)).astype(dtype), ref, elem) is None
    bad = ref.copy()
    bad[17] = ref[17] * (1 + ulps_bad * eps)
    assert compare("y", bad, ref, elem).startswith("`y` differs from the reference at [17]")


def test_an_element_near_zero_is_judged_on_its_outputs_scale():
    ref = np.array([100.0, 1e-9], dtype=np.float32)
    out = np.array([100.0, 2e-9], dtype=np.float32)  # 100% off, but 1e-9 of the scale
    assert compare("y", out, ref, "f32") is None
    assert tolerances("f32", ref, None, None)[1] == pytest.approx(4 * 2.0**-23 * 100)


def test_rtol_and_atol_widen_and_never_narrow():
    ref = np.ones(4, dtype=np.float32)
    out = ref * np.float32(1.0001)
    assert compare("y", out, ref, "f32") is not None
    assert compare("y", out, ref, "f32", rtol=1e-3) is None
    assert tolerances("f32", ref, 1e-12, 0.0) == tolerances("f32", ref, None, None)


def test_integers_and_booleans_match_exactly():
    ref = np.arange(8, dtype=np.int32)
    assert compare("n", ref.copy(), ref, "i32") is None
    off = ref.copy()
    off[3] += 1
    assert "integers must match exactly" in compare("n", off, ref, "i32")
    flags = np.array([True, False])
    assert compare("b", ~flags, flags, "bool").startswith("`b` differs from the reference at [0]")


def test_nan_and_inf_must_agree_with_the_reference():
    ref = np.array([np.nan, np.inf, 1.0], dtype=np.float32)
    assert compare("y", ref.copy(), ref, "f32") is None
    assert compare("y", np.array([0.0, np.inf, 1.0], np.float32), ref, "f32") is not None
    assert compare("y", np.array([np.nan, -np.inf, 1.0], np.float32), ref, "f32") is not None
    assert compare("y", np.array([np.nan, np.inf, np.nan], np.float32), ref, "f32") is not None


def test_bf16_words_compare_as_numbers():
    ref = (np.array([1.5, -2.0], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    assert compare("y", ref.copy(), ref, "bf16") is None
    assert compare("y", ref + np.uint16(12), ref, "bf16") is not None  # 12 units of 2^-7


def test_a_shape_mismatch_is_said_plainly():
    assert "has shape (2,)" in compare("y", np.zeros(2, np.float32), np.zeros(3, np.float32),
                                       "f32")  # fmt: skip


def test_every_canary_byte_counts():
    pattern = canary()
    assert len(pattern) == CANARY_BYTES and 0 not in pattern
    for i in (0, 100, CANARY_BYTES - 1):
        hit = bytearray(pattern)
        hit[i] ^= 1
        assert f"the first at byte {i} past the end" in canary_report("x", bytes(hit))
