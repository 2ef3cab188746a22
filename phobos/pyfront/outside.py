"""What a Python module binds outside its kernels, for the help of a name a kernel cannot see.

A kernel sees its parameters, its `@ph.autotune` constants, the module's `@ph.fn`s and
the built-ins: never a module global, a local of a def around it, or an import. When
the checker cannot find a name in a `.py` kernel, `outside_binding` says which of these
the name is, from the module's text (never running it):

    >>> from phobos.source import SourceFile
    >>> text = "import phobos.lang as ph\\nBLOCK = 128\\n\\n@ph.kernel\\ndef k(x: ph.f32):\\n    y: ph.let = BLOCK\\n"
    >>> found = outside_binding(SourceFile("m.py", text), "BLOCK", text.index("= BLOCK") + 2)
    >>> found.kind, found.value, found.span.text
    ('global', 128, 'BLOCK')
"""

from __future__ import annotations

import ast as py
from dataclasses import dataclass
from functools import lru_cache

from phobos.pyfront.reader import ImportScope, Positions
from phobos.source import SourceFile, Span


@dataclass(frozen=True)
class Outside:
    """One binding a kernel does not see.

    `kind`: "global" (assigned at module level), "closure" (a local or parameter of
    the def named `owner`, around the kernel), "import" (imported from module
    `owner`), "def" (a plain Python def or class). `value` is the integer an
    assignment binds, when it is a literal.
    """

    kind: str
    name: str
    span: Span
    owner: str = ""
    value: int | None = None


@lru_cache(maxsize=8)
def _tree(text: str) -> py.Module | None:
    try:
        return py.parse(text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def outside_binding(source: SourceFile, name: str, offset: int) -> Outside | None:
    """How the module binds `name` outside the def holding byte `offset`, or None.

    The defs around the kernel are searched innermost first, then the module.
    """
    tree = _tree(source.text)
    if tree is None:
        return None
    pos = Positions(source, 3 if source.text.startswith("\ufeff") else 0)
    chain = _defs_around(tree.body, pos, offset)
    for outer in reversed(chain[:-1]):  # the last is the kernel (or fn) itself
        for arg in [*outer.args.posonlyargs, *outer.args.args, *outer.args.kwonlyargs]:
            if arg.arg == name:
                return Outside("closure", name, pos.span(arg), outer.name)
        found = _bound_in(outer.body, name, pos)
        if found is not None:
            kind = "closure" if found.kind in ("global", "def") else found.kind
            return Outside(kind, name, found.span, found.owner or outer.name, found.value)
    return _bound_in(tree.body, name, pos)


def _defs_around(body: list[py.stmt], pos: Positions, offset: int) -> list[py.FunctionDef]:
    """The defs whose text holds `offset`, outermost first."""
    for stmt in _statements(body, into_classes=True):
        if isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef)):
            span = pos.span(stmt)
            if span.start <= offset < span.end:
                return [stmt, *_defs_around(stmt.body, pos, offset)]
    return []


def _bound_in(body: list[py.stmt], name: str, pos: Positions) -> Outside | None:
    """The first binding of `name` among one scope's statements."""
    scope = ImportScope().with_imports(body)
    for stmt in _statements(body):
        if isinstance(stmt, (py.Import, py.ImportFrom)):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                if alias.name != "*" and local == name:
                    module = stmt.module if isinstance(stmt, py.ImportFrom) else alias.name
                    return Outside("import", name, pos.span(stmt), module or "")
        elif isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef, py.ClassDef)):
            if stmt.name == name:
                decorated = {
                    scope.lang_name(d.func if isinstance(d, py.Call) else d)
                    for d in stmt.decorator_list
                }
                if not decorated & {"kernel", "fn"}:
                    return Outside("def", name, pos.def_name(stmt, name))
        else:
            for target, value in _targets(stmt):
                if isinstance(target, py.Name) and target.id == name:
                    number = (
                        value.value
                        if isinstance(value, py.Constant) and type(value.value) is int
                        else None
                    )
                    return Outside("global", name, pos.span(target), "", number)
    return None


def _targets(stmt: py.stmt):
    """(name node, the value it is given or None) for each name `stmt` binds."""
    if isinstance(stmt, py.Assign):
        for target in stmt.targets:
            for node in _names(target):
                yield node, stmt.value if node is target else None
    elif isinstance(stmt, py.AnnAssign):
        yield stmt.target, stmt.value
    elif isinstance(stmt, (py.AugAssign, py.For, py.AsyncFor)):
        for node in _names(stmt.target):
            yield node, None
    elif isinstance(stmt, (py.With, py.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                for node in _names(item.optional_vars):
                    yield node, None


def _names(target: py.AST):
    if isinstance(target, py.Name):
        yield target
    elif isinstance(target, (py.Tuple, py.List)):
        for element in target.elts:
            yield from _names(element)
    elif isinstance(target, py.Starred):
        yield from _names(target.value)


def _statements(body: list[py.stmt], into_classes: bool = False):
    """One scope's statements, through `if`/`try`/`with`/loops, not into defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (py.FunctionDef, py.AsyncFunctionDef)):
            continue
        if isinstance(stmt, py.ClassDef) and not into_classes:
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _statements(inner, into_classes)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _statements(handler.body, into_classes)
        for case in getattr(stmt, "cases", ()) or ():
            yield from _statements(case.body, into_classes)
