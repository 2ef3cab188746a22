"""What the card's tests of the contractions share: torch on a CUDA device (or the calling
module skipped, with the reason), the CPU tests' own modules importable, and a launch on
the card beside the same launch on the tile interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from phobos.runtime import cuda

ROOT = Path(__file__).resolve().parents[2]


def torch_on_a_gpu():
    """torch, where it is installed and a CUDA device answers both torch and the driver;
    else the module being collected is skipped, saying why. The CPU tests' folder
    (tests/lower) becomes importable: the card runs those tests' own kernels."""
    try:
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device for torch", allow_module_level=True)
        cuda.device(0)
    except cuda.DriverUnavailable as exc:  # pragma: no cover - machines without a GPU
        pytest.skip(str(exc), allow_module_level=True)
    lower = str(ROOT / "tests" / "lower")
    if lower not in sys.path:
        sys.path.insert(0, lower)
    return torch


def both(torch, kernel, grid, arrays: dict, scalars=()):
    """The outputs of one launch on the card (as numpy arrays) and of the same launch on
    the tile interpreter, from the same host arrays (each launch on its own copies)."""
    dev = {n: torch.from_numpy(a.copy()).cuda() for n, a in arrays.items()}
    kernel[grid](*dev.values(), *scalars)
    torch.cuda.synchronize()
    host = {n: a.copy() for n, a in arrays.items()}
    kernel[grid](*host.values(), *scalars)
    return {n: t.cpu().numpy() for n, t in dev.items()}, host
