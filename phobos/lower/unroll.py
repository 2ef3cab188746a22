"""`for<unroll n> i in range(lo, hi, step)`: the body built n times a turn while a whole
turn fits, then the rest one at a time (SPEC.md "Statements").

    cur = lo
    loop {                              # whole turns
      break if cur >= hi - (n - 1) * step
      body(i = cur); body(i = cur + step); ... body(i = cur + (n - 1) * step)
      cur += n * step
    }
    loop {                              # the remainder, fewer than n iterations
      break if cur >= hi
      body(i = cur)
      cur += step
    }

Each copy binds the loop variable to its own register, so a copy's `let`s never meet
another's. The plain loop is kept (the same iterations, not unrolled) where a copy
could not stand alone: a `break` or `continue` of this loop in the body (a `break` in
the first loop would start the remainder), a tile declared in the body (its placement
is planned once), a step that is not a constant, or an unsigned loop variable.

    >>> plain_reason(None, 4) is None
    False
"""

from __future__ import annotations

import logging
from math import gcd

from phobos.lower import lir, scalars
from phobos.lower.builder import iadd, isub
from phobos.lower.types import REG, elem_of
from phobos.sema import hir

log = logging.getLogger("phobos.lower")


def _step(s) -> int | None:
    if isinstance(s, int):
        return s
    if isinstance(s, hir.Const) and isinstance(s.value, int) and not isinstance(s.value, bool):
        return s.value
    return None


def _escapes(blk, depth: int = 0) -> str | None:
    """What in `blk` keeps the body from being copied, or None."""
    for st in blk.stmts:
        if isinstance(st, (hir.Break, hir.Continue)) and depth == 0:
            return f"a `{type(st).__name__.lower()}` of the loop"
        if isinstance(st, (hir.Let, hir.VarDecl)) and isinstance(st.sym.type, hir.TileT):
            return "a tile declared in the body"
        for sub in ("then", "orelse", "body"):
            inner = getattr(st, sub, None)
            if isinstance(inner, hir.Block):
                deeper = depth + (1 if isinstance(st, (hir.For, hir.While)) else 0)
                why = _escapes(inner, deeper)
                if why:
                    return why
        if isinstance(st, hir.Block):
            why = _escapes(st, depth)
            if why:
                return why
    return None


def plain_reason(s, n: int) -> str | None:
    """Why `s` runs as a plain loop (None: it unrolls)."""
    if s is None or n < 2:
        return "an unroll factor below 2"
    step = _step(s.step)
    if step is None or step <= 0:
        return "a step that is not a positive constant"
    if elem_of(s.var.type).startswith("u"):
        return "an unsigned loop variable"
    return _escapes(s.body)


def lower_unrolled(lw, s: hir.For) -> bool:
    """Lower `s` unrolled; False (nothing emitted) where it stays a plain loop."""
    n = s.unroll or 1
    why = plain_reason(s, n)
    if why is not None:
        log.debug("for<unroll %d> runs as a plain loop: %s", n, why)
        return False
    b, et = lw.b, elem_of(s.var.type)
    t = REG[et]
    step = _step(s.step)
    lo = scalars.materialize(b, lw.value(s.lo), et)
    hi = scalars.materialize(b, lw.value(s.hi), et)
    cur = b.copy(lo, t, hint=s.var.name)
    lw.divs[s.var] = gcd(lw._divisor(s.lo), step)
    turn_end = isub(b, t, hi, (n - 1) * step)
    with lw.tracker.loop(s.body, _varying(s)):
        with b.region() as whole:
            b.add(lir.Break(scalars.binary(b, ">=", cur, turn_end, et)))
            for j in range(n):
                lw.env[s.var] = b.copy(iadd(b, t, cur, j * step), t, hint=s.var.name)
                lw.block(s.body)
            b.mov(cur, iadd(b, t, cur, n * step), t)
    b.add(lir.Loop(whole.block, span=s.span))
    with lw.tracker.loop(s.body, _varying(s)):
        with b.region() as rest:
            b.add(lir.Break(scalars.binary(b, ">=", cur, hi, et)))
            lw.env[s.var] = b.copy(cur, t, hint=s.var.name)
            lw.block(s.body)
            b.mov(cur, iadd(b, t, cur, step), t)
    b.add(lir.Loop(rest.block, span=s.span))
    return True


def _varying(s) -> bool:
    """Whether the loop `s`'s bounds differ between threads (its body runs diverged)."""
    return max(s.lo.uni, s.hi.uni, getattr(s.step, "uni", hir.UNIFORM)) != hir.UNIFORM
