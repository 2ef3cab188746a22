"""Every tutorial's page (docs/tutorials/, docs/reference/kernel.md) runs on the card whole:
its CPU fences and its `python gpu` fences, whose kernels launch on torch CUDA tensors,
tune, and are checked against torch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gpukit import torch_on_a_gpu

torch = torch_on_a_gpu()

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_tutorials import PAGES, run_page  # noqa: E402


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_runs_on_the_card(page, tmp_path):
    run_page(page, tmp_path, gpu=True)
    torch.cuda.synchronize()
