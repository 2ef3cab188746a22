"""The UI harness itself (tests/test_ui.py): it must catch what it is there to catch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.source import SourceFile

HARNESS = Path(__file__).resolve().parents[1] / "test_ui.py"


@pytest.fixture(scope="module")
def ui():
    spec = importlib.util.spec_from_file_location("phobos_ui_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def error_at(source: SourceFile, line: int, message: str) -> Diagnostic:
    start = source.line_start(line - 1)
    return Diagnostic.error(None, message, Label(source.span(start, start + 1), ""))


def test_annotations_in_both_spellings(ui, tmp_path):
    ph = tmp_path / "a.ph"
    ph.write_text("a //~ ERROR expected `;`\nb\n//~^ ERROR second\nc //~^^ WARN w\n")
    got = [(e.line, e.severity, e.fragment) for e in ui.annotations(ph)]
    assert got == [(1, "error", "expected `;`"), (2, "error", "second"), (2, "warning", "w")]
    py = tmp_path / "a.py"
    py.write_text("x = 1  #~ ERROR no `**`\n# //~ ERROR not this marker\n")
    assert [(e.line, e.fragment) for e in ui.annotations(py)] == [(1, "no `**`")]


def test_matching_annotations_pass(ui, tmp_path):
    path = tmp_path / "a.ph"
    path.write_text("x //~ ERROR bad thing\ny\n")
    src = SourceFile(str(path), path.read_text())
    assert ui.check_annotations(path, [error_at(src, 1, "a bad thing here")]) == []


def test_missing_wrong_line_and_wrong_message_fail(ui, tmp_path):
    path = tmp_path / "a.ph"
    path.write_text("x //~ ERROR bad thing\ny\n")
    src = SourceFile(str(path), path.read_text())
    assert ui.check_annotations(path, [])  # nothing reported
    assert ui.check_annotations(path, [error_at(src, 1, "other")])  # wrong message
    problems = ui.check_annotations(path, [error_at(src, 1, "bad thing"), error_at(src, 2, "z")])
    assert problems == ["line 2: unexpected error: z"]  # an error on an unannotated line


def test_spanless_error_is_unexpected(ui, tmp_path):
    path = tmp_path / "a.ph"
    path.write_text("x\n")
    assert ui.check_annotations(path, [Diagnostic.error(None, "lost", None)]) == [
        "no span: unexpected error: lost"
    ]


def test_goldens(ui, tmp_path):
    case = tmp_path / "a.ph"
    case.write_text("")
    missing = ui.compare_golden(case, "error: x\n", bless=False)
    assert "PHOBOS_BLESS=1" in missing
    assert ui.compare_golden(case, "", bless=False) is None  # clean output needs no golden

    assert ui.compare_golden(case, "error: x\n", bless=True) is None
    assert (tmp_path / "a.stderr").read_text() == "error: x\n"
    assert ui.compare_golden(case, "error: x\n", bless=False) is None
    diff = ui.compare_golden(case, "error: y\n", bless=False)
    assert "-error: x" in diff and "+error: y" in diff

    assert ui.compare_golden(case, "", bless=True) is None  # blessing clean output removes it
    assert not (tmp_path / "a.stderr").exists()


def test_cases_are_the_ph_and_py_files_under_tests_ui(ui):
    for path in ui.cases():
        assert path.suffix in (".ph", ".py")
        assert ui.UI in path.parents
