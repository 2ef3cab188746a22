"""Every tutorial (docs/tutorials/) and docs/reference/kernel.md runs, on the CPU.

A page's `python` fences are one module, in order: they are written to a file (a kernel
is read from its module's source) and run, numpy arrays going through the tile
interpreter. A `python gpu` fence needs a CUDA device (or is too heavy for a CPU test run): here it is only compiled by
Python, and tests/gpu/test_tutorials_gpu.py runs it with the rest of its page.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs" / "tutorials").glob("*.md")), ROOT / "docs/reference/kernel.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.M | re.S)
KINDS = ("", "gpu")  # what the info string after `python` may be


def fences(page: Path) -> list[tuple[str, str]]:
    """(kind, body) of each Python fence of `page`, in order."""
    return [(info.strip(), body) for info, body in FENCE.findall(page.read_text())]


def module_of(page: Path, gpu: bool) -> str:
    """The page's fences as one module: the `python gpu` ones too when `gpu`."""
    return "\n\n".join(body for kind, body in fences(page) if gpu or kind != "gpu")


def run_page(page: Path, folder: Path, gpu: bool = False) -> dict:
    path = folder / (page.stem.replace("-", "_") + ".py")
    path.write_text(module_of(page, gpu))
    return runpy.run_path(str(path), run_name="tutorial")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_fences_are_known_kinds(page):
    found = fences(page)
    assert found, f"{page.name} has no python fence"
    assert {kind for kind, _ in found} <= set(KINDS), [k for k, _ in found]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_gpu_fences_compile(page):
    for _, body in fences(page):
        compile(body, page.name, "exec")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_runs_on_the_cpu(page, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))
    run_page(page, tmp_path)


def test_a_failing_check_fails(tmp_path):
    page = tmp_path / "bad.md"
    page.write_text("```python\nassert 1 + 1 == 3\n```\n")
    with pytest.raises(AssertionError):
        run_page(page, tmp_path)


def test_the_tutorials_are_in_order():
    names = [p.name for p in PAGES[:-1]]
    assert names[:5] == [
        "01-vector-add.md", "02-fused-softmax.md", "03-matmul.md", "04-layer-norm.md",
        "05-attention.md",
    ][: len(names)]  # fmt: skip
