"""Every variant of a kernel's `@autotune` space compiled, in parallel processes; one that
fails to compile, needs more shared memory or registers than the chip has, or races
under the race check is left out with its reason.

    >>> from types import SimpleNamespace
    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> program, _ = parse(SourceFile("k.ph", '''
    ... @autotune(T in [64, 256])
    ... kernel stage(X: tensor<f32>[M, 64], Y: tensor<f32>[M, 64]) {
    ...   let r = ctx.block.x * T
    ...   var t: tile<f32>[T, 64] = X[r :+ T, 0 :+ 64]
    ...   barrier()
    ...   for q in range(0, T * 64 / ctx.threads) {
    ...     let e = q * ctx.threads + ctx.thread
    ...     if r + e / 64 < M { Y[r + e / 64, e % 64] = t[e / 64, 63 - e % 64] }
    ...   }
    ... }'''))
    >>> results = compile_variants(SimpleNamespace(program=program, name="stage"))
    >>> print(report(results))
    T=64   compiled
    T=128  compiled
    T=256  left out: shared memory: error[E0501]: the kernel's tiles need 65536 bytes of shared memory, more than the static 49152
    >>> ".entry stage(" in results[0].ptx
    True

Each variant is checked, then lowered, race-checked and emitted by `compile_variant`
through the driver's own stages (`phobos.driver.compile_checked`), so a variant the
tuner keeps is one `phobos-compile --all-variants --check-races` emits. The variants
compile in worker processes (`phobos.workers`) when they are enough to pay for them.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from phobos.diagnostics import Diagnostic
from phobos.space_budget import SpaceBudget
from phobos.workers import Failure, cpu_count, in_processes, pool_size

# The codes that say a variant asks the chip for more than it has, by stage; any other
# error is "compile". Spelled as the tuner's records spell their stages.
STAGE_OF_CODE = {
    "E0501": "shared memory",  # the tiles need more than the static 48 KB
    "E0510": "shared memory",  # a shape built-in stages more than the static 48 KB
    "E0502": "registers",  # a `@registers` tile cannot stay in registers
    "E0909": "race",  # a data race on shared memory, found by the race check
    "E0910": "fault",  # the race check's run faulted (an access past a tensor)
}


@dataclass(frozen=True)
class Compiled:
    """A variant that compiled (and passed the race check when asked): its PTX module,
    whose `.entry` is the kernel's name, and the launch contract of that one kernel."""

    variant: dict[str, int]
    key: str  # Space.variant_key: "BLOCK=1024,T=128"
    ptx: str
    contract_json: str
    emitted: int = 0  # the instructions its lowering emitted, for the space's budget


@dataclass(frozen=True)
class LeftOut:
    """A variant left out: the `stage` that refused it ("compile", "shared memory",
    "registers", "race"), the first error in one line, and the whole report."""

    variant: dict[str, int]
    key: str
    stage: str
    reason: str  # "error[E0501]: the kernel's tiles need 65568 bytes of shared memory, ..."
    detail: str  # the rendered diagnostics, plain text
    emitted: int = 0  # the instructions its lowering emitted before it was refused


def compile_variants(
    kernel,
    chip: str = "sm_90",
    *,
    check_races: bool = True,
    jobs: int | None = None,
    variants: list[dict] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Compiled | LeftOut]:
    """Compile every variant of `kernel`'s `@autotune` space for `chip`, one result per
    variant in the order of `variants` (None: the whole space, `Space.variants()`).

    `kernel` is a `phobos.lang.Kernel`, or anything with its `program` and `name`.
    `jobs` processes compile (default: one per variant, up to the CPUs this process
    may use); too few variants to pay for starting them compile here
    (`phobos.workers.pool_size`).
    `progress(done, total)` is called here as each variant finishes. A variant that
    crashes the compiler is left out with an "internal compiler error" reason; the
    others still compile. The variants share the budget of one space, as under
    `phobos-compile --all-variants` (`phobos.space_budget`): those past it are left out
    with E0515 uncompiled. An `@autotune` attribute the checker refuses raises
    `KernelCompileError`; a variant not in the space, `ValueError`.
    """
    from phobos.driver import CHIPS

    if chip not in CHIPS:
        raise ValueError(f"unknown chip `{chip}`; the chips are {', '.join(CHIPS)}")
    space = _space_of(kernel.program, kernel.name)
    chosen = list(space.variants()) if variants is None else variants
    # In the space's order, so the key and the checker see one spelling of each variant.
    chosen = [space.parse_key(space.variant_key(v)) for v in chosen]
    calls = [(kernel.program, kernel.name, v, chip, check_races) for v in chosen]
    count = pool_size(len(calls), cpu_count() if jobs is None else jobs, check_races)
    budget = SpaceBudget([_named(kernel.program, kernel.name)] * len(calls))
    results = in_processes(compile_variant, calls, count, progress, wanted=budget.wanted)

    def past_budget(i: int, diagnostic: Diagnostic) -> LeftOut:
        return left_out(chosen[i], space.variant_key(chosen[i]), [diagnostic])

    results = budget.settle(results, past_budget)
    out: list[Compiled | LeftOut] = []
    for variant, result in zip(chosen, results, strict=True):
        if isinstance(result, Failure):
            result = _crashed(kernel.name, variant, space.variant_key(variant), result)
        out.append(result)
    return out


def compile_variant(
    program, name: str, variant: dict[str, int], chip: str = "sm_90", check_races: bool = True
) -> Compiled | LeftOut:
    """Check one variant of kernel `name` of `program`, then lower, race-check (under
    `check_races`) and emit it by the driver's stages; the work of one worker.
    `variant` is in the space's order."""
    from phobos import driver
    from phobos.sema.check import check_kernel

    key = ",".join(f"{n}={v}" for n, v in variant.items())
    checked, diags = check_kernel(program, name, variant)
    if checked is None or _errors(diags):
        return left_out(variant, key, diags)
    options = driver.Options(chip=chip, check_races=check_races)
    try:
        result = driver.compile_checked([checked], "json", options)
    except driver.InternalCompilerError as ice:
        raise ice.error from None  # the bug itself, for the variant's report
    if not result.ok:
        return left_out(variant, key, result.diagnostics, result.emitted)
    return Compiled(variant, key, result.artifacts["ptx"], result.text, result.emitted)


def left_out(
    variant: dict[str, int], key: str, diags: Sequence[Diagnostic], emitted: int = 0
) -> LeftOut:
    """The variant left out for `diags`: its stage and reason from the first error.

    >>> d = Diagnostic.error("E0909", "a data race on `t`", None)
    >>> left_out({"W": 8}, "W=8", [d]).reason
    'error[E0909]: a data race on `t`'
    """
    from phobos.diagnostics.render import render_human

    first = (_errors(diags) or list(diags))[0]
    head = f"{first.severity}[{first.code}]" if first.code else first.severity
    reason = " ".join(f"{head}: {first.message}".split())  # one line, whatever it says
    stage = STAGE_OF_CODE.get(first.code or "", "compile")
    return LeftOut(variant, key, stage, reason, render_human(diags, color=False), emitted)


def report(results: Sequence[Compiled | LeftOut]) -> str:
    """One line a variant: its key, then "compiled" or "left out: <stage>: <reason>".

    >>> print(report([Compiled({"B": 64}, "B=64", "", ""),
    ...               LeftOut({"B": 128}, "B=128", "race", "error[E0909]: a race", "")]))
    B=64   compiled
    B=128  left out: race: error[E0909]: a race
    """
    keys = [r.key or "(no @autotune)" for r in results]
    width = max((len(k) for k in keys), default=0)
    lines = []
    for key, result in zip(keys, results, strict=True):
        if isinstance(result, Compiled):
            said = "compiled"
        else:
            said = f"left out: {result.stage}: {result.reason}"
        lines.append(f"{key.ljust(width)}  {said}")
    return "\n".join(lines)


def _crashed(name: str, variant: dict[str, int], key: str, failure: Failure) -> LeftOut:
    """A variant whose compilation raised or killed its process: a bug in Phobos."""
    error = failure.error
    if isinstance(error, BrokenProcessPool):
        what = "the compiler's process died"
    else:
        what = f"{type(error).__name__}: {error}"
    reason = " ".join(f"internal compiler error: {what}".split())
    lines = [
        f"error: {reason}",
        "note: this is a bug in Phobos; please report it with the kernel that triggered it",
        f"note: compiling variant {key or '(no @autotune)'} of `{name}`",
    ]
    if os.environ.get("PHOBOS_BACKTRACE", "") not in ("", "0"):
        lines.append("".join(traceback.format_exception(error)).rstrip("\n"))
    else:
        lines.append("note: run with `PHOBOS_BACKTRACE=1` for a backtrace")
    return LeftOut(variant, key, "compile", reason, "\n".join(lines) + "\n")


def _named(program, name: str):
    """Kernel `name` of `program` as the space's budget names it: its name and span."""
    from types import SimpleNamespace

    from phobos.syntax import ast

    found = [i for i in program.items if isinstance(i, ast.Kernel) and i.name.id == name]
    return SimpleNamespace(name=name, span=found[0].span if found else None)


def _space_of(program, name: str):
    """The `@autotune` space of kernel `name`, read from its attributes alone, so a
    variant the checker refuses (even the first choice) leaves the others to compile."""
    from phobos.lang.kernels import KernelCompileError
    from phobos.sema.attributes import check_attributes
    from phobos.syntax import ast

    found = [i for i in program.items if isinstance(i, ast.Kernel) and i.name.id == name]
    if not found:
        raise ValueError(f"no kernel named `{name}` in the program")
    attrs, diags = check_attributes(found[0])
    if _errors(diags):
        raise KernelCompileError(_errors(diags))
    return attrs.space


def _errors(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diags if d.severity == "error"]
