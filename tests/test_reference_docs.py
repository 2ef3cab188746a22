"""docs/reference/ is what `python -m phobos.manual` writes from the compiler's name table.

The committed pages must equal a fresh rendering (so the manual cannot drift from
`phobos/names.py`), every name the table holds has an entry, and every example is accepted
by the front end and the checker. docs/reference/kernel.md is written by hand; its fences
run with the tutorials' (tests/test_tutorials.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phobos import names
from phobos.manual import check_example, entries, pages

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "regenerate it: python -m phobos.manual"
PAGES = pages()
HEADING = re.compile(r"^### `([^`]+)`$", re.M)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_committed_page_is_the_rendered_one(name):
    path = REFERENCE / name
    assert path.exists(), f"docs/reference/{name} is missing: {REGENERATE}"
    assert path.read_text() == PAGES[name], f"docs/reference/{name} is stale: {REGENERATE}"


def _headings() -> set[str]:
    """The names with an entry: a `### `name`` heading, or a row of the scalar types' table."""
    found = {h for text in PAGES.values() for h in HEADING.findall(text)}
    return found | set(re.findall(r"^\| `(\w+)` \|", PAGES["types.md"], re.M))


def test_every_name_of_the_table_has_an_entry():
    assert not entries.missing(), f"no notes in phobos/manual/entries.py for {entries.missing()}"
    table = set(names.all_names()) | set(names.CONVERSIONS)
    assert table - _headings() == set()


def test_every_ctx_field_is_listed():
    language = PAGES["language.md"]
    for field in names.CTX_FIELDS:
        assert f"`ctx.{field}" in language, field


def _examples():
    for name in names.BUILTINS:
        yield pytest.param(entries.entry(name).example, id=name)
    for name, entry in entries.ATTRIBUTES.items():
        yield pytest.param(entry.example, id=f"@{name}")
    yield pytest.param(entries.STRUCTURE_EXAMPLE, id="structure")
    yield pytest.param(entries.CONVERSION_EXAMPLE, id="conversions")


@pytest.mark.parametrize("code", list(_examples()))
def test_example_is_accepted_by_the_checker(code):
    assert check_example(code) == []


def test_every_example_is_on_a_page():
    text = "".join(PAGES.values())
    for param in _examples():
        (code,) = param.values
        assert code.rstrip() in text, param.id


def test_a_wrong_example_is_refused():
    bad = entries.entry("exp").example.replace("ph.exp(x)", "ph.exp(x, y)")
    assert check_example(bad)
    assert check_example("def f():\n    pass\n") == ["the example holds no kernel"]


def test_signatures_in_both_spellings():
    from phobos.manual.render import phobos_signature

    assert phobos_signature("sum", "(x, over=None, width=None)") == "sum<over g, width w>(x)"
    assert phobos_signature("shfl", "(v, xor=None, from_=None)") == "shfl<xor m, from s>(v)"
    assert phobos_signature("exp", "(x)") == "exp(x)"
