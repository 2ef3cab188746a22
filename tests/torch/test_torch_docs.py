"""The python fences of docs/torch.md run, on CPU tensors (the `fragment` ones need a GPU).

tests/test_docs.py compiles every fence; this one runs those of the torch page, each as a
file of its own, since a kernel's source is read from its file.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

pytest.importorskip("torch")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "torch.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
FENCES = [
    pytest.param(m.group(1), id=f"torch.md:{PAGE.read_text().count(chr(10), 0, m.start()) + 1}")
    for m in FENCE.finditer(PAGE.read_text())
]


def test_the_page_has_fences_to_run():
    assert len(FENCES) >= 2


@pytest.mark.parametrize("body", FENCES)
def test_fence_runs(body, tmp_path):
    path = tmp_path / "fence.py"
    path.write_text(body)
    runpy.run_path(str(path), run_name="fence")
