"""Shared by the `.ph` syntax tests: node builders and parse shortcuts.

Spans never take part in `==`, so expected trees are built with one dummy span.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from phobos.source import SourceFile
from phobos.syntax import ast
from phobos.syntax.parser import parse

FIXTURES = Path(__file__).resolve().parent / "fixtures"
S = SourceFile("<expected>", "").span(0, 0)


def mk(cls, *args, **kw):
    """`cls(*args, span=S)`: a node for an expected tree."""
    return cls(*args, span=S, **kw)


def N(name: str) -> ast.Name:
    return mk(ast.Name, name)


def I(value: int) -> ast.Int:  # noqa: E743
    return mk(ast.Int, value)


def F(value: float, text: str = "") -> ast.Float:
    return mk(ast.Float, value, text)


def B(op: str, left, right) -> ast.Binary:
    return mk(ast.Binary, op, left, right)


def U(op: str, operand) -> ast.Unary:
    return mk(ast.Unary, op, operand)


def call(func, *args, config=()) -> ast.Call:
    func = N(func) if isinstance(func, str) else func
    items = tuple(mk(ast.ConfigItem, key, value) for key, value in config)
    return mk(ast.Call, func, tuple(args), items)


def idx(base, *subs) -> ast.Index:
    base = N(base) if isinstance(base, str) else base
    return mk(ast.Index, base, tuple(subs))


def pt(index) -> ast.Point:
    return mk(ast.Point, index)


def sl(start=None, stop=None) -> ast.Slice:
    return mk(ast.Slice, start, stop)


def span_len(start, length) -> ast.SliceLen:
    return mk(ast.SliceLen, start, length)


def ctx(field: str, axis: str | None = None) -> ast.Ctx:
    return mk(ast.Ctx, field, axis)


def scalar(name: str) -> ast.ScalarType:
    return mk(ast.ScalarType, name)


def tensor(elem: str, *dims) -> ast.TensorType:
    return mk(ast.TensorType, scalar(elem), tuple(_dim(d) for d in dims))


def tile(elem: str, *dims) -> ast.TileType:
    return mk(ast.TileType, scalar(elem), tuple(_dim(d) for d in dims))


def _dim(d):
    return N(d) if isinstance(d, str) else I(d)


def block(*stmts) -> ast.Block:
    return mk(ast.Block, tuple(stmts))


def source(text: str, name: str = "t.ph") -> SourceFile:
    return SourceFile(name, textwrap.dedent(text))


def parse_ok(text: str) -> ast.Program:
    """The program of `text` (dedented), which must parse without a diagnostic."""
    program, diags = parse(source(text))
    assert diags == [], [d.message for d in diags]
    return program


def expr(text: str):
    """The expression `text`, parsed as the body of `fn f() = text`."""
    return parse_ok(f"fn f() = {text}\n").items[0].body


def stmts(text: str) -> tuple:
    """The statements of `text`, parsed as the body of a kernel."""
    body = textwrap.indent(textwrap.dedent(text), "  ")
    return parse_ok(f"kernel k() {{\n{body}\n}}\n").items[0].body.stmts


def stmt(text: str):
    (only,) = stmts(text)
    return only


def errors(text: str):
    """The diagnostics of `text` (dedented); each span must lie inside the source."""
    src = source(text)
    _, diags = parse(src)
    for d in diags:
        for label in (d.primary, *d.secondary):
            assert label.span.source is src
            assert 0 <= label.span.start <= label.span.end <= len(src.data)
    return diags


def fixture_text(name: str) -> str:
    return (FIXTURES / f"{name}.ph").read_text(encoding="utf-8")
