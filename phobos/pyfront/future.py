"""A kernel module without `from __future__ import annotations`, met while Python runs it.

Without the import, Python evaluates a parameter's annotation when it runs the `def`,
and `ph.tensor[ph.f16][R, D]` names dimensions Python does not know: a bare
`NameError` would stop the import. `ph.tensor[...]` (and `ph.tile[...]`) are
subscripted only then, before the dimensions are read, so they call
`eager_annotation` with the frame running the `def`; it answers the Phobos error to
raise in place of the `NameError`, or None when Python would find every name.

    >>> import sys
    >>> eager_annotation(sys._getframe()) is None   # this module imports it
    True
"""

from __future__ import annotations
import __future__

import ast as py
import builtins
import linecache
from functools import lru_cache

from phobos.diagnostics import Diagnostic, Label
from phobos.pyfront.reader import ImportScope, Positions
from phobos.pyfront.spellings import MISSING_FUTURE
from phobos.source import SourceFile

_FLAG = __future__.annotations.compiler_flag


@lru_cache(maxsize=8)
def _module(path: str, text: str) -> tuple[SourceFile, py.Module] | None:
    try:
        return SourceFile(path, text), py.parse(text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def eager_annotation(frame) -> list[Diagnostic] | None:
    """The error for the kernel `def` that `frame` is running, if its annotations name a
    dimension Python cannot find; None otherwise (and always under the import)."""
    code = frame.f_code
    if code.co_flags & _FLAG:
        return None
    path = code.co_filename
    linecache.checkcache(path)
    text = "".join(linecache.getlines(path, frame.f_globals))
    parsed = _module(path, text) if text else None
    if parsed is None:
        return None
    source, tree = parsed
    node, scope = _def_at(tree.body, ImportScope(), frame.f_lineno)
    if node is None:
        return None
    known = set(frame.f_locals) | set(frame.f_globals) | set(dir(builtins))
    pos = Positions(source, 3 if text.startswith("\ufeff") else 0)
    args = node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.annotation is None:
            continue
        for name in py.walk(arg.annotation):
            if isinstance(name, py.Name) and name.id not in known:
                return [_diagnostic(node, name, pos)]
    return None


def _def_at(body, scope: ImportScope, line: int):
    """The `@ph.kernel` def whose decorators or signature hold `line`, and its imports."""
    scope = scope.with_imports(body)
    for stmt in body:
        if not isinstance(stmt, (py.FunctionDef, py.ClassDef, py.If, py.Try, py.With)):
            continue
        first = min([d.lineno for d in getattr(stmt, "decorator_list", ())] + [stmt.lineno])
        if not first <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, py.FunctionDef):
            kinds = {
                scope.lang_name(d.func if isinstance(d, py.Call) else d)
                for d in stmt.decorator_list
            }
            body_start = stmt.body[0].lineno if stmt.body else stmt.lineno
            if "kernel" in kinds and line < body_start:
                return stmt, scope
        inner: list[py.stmt] = list(getattr(stmt, "body", ()))
        for field in ("orelse", "finalbody"):
            inner.extend(getattr(stmt, field, ()) or ())
        for handler in getattr(stmt, "handlers", ()) or ():
            inner.extend(handler.body)
        found = _def_at(inner, scope, line)
        if found[0] is not None:
            return found
    return None, scope


def _diagnostic(node: py.FunctionDef, name: py.Name, pos: Positions) -> Diagnostic:
    return Diagnostic.error(
        MISSING_FUTURE,
        "a module of kernels needs `from __future__ import annotations`",
        Label(pos.def_name(node, node.name), "Python evaluates this def's annotations"),
        secondary=(Label(pos.span(name), f"`{name.id}` is not a name Python knows"),),
        help="add `from __future__ import annotations` as the module's first statement, "
        "so Python keeps each annotation as text for Phobos to read",
    )
