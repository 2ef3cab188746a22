"""Span maps: written with names relative to their folder, read back, refused when wrong."""

from __future__ import annotations

import json
import os

import pytest

from phobos import spanmap
from phobos.source import SourceFile


def test_write_and_load_round_trip(tmp_path):
    py_path = tmp_path / "src" / "k.py"
    py_path.parent.mkdir()
    py_path.write_text("a = b + c\n")
    original = SourceFile.read(str(py_path))
    text = "let a = b + c\n"
    entries = [(0, 13, original.span(0, 9)), (8, 9, original.span(4, 5))]
    out = tmp_path / "gen" / "k.ph"
    out.parent.mkdir()
    smap = spanmap.build(str(out), text, entries, original)
    spanmap.write(smap, spanmap.map_path_for(str(out)))

    data = json.loads((tmp_path / "gen" / "k.ph.map").read_text())
    assert data["original"] == os.path.join("..", "src", "k.py")
    assert data["entries"] == [[0, 13, 0, 9], [8, 9, 4, 5]]

    generated = SourceFile("gen/k.ph", text)
    back = spanmap.load(str(tmp_path / "gen" / "k.ph.map"), generated)
    assert back.lookup(generated.span(8, 9)).text == "b"  # the smallest range holding it
    assert back.lookup(generated.span(12, 13)).text == "a = b + c"
    assert back.original.name == os.path.normpath(str(py_path))


def test_entries_from_other_files_are_left_out():
    original = SourceFile("k.py", "abc")
    other = SourceFile("o.py", "xyz")
    smap = spanmap.build(
        "k.ph", "abc", [(0, 1, original.span(0, 1)), (1, 2, other.span(0, 1))], original
    )
    assert smap.entries == [(0, 1, 0, 1)]


def test_absolute_original_names_are_kept(tmp_path):
    py_path = tmp_path / "k.py"
    py_path.write_text("x\n")
    (tmp_path / "k.ph.map").write_text(
        json.dumps({"version": 1, "original": str(py_path), "entries": [[0, 1, 0, 1]]})
    )
    back = spanmap.load(str(tmp_path / "k.ph.map"), SourceFile("k.ph", "y\n"))
    assert back.original.text == "x\n"


@pytest.mark.parametrize(
    "content, reason",
    [
        (None, "no such file"),
        ("", "not valid JSON"),
        ('"text"', "not a span map"),
        ('{"version": 1, "original": 3, "entries": []}', "missing `original`"),
        ('{"version": 1, "original": "k.py", "entries": [[0, 1, 0, true]]}', "four integers"),
        ('{"version": 1, "original": "k.py", "entries": [[0, 1, 5, 2]]}', "does not match"),
    ],
)
def test_bad_maps_raise_span_map_error(tmp_path, content, reason):
    (tmp_path / "k.py").write_text("x\n")
    if content is not None:
        (tmp_path / "k.ph.map").write_text(content)
    with pytest.raises(spanmap.SpanMapError, match=reason):
        spanmap.load(str(tmp_path / "k.ph.map"), SourceFile("k.ph", "y\n"))
