"""Every diagnostic code the checker can emit has a UI case in both spellings.

The checker's codes (E02xx attributes, E03xx names, fns and types, E04xx uniformity and
constants) are read from the source of `phobos/sema/*.py`; the codes a UI case shows
are read from the `error[EXXXX]` / `warning[EXXXX]` headers of the `tests/ui/**/*.stderr`
goldens. A golden belongs to the `.ph` or the `.py` source beside it (`NAME.ph` or
`NAME.py` -> `NAME.stderr`), which says its spelling. A code missing from the goldens of
one spelling fails, unless the allow-lists below say why that spelling cannot produce it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEMA = REPO / "phobos" / "sema"
UI = REPO / "tests" / "ui"

CODE = re.compile(r"""["'](E0[234]\d\d)["']""")
HEADER = re.compile(r"^(?:error|warning)\[(E\d{4})\]", re.M)

# Codes no Python source can produce, so only a `.ph` case shows them.
PH_ONLY: dict[str, str] = {
    # `@ph.lanuch` is a name `phobos.lang` does not hold: the Python front end refuses it
    # (E0112) before the checker sees an attribute.
    "E0200": "an unknown attribute is refused by the Python front end as an unknown name",
}

# Codes no `.ph` source can produce, so only a Python case shows them.
PY_ONLY: dict[str, str] = {
    # `uses=` exists only on `@ph.fn`; a `.ph` fn resolves free names at the call.
    "E0260": "`uses` is the Python spelling's list of names a fn reads from its caller",
    "E0261": "`uses` is the Python spelling's list of names a fn reads from its caller",
    # The checker refuses Python's own spellings of division: in `.ph`, `/` is the only
    # division and `//` starts a comment.
    "E0302": "`/` of two integers is refused only where it is spelled in Python",
    "E0303": "`//` of floats is refused only where it is spelled in Python",
}


def checker_codes() -> set[str]:
    """Every E02xx-E04xx code spelled as a string in the checker's source."""
    codes: set[str] = set()
    for path in sorted(SEMA.glob("*.py")):
        codes.update(CODE.findall(path.read_text(encoding="utf-8")))
    return codes


def golden_codes() -> dict[str, set[str]]:
    """The codes the goldens show, by the spelling of their source: "ph" and "py"."""
    seen: dict[str, set[str]] = {"ph": set(), "py": set()}
    for golden in sorted(UI.rglob("*.stderr")):
        if golden.with_suffix(".ph").is_file():
            spelling = "ph"
        elif golden.with_suffix(".py").is_file():
            spelling = "py"
        else:
            continue  # a golden with no case beside it shows nothing
        seen[spelling].update(HEADER.findall(golden.read_text(encoding="utf-8")))
    return seen


def test_checker_codes_are_found() -> None:
    codes = checker_codes()
    assert {"E0200", "E0250", "E0300", "E0400"} <= codes, sorted(codes)


@pytest.mark.parametrize("spelling", ["ph", "py"])
def test_every_code_has_a_golden(spelling: str) -> None:
    unreachable = PY_ONLY if spelling == "ph" else PH_ONLY
    missing = sorted(checker_codes() - golden_codes()[spelling] - set(unreachable))
    kind = "`.ph`" if spelling == "ph" else "Python"
    assert not missing, (
        f"no {kind} UI case shows these checker codes: {', '.join(missing)}; "
        "add a case under tests/ui (or, if that spelling cannot produce one, "
        "allow-list it in tests/test_ui_coverage.py with the reason)"
    )


def test_allow_lists_are_current() -> None:
    codes = checker_codes()
    goldens = golden_codes()
    assert not set(PH_ONLY) & set(PY_ONLY), "a code cannot be unreachable in both spellings"
    stale = [c for c in {**PH_ONLY, **PY_ONLY} if c not in codes]
    assert not stale, f"allow-listed codes the checker no longer emits: {stale}"
    shown = [c for c in PH_ONLY if c in goldens["py"]] + [c for c in PY_ONLY if c in goldens["ph"]]
    assert not shown, f"allow-listed as unreachable, yet a golden of that spelling shows: {shown}"
