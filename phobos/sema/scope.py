"""Names and scopes: what a name means at one point of a kernel.

A `Scope` maps names to `Binding`s and falls back to its parent. A binding is a
`Sym` (a parameter, `let`, `var`, loop variable or launch-bound dimension), or an
`Alias` (a fn parameter passed an expression, substituted where it is read).

    >>> from phobos.sema import hir
    >>> outer = Scope()
    >>> x = hir.Sym("x", 1, "let", hir.Scalar("i32"))
    >>> outer.bind("x", Binding(x))
    >>> inner = Scope(outer)
    >>> inner.lookup("x").sym is x, inner.lookup("y")
    (True, None)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from phobos.sema import hir


@dataclass
class Binding:
    """A name's meaning: `sym`, or `alias` (a hir expression) for a fn parameter."""

    sym: hir.Sym | None = None
    alias: Any = None
    key: Any = None  # stable across checking passes: where the binding was declared
    origin: Any = None  # the AST node that declared it (for notes)


class Scope:
    """One block's names, falling back to the enclosing block's."""

    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.names: dict[str, Binding] = {}

    def bind(self, name: str, binding: Binding) -> None:
        self.names[name] = binding

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def visible(self) -> set[str]:
        """Every name visible here."""
        out: set[str] = set()
        scope: Scope | None = self
        while scope is not None:
            out |= set(scope.names)
            scope = scope.parent
        return out


def did_you_mean(name: str, candidates) -> str | None:
    """The closest of `candidates` to `name`, for a `help`, or None.

    >>> did_you_mean("acc", ["acc2", "alpha"])
    'acc2'
    """
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return close[0] if close else None
