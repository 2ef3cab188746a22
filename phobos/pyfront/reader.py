"""Reading a Python module: its syntax tree, byte spans, and how it names `phobos.lang`.

The front end never runs the module. It parses the text with Python's own `ast`,
turns node positions into `Span`s of the `.py` file, and works out from the
module's imports which expressions mean `phobos.lang`:

    >>> import ast
    >>> tree = ast.parse("import phobos.lang as ph\\nfrom phobos.lang import let as L\\n")
    >>> scope = ImportScope().with_imports(tree.body)
    >>> scope.lang_name(ast.parse("ph.exp", mode="eval").body)
    'exp'
    >>> scope.lang_name(ast.parse("L", mode="eval").body)
    'let'
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field

from phobos.source import SourceFile, Span

LANG_MODULE = "phobos.lang"

# What `lang_name` answers for an expression that is the module itself.
MODULE = "<module>"


class Positions:
    """Byte spans of Python `ast` nodes in one `SourceFile`.

    Python reports `col_offset` in UTF-8 bytes of the line, so a span is the line's
    byte start plus the column; `shift` accounts for a byte-order mark stripped
    before parsing (it sits on line 1 only).
    """

    def __init__(self, source: SourceFile, shift: int = 0):
        self.source = source
        self.shift = shift
        # Python ends a line at `\n`, `\r\n` or a lone `\r`; SourceFile only at `\n`.
        data = source.data
        self._starts = [0]
        for i, byte in enumerate(data):
            if byte == 0x0A or (byte == 0x0D and data[i + 1 : i + 2] != b"\n"):
                self._starts.append(i + 1)

    def offset(self, lineno: int, col: int) -> int:
        index = max(0, min(lineno - 1, len(self._starts) - 1))
        base = self._starts[index]
        return base + col + (self.shift if index == 0 else 0)

    def span(self, node: ast.AST) -> Span:
        """The bytes `node` covers."""
        start = self.offset(node.lineno, node.col_offset)
        end_line = getattr(node, "end_lineno", None) or node.lineno
        end_col = getattr(node, "end_col_offset", None)
        end = self.offset(end_line, end_col) if end_col is not None else start
        return self.source.span(start, end)

    def between(self, first: ast.AST, last: ast.AST) -> Span:
        """From the start of `first` to the end of `last`."""
        return self.span(first).to(self.span(last))

    def find(self, text: str, start: int, end: int, word: bool = False) -> Span | None:
        """The first `text` in bytes `start..end` outside a comment, or None.

        Used for tokens Python's `ast` gives no position: operators, `else`, `@`.
        """
        data = self.source.data
        needle = text.encode()
        i = start
        end = min(end, len(data))
        while i < end:
            byte = data[i]
            if byte == 0x23:  # `#` starts a comment up to the end of the line
                newline = data.find(b"\n", i, end)
                if newline < 0:
                    return None
                i = newline + 1
                continue
            if data.startswith(needle, i) and i + len(needle) <= end:
                before = data[i - 1 : i] if i > 0 else b" "
                after = data[i + len(needle) : i + len(needle) + 1] or b" "
                if not word or (not _is_ident_byte(before) and not _is_ident_byte(after)):
                    return self.source.span(i, i + len(needle))
            i += 1
        return None

    def token_between(self, text: str, left: ast.AST, right: ast.AST, word: bool = False) -> Span:
        """The token `text` written between two nodes, else the span from one to the other."""
        lo = self.span(left).end
        hi = self.span(right).start
        found = self.find(text, lo, hi, word)
        return found if found is not None else self.between(left, right)

    def def_name(self, node: ast.AST, name: str) -> Span:
        """The span of a `def`/`class` name, which Python's `ast` does not position."""
        start = self.offset(node.lineno, node.col_offset)
        found = self.find(name, start, self.span(node).end, word=True)
        return found if found is not None else self.source.span(start, start)

    def decorator(self, node: ast.AST) -> Span:
        """A decorator from its `@` (found by scanning back over blanks) to its end."""
        span = self.span(node)
        data = self.source.data
        i = span.start - 1
        while i >= 0 and data[i : i + 1] in (b" ", b"\t"):
            i -= 1
        if i >= 0 and data[i : i + 1] == b"@":
            return self.source.span(i, span.end)
        return span


def _is_ident_byte(b: bytes) -> bool:
    return b.isalnum() or b == b"_" or (bool(b) and b[0] >= 0x80)


@dataclass
class ImportScope:
    """The names one scope of a module binds to `phobos.lang` or to its contents.

    `modules`: local names for the module itself (`import phobos.lang as ph`,
    `from phobos import lang`). `packages`: local names for the `phobos` package
    (`import phobos.lang` binds `phobos`). `names`: local name -> the `phobos.lang`
    name it imports (`from phobos.lang import var as V`). `star`: a
    `from phobos.lang import *` was seen.
    """

    modules: set[str] = field(default_factory=set)
    packages: set[str] = field(default_factory=set)
    names: dict[str, str] = field(default_factory=dict)
    star: bool = False

    def child(self) -> ImportScope:
        return ImportScope(set(self.modules), set(self.packages), dict(self.names), self.star)

    def with_imports(self, body: list[ast.stmt]) -> ImportScope:
        """This scope extended by the imports of `body` (a module or def body).

        Imports under `if`/`try`/`with` count too (for example under
        `if TYPE_CHECKING:`); nested defs and classes are their own scopes.
        """
        scope = self.child()
        for stmt in _scope_statements(body):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    scope._add_import(alias)
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0:
                for alias in stmt.names:
                    scope._add_from(stmt.module or "", alias)
        return scope

    def _add_import(self, alias: ast.alias) -> None:
        if alias.name == LANG_MODULE:
            if alias.asname:
                self.modules.add(alias.asname)
            else:
                self.packages.add("phobos")
        elif alias.name == "phobos" or alias.name.startswith("phobos."):
            if alias.asname and alias.name == "phobos":
                self.packages.add(alias.asname)
            elif not alias.asname:
                self.packages.add("phobos")

    def _add_from(self, module: str, alias: ast.alias) -> None:
        local = alias.asname or alias.name
        if module == "phobos" and alias.name == "lang":
            self.modules.add(local)
        elif module == LANG_MODULE:
            if alias.name == "*":
                self.star = True
            else:
                self.names[local] = alias.name

    def lang_name(self, node: ast.AST) -> str | None:
        """The `phobos.lang` name `node` spells, `MODULE` for the module, else None.

        The name is returned whether or not `phobos.lang` holds it, so the caller can
        refuse an unknown `ph.foo` with its own message.
        """
        from phobos.names import all_names

        if isinstance(node, ast.Name):
            if node.id in self.modules:
                return MODULE
            if node.id in self.names:
                return self.names[node.id]
            if self.star and node.id in all_names():
                return node.id
            return None
        if isinstance(node, ast.Attribute):
            base = node.value
            if (
                isinstance(base, ast.Name)
                and base.id in self.packages
                and base.id not in self.modules
                and node.attr == "lang"
            ):
                return MODULE
            if self.lang_name(base) == MODULE:
                return node.attr
        return None


def _scope_statements(body: list[ast.stmt]):
    """Every statement of one scope, through compound statements but not into defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _scope_statements(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from _scope_statements(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            yield from _scope_statements(case.body)


def source_of(func) -> tuple[str, str]:
    """The path and full text of the file that defines `func`.

    The whole module is read, not just the function, so every span is a real line of
    the file. Raises `OSError` when Python cannot tell where `func` came from (a
    function typed at the prompt or built by `exec`).

        >>> path, text = source_of(source_of)
        >>> path.endswith("reader.py") and "def source_of" in text
        True
    """
    path = inspect.getsourcefile(func)
    if path is None:
        raise OSError(f"cannot find the source file of `{getattr(func, '__name__', func)}`")
    import linecache

    # A file edited since it was first read must be read again.
    linecache.checkcache(path)
    lines = linecache.getlines(path, getattr(func, "__globals__", None))
    if lines:
        return path, "".join(lines)
    with open(path, encoding="utf-8", errors="replace") as handle:
        return path, handle.read()
