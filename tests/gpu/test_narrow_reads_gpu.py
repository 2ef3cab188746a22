"""Scalar reads of i8, u8, u16 and u32 elements on the card: the kernels of
tests/lower/test_lower_narrow_reads.py, through their Python spelling, give what the tile
interpreter gives, bit for bit, on bytes of every sign."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from phobos.runtime import cuda

try:
    cuda.device(0)
except cuda.DriverUnavailable as exc:  # pragma: no cover - machines without a GPU
    pytest.skip(str(exc), allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "lower"))

import test_lower_narrow_reads as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402


def agree_on_card(kernel, grid, arrays, to_device):
    host = {n: a.copy() for n, a in arrays.items()}
    dev = {n: to_device(a.copy()) for n, a in arrays.items()}
    kernel[grid](*dev.values())
    kernel[grid](*host.values())
    for n, d in dev.items():
        assert np.array_equal(d.get(), host[n]), n
    return host


@pytest.mark.parametrize("t", ["i8", "u8"])
def test_the_spec_f16bits_example(t, tmp_path, to_device):
    k = python_kernel(forms.HALF_PH.format(t=t), tmp_path, f"half_{t}")
    b = forms.byte_pairs(np.int8 if t == "i8" else np.uint8)
    host = agree_on_card(k, (forms.N,), {"B": b, "Y": np.zeros(forms.N, np.float16)}, to_device)
    assert np.array_equal(host["Y"].view(np.uint16), forms.halves(b).view(np.uint16))


def test_reads_widen(tmp_path, to_device):
    k = python_kernel(forms.WIDE.format(y="i32"), tmp_path, "wide")
    agree_on_card(k, (forms.N,), forms.wide_arrays(np.int32), to_device)


def test_elem_stores_and_tile_points(tmp_path, to_device):
    rng = np.random.default_rng(5)
    q = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    p = rng.integers(0, 256, (32, 16)).astype(np.uint8)
    h = rng.integers(0, 1 << 16, (32, 8)).astype(np.uint16)
    k = python_kernel(forms.ELEM, tmp_path, "elem")
    arrays = {"Q": q, "P": p, "H": h, "Y": np.zeros((32, 6), np.int32)}
    agree_on_card(k, (1,), arrays, to_device)
    k = python_kernel(forms.STORES, tmp_path, "stores")
    agree_on_card(k, (1,), {"I": q, "B": p, "Y": np.zeros(32, np.int32)}, to_device)
    k = python_kernel(forms.TILE_POINTS, tmp_path, "tiles")
    arrays = {"B": p[:, :8].copy(), "I": q[:, :8].copy(), "Y": np.zeros((32, 2), np.int32)}
    agree_on_card(k, (1,), arrays, to_device)
