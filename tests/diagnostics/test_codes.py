"""The error-code registry and its explanation files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phobos.diagnostics import codes

PHOBOS = Path(codes.__file__).resolve().parents[1]


def test_every_explanation_is_well_formed():
    assert codes.known_codes(), "no explanations found"
    for code in codes.known_codes():
        text = codes.explain(code)
        first = text.splitlines()[0]
        assert re.fullmatch(rf"# {code}: [a-z`].*[^.]", first), first
        assert len(text.splitlines()) > 3, f"{code} has no prose"


def test_files_are_named_after_their_code():
    for path in codes.EXPLAIN_DIR.glob("*.md"):
        assert re.fullmatch(r"E\d{4}", path.stem), path.name


def test_lookup_normalizes_spelling():
    assert codes.normalize("e0901") == "E0901"
    assert codes.normalize("901") == "E0901"
    assert codes.explain("e0901") == codes.explain("E0901")


@pytest.mark.parametrize("code", ["E9999", "nonsense", "", "E09011"])
def test_unknown_codes_raise(code):
    with pytest.raises(codes.UnknownCode):
        codes.explain(code)


def test_every_driver_and_cli_code_is_explained():
    used = set()
    for path in [PHOBOS / "driver.py", PHOBOS / "spanmap.py", *(PHOBOS / "cli").glob("*.py")]:
        used.update(re.findall(r'"(E09\d\d)"', path.read_text()))
    assert used, "expected the tools to use E09xx codes"
    missing = used - set(codes.known_codes())
    assert not missing


def test_every_code_used_in_the_compiler_is_explained():
    used = set()
    for path in PHOBOS.rglob("*.py"):
        used.update(re.findall(r'"(E\d{4})"', path.read_text(encoding="utf-8")))
    missing = sorted(used - set(codes.known_codes()))
    assert not missing, f"codes without an explanation in explain/: {missing}"
