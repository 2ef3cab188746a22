"""`argmax<over ..>` and `reduce<over ..>` on the card: the kernels of
tests/lower/test_lower_collective_folds.py, through their Python spelling, give what
the tile interpreter gives, bit for bit (the folds there add, take a max or an `|`,
which no fma can fuse), at every width and over CTAs of several warps."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from phobos.runtime import cuda

try:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch", allow_module_level=True)
    cuda.device(0)
except cuda.DriverUnavailable as exc:  # pragma: no cover - machines without a GPU
    pytest.skip(str(exc), allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "lower"))

import test_lower_collective_folds as forms  # noqa: E402
from lowerkit import python_kernel  # noqa: E402


def both(kernel, grid, arrays: dict):
    """The outputs on the card and on the tile interpreter, from the same inputs."""
    host = {n: a.copy() for n, a in arrays.items()}
    dev = {n: torch.from_numpy(a.copy()).cuda() for n, a in arrays.items()}
    kernel[grid](*dev.values())
    torch.cuda.synchronize()
    kernel[grid](*host.values())
    return {n: t.cpu().numpy() for n, t in dev.items()}, host


@pytest.mark.parametrize("t", ["f32", "i32", "f64"])
@pytest.mark.parametrize("width", [4, 8, 16, 32])
def test_lane_folds(width, t, tmp_path):
    kern = python_kernel(forms.lane_kernel(width, t), tmp_path, f"lane{width}{t}")
    n = 1024
    a = forms.values(n, forms.DTYPES[t])
    a[100:104] = a[200] = np.nan if t != "i32" else a[100]
    arrays = {"A": a, "I": np.full(n, -1, np.int32), "S": np.zeros_like(a), "M": np.zeros_like(a)}
    got, want = both(kern, (n // 128,), arrays)
    for name in ("I", "S", "M"):
        assert np.array_equal(got[name], want[name], equal_nan=True), name


@pytest.mark.parametrize(("threads", "t"), [(64, "f32"), (96, "f32"), (1024, "f32"),
                                            (256, "i32"), (256, "f64"), (256, "i64")])  # fmt: skip
def test_cta_folds(threads, t, tmp_path):
    kern = python_kernel(forms.cta_kernel(threads, t, "bits" if "i" in t else "add"), tmp_path,
                   f"cta{threads}{t}")  # fmt: skip
    blocks = 8  # extents are multiples of 4
    a = forms.values(blocks * threads, forms.DTYPES[t], ties=False)
    rows = a.reshape(blocks, threads)
    rows[0, [7, threads - 2]] = rows[0].max() + 1  # a tie between the first and last warps
    arrays = {"A": a, "I": np.full(blocks, -1, np.int32), "S": np.zeros(blocks, a.dtype)}
    got, want = both(kern, (blocks,), arrays)
    assert np.array_equal(got["I"], want["I"])
    assert np.array_equal(got["S"], want["S"])
    assert got["I"][0] == 7
