"""Every Python and Phobos fence of the docs and the README is compiled.

A `python` fence must translate cleanly, `python expect-error` must be refused, and
`python fragment` is not compiled. A `ph` fence must parse cleanly. A `python run`
fence is also run, from the repository's root (its examples importable), on the CPU.
"""

import re
import runpy
import sys
from pathlib import Path

import pytest

from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax.parser import parse

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def _fences():
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            lang, info, body = match.group(1), match.group(2).strip(), match.group(3)
            line = text.count("\n", 0, match.start()) + 1
            if lang in ("python", "ph") and info != "fragment":
                yield pytest.param(lang, info, body, id=f"{page.name}:{line}")


FENCES = list(_fences())


def test_docs_have_fences():
    assert len(FENCES) >= 5


@pytest.mark.parametrize(("lang", "info", "body"), FENCES)
def test_fence_compiles(lang, info, body):
    source = SourceFile("fence", body)
    if lang == "ph":
        _, diagnostics = parse(source)
    else:
        _, diagnostics = translate_module(source)
    errors = [d for d in diagnostics if d.severity == "error"]
    if info == "expect-error":
        assert errors, "this fence is marked expect-error but compiles"
    else:
        assert not errors, [d.message for d in errors]


RUN = [p for p in FENCES if p.values[1] == "run"]


def test_some_fences_run():
    assert RUN


@pytest.mark.parametrize(("lang", "info", "body"), RUN)
def test_run_fence_runs(lang, info, body, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "path", [str(ROOT), *sys.path])
    path = tmp_path / "fence.py"
    path.write_text(body)
    runpy.run_path(str(path), run_name="fence")
