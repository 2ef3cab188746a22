"""The lowering of one kernel: an ordered list of named passes, run by one loop.

`Lowering.run` (`phobos.lower.kernel`) binds the kernel's parameters, then hands the
lowering to `run`, which calls each pass of `PASSES` in turn. A pass reads the
lowering and what the passes before it made (by their names) and makes one thing
that has a text form:

    >>> for p in PASSES:
    ...     print(f"{p.name:10}  {p.summary}")
    normalise   hir -> hir: nested reductions and products bound to tiles of their own
    place       where each tile lives, its layout and vector width, the shared buffers
    generate    statements -> lir, barriers and asynchronous copies interleaved
    overlap     lir -> lir: each wgmma group's wait put off past the work not needing it
    verify      the lir checked against its invariants (phobos.lower.verify)

`phobos-compile --emit PASS` prints a pass's text for every kernel of the file,
`PHOBOS_DUMP=DIR` writes each one beside the stages' (`DIR/<kernel>.<pass>`), and
`phobos-compile --list-passes` prints the table above. `verify` always runs last;
with `PHOBOS_VERIFY=1` in the environment (the tests set it) the verifier also runs
after every pass that makes lir, so a pass that breaks an invariant is named by the
failure rather than found by a later one.

A pass is one entry in `PASSES`: its `run(lowering, made)` returns its output, where
`made` maps the name of each pass already run to its output, and `text(lowering,
output)` is that output's text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from phobos.lower import lir, overlap, pipeline, placement
from phobos.lower.verify import verify as verify_lir
from phobos.sema import hir


@dataclass(frozen=True)
class Pass:
    """One step of the lowering: a name, a line saying what it makes, how it runs and
    how its output reads as text; `lir` when that output is lir (verified after it
    under `PHOBOS_VERIFY`)."""

    name: str
    summary: str
    run: Callable[[Any, dict[str, Any]], Any]
    text: Callable[[Any, Any], str]
    lir: bool = False


# ---------------------------------------------------------------------------
# The passes


def _normalise(lw, made: dict[str, Any]) -> hir.Block:
    return placement.normalize(lw.k.body)


def _normalised_text(lw, body: hir.Block) -> str:
    return hir.dump(dataclasses.replace(lw.k, body=body)) + "\n"


def _place(lw, made: dict[str, Any]) -> placement.Plan:
    lw.plan = placement.plan(lw, made["normalise"])
    lw.shared, lw.smem = lw.plan.shared, lw.plan.smem
    return lw.plan


def _generate(lw, made: dict[str, Any]) -> lir.Kernel:
    k = lw.k
    lw.trap_broken_alignment()
    lw.top_block(made["normalise"])
    pipeline.check_asserted(lw)  # `@pipeline` asserts that some loop was staged ahead
    launch = placement.launch_of(k)
    return lir.Kernel(
        k.name,
        tuple(lw.params),
        lw.b.finish(),
        threads=lw.launch_threads,
        smem=lw.smem,
        shared=tuple(lw.shared),
        dynamic_smem=bool(getattr(k.attrs, "dynshared", False)),
        min_blocks=getattr(launch, "min_blocks", None),
        max_regs=getattr(launch, "max_regs", None),
        index_width=k.index_width,
        maps=tuple(lw.maps),
        walk=lw.walk.names if lw.walk is not None else (),
        cluster=lw.walk.cluster.size if lw.walk is not None and lw.walk.cluster else 1,
        span=k.span,
    )


def _overlap(lw, made: dict[str, Any]) -> lir.Kernel:
    return overlap.defer_waits(made["generate"])


def _verify(lw, made: dict[str, Any]) -> lir.Kernel:
    kernel = made["overlap"]
    verify_lir(kernel)
    return kernel


def _lir_text(lw, kernel: lir.Kernel) -> str:
    return lir.print_kernel(kernel) + "\n"


PASSES: tuple[Pass, ...] = (
    Pass(
        "normalise",
        "hir -> hir: nested reductions and products bound to tiles of their own",
        _normalise,
        _normalised_text,
    ),
    Pass(
        "place",
        "where each tile lives, its layout and vector width, the shared buffers",
        _place,
        lambda lw, plan: plan_text(lw, plan),
    ),
    Pass(
        "generate",
        "statements -> lir, barriers and asynchronous copies interleaved",
        _generate,
        _lir_text,
        lir=True,
    ),
    Pass(
        "overlap",
        "lir -> lir: each wgmma group's wait put off past the work not needing it",
        _overlap,
        _lir_text,
        lir=True,
    ),
    Pass(
        "verify",
        "the lir checked against its invariants (phobos.lower.verify)",
        _verify,
        _lir_text,
    ),
)

NAMES: tuple[str, ...] = tuple(p.name for p in PASSES)


def verifying() -> bool:
    """Whether `PHOBOS_VERIFY` asks for the verifier after every pass that makes lir."""
    return os.environ.get("PHOBOS_VERIFY", "") not in ("", "0")


def run(lw, after: Callable[[Pass, Any, Any], None] | None = None) -> lir.Kernel:
    """Run every pass on the lowering `lw` in order; the last one's output, the lir
    kernel. `after(pass, lw, output)` is called as each pass finishes (for its text).

    A pass may raise `NotLowered` (a construct with no lowering yet), which ends the
    loop; the passes run before it have been reported to `after`.
    """
    made: dict[str, Any] = {}
    check = verifying()
    for p in PASSES:
        output = p.run(lw, made)
        made[p.name] = output
        if check and p.lir:
            verify_lir(output)
        if after is not None:
            after(p, lw, output)
    return made[PASSES[-1].name]


def describe() -> str:
    """The passes in order, one line each: what `phobos-compile --list-passes` prints."""
    width = max(len(p.name) for p in PASSES)
    return "".join(f"{p.name.ljust(width)}  {p.summary}\n" for p in PASSES)


# ---------------------------------------------------------------------------
# The plan's text: every field of the plan, tiles and buffers one a line. Fields are
# read generically, so a field added to `Plan`, `Tile` or `SharedBuffer` shows up
# here without a change; the registers a tile gets when it is declared are left out.

_UNSHOWN = ("regs",)


def plan_text(lw, plan) -> str:
    """The `place` pass's output as text: `--emit place`.

    A field keyed by tile lists each tile with its fields; one keyed by the node it
    decides for (a sweep's vector width, say) lists `#label: value`, the label the
    node carries in `--emit normalise`; a list of buffers gives one a line.
    """
    lines = [f"plan {lw.k.name}  // chip {getattr(lw, 'chip', '-')}"]
    for f in fields(plan):
        value = getattr(plan, f.name)
        if isinstance(value, dict) and value and all(isinstance(k, hir.Sym) for k in value):
            lines.append(f"  {f.name}:")
            for sym, item in value.items():
                lines.append(f"    {sym.name}: {_fields(item, sym)}")
        elif isinstance(value, dict) and all(isinstance(k, int) for k in value):
            shown = ", ".join(f"#{k}: {_value(v)}" for k, v in value.items())
            lines.append(f"  {f.name}: {{{shown}}}")  # keyed by the hir's labels (`#n`)
        elif isinstance(value, dict):
            shown = ", ".join(_value(v) for v in value.values())
            lines.append(f"  {f.name}: [{shown}]")
        elif isinstance(value, (list, tuple)) and value and all(map(is_dataclass, value)):
            lines.append(f"  {f.name}:")
            lines.extend(f"    {_fields(item)}" for item in value)
        else:
            lines.append(f"  {f.name}: {_value(value)}")
    return "\n".join(lines) + "\n"


def _fields(obj, key=None) -> str:
    if not is_dataclass(obj):
        return _value(obj)
    shown = []
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.name in _UNSHOWN or (key is not None and value is key):
            continue
        shown.append(f"{f.name}={_value(value)}")
    return " ".join(shown)


def _value(value) -> str:
    if isinstance(value, lir.SharedBuffer):  # named here; its bytes are in the buffer list
        return value.name
    if isinstance(value, hir.Sym):
        return value.name
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_value(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


__all__ = ["NAMES", "PASSES", "Pass", "describe", "plan_text", "run", "verifying"]
