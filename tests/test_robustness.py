"""Robustness: mutated sources never crash a front end, and every span lies inside.

Seeded mutations of the examples and the test sources (token deletions, swaps and
duplications, truncations, random characters, line edits, and Python constructs
Phobos refuses) go to both front ends: `parse` for `.ph` text, `translate_module`
for `.py` text. Every outcome is a clean parse or diagnostics whose primary and
secondary spans lie inside the source; no exception escapes, and every diagnostic
renders. A clean parse of a mutant also makes the round trip through both printers.

A few thousand cases run by default; `PHOBOS_FUZZ_CASES=N` runs about N. A failure
names its case; `mutant(kind, path, case)` rebuilds the text to reproduce it.
"""

from __future__ import annotations

import dataclasses
import os
import random
import traceback
from pathlib import Path

import pytest
from fuzzkit import MUTATORS

from phobos.pyfront.spellings import ATTRIBUTE_ACCESS, DECORATOR, UNKNOWN_NAME
from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.parser import parse
from phobos.syntax.printer import print_program
from phobos.syntax.pyprinter import PySpellingError, print_python

try:
    from phobos.diagnostics.render import render_human
except ImportError:  # rendering is checked once the renderer exists
    render_human = None

ROOT = Path(__file__).resolve().parents[1]
CASES = int(os.environ.get("PHOBOS_FUZZ_CASES", "3000"))


def _corpus(suffix: str) -> list[Path]:
    files = sorted((ROOT / "examples").glob(f"*{suffix}"))
    for path in sorted((ROOT / "tests").rglob(f"*{suffix}")):
        if suffix == ".py":
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.name.startswith(("test_", "conftest")) or "phobos.lang" not in text:
                continue
        files.append(path)
    return files


def _rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


PH_FILES = _corpus(".ph")
PY_FILES = _corpus(".py")
# `.ph` text names attributes, built-ins and ctx fields freely and the compiler checks
# them later; the Python spelling checks them as it reads `ph.name`. A clean `.ph`
# mutant that names `@autotu` or `ctx.blockx` is refused in Python for that alone, and
# one whose attribute is a built-in's name (`@grid_barrier(64)`) as a decorator Phobos
# does not spell.
CHECKED_EARLY = (UNKNOWN_NAME, ATTRIBUTE_ACCESS, DECORATOR)
# Each file gets an equal share of the cases; at least a handful each.
PER_FILE = max(8, CASES // max(1, len(PH_FILES) + len(PY_FILES)))

# -- mutations: `fuzzkit`'s, shared with the compile fuzzer -------------------------------


def mutant(kind: str, path: Path, case: int) -> str:
    """The text of case `case` of mutation `kind` of `path`: a failure's reproducer."""
    rng = random.Random(f"{kind}:{_rel(path)}:{case}")
    return MUTATORS[path.suffix][kind](rng, path.read_text(encoding="utf-8"))


# -- checks ---------------------------------------------------------------------------


def _front_end(suffix: str):
    return parse if suffix == ".ph" else translate_module


def _check(suffix: str, name: str, text: str, round_trip: bool = True) -> str | None:
    """What is wrong with reading `text`, or None."""
    source = SourceFile(name, text)
    size = len(source.data)
    try:
        program, diags = _front_end(suffix)(source)
    except RecursionError:
        return "RecursionError escaped\n" + traceback.format_exc(limit=-8)
    except Exception:
        return "exception escaped\n" + traceback.format_exc(limit=-8)
    if not isinstance(program, ast.Program):
        return f"the front end returned {type(program).__name__}, not a Program"
    for d in diags:
        if d.primary is None:
            return f"diagnostic without a location: {d.code} {d.message}"
        for label in (d.primary, *d.secondary):
            span = label.span
            if not (0 <= span.start <= span.end <= size):
                return f"span {span.start}..{span.end} outside 0..{size}: {d.code} {d.message}"
            if span.source.data != source.data:
                return f"span into another file ({span.source.name}): {d.code} {d.message}"
    if render_human is not None:
        try:
            render_human(diags)
        except Exception:
            return "render_human raised\n" + traceback.format_exc(limit=-8)
    if round_trip and not any(d.severity == "error" for d in diags):
        return _check_round_trip(suffix, program)
    return None


def _check_round_trip(suffix: str, program: ast.Program) -> str | None:
    """A clean mutant reads back the same through both printers."""
    try:
        if suffix == ".ph":
            printed = print_program(program)
            again, diags = parse(SourceFile("printed.ph", printed))
            if any(d.severity == "error" for d in diags) or not same_tree(again, program):
                return f"print_program does not read back:\n{printed}"
        try:
            spelled = print_python(program)
        except PySpellingError:
            return None  # a name Python cannot spell, say `in` grown from `i`
        again, diags = translate_module(SourceFile("printed.py", spelled))
        errors = [d for d in diags if d.severity == "error"]
        if errors and all(d.code in CHECKED_EARLY for d in errors):
            return None
        if errors or not same_tree(again, program):
            messages = [d.message for d in diags]
            return f"print_python does not read back {messages}:\n{spelled}"
    except Exception:
        return "exception in the round trip\n" + traceback.format_exc(limit=-8)
    return None


def same_tree(a: ast.Node, b: ast.Node) -> bool:
    """`a == b` as the nodes define it, in a loop: a long sum is a deep tree."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, tuple):
            if len(x) != len(y):
                return False
            pending += zip(x, y, strict=True)
        elif isinstance(x, ast.Node):
            for f in dataclasses.fields(x):
                if f.compare:
                    pending.append((getattr(x, f.name), getattr(y, f.name)))
        elif x != y:
            return False
    return True


def _cases(files: list[Path]):
    for path in files:
        yield pytest.param(path, id=_rel(path))


def _run(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{_rel(path)} went away after collection")
    kinds = sorted(MUTATORS[path.suffix])
    original = path.read_text(encoding="utf-8")
    failures = []
    for case in range(PER_FILE):
        kind = kinds[case % len(kinds)]
        text = mutant(kind, path, case)
        problem = _check(path.suffix, path.name, text)
        if problem:
            failures.append(
                f"mutant({kind!r}, ROOT / {_rel(path)!r}, {case}) {problem}"
                f"\n--- mutated text\n{text}"
            )
            if len(failures) >= 3:
                break
    # The unmutated file is a case too: it must at least not crash.
    problem = _check(path.suffix, path.name, original)
    if problem and "exception" in problem:
        failures.append(f"the original {path.name}: {problem}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("path", list(_cases(PH_FILES)))
def test_ph_mutants(path):
    _run(path)


@pytest.mark.parametrize("path", list(_cases(PY_FILES)))
def test_py_mutants(path):
    _run(path)


def test_there_is_a_corpus():
    assert len(PH_FILES) >= 4 and len(PY_FILES) >= 4


@pytest.mark.parametrize("suffix", [".ph", ".py"])
def test_degenerate_inputs(suffix):
    texts = [
        "", "\n", "\ufeff", "\x00", "\r\n\r", "\t\t", "é" * 50, "(" * 2000, "[" * 500,
        "{" * 500, "-" * 3000 + "1", "a" * 10000, "@" * 100, "kernel", "def", "@ph.kernel",
        "@ph.kernel\ndef k(", "@ph.kernel\ndef k():\n", "kernel k() {", "fn f(",
    ]  # fmt: skip
    if suffix == ".py":
        texts += [
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = " + "(" * 300 + "1"
            + ")" * 300 + "\n",
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = " + "-" * 3000 + "1\n",
            "import phobos.lang as ph\n@ph.kernel\ndef k():\n    x: ph.let = 1" + " + 1" * 3000 + "\n",
        ]  # fmt: skip
    else:
        texts += [
            "kernel k() { let x = " + "(" * 300 + "1" + ")" * 300 + " }",
            "kernel k() { let x = 1" + " + 1" * 3000 + " }",
            "kernel k() {" + " if x {" * 300 + " }" * 300 + " }",
        ]
    for text in texts:
        # Python's own parser has a depth limit, so these need not survive the round trip.
        problem = _check(suffix, "degenerate" + suffix, text, round_trip=False)
        assert problem is None, f"{text[:80]!r}...: {problem}"
