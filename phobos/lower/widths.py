"""Vector widths: how many consecutive elements one access of a sweep may move.

Placement asks these before any code is emitted, and the sweep reads the answers
back: a slice's width is the widest its alignment proves (its start on the last axis
a multiple of it, its rows' pitch too, any bound it is masked against), an
expression's the narrowest of the slices it reads, 16 bytes at most (8 elements when
every value read is a 16-bit float, moved two to a 32-bit word).

    >>> max_vec_for(("f32", "f16"))
    4
    >>> max_vec_for(("f16", "bf16"))
    8
"""

from __future__ import annotations

from math import gcd

from phobos.lower import memory
from phobos.lower.hirwalk import walk
from phobos.lower.kinds import max_vec
from phobos.lower.types import BYTES, elem_of
from phobos.sema import hir

PACKED = ("f16", "bf16")  # moved two to a 32-bit word: 8 elements a 16-byte access


def max_vec_for(elems) -> int:
    """The widest vector (elements) every element type in `elems` allows: 16 bytes, 4
    at most, or 8 when every one is a 16-bit float (`PACKED`: two to a 32-bit word)."""
    elems = tuple(elems)
    if elems and all(e in PACKED for e in elems):
        return 8
    widest = max((BYTES.get(e, 4) for e in elems), default=4)
    return max(1, min(4, 16 // widest))


# ---------------------------------------------------------------------------
# Static vector-width analysis (used by placement before any code is emitted)


def _chain(e, lets):
    """The slices from the tensor (or tile) to `e`, outermost first, and the base Ref."""
    chain = []
    while True:
        if isinstance(e, hir.Slice):
            chain.append(e)
            e = e.base
        elif isinstance(e, hir.Ref) and e.sym in lets:
            e = lets[e.sym]
        else:
            return e, chain[::-1]


def _is_zero(e) -> bool:
    return isinstance(e, hir.Const) and e.value == 0


def _fixed_rows(base, chain, own) -> bool:
    """Whether the access never leaves the first row of its array: on every axis before
    the last, each slice starts at 0 and the view is one element wide. Its row offsets
    are then 0, whatever the pitch."""
    dims = base.type.dims if hasattr(base.type, "dims") else ()
    for a in range(len(dims) - 1):
        if not chain:
            if dims[a] != 1:
                return False
            continue
        if any(not _is_zero(sl.subs[a].start) for sl in chain):
            return False
        sub = chain[-1].subs[a]
        if not (sub.point or sub.extent == 1):
            return False
    return True


def slice_vec(lw, e, shape, lets) -> int:
    """The widest vector provable for a slice `e` swept over `shape`, or reachable by
    versioning the sweep on a dynamic row pitch (`slice_widths`).

    Its start is a multiple of the width: the starts on the last axis (folded
    constants, multiples of tile constants, `@aligned`), and the row pitch (the last
    extent: a dynamic one is a multiple of 4 by the ABI, more under `@aligned`) unless
    the access stays in row 0. A bound the last axis is masked against (the tensor's
    end, a parent slice's end) is a multiple of the width too, except that an 8-wide
    16-bit access may meet a bound that is only a multiple of 4: it is guarded per half
    (`Sweeper.guard`).

    Where only the dynamic row pitch keeps the width below the widest, the wider
    width is returned and the proven one noted (`Plan.widened`, under `e`'s label): the
    sweep runs twice under a branch on the pitch (`versioned`), and anywhere it is
    not versioned the access splits into pieces of the proven width.
    """
    proven, wider, dim = slice_widths(lw, e, shape, lets)
    if wider > proven:
        widened = getattr(lw, "widened", None)
        if widened is not None:
            widened[e.label] = (proven, dim, wider)
    return wider


def slice_widths(lw, e, shape, lets) -> tuple:
    """(the width proven, the width if the dynamic row pitch `N` were a multiple of 8
    (`VERSION` elements of 16 bits: 16 bytes), and that extent (None: no version))."""
    base, chain = _chain(e, lets)
    dims = base.type.dims if hasattr(base.type, "dims") else ()
    elem = elem_of(e.type)
    v = max_vec_for((elem,))
    own = tuple(e.type.dims)
    if not shape or not own:
        return 1, 1, None
    if own[-1] == 1 and shape[-1] != 1:
        return v, v, None  # broadcast along the row: one element a vector, no constraint
    last = len(dims) - 1
    start = bound = memory.BIG
    for sl in chain:
        sub = sl.subs[last]
        start = gcd(start, lw.divisor(sub.start))
        if sub.point:
            return 1, 1, None
        if sl is not chain[-1] and sub.extent is not None:
            bound = gcd(bound, _dim_div(lw, sub.extent))
    d_last = dims[last] if dims else 1
    bound = gcd(bound, _dim_div(lw, d_last))
    wider, dim = start, None
    if not _fixed_rows(base, chain, own):
        pitch = _dim_div(lw, d_last)
        start = gcd(start, pitch)  # the row pitch
        if isinstance(d_last, hir.Dyn) and pitch < VERSION:
            wider, dim = gcd(wider, VERSION), d_last
        else:
            wider = start
    proven = _fit(v, start, bound, shape)
    versioned = _fit(v, wider, bound, shape)
    return proven, versioned, dim if versioned > proven else None


VERSION = 8  # the multiple a dynamic row pitch is tested for at run time (16 bytes of f16)


def _fit(v, start, bound, shape) -> int:
    """The widest of `v`, `v / 2`, ... that `start`, the last extent and `bound` allow."""
    while v > 1 and (
        start % v
        or (isinstance(shape[-1], int) and shape[-1] % v)
        or (bound % v and not (v == 8 and bound % 4 == 0))
    ):
        v //= 2
    return v


def _dim_div(lw, d) -> int:
    if isinstance(d, int):
        return d if d else memory.BIG
    tile = lw.aligned.get(d.name)
    if isinstance(tile, int) and tile > 0:
        return max(4, tile & -tile)
    return 4


def operands(e) -> list:
    """The operands of an operation: a binary's two, a unary's or conversion's one, a
    built-in's arguments; none for anything else (a reference, a slice, a constant).

    >>> f32 = hir.Scalar("f32")
    >>> one = hir.Const(1.0, f32)
    >>> len(operands(hir.Binary("+", one, one, f32, hir.UNIFORM))), operands(one)
    (2, [])
    """
    if isinstance(e, hir.Binary):
        return [e.left, e.right]
    if isinstance(e, hir.Unary):
        return [e.operand]
    if isinstance(e, hir.Convert):
        return [e.value]
    if isinstance(e, hir.Builtin):
        return list(e.args)
    return []


def memory_elems(e, lets) -> list[str]:
    """The element types of the tensor slices (and views) the expression `e` reads."""
    if isinstance(e.type, hir.Scalar):
        return []
    if isinstance(e, hir.Slice) or (
        isinstance(e, hir.Ref) and (e.sym in lets or isinstance(e.sym.type, hir.TensorT))
    ):
        return [elem_of(e.type)]
    return [t for p in operands(e) for t in memory_elems(p, lets)]


def expr_vec(lw, e, shape, lets, packed: bool = False) -> int:
    """The widest vector every slice read in the elementwise expression `e` allows.

    `packed`: every slice the sweep touches holds 16-bit floats, so the sweep may run
    8 elements a vector whatever types it computes in (registers hold them); otherwise
    every value's type caps the width at 16 bytes, 4 elements at most.
    """
    v = max_vec(shape)
    if isinstance(e.type, hir.Scalar):
        return v
    if not packed:
        v = min(v, max_vec_for((elem_of(e.type),)), 4)
    if isinstance(e, (hir.Slice,)) or (isinstance(e, hir.Ref) and e.sym in lets):
        return min(v, slice_vec(lw, e, shape, lets))
    if isinstance(e, hir.Ref):
        return v
    for p in operands(e):
        v = min(v, expr_vec(lw, p, shape, lets, packed))
    return v


# ---------------------------------------------------------------------------
# Points: one register group of one thread


def proven(lw, e, vec: int) -> int:
    """`vec`, or narrower where a slice read in `e` was widened past what its alignment
    proves (`slice_vec` noted it under the slice's label): the width an access that
    cannot be versioned on the pitch (a cp.async copy, say) may take."""
    for node in walk(e):
        noted = lw.widened.get(getattr(node, "label", None))
        if noted is not None:
            vec = min(vec, noted[0])
    return vec
