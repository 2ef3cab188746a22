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

Each variant is checked, lowered and race-checked by `compile_variant`, through the
driver's own `lower_variant`, so a variant the tuner keeps is one `phobos-compile
--all-variants --check-races` emits. `in_processes` runs such work in spawned worker
processes (never forked: the parent may hold a CUDA context, which a fork cannot
share); the driver uses it for `phobos-compile --jobs`.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures.thread import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from phobos.diagnostics import CompileError, Diagnostic
from phobos.source import SourceFile

# Starting a worker (spawning it, importing the compiler, its first lowering) costs
# 0.25-0.5 s; a variant costs 5-15 ms to lower and 20-300 ms to race-check. Fewer
# variants than these are compiled faster in the caller's process.
MIN_POOL = 4  # race-checked
MIN_POOL_UNCHECKED = 64  # lowered only

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


@dataclass(frozen=True)
class LeftOut:
    """A variant left out: the `stage` that refused it ("compile", "shared memory",
    "registers", "race"), the first error in one line, and the whole report."""

    variant: dict[str, int]
    key: str
    stage: str
    reason: str  # "error[E0501]: the kernel's tiles need 65568 bytes of shared memory, ..."
    detail: str  # the rendered diagnostics, plain text


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
    may use); too few variants to pay for starting them compile here (`workers`).
    `progress(done, total)` is called here as each variant finishes. A variant that
    crashes the compiler is left out with an "internal compiler error" reason; the
    others still compile. An `@autotune` attribute the checker refuses raises
    `KernelCompileError`; a variant not in the space, `ValueError`.
    """
    from phobos import build

    if chip not in build.CHIPS:
        raise ValueError(f"unknown chip `{chip}`; the chips are {', '.join(build.CHIPS)}")
    space = _space_of(kernel.program, kernel.name)
    chosen = list(space.variants()) if variants is None else variants
    # In the space's order, so the key and the checker see one spelling of each variant.
    chosen = [space.parse_key(space.variant_key(v)) for v in chosen]
    calls = [(kernel.program, kernel.name, v, chip, check_races) for v in chosen]
    count = workers(len(calls), cpu_count() if jobs is None else jobs, check_races)
    results = in_processes(compile_variant, calls, count, progress)
    out: list[Compiled | LeftOut] = []
    for variant, result in zip(chosen, results, strict=True):
        if isinstance(result, Failure):
            result = _crashed(kernel.name, variant, space.variant_key(variant), result)
        out.append(result)
    return out


def compile_variant(
    program, name: str, variant: dict[str, int], chip: str = "sm_90", check_races: bool = True
) -> Compiled | LeftOut:
    """Check, lower, race-check (under `check_races`) and emit one variant of kernel
    `name` of `program`; the work of one worker. `variant` is in the space's order."""
    from phobos import build, driver
    from phobos.runtime.contract import Contract
    from phobos.sema.check import check_kernel

    key = ",".join(f"{n}={v}" for n, v in variant.items())
    checked, diags = check_kernel(program, name, variant)
    if checked is None or _errors(diags):
        return left_out(variant, key, diags)
    lowering = driver.lower_variant(checked, None, check_races)
    if lowering.lir is None:
        return left_out(variant, key, lowering.errors)
    if _errors(lowering.races):
        return left_out(variant, key, lowering.races)
    try:
        ptx = build.emit([lowering.lir], chip)
    except CompileError as exc:
        return left_out(variant, key, exc.diagnostics)
    contract = build.contract_of(checked, lowering.lir, ptx, chip)
    built = build.Built(checked, lowering.lir, ptx, contract)
    _dump(built, key)
    return Compiled(variant, key, ptx, Contract((contract,)).to_json())


def left_out(variant: dict[str, int], key: str, diags: Sequence[Diagnostic]) -> LeftOut:
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
    return LeftOut(variant, key, stage, reason, render_human(diags, color=False))


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


def workers(variants: int, jobs: int, check_races: bool) -> int:
    """The processes worth starting to compile `variants` variants with at most `jobs`:
    1 (the caller's own) when they are too few to pay for starting any.

    >>> workers(25, 16, True), workers(3, 16, True), workers(25, 16, False)
    (16, 1, 1)
    """
    least = MIN_POOL if check_races else MIN_POOL_UNCHECKED
    return 1 if variants < least else max(1, min(jobs, variants))


def cpu_count() -> int:
    """The CPUs this process may run on (a container's share, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------
# Worker processes


@dataclass(frozen=True)
class Failure:
    """A call that did not return: it raised `error`, or its process died
    (`BrokenProcessPool`)."""

    error: BaseException


def in_processes(
    work: Callable[..., Any],
    calls: Sequence[tuple],
    jobs: int,
    progress: Callable[[int, int], None] | None = None,
    *,
    pool: Callable[[int], Executor] | None = None,
) -> list[Any]:
    """`work(*call)` for each call, in the calls' order, run by `jobs` worker processes;
    a call that raises or whose process dies gives a `Failure`, the others still run.

    `work` is a module-level function (a worker imports it by name); a call's
    arguments and result travel pickled, and every `SourceFile` among them comes back
    as the caller's own object, so a diagnostic's span still points into the file it
    was found in. One job, or `PHOBOS_LOG` set (so the lowering's lines come in
    order), runs here instead. `pool(jobs)` makes the executor (default: spawned
    processes).

    >>> in_processes(pow, [(2, 3), (2, 10)], jobs=1)
    [8, 1024]
    """
    total = len(calls)
    if jobs <= 1 or total <= 1 or os.environ.get("PHOBOS_LOG"):
        return _here(work, calls, progress)
    results: list[Any] = [None] * total
    done = 0
    lock = threading.Lock()  # the calls run alone report from threads of their own

    def finished(index: int, value) -> None:
        nonlocal done
        with lock:
            results[index] = value
            done += 1
            if progress is not None:
                progress(done, total)

    lost = _in_pool(work, calls, range(total), min(jobs, total), pool or _spawn_pool, finished)
    # A process that died took down the pool, and the calls it was running with it:
    # run each of those alone, so one that kills its process again fails by itself.
    if lost:
        _alone(work, calls, lost, min(jobs, len(lost)), pool or _spawn_pool, finished)
    return results


def _here(work, calls, progress) -> list[Any]:
    results = []
    for call in calls:
        try:
            results.append(work(*call))
        except Exception as exc:
            results.append(Failure(exc))
        if progress is not None:
            progress(len(results), len(calls))
    return results


def _in_pool(work, calls, indices, jobs: int, pool, finished) -> list[int]:
    """Run `calls[i]` for each index in one pool of `jobs`; the indices whose process died."""
    lost: list[int] = []
    futures: dict[Future, int] = {}
    files: dict[int, list[SourceFile]] = {}
    executor = pool(jobs)
    try:
        with _main_left_alone():
            for i in indices:
                data, files[i] = _encode(calls[i])
                try:
                    future = executor.submit(
                        _remote, work, data, [(f.name, f.text) for f in files[i]]
                    )
                except BrokenProcessPool:  # a worker died before every call was handed out
                    lost.append(i)
                    continue
                futures[future] = i
        for future in _as_done(futures):
            i = futures[future]
            error = future.exception()
            if isinstance(error, BrokenProcessPool):
                lost.append(i)
            elif error is not None:
                finished(i, Failure(error))
            else:
                finished(i, _loads(future.result(), files[i]))
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    return sorted(lost)


def _alone(work, calls, indices, jobs: int, pool, finished) -> None:
    """Each of `indices` in a pool of its own, `jobs` at a time."""

    def one(i: int) -> None:
        if _in_pool(work, calls, [i], 1, pool, finished):
            finished(i, Failure(BrokenProcessPool("the compiler's process died")))

    with ThreadPoolExecutor(jobs) as threads:
        for future in [threads.submit(one, i) for i in indices]:
            future.result()


def _as_done(futures: dict[Future, int]) -> Iterator[Future]:
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        yield from sorted(finished, key=futures.__getitem__)


def _spawn_pool(jobs: int) -> Executor:
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


@contextlib.contextmanager
def _main_left_alone() -> Iterator[None]:
    """Start workers without running the caller's main script in them.

    A spawned worker runs the parent's `__main__` file again unless the script keeps its
    work under `if __name__ == "__main__"`; a script that tunes at its top level would
    then tune (and open the GPU) in every worker, and fail there. The workers need only
    the compiler, so while they start, `__main__` is an empty module.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


# A call's arguments and result travel with every SourceFile replaced by its index in a
# table of (name, text) sent beside it; the worker rebuilds each file once, and the
# result's spans come back pointing into the caller's own files (a SourceFile compares
# by identity: a copy would be another file to a span map or a duplicate check).


class _Pickler(pickle.Pickler):
    def __init__(self, handle, files: list[SourceFile], grow: bool):
        super().__init__(handle, protocol=pickle.HIGHEST_PROTOCOL)
        self.files = files
        self.index = {id(f): i for i, f in enumerate(files)}
        self.grow = grow

    def persistent_id(self, obj):
        if not isinstance(obj, SourceFile):
            return None
        found = self.index.get(id(obj))
        if found is None and self.grow:
            found = self.index[id(obj)] = len(self.files)
            self.files.append(obj)
        return found


class _Unpickler(pickle.Unpickler):
    def __init__(self, handle, files: list[SourceFile]):
        super().__init__(handle)
        self.files = files

    def persistent_load(self, pid):
        return self.files[pid]


def _dumps(value, files: list[SourceFile], grow: bool) -> bytes:
    handle = io.BytesIO()
    _Pickler(handle, files, grow).dump(value)
    return handle.getvalue()


def _loads(data: bytes, files: list[SourceFile]):
    return _Unpickler(io.BytesIO(data), files).load()


def _encode(call: tuple) -> tuple[bytes, list[SourceFile]]:
    """The call pickled, and the caller's files it refers to, in the order of the table."""
    files: list[SourceFile] = []
    return _dumps(call, files, grow=True), files


def _remote(work, data: bytes, table: list[tuple[str, str]]) -> bytes:
    """In a worker: run `work` on the call `data` holds; its result, encoded."""
    files = [SourceFile(name, text) for name, text in table]
    return _dumps(work(*_loads(data, files)), files, grow=False)


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


def _dump(built, key: str) -> None:
    """Under `PHOBOS_DUMP`, the variant's hir, lir, PTX and contract, as a build writes them."""
    from phobos import log

    if os.environ.get("PHOBOS_DUMP"):
        stem = log.kernel_stem(built.hir.name, key)
        for artifact, text in built.texts().items():
            log.dump(stem, artifact, text)
