"""UI tests: source files whose expected errors are written on the lines they concern.

Every `tests/ui/**/*.ph` and `tests/ui/**/*.py` is compiled with
`phobos-compile FILE --emit hir` (human error format, no colour, the path relative to
the repository root). Then:

- every line annotated `//~ ERROR fragment` (`.ph`) or `#~ ERROR fragment` (`.py`)
  has an error whose primary span starts on that line and whose message contains the
  fragment (`//~^ ERROR` points one line up, `//~^^` two, and so on);
- no error starts on a line without an annotation;
- the exit status is 1 if the file has annotations, else 0 (never 101);
- stderr equals `NAME.stderr` beside the file (no golden means: stderr is empty).

`PHOBOS_BLESS=1 pytest tests/test_ui.py` writes the goldens instead. See tests/ui/README.md.
"""

from __future__ import annotations

import difflib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from phobos import driver
from phobos.cli import compile as compile_cli

REPO = Path(__file__).resolve().parent.parent
UI = REPO / "tests" / "ui"
BLESS = os.environ.get("PHOBOS_BLESS", "") not in ("", "0")

_MARKER = {".ph": "//~", ".py": "#~"}
_KINDS = {"ERROR": "error", "WARN": "warning", "WARNING": "warning"}


@dataclass(frozen=True)
class Expected:
    line: int  # 1-based
    severity: str
    fragment: str


def cases() -> list[Path]:
    if not UI.is_dir():
        return []
    found = [p for p in UI.rglob("*") if p.suffix in _MARKER and p.is_file()]
    return sorted(p for p in found if not p.name.startswith("_"))


def annotations(path: Path) -> list[Expected]:
    """The `//~ ERROR` / `#~ ERROR` annotations of a case, by the line they point at."""
    marker = re.escape(_MARKER[path.suffix])
    pattern = re.compile(marker + r"(\^*)\s*(ERROR|WARNING|WARN)\b:?\s*(.*?)\s*$")
    out = []
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.split("\n"), start=1):
        match = pattern.search(line)
        if match:
            carets, kind, fragment = match.groups()
            out.append(Expected(number - len(carets), _KINDS[kind], fragment))
    return out


def _line_of(diag) -> int | None:
    if diag.primary is None:
        return None
    return diag.primary.span.source.line_col(diag.primary.span.start)[0]


def check_annotations(path: Path, diags) -> list[str]:
    """Every mismatch between the annotations and the diagnostics, as readable lines."""
    expected = annotations(path)
    problems = []
    for want in expected:
        if not any(
            d.severity == want.severity and _line_of(d) == want.line and want.fragment in d.message
            for d in diags
        ):
            got = [f"{d.severity}: {d.message}" for d in diags if _line_of(d) == want.line]
            problems.append(
                f"line {want.line}: expected {want.severity} containing {want.fragment!r}, "
                f"found {got or 'nothing on that line'}"
            )
    annotated = {(w.line, w.severity) for w in expected}
    for d in diags:
        if d.severity == "error" and (_line_of(d), "error") not in annotated:
            where = f"line {_line_of(d)}" if _line_of(d) else "no span"
            problems.append(f"{where}: unexpected error: {d.message}")
    return problems


def run_case(path: Path) -> tuple[int, str]:
    """Exit status and stderr of `phobos-compile PATH --emit hir`, PATH relative to the repo."""
    rel = path.relative_to(REPO).as_posix()
    out, err = io.StringIO(), io.StringIO()
    status = compile_cli.run([rel, "--emit", "hir"], stdout=out, stderr=err, color=False)
    return status, err.getvalue()


def _shown(path: Path) -> str:
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def compare_golden(path: Path, stderr: str, bless: bool = BLESS) -> str | None:
    """None if `stderr` matches the golden (writing it under PHOBOS_BLESS), else why not."""
    golden = path.with_suffix(".stderr")
    if bless:
        if stderr:
            golden.write_text(stderr, encoding="utf-8")
        elif golden.exists():
            golden.unlink()
        return None
    rel = _shown(golden)
    if not golden.exists():
        if not stderr:
            return None
        return f"{rel} is missing; run `PHOBOS_BLESS=1 pytest tests/test_ui.py` to write it"
    want = golden.read_text(encoding="utf-8")
    if want == stderr:
        return None
    diff = difflib.unified_diff(
        want.splitlines(keepends=True),
        stderr.splitlines(keepends=True),
        fromfile=rel,
        tofile="actual stderr",
    )
    return (
        f"stderr differs from {rel} (rerun with PHOBOS_BLESS=1 if the change is intended):\n"
        + "".join(diff)
    )


@pytest.mark.parametrize("path", cases(), ids=lambda p: p.relative_to(UI).as_posix())
def test_ui(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("PHOBOS_BACKTRACE", raising=False)
    status, stderr = run_case(path)
    mismatch = compare_golden(path, stderr)  # first, so PHOBOS_BLESS writes every golden
    assert status != compile_cli.EXIT_ICE, f"internal compiler error:\n{stderr}"

    rel = path.relative_to(REPO).as_posix()
    result = driver.compile_path(rel, "hir")
    problems = check_annotations(path, result.diagnostics)
    assert not problems, "annotations do not match:\n  " + "\n  ".join(problems)

    wants_errors = any(w.severity == "error" for w in annotations(path))
    assert status == (1 if wants_errors else 0), stderr
    assert mismatch is None, mismatch
