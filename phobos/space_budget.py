"""The compile budget of a whole `@autotune` space, under `phobos-compile --all-variants`.

Each variant's lowering stops at its own budget (E0515, `phobos.lower.builder`), but a
space may hold hundreds of variants: a range widened to `[64, 4294967296]` holds 27
values, and every value too big to lower took its second or two to reach that budget,
so a file compiled for minutes. The variants of one kernel's space therefore share a
budget too, spent in the space's order: a variant starts only while the variants before
it have emitted fewer than `SPACE_INSTRUCTIONS` instructions between them, refused or
not. Those it leaves out are left out like any variant that fails (E0515, naming the
bound), and the answer is the same whatever the number of processes lowering them: a
variant run in parallel before the ones ahead of it finished is dropped afterwards if
they spent the budget.

    >>> from types import SimpleNamespace as K
    >>> budget = SpaceBudget([K(name="k", span=None)] * 3, limit=10)
    >>> done = [K(lir=1, emitted=6), K(lir=1, emitted=6), None]
    >>> budget.wanted(1, done), budget.wanted(2, done)
    (True, False)
    >>> [r.lir is not None for r in budget.settle(done)]
    [True, True, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phobos.diagnostics.diagnostic import Diagnostic, Label

# The instructions the variants of one space may emit between them: ten variants at
# their own budget, some 10 s of lowering. The largest space among the examples, the
# benchmarks' kernels and the test kernels emits 49,224 (examples/attention.py's
# `attention_causal` for sm_80, all 16 variants).
SPACE_INSTRUCTIONS = 1_000_000


class SpaceBudget:
    """The shared budget of each kernel's variants, for calls in `kernels`' order
    (every variant of one kernel together, in its space's order, as the driver's
    `_check` lists them)."""

    def __init__(self, kernels: Sequence[Any], limit: int | None = None):
        self.kernels = list(kernels)
        self.limit = SPACE_INSTRUCTIONS if limit is None else limit

    def spent_before(self, i: int, results: Sequence[Any]) -> int | None:
        """What the variants of call `i`'s kernel before it emitted, counting only those
        done (None: none of them has spent anything yet, or `i` is its kernel's first)."""
        name = self.kernels[i].name
        spent = None
        for j in range(i - 1, -1, -1):
            if self.kernels[j].name != name:
                break
            done = results[j]
            if done is not None and hasattr(done, "emitted"):
                spent = (spent or 0) + done.emitted
        return spent

    def wanted(self, i: int, results: Sequence[Any]) -> bool:
        """Whether call `i` is worth starting: the done variants ahead of it in its space
        have not spent the budget (those still running can only add to it)."""
        spent = self.spent_before(i, results)
        return spent is None or spent < self.limit

    def settle(self, results: Sequence[Any], refused=None) -> list[Any]:
        """`results` with every variant that starts past its space's budget, counting
        all before it, refused: run or not, it is left out the same way, as
        `refused(i, diagnostic)` says (default: the driver's `Lowering` of no kernel)."""
        if refused is None:
            from phobos.driver import Lowering

            def refused(i, diagnostic):
                return Lowering(None, [diagnostic], [])

        out = list(results)
        spent = 0
        for i, k in enumerate(self.kernels):
            if i == 0 or self.kernels[i - 1].name != k.name:
                spent = 0
            if spent >= self.limit:
                out[i] = refused(i, self.refusal(k, spent))
                continue
            spent += getattr(out[i], "emitted", 0)
        return out

    def refusal(self, k, spent: int) -> Diagnostic:
        """E0515 at `k`: its space's variants before it spent the budget."""
        label = Label(k.span, "this kernel's `@autotune` space") if k.span is not None else None
        return Diagnostic.error(
            "E0515",
            f"compiling every variant of `{k.name}` would lower more than "
            f"{self.limit:,} instructions, the budget of one `@autotune` space",
            label,
            notes=[
                f"the variants before this one emitted {spent:,} instructions between "
                "them; this one was not lowered"
            ],
            help="narrow the `@autotune` ranges (each power of two in a range is a "
            "variant), or compile one variant at a time",
        )
