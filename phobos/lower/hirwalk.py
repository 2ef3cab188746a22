"""Every hir node under a node: the walk the lowering's rules search a body with.

A leaf of the lowering (it imports nothing of it), so a module that only needs to
search a body (`phobos.lower.loopsplit`) need not import the planner.

    >>> from phobos.sema import hir
    >>> body = hir.Block((hir.Break(), hir.Return()))
    >>> [type(n).__name__ for n in walk(body)][:3]
    ['Block', 'tuple', 'Break']
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass

from phobos.sema import hir


def walk(node):
    """Every hir node under `node`, `node` first, then its fields in order (tuples and
    lists entered; a Sym's type and a node's span are not)."""
    yield node
    if isinstance(node, (tuple, list)):
        for item in node:
            yield from walk(item)
    elif is_dataclass(node) and not isinstance(node, (hir.Sym, type)):
        for f in fields(node):
            if f.name != "span":
                yield from walk(getattr(node, f.name))
