"""Shared by the Python front end's tests: translate a module, parse its `.ph` form."""

from __future__ import annotations

import textwrap

from phobos.pyfront.translate import translate_module
from phobos.source import SourceFile
from phobos.syntax.parser import parse

HEADER = "from __future__ import annotations\n\nimport phobos.lang as ph\n\n\n"


def py(text: str, header: str = HEADER):
    """The program and diagnostics of a Python module (`header` + dedented `text`)."""
    source = SourceFile("m.py", header + textwrap.dedent(text).lstrip("\n"))
    return translate_module(source)


def py_ok(text: str, header: str = HEADER):
    program, diags = py(text, header)
    assert diags == [], [d.message for d in diags]
    return program


def ph_ok(text: str):
    program, diags = parse(SourceFile("m.ph", textwrap.dedent(text)))
    assert diags == [], [d.message for d in diags]
    return program


def line_of(diag) -> int:
    return diag.span.source.line_col(diag.span.start)[0]


def header_lines(header: str = HEADER) -> int:
    return header.count("\n")
