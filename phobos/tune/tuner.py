"""The tuner: compile every variant, check each against the reference, time the rest, keep it.

    record = tune(kernel, grid, args, reference=f)
    record.winner        # {"BLOCK": 1024, "T": 128}, or None when no variant passed

In order, for the kernel's `@autotune` space at the key values the arguments bind:

1. The record of an earlier tuning (same source, chip, card, key values, L2 flushed or
   not) is read; a variant it timed is not run again, so adding a choice to a dimension
   runs only the new variants (and those left out before). `force=True` runs them all.
2. The variants left compile in parallel processes, race-checked
   (`phobos.tune.variants`); one that fails is left out with its reason.
3. Each loads on the arguments' device; one the card cannot run (registers, shared
   memory) is left out.
4. The reference runs once on copies of the arguments in their own library (torch
   tensors for torch, CuPy arrays for CuPy, numpy otherwise: `phobos.tune.copies`).
   Each variant runs once on device copies, a canary after every tensor: a broken
   canary, a launch error or a tensor the reference leaves otherwise
   (`phobos.tune.check`) leaves it out.
5. The rest are timed (`phobos.tune.timing`): warm-up, the variants in turns, the L2
   flushed before each timed launch, the fastest of 20 rounds, every sample kept.
6. One JSON record per (kernel, key values) goes to the kernel cache
   (`phobos.tune.records`); the table of what was timed and what was left out, and why,
   is printed at the end (stderr).

The device is the `backend`: `phobos.tune.device.CudaBackend` unless a test passes
another with the same methods.
"""

from __future__ import annotations

import datetime
import os
import sys
from typing import Any

from phobos.tune.errors import TuneError

ENV = "PHOBOS_TUNE"
ROUNDS = 20  # timed launches of each variant; its time is the fastest


def enabled() -> bool:
    """False when `PHOBOS_TUNE=0` (or `false`, `off`, `no`): no tuning; launches take
    each constant's first choice."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def key_values(kernel, dims: dict[str, int]) -> dict[str, int]:
    """The values of `kernel`'s key extents among the bound `dims` ({} without a key).

    >>> from types import SimpleNamespace as K
    >>> key_values(K(name="mm", key=("M", "K")), {"M": 64, "N": 32, "K": 16})
    {'M': 64, 'K': 16}
    """
    if not kernel.key:
        return {}
    unknown = [name for name in kernel.key if name not in dims]
    if unknown:
        known = ", ".join(f"`{d}`" for d in dims) or "none"
        raise TuneError(
            f"`{kernel.name}`: the key names `{unknown[0]}`, which is not a dynamic extent of the "
            f"kernel's parameters (its dynamic extents: {known})"
        )
    return {name: dims[name] for name in kernel.key}


def agreeing(space, fixed: dict[str, int]) -> list[dict[str, int]]:
    """The variants of `space` that keep the constants `fixed` (a view's), in order.

    >>> from phobos.sema.space import Space
    >>> agreeing(Space({"B": (1, 2), "T": (3, 4)}), {"T": 4})
    [{'B': 1, 'T': 4}, {'B': 2, 'T': 4}]
    """
    return [v for v in space.variants() if all(v[k] == fixed[k] for k in fixed)]


def tune(
    kernel,
    grid: Any,
    args: tuple,
    *,
    reference,
    rtol: float | None = None,
    atol: float | None = None,
    flush_l2: bool = True,
    stream: Any = None,
    force: bool = False,
    fixed: dict[str, int] | None = None,
    jobs: int | None = None,
    backend=None,
    store=None,
    out=None,
):
    """Tune `kernel` for `args` launched on `grid`; the `Record` kept (see the module).

    `fixed` holds constants to keep (by default those of a view of the kernel,
    `kernel.variant(BLOCK=4096)`): only the variants that agree with them are run.
    """
    from phobos.extras import require

    require("numpy", "the autotuner")  # what checks each variant against the reference
    from phobos.tune import records
    from phobos.tune.progress import Progress

    if reference is None or not callable(reference):
        raise TuneError(
            f"`{kernel.name}`: tuning needs `reference=`, a function computing on copies of "
            "the arguments what the kernel computes, writing its outputs in place"
        )
    if backend is None:
        from phobos.tune.device import CudaBackend

        backend = CudaBackend(kernel, args, stream)
    out = sys.stderr if out is None else out
    space = kernel.checked().attrs.space
    key = key_values(kernel, backend.dims)
    source = records.source_key(kernel)
    store = records.RecordStore() if store is None else store
    old = None if force else store.load(backend.chip, kernel.name, source, backend.card, key)
    if old is not None and old.flush_l2 != flush_l2:
        old = None  # times taken warm and cold do not compare: run everything again
    if fixed is None:
        fixed = getattr(kernel, "_variant", None)  # a view's constants
    fixed = dict(fixed or {})
    unknown = [name for name in fixed if name not in space]
    if unknown:
        raise TuneError(f"`{kernel.name}` has no @autotune dimension `{unknown[0]}`")
    wanted = agreeing(space, fixed)
    todo = [v for v in wanted if old is None or not _timed(old.result_for(v))]
    results: dict[str, Any] = {}
    if todo:
        steps = len(todo) * (2 + ROUNDS)  # compiled, checked, and timed ROUNDS times
        with Progress(steps, f"tuning {kernel.name}", stream=out) as bar:
            results = _run(kernel, grid, todo, reference, rtol, atol, flush_l2, jobs, backend, bar)
    ordered = []
    for variant in space.variants():
        found = results.get(space.variant_key(variant))
        if found is None and old is not None:
            found = old.result_for(variant)
        if found is not None:
            ordered.append(found)
    record = records.Record(
        kernel=kernel.name,
        source=source,
        chip=backend.chip,
        card=backend.card,
        key=key,
        space={name: list(space.choices(name)) for name in space.names},
        flush_l2=flush_l2,
        tuned=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        variants=ordered,
    )
    path = store.save(record)
    record = record.only(wanted)
    if todo:
        from phobos.tune.show import format_record

        print(format_record(record, path), file=out)
    return record


def _timed(result) -> bool:
    return result is not None and result.status == "timed"


def _run(kernel, grid, todo, reference, rtol, atol, flush_l2, jobs, backend, bar) -> dict:
    """Steps 2 to 5 for the variants `todo`: key -> VariantResult."""
    from phobos.tune.records import VariantResult
    from phobos.tune.timing import measure
    from phobos.tune.variants import LeftOut, compile_variants

    space = kernel.checked().attrs.space
    results = {}

    def leave_out(variant, stage, reason):
        results[space.variant_key(variant)] = VariantResult.left_out(variant, stage, reason)

    bar.stage("compiled", len(todo))
    compiled = compile_variants(
        kernel, backend.chip, variants=todo, check_races=True, jobs=jobs, progress=bar
    )
    runners = []
    for c in compiled:
        if isinstance(c, LeftOut):
            leave_out(c.variant, c.stage, c.reason)
            continue
        loaded = backend.load(c)
        if isinstance(loaded, tuple):
            leave_out(c.variant, *loaded)
        else:
            runners.append((c, loaded))
    if not runners:
        return results
    bar.stage("checked", len(runners))
    expected = _expected(kernel, backend, reference)
    copies = backend.copies()
    try:
        passing = []
        for c, runner in runners:
            problem = _check(c, runner, grid, copies, expected, backend, rtol, atol)
            bar.advance()
            if problem is None:
                passing.append((c, runner))
            else:
                leave_out(c.variant, *problem)
        if not passing:
            return results
        bar.stage("timed", ROUNDS * len(passing))
        launches = {c.key: _launcher(runner, grid, copies.arrays) for c, runner in passing}
        with backend.clock() as clock:
            samples, failures = measure(
                launches, clock, rounds=ROUNDS, flush_l2=flush_l2, progress=bar
            )
        for c, _ in passing:
            if c.key in failures:
                leave_out(c.variant, "launch", failures[c.key])
            else:
                results[c.key] = VariantResult.timed(c.variant, samples[c.key])
    finally:
        copies.free()
    return results


def _expected(kernel, backend, reference) -> dict:
    """Every tensor as `reference` leaves it; a reference that raises, or that returns
    its result instead of writing it, stops tuning with what to do."""
    name = getattr(reference, "__name__", type(reference).__name__)
    returned = []

    def call(*args):
        result = reference(*args)
        # torch's in-place methods return the tensor they wrote: `out.copy_(x + y)` is in place
        if result is not None and not any(result is a for a in args):
            returned.append(result)

    try:
        expected = backend.reference(call)
    except Exception as exc:
        raise TuneError(
            f"`{kernel.name}`: the reference `{name}` raised {_one_line(exc)}; it is called "
            "with copies of the kernel's arguments (each tensor copied by its own library: "
            "torch, CuPy, else numpy; scalars as given)"
        ) from exc
    if returned:
        raise TuneError(
            f"`{kernel.name}`: the reference `{name}` returned a value; it must write the "
            "kernel's outputs into its arguments in place, as the kernel does "
            "(`y[:] = 2 * x`, not `return 2 * x`)"
        )
    return expected


def _launcher(runner, grid, arrays):
    return lambda: runner.launch(grid, arrays)


def _check(c, runner, grid, copies, expected, backend, rtol, atol) -> tuple[str, str] | None:
    """None when the variant leaves every canary and matches the reference; else
    (stage, reason)."""
    from phobos.tune.check import compare

    copies.reset()
    try:
        runner.launch(grid, copies.arrays)
        backend.synchronize()
    except Exception as exc:  # a launch the runtime refuses, or a fault on the card
        _context_alive(backend, c, exc)
        return "launch", _one_line(exc)
    broken = copies.canary_reports()
    if broken:
        return "canary", broken[0]
    for t in backend.tensors:
        problem = compare(t.name, copies.host(t), expected[t.name], t.elem, rtol, atol)
        if problem:
            return "mismatch", problem
    return None


def _context_alive(backend, c, exc) -> None:
    """After a failed launch: a fault that poisoned the CUDA context stops tuning, since
    no later launch in this process can succeed."""
    try:
        backend.synchronize()
    except Exception:
        raise TuneError(
            f"variant {c.key} faulted on the card ({_one_line(exc)}), and the CUDA context "
            "cannot run anything more in this process. Run the variant alone under "
            "compute-sanitizer to see the fault, or fix its constants out of the @autotune "
            "space, then tune again in a new process"
        ) from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
