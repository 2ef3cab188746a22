"""Every hir node under a node: the walk the lowering's rules search a body with, and
the numbering the plan records its decisions under.

A leaf of the lowering (it imports nothing of it), so a module that only needs to
search a body (`phobos.lower.loopsplit`) need not import the planner.

    >>> from phobos.sema import hir
    >>> body = hir.Block((hir.Break(), hir.Return()))
    >>> [type(n).__name__ for n in walk(body)][:3]
    ['Block', 'tuple', 'Break']
"""

from __future__ import annotations

import itertools
from dataclasses import fields, is_dataclass, replace

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
            if f.name not in ("span", "label"):
                yield from walk(getattr(node, f.name))


def scalar_only(s) -> bool:
    """Whether `s` binds a scalar of registers alone (a `let` or `var` of a scalar whose
    value reads no memory a tile statement writes): every thread may run it."""
    if not isinstance(s, (hir.Let, hir.VarDecl)) or not isinstance(s.sym.type, hir.Scalar):
        return False
    return not any(isinstance(n, hir.Slice) for n in walk(s))


def numbered(body: hir.Block) -> hir.Block:
    """`body` with every statement and every tile-valued expression given its number
    (`label`), in the order they are written: the key under which the plan records
    what it decides for the node (a sweep's vector width and layout, a staging
    buffer), so that the decisions print beside the nodes they are for (`hir.dump`
    writes `#n`) and survive a node being copied by `dataclasses.replace`.

    >>> f32 = hir.Scalar("f32")
    >>> x = hir.Sym("x", 1, "var", hir.TileT(f32, (4,)))
    >>> ref = hir.Ref(x, x.type, hir.UNIFORM)
    >>> body = numbered(hir.Block((hir.Assign(ref, "=", hir.Builtin("exp", (ref,), x.type, 0)),)))
    >>> print(hir.dump(body))
    {
      x = exp#3(x): tile<f32>[4]  // #1
    }
    """
    counter = itertools.count(1)

    def visit(node):
        if isinstance(node, tuple):
            out = tuple(visit(x) for x in node)
            return node if all(a is b for a, b in zip(out, node, strict=True)) else out
        if isinstance(node, list):
            return [visit(x) for x in node]
        if not isinstance(node, (hir.Stmt, hir.Expr, hir.Sub)):
            return node
        labelled = (
            isinstance(node, hir.Stmt)
            and not isinstance(node, hir.Block)
            or (
                isinstance(node, hir.Expr)
                and not isinstance(getattr(node, "type", None), hir.Scalar)
            )
        )
        n = next(counter) if labelled else None
        changes = {}
        for f in fields(node):
            if f.name in ("span", "label"):
                continue
            value = getattr(node, f.name)
            new = visit(value)
            if new is not value:
                changes[f.name] = new
        if labelled:
            changes["label"] = n
        return replace(node, **changes) if changes else node

    return visit(body)
