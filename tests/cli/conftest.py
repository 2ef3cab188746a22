"""Helpers for the command-line tests: run a tool in-process, and a front end to stub in."""

from __future__ import annotations

import io

import pytest

from phobos import driver
from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.syntax import ast


class Ran:
    def __init__(self, status: int, out: str, err: str):
        self.status, self.out, self.err = status, out, err


def run_tool(module, argv: list[str]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    status = module.run(argv, stdout=out, stderr=err, color=False)
    return Ran(status, out.getvalue(), err.getvalue())


def oops_front_end(unit: driver.Unit):
    """A stand-in front end: an empty program, and an error at every `oops`."""
    text = unit.source.text
    start = text.find("oops")
    while start >= 0:
        begin = unit.source.byte_offset(start)
        span = unit.source.span(begin, begin + 4)
        unit.diagnostics.append(
            Diagnostic.error("E0901", "found `oops`", Label(span, "not allowed here"))
        )
        start = text.find("oops", start + 1)
    whole = unit.source.span(0, len(unit.source.data))
    return ast.Program((), span=whole)


@pytest.fixture
def stub_front_ends(monkeypatch):
    """Both front ends replaced by `oops_front_end`, so the tests do not depend on them."""
    monkeypatch.setitem(driver.FRONT_ENDS, ".ph", oops_front_end)
    monkeypatch.setitem(driver.FRONT_ENDS, ".py", oops_front_end)
    monkeypatch.delenv("PHOBOS_BACKTRACE", raising=False)
    monkeypatch.delenv("PHOBOS_DUMP", raising=False)


@pytest.fixture
def compile_cli():
    """`phobos-compile` in-process: `compile_cli(argv) -> Ran(status, out, err)`."""
    from phobos.cli import compile as module

    return lambda argv: run_tool(module, argv)


@pytest.fixture
def ph2py_cli():
    """`ph2py` in-process: `ph2py_cli(argv) -> Ran(status, out, err)`."""
    from phobos.cli import ph2py as module

    return lambda argv: run_tool(module, argv)
