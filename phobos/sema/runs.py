"""A thread's runs (SPEC.md "Collectives and shuffles", "Operators and conversions").

A run is a slice with exactly one `k :+ n` span of a constant length and points
elsewhere, `W[col, k :+ 16]`: the thread's own `n` elements, read as one load.
It reads a tensor, a whole shared tile (a `var` tile) or that tile's `flat()`
view, never a `let` slice of one. `sum(e)` with no group, `elem`, `store` and
`word` take runs; inside them a run is typed as a rank-1 tile of its `n`
elements, so runs of different ranks meet elementwise.

    >>> run_len_message(16, 8)
    'the runs of one `sum` have one length: this one is 8, the first 16'
"""

from __future__ import annotations

from phobos.sema import hir
from phobos.sema.typing import elem, is_shaped
from phobos.syntax import ast

E_RUN = "E0321"

RUN_HELP = "write a run as `X[.., k :+ n]`: one `:+` span of a constant length, points elsewhere"
# Built-ins that act per element inside a run-sum's expression.
ELEMENTWISE = {
    "exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos",
    "pow", "min", "max", "tmax",
}  # fmt: skip


def run_len_message(first: int, this: int) -> str:
    return f"the runs of one `sum` have one length: this one is {this}, the first {first}"


class RunState:
    """What checking one run expression has seen: its runs and their length."""

    def __init__(self, op: str):
        self.op = op
        self.length: int | None = None
        self.runs: set[int] = set()  # ids of the hir slices that are runs


def check_run_expr(ck, node, scope, op: str):
    """`node` checked with its slices read as runs: (hir value, RunState)."""
    saved = ck.run_state
    state = RunState(op)
    ck.run_state = state
    try:
        value = ck.expr(node, scope)
    finally:
        ck.run_state = saved
    return value, state


def run_slice(ck, e: ast.Index, value: hir.Slice) -> hir.Slice:
    """The run `e` (already checked as the slice `value`), retyped to its `n` elements."""
    from phobos.sema.body import Bail

    state = ck.run_state
    spans = [s for s in e.subscripts if not isinstance(s, ast.Point)]
    if len(spans) != 1 or not isinstance(spans[0], ast.SliceLen):
        ck.error(
            E_RUN,
            f"`{state.op}` takes a thread's run, with exactly one `:+` span",
            e,
            "not a run" if len(spans) == 1 else f"{len(spans)} spans",
            help=RUN_HELP,
        )
        raise Bail
    base = value.base
    if isinstance(base, hir.Ref) and base.sym.kind == "let":
        ck.error(
            E_RUN,
            f"a run reads a tensor, a whole tile or its `flat()` view, not the `let` slice "
            f"`{base.sym.name}`",
            e.base,
            "a `let` view",
            help="slice the tensor or tile it views, at the combined offsets",
        )
        raise Bail
    ok = (
        isinstance(base, hir.Ref)
        and (
            (base.sym.kind == "param" and isinstance(base.type, hir.TensorT))
            or (base.sym.kind == "var" and isinstance(base.type, hir.TileT))
        )
    ) or (isinstance(base, hir.Builtin) and base.name == "flat")
    if not ok:
        ck.error(
            E_RUN,
            "a run reads a tensor, a whole tile or its `flat()` view",
            e.base,
            "not one of these",
            help=RUN_HELP,
        )
        raise Bail
    n = next(s.extent for s in value.subs if not s.point)
    if state.length is not None and state.length != n:
        ck.error(E_RUN, run_len_message(state.length, n), e, f"a run of {n}")
        raise Bail
    state.length = n
    out = hir.Slice(
        value.base, value.subs, hir.TileT(elem(value.type), (n,)), value.uni, span=e.span
    )
    state.runs.add(id(out))
    ck.keep.append(out)
    return out


def check_run_operands(ck, value, state: RunState, node) -> None:
    """Every shaped leaf of `value` is a run; operators and math act per element."""
    from phobos.sema.body import Bail

    def walk(e) -> None:
        if not is_shaped(e.type):
            return
        if isinstance(e, hir.Slice) and id(e) in state.runs:
            return
        if isinstance(e, hir.Binary):
            walk(e.left)
            walk(e.right)
            return
        if isinstance(e, hir.Unary):
            walk(e.operand)
            return
        if isinstance(e, hir.Convert):
            walk(e.value)
            return
        if isinstance(e, hir.Builtin) and e.name in ELEMENTWISE:
            for a in e.args:
                walk(a)
            return
        where = e if e.span is not None else node
        if isinstance(e, hir.Ref) and e.sym.kind == "let":
            ck.error(
                E_RUN,
                f"a run reads a tensor, a whole tile or its `flat()` view, not the `let` slice "
                f"`{e.sym.name}`",
                where,
                "a `let` view",
                help="slice the tensor or tile it views: `sum(X[.., k :+ n])`",
            )
            raise Bail
        ck.error(
            E_RUN,
            f"`{state.op}` sums a per-element expression over runs and scalars, not `{e.type}`",
            where,
            "not a run",
            help=RUN_HELP,
        )
        raise Bail

    walk(value)


def the_run(ck, call, scope, op: str):
    """The run a built-in takes as its first argument: (hir slice, n)."""
    from phobos.sema.body import ERR, Bail

    node = call.args[0]
    value, state = check_run_expr(ck, node, scope, op)
    if value.type == ERR:
        raise Bail
    if not (isinstance(value, hir.Slice) and id(value) in state.runs):
        ck.error(
            E_RUN,
            f"`{op}` takes a thread's run, a slice `X[.., k :+ n]`",
            node,
            "not a run",
            help=RUN_HELP,
        )
        raise Bail
    return value, state.length
