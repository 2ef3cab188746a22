"""The help of two shapes that NumPy would broadcast and Phobos does not: different ranks.

NumPy lines shapes up from the right and adds axes of extent 1 in front of the shorter,
so a `[C]` row meets a `[1, C]` tile. Phobos broadcasts only within one rank (SPEC.md
"Tiles"): a point index keeps its axis, so `A[r, 0:+C]` is `[1, C]`, and a slice of a
rank-1 tensor is rank 1. The fix is a declaration at the longer rank, named here from
the operand that is short:

    >>> from phobos.sema import hir
    >>> f32 = hir.Scalar("f32")
    >>> b = hir.Sym("b", 1, "param", hir.TensorT(f32, (hir.Dyn("C"),)))
    >>> part = hir.Slice(hir.Ref(b, b.type, 0), (), hir.TileT(f32, (64,)), 0)
    >>> rank_help(part, (64,), (1, 64), python=False)
    'Phobos adds no axes, as NumPy would: declare `b` at rank 2, `b: tensor<f32>[1, C]`, and read `[1, 64]` slices of it'
"""

from __future__ import annotations

from phobos.sema import hir
from phobos.sema.typing import same_dim, shape_text


def numpy_broadcasts(a: tuple, b: tuple) -> bool:
    """Whether NumPy's rule (shapes lined up from the right) broadcasts `a` with `b`."""
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if not (same_dim(x, y) or x == 1 or y == 1):
            return False
    return True


def rank_help(short, short_dims: tuple, long_dims: tuple, *, python: bool) -> str | None:
    """The declaration that gives operand `short` (hir) the rank of `long_dims`, when
    the two differ only in the axes NumPy would add; None when not that case."""
    if len(short_dims) >= len(long_dims) or not numpy_broadcasts(short_dims, long_dims):
        return None
    ones = (1,) * (len(long_dims) - len(short_dims))
    rank = len(long_dims)
    lead = "Phobos adds no axes, as NumPy would"
    base = short.base if isinstance(short, hir.Slice) else short
    if isinstance(base, hir.Ref) and isinstance(base.sym.type, hir.TensorT):
        t = base.sym.type
        decl = _spelled("tensor", t.elem, (*ones, *t.dims), python)
        want = shape_text((*ones, *short_dims))
        return (
            f"{lead}: declare `{base.sym.name}` at rank {rank}, `{base.sym.name}: {decl}`, "
            f"and read `{want}` slices of it"
        )
    if isinstance(short, hir.Ref) and isinstance(short.sym.type, hir.TileT):
        t = short.sym.type
        decl = _spelled("tile", t.elem, (*ones, *t.dims), python)
        name = short.sym.name
        written = f"{name}: ph.var[{decl}]" if python else f"var {name}: {decl}"
        return f"{lead}: declare `{name}` at rank {rank}, `{written}`"
    return f"{lead}: write the `{shape_text(short_dims)}` operand at rank {rank}, as " + (
        f"`{shape_text((*ones, *short_dims))}`"
    )


def _spelled(kind: str, elem, dims: tuple, python: bool) -> str:
    inner = ", ".join(map(str, dims))
    return f"ph.{kind}[ph.{elem}][{inner}]" if python else f"{kind}<{elem}>[{inner}]"
