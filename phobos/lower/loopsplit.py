"""A `for` over a dynamic extent split into whole tiles plus one masked remainder
(SPEC.md "Bounds and masking": "Dynamic extent walked by a for").

    for c in range(lo, N, L) { ... X[r, c :+ L] ... }

lowers to

    for c in range(lo, N - (L - 1), L) { ... }      # whole tiles: c + L <= N
    c' = N - (N - lo) % L                            # the first c not walked
    if c' < N { ... with c = c' ... }                # the remainder, masked

In the whole-tile loop a span `c :+ L` of an axis whose extent is `N` never passes
`N`, so its bound check against `N` is known true and dropped (`proven_inside`, read
by `phobos.lower.memory.slice_of`); the remainder keeps every mask. Signed
arithmetic: where `N - lo` is below `L` the whole loop runs no turn, and where
`N < lo` the remainder's test fails (`%` truncates toward zero, so `c' >= N`).

A loop qualifies when all of these hold; otherwise it stays one loop, every
iteration masked, and the reason is logged under `phobos.lower`:

    the step is a positive constant `L`, the loop variable signed;
    the upper bound is a dynamic extent `N` (a dimension bound at launch), not
    `@aligned` (its masks are gone already);
    the body holds a span `c :+ L` (start exactly the loop variable, static length
    `L`, the step) of a tensor parameter on an axis of extent `N`: only such spans
    lose their masks, other spans indexed by `c` keep theirs;
    no `break` or `continue` of this loop (a `break` in the whole loop would run
    the remainder).

The body is lowered twice (as `for<unroll>` does), so its `let`s bind fresh
registers in each copy.

    >>> qualifies_step(hir.Const(64, hir.Scalar("i32"), 0))
    64
"""

from __future__ import annotations

import logging
from math import gcd

from phobos.lower import lir, scalars
from phobos.lower.builder import isub
from phobos.lower.hirwalk import walk as _walk
from phobos.lower.lir import Imm, Reg
from phobos.lower.tma import staged_by_tma
from phobos.lower.types import REG, elem_of
from phobos.lower.unroll import _escapes
from phobos.sema import hir

log = logging.getLogger("phobos.lower")


def qualifies_step(step) -> int | None:
    """The loop's step as a positive int, or None."""
    if isinstance(step, int):
        return step if step > 0 else None
    if (
        isinstance(step, hir.Const)
        and isinstance(step.value, int)
        and not isinstance(step.value, bool)
    ):
        return step.value if step.value > 0 else None
    return None


def _spans(s: hir.For, dim: str, step: int) -> list[hir.Slice]:
    """The spans `c :+ step` of a tensor parameter on an axis of extent `dim` in `s`'s body."""
    out = []
    for node in _walk(s.body):
        if not isinstance(node, hir.Slice) or not isinstance(node.base, hir.Ref):
            continue
        t = node.base.sym.type
        if not isinstance(t, hir.TensorT) or node.base.sym.kind != "param":
            continue
        for sub, d in zip(node.subs, t.dims, strict=True):
            if (
                not sub.point
                and isinstance(sub.start, hir.Ref)
                and sub.start.sym is s.var
                and sub.extent == step
                and isinstance(d, hir.Dyn)
                and d.name == dim
            ):
                out.append(node)
                break
    return out


def split_reason(lw, s: hir.For) -> str | None:
    """Why `s` is not split (None: it is)."""
    step = qualifies_step(s.step)
    if step is None:
        return "a step that is not a positive constant"
    if elem_of(s.var.type).startswith("u"):
        return "an unsigned loop variable"
    if not (isinstance(s.hi, hir.Ref) and s.hi.sym.kind == "dim"):
        return "an upper bound that is not a dynamic extent"
    dim = s.hi.sym.name
    if dim in lw.aligned:
        return f"`{dim}` is @aligned: no masks to remove"
    if staged_by_tma(lw, s):
        return "its tiles are staged by TMA, which reads zeros past the tensor's edges"
    if dim not in lw.dims:
        return f"the extent `{dim}` is not a parameter"
    if not _spans(s, dim, step):
        return f"no span `{s.var.name} :+ {step}` over `{dim}` in the body"
    why = _escapes(s.body)
    if why is not None and not why.startswith("a tile"):
        return why
    return None


def lower_split(lw, s: hir.For) -> bool:
    """Lower `s` as whole tiles plus a remainder; False (nothing emitted) where it does
    not qualify."""
    why = split_reason(lw, s)
    line = s.span.source.line_col(s.span.start)[0] if s.span is not None else "?"
    if why is not None:
        log.debug("`%s` line %s: for `%s` not split: %s", lw.k.name, line, s.var.name, why)
        return False
    b, et = lw.b, elem_of(s.var.type)
    t = REG[et]
    step = qualifies_step(s.step)
    dim = s.hi.sym.name
    lo, hi = (_as(b, lw.value(e), t) for e in (s.lo, s.hi))
    lw.divs[s.var] = gcd(lw._divisor(s.lo), step)
    whole_hi = isub(b, t, hi, step - 1)
    var = b.reg(t, s.var.name)
    lw.env[s.var] = var
    lw.whole_tiles[s.var] = (lw.dims[dim].name, step)
    try:
        with lw.prefetching(s, lo, whole_hi, Imm(step, t), _varying(s)) as ring:
            body = lw.loop_body(s.body, _varying(s), ring)
            b.add(lir.For(var, lo, whole_hi, Imm(step, t), body, span=s.span))
            if ring is not None and hasattr(ring, "after"):
                ring.after()
    finally:
        del lw.whole_tiles[s.var]
    span_rem = _rem(lw, isub(b, t, hi, lo), step, t)
    start = isub(b, t, hi, span_rem)
    if isinstance(start, Imm):
        start = b.copy(start, t, hint=s.var.name)
    cond = scalars.binary(b, "<", start, hi, et)
    with lw.tracker.branch(_varying(s)):
        with b.region() as rest:
            lw.env[s.var] = start
            lw.block(s.body)
    b.add(lir.If(cond, rest.block, None, span=s.span))
    log.debug("`%s` line %s: for `%s` split on `%s`: whole tiles of %d unmasked, one masked "
              "remainder", lw.k.name, line, s.var.name, dim, step)  # fmt: skip
    return True


def _as(b, v, t: str):
    """`v` as an operand of the loop's type `t`."""
    if isinstance(v, Imm):
        return Imm(int(v.value), t)
    if v.type != t:
        return b.op("mov", "b32" if lir.WIDTH[t] == 4 else "b64", v, dest_type=t)
    return v


def _rem(lw, x, n: int, t: str):
    """`x % n` (truncating) in the signed type `t`."""
    b = lw.b
    if isinstance(x, Imm):
        return Imm(int(x.value) - int(x.value / n) * n, t)
    if n == 1:
        return Imm(0, t)
    return b.op("rem", t, x, Imm(n, t))


def proven_inside(lw, sub: hir.Sub, parent_start, parent_extent) -> bool:
    """Whether the span `sub` of an axis (its parent window starting at `parent_start`,
    `parent_extent` long) provably stays inside it: `c :+ L` in the whole-tile loop of
    a split `for c` over that extent."""
    whole = getattr(lw, "whole_tiles", None)
    if not whole or sub.point or not isinstance(sub.start, hir.Ref):
        return False
    entry = whole.get(sub.start.sym)
    if entry is None:
        return False
    name, step = entry
    return (
        sub.extent == step
        and isinstance(parent_start, Imm)
        and parent_start.value == 0
        and isinstance(parent_extent, Reg)
        and parent_extent.name == name
    )


__all__ = ["lower_split", "proven_inside", "split_reason"]


def _varying(s) -> bool:
    """Whether the loop `s`'s bounds differ between threads (its body runs diverged)."""
    return max(s.lo.uni, s.hi.uni, getattr(s.step, "uni", hir.UNIFORM)) != hir.UNIFORM
