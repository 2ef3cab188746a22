"""The pipeline: an ordered table of stages, keyed by the artifact each one makes.

`--emit NAME` runs the stages that lead to artifact NAME and prints it; the tests go
through the same path. A stage reads the artifact named by its `after` and returns
its own; it reports problems by adding diagnostics to the unit (or raising
`CompileError`), and the pipeline stops after the first stage that found an error.
Adding a stage is one entry in `STAGES`.

    >>> from phobos.source import SourceFile
    >>> list(STAGES)
    ['ast', 'ph', 'py', 'hir', 'lir', 'ptx', 'json']
    >>> chain("json")
    ['ast', 'hir', 'lir', 'ptx', 'json']

The `lir` stage is itself the lowering's passes (`phobos.lower.passes`: `normalise`,
`place`, `generate`, `verify`); each pass's output is an artifact too, so `--emit
place` prints the placement plan of every kernel. `artifacts()` lists every name
`--emit` takes.

This is the one way a kernel is compiled: `phobos-compile` starts it at a file
(`compile_source`, `compile_path`); `Kernel.compile`, `phobos.build` and the tuner's
variants start it at kernels already checked (`compile_checked`), and every stage
after `hir` is the same for all of them.

Any other exception escaping a stage is a bug in Phobos: it comes out as an
`InternalCompilerError` naming the stage and the file, which the command-line tools
report with exit status 101.

The unit's options say how: `chip` (the target of the lowering and of the PTX,
default `sm_90`; one of `CHIPS`), `all_variants`
(every variant of each kernel's `@autotune` space instead of each first choice; the
entries are then named per variant, `saxpy__BLOCK_16`, and a variant that fails to
lower or races is left out with a warning while another of its kernel compiles),
`check_races` (run each lowered kernel in the threads interpreter on small random
inputs and report every shared-memory race and fault, `phobos.races`) and `jobs` (how
many processes lower and race-check the kernels, `phobos.workers`; the output is the
same whatever it is).

`PHOBOS_DUMP=DIR` writes the text of every artifact made to `DIR/<file>.<artifact>`,
and each kernel's own to `DIR/<kernel>[.<variant>].<artifact>`: `ast`, `hir`, each
pass's (`normalise`, `place`, `generate`, `verify`), `lir`, `ptx` and `json`.
`PHOBOS_LOG=debug` prints why the lowering decided what it did (`phobos.log`);
`PHOBOS_VERIFY=1` runs the lir verifier after every pass that makes lir.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from phobos import log
from phobos.diagnostics.diagnostic import CompileError, Diagnostic, Label
from phobos.source import SourceFile, Span
from phobos.space_budget import SpaceBudget

log.configure()

CHIPS = ("sm_80", "sm_90", "sm_90a")

# ---------------------------------------------------------------------------
# One input file on its way through the stages


@dataclass(frozen=True)
class Options:
    """How to compile: the PTX target, which variants, whether to check for races, and
    how many processes may lower the kernels (1: this one)."""

    chip: str = "sm_90"
    all_variants: bool = False
    check_races: bool = False
    jobs: int = 1


@dataclass
class Unit:
    """The file being compiled and what the stages have made of it so far."""

    source: SourceFile
    language: str  # the input's suffix: ".ph" or ".py"
    diagnostics: list[Diagnostic] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    # (start, end in the emitted `.ph`, span in the `.py`) for a Python input's `.ph`.
    ph_spans: list[tuple[int, int, Span]] | None = None
    options: Options = field(default_factory=lambda: Options())
    # (hir kernel, lir kernel, its own PTX module) of every kernel variant lowered so far.
    lowered: list[tuple[Any, Any, str | None]] = field(default_factory=list)
    # (hir kernel, {pass: its text}) of every kernel the lowering ran on, refused ones too.
    passes: list[tuple[Any, dict[str, str]]] = field(default_factory=list)
    show: tuple[str, ...] = ()  # the passes whose text to keep: the one emitted, or all
    source_key: str | None = None  # the contracts' cache-key source (None: each one's PTX)
    entry: str | None = None  # the `.entry` of every kernel (None: its name, or variant's)
    emitted: int = 0  # the instructions the lowering emitted, every kernel together

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)


# ---------------------------------------------------------------------------
# Front ends, picked by the input's suffix


def _parse_ph(unit: Unit):
    from phobos.syntax.parser import parse

    program, diags = parse(unit.source)
    unit.diagnostics.extend(diags)
    return program


def _translate_py(unit: Unit):
    from phobos.pyfront.translate import translate_module

    program, diags = translate_module(unit.source)
    unit.diagnostics.extend(diags)
    return program


FRONT_ENDS: dict[str, Callable[[Unit], Any]] = {
    ".ph": _parse_ph,  # Phobos text
    ".py": _translate_py,  # every @ph.kernel and @ph.fn of a Python module
}


# ---------------------------------------------------------------------------
# Stages


def _front_end(_: None, unit: Unit):
    return FRONT_ENDS[unit.language](unit)


def _dump_ast(program) -> str:
    from phobos.syntax.ast import dump

    return dump(program)


def _check(program, unit: Unit):
    from phobos.sema.check import check_kernel, check_program

    kernels, diagnostics = check_program(program)
    unit.diagnostics.extend(diagnostics)
    if not unit.options.all_variants:
        return kernels
    out = []
    for first in kernels:
        space = first.attrs.space
        for variant in space.variants():
            if variant == space.first_choice():
                out.append(first)
                continue
            checked, diags = check_kernel(program, first.name, variant, first.index_width)
            unit.diagnostics.extend(diags)
            if checked is not None:
                out.append(checked)
    return out


def _dump_hir(kernels) -> str:
    from phobos.sema.check import dump_kernels

    return dump_kernels(kernels)


@dataclass(frozen=True)
class Lowering:
    """What lowering one checked kernel made: its lir kernel (None when refused), the
    lowering's errors, the race check's diagnostics (empty when not asked), and the
    text of each pass asked for (those that ran, when the lowering was refused)."""

    lir: Any
    errors: list[Diagnostic]
    races: list[Diagnostic]
    texts: dict[str, str] = field(default_factory=dict)
    emitted: int = 0  # the instructions the lowering emitted, refused or not


def lower_variant(
    checked,
    entry: str | None,
    check_races: bool,
    chip: str = "sm_90",
    show: Sequence[str] = (),
) -> Lowering:
    """Lower one checked kernel for `chip`, its `.entry` named `entry` (None: the
    kernel's name), keep the text of the passes named in `show`, and under
    `check_races` run the race check on it.

    The work `_lower` does per kernel, in this process or in a worker.
    """
    texts: dict[str, str] = {}

    def keep(step, lw, output) -> None:
        if step.name in show:
            if entry is not None and hasattr(output, "params"):  # a lir kernel: renamed
                output = dataclasses.replace(output, name=entry)
            texts[step.name] = step.text(lw, output)

    lowered, errors, emitted = lower_counted(checked, entry, chip, after=keep if show else None)
    if lowered is None:
        return Lowering(None, errors, [], texts, emitted)
    if not check_races:
        return Lowering(lowered, [], [], texts, emitted)
    from phobos.races import check_races as races_of

    return Lowering(lowered, [], races_of(checked, lowered), texts, emitted)


def _lower(kernels, unit: Unit):
    """Lower every checked kernel for the unit's chip (and check its races under
    `check_races`).

    With `all_variants`, a variant that fails (a lowering error, a race) is left out
    with a warning naming it, its own diagnostics as notes, as long as another variant
    of its kernel compiles (`_leave_out`); a kernel none of whose variants compiles
    reports their errors as errors. With `jobs` above 1 the kernels are lowered in
    that many processes; the diagnostics are gathered in the same order as here.
    """
    options = unit.options
    check_chip(options.chip)

    def entry_of(checked) -> str | None:
        if unit.entry is not None:
            return unit.entry
        return variant_entry(checked) if options.all_variants else None

    calls = [
        (checked, entry_of(checked), options.check_races, options.chip, unit.show)
        for checked in kernels
    ]
    if options.all_variants:
        budget = SpaceBudget(kernels)
        results = budget.settle(_each_kernel(lower_variant, calls, options, budget.wanted))
    else:
        results = _each_kernel(lower_variant, calls, options)
    unit.emitted += sum(done.emitted for done in results)
    unit.lowered = []
    unit.passes = [(checked, done.texts) for checked, done in zip(kernels, results, strict=True)]
    for name in unit.show:
        shown = [texts[name] for _, texts in unit.passes if name in texts]
        unit.artifacts[name] = "\n".join(shown)
    failed: dict[int, list[Diagnostic]] = {}  # id(checked) -> its errors
    for checked, done in zip(kernels, results, strict=True):
        if done.lir is None:
            failed[id(checked)] = done.errors
        else:
            unit.lowered.append((checked, done.lir, None))
    for checked, done in zip(kernels, results, strict=True):
        if done.lir is None:
            continue
        if options.all_variants and any(d.severity == "error" for d in done.races):
            failed.setdefault(id(checked), []).extend(done.races)
        else:
            unit.diagnostics.extend(done.races)
    if options.all_variants:
        _leave_out(kernels, failed, unit)
    else:
        for diags in failed.values():
            unit.diagnostics.extend(d for d in diags if d not in unit.diagnostics)
    return [lowered for _, lowered, _ in unit.lowered]


def _each_kernel(work: Callable[..., Lowering], calls: list[tuple], options: Options,
                 wanted=None):  # fmt: skip
    """`work(*call)` for every call, in up to `options.jobs` processes when the calls
    are enough to pay for starting them (`phobos.workers.pool_size`); a call that
    `wanted` refuses is not run (`phobos.workers.in_processes`)."""
    from phobos.workers import Failure, in_processes, pool_size

    jobs = pool_size(len(calls), options.jobs, options.check_races) if options.jobs > 1 else 1
    results = in_processes(work, calls, jobs, wanted=wanted)
    for done in results:
        if isinstance(done, Failure):
            raise done.error  # a bug in Phobos: the stage's internal compiler error
    return results


def _leave_out(kernels, failed: dict, unit: Unit) -> None:
    """Under `--all-variants`: drop the failed variants of each kernel that has another,
    each with a warning; a kernel with none left keeps its errors (said once each)."""
    names = {k.name for k in kernels}
    for name in sorted(names):
        variants = [k for k in kernels if k.name == name]
        bad = [k for k in variants if id(k) in failed]
        if not bad:
            continue
        if len(bad) == len(variants):
            for k in bad:
                # Every variant of a kernel tends to fail alike: say each thing once.
                unit.diagnostics.extend(d for d in failed[id(k)] if d not in unit.diagnostics)
            continue
        for k in bad:
            errors = [d for d in failed[id(k)] if d.severity == "error"]
            first = errors[0] if errors else failed[id(k)][0]
            notes = [f"{d.severity}{f'[{d.code}]' if d.code else ''}: {d.message}" for d in errors]
            notes += [n for d in errors for n in d.notes]
            unit.diagnostics.append(
                Diagnostic.warning(
                    None,
                    f"variant {variant_key(k)} of `{name}` is left out: {first.message}",
                    first.primary,
                    notes=notes,
                    help=first.help,
                )
            )
        unit.lowered = [t for t in unit.lowered if id(t[0]) not in failed]


def _print_lir(kernels) -> str:
    from phobos.lower.kernel import print_kernels

    return print_kernels(kernels)


def _pass_names() -> tuple[str, ...]:
    from phobos.lower.passes import NAMES

    return NAMES


def _emit_ptx(kernels, unit: Unit) -> str:
    chip = unit.options.chip
    unit.lowered = [(h, lk, emit([lk], chip)) for h, lk, _ in unit.lowered]
    return emit(kernels, chip)


def _contracts(ptx: str, unit: Unit):
    from phobos.runtime.contract import Contract

    chip, key = unit.options.chip, unit.source_key
    return Contract(tuple(contract_of(h, lk, own, chip, key) for h, lk, own in unit.lowered))


def _contract_json(contract) -> str:
    return contract.to_json()


def _print_ph(program, unit: Unit) -> str:
    from phobos.syntax import printer

    if unit.language == ".py":
        # Keep where each printed node came from, for the span map beside the `.ph`.
        text, unit.ph_spans = printer.print_mapped(program)
        return text
    return printer.print_program(program)


def _print_py(program, unit: Unit) -> str:
    from phobos.syntax.pyprinter import PySpellingError, print_python

    try:
        return print_python(program)
    except PySpellingError as exc:
        # A program Python cannot spell (a name that is a Python keyword, say) is the
        # user's to fix, not a bug.
        raise CompileError([exc.to_diagnostic("E0907")]) from None


@dataclass(frozen=True)
class Stage:
    """Makes one artifact from the artifact `after` (None: from the input file).

    `parts` names the artifacts the stage makes on its way, each a text of its own
    (the lowering's passes), when it has any."""

    after: str | None
    run: Callable[[Any, Unit], Any]
    text: Callable[[Any], str] = str  # how `--emit` and PHOBOS_DUMP write the artifact
    parts: Callable[[], Sequence[str]] | None = None


STAGES: dict[str, Stage] = {
    "ast": Stage(None, _front_end, _dump_ast),  # parse `.ph` / translate `.py` -> the AST
    "ph": Stage("ast", _print_ph),  # canonical `.ph` text
    "py": Stage("ast", _print_py),  # the Python spelling (ph2py)
    "hir": Stage("ast", _check, _dump_hir),  # checked, one per variant (each first choice)
    "lir": Stage("hir", _lower, _print_lir, _pass_names),  # per-thread IR, by the passes
    "ptx": Stage("lir", _emit_ptx),  # one PTX module for the unit's chip
    "json": Stage("ptx", _contracts, _contract_json),  # the launch contract (K.json)
}


def chain(emit: str) -> list[str]:
    """The stages run, in order, to emit `emit` (a stage's artifact or a pass's)."""
    names = []
    current: str | None = stage_of(emit)
    while current is not None:
        names.append(current)
        current = STAGES[current].after
    return names[::-1]


def stage_of(artifact: str) -> str:
    """The stage that makes `artifact`: itself, or the stage whose part it is.

    >>> stage_of("ptx"), stage_of("place")
    ('ptx', 'lir')
    """
    if artifact in STAGES:
        return artifact
    for name, stage in STAGES.items():
        if stage.parts is not None and artifact in stage.parts():
            return name
    raise ValueError(f"unknown artifact {artifact!r}; known: {', '.join(artifacts())}")


def artifacts() -> list[str]:
    """Every artifact `--emit` can name: each stage's, each part after its stage.

    >>> artifacts()
    ['ast', 'ph', 'py', 'hir', 'normalise', 'place', 'generate', 'overlap', 'verify', 'lir', 'ptx', 'json']
    """
    names = []
    for name, stage in STAGES.items():
        names.extend(stage.parts() if stage.parts is not None else ())
        names.append(name)
    return names


# ---------------------------------------------------------------------------
# The steps of one kernel, shared by the `lir`, `ptx` and `json` stages


def check_chip(chip: str) -> None:
    """A `CompileError` (E0908) unless `chip` is one of `CHIPS`."""
    if chip not in CHIPS:
        known = ", ".join(f"`{c}`" for c in CHIPS)
        raise CompileError(
            [
                Diagnostic.error(
                    "E0908", f"unknown chip `{chip}`", None, help=f"the chips are {known}"
                )
            ]
        )


def variant_key(checked) -> str:
    """The variant's key (`BLOCK=1024`, `""` without `@autotune`), in the space's order."""
    from phobos.sema.space import Space

    variant = dict(checked.variant)
    space = getattr(checked.attrs, "space", None)
    if isinstance(space, Space):
        try:
            return space.variant_key(variant)
        except ValueError:
            pass
    return ",".join(f"{name}={value}" for name, value in checked.variant)


def variant_entry(checked) -> str:
    """An `.entry` name unique to the variant: `saxpy__BLOCK_16` (the name without one).

    >>> from types import SimpleNamespace as K
    >>> variant_entry(K(name="mm", variant=(("TILE_M", 32), ("TILE_K", 4)), attrs=None))
    'mm__TILE_M_32_TILE_K_4'
    """
    if not checked.variant:
        return checked.name
    parts = (f"{name}_{value}".replace("-", "m") for name, value in checked.variant)
    return checked.name + "__" + "_".join(parts)


def lower(checked, entry: str | None = None, chip: str = "sm_90", *, after=None):
    """The lir kernel of a checked kernel lowered for `chip`, its entry renamed to
    `entry` if given; `after` goes to `phobos.lower.kernel.lower_kernel`.

    Raises `CompileError` with the lowering's diagnostics (a construct not lowered yet).
    The lowering's log lines (`PHOBOS_LOG=debug`) name this kernel and variant.
    """
    lowered, errors, _ = lower_counted(checked, entry, chip, after=after)
    if lowered is None:
        raise CompileError(errors)
    return lowered


def lower_counted(checked, entry: str | None, chip: str, *, after=None):
    """`lower` as (the lir kernel or None, the errors, the instructions emitted)."""
    from phobos.lower.kernel import lower_kernel_counted

    key = variant_key(checked)
    with log.lowering(f"{checked.name}[{key}]" if key else checked.name):
        lowered, diagnostics, emitted = lower_kernel_counted(checked, chip, after=after)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        return None, errors, emitted
    if lowered is None:  # the lowering always says why; be safe
        return None, [Diagnostic.error("E0500", f"`{checked.name}` was not lowered", None)], 0
    if entry is not None and entry != lowered.name:
        lowered = dataclasses.replace(lowered, name=entry)
    return lowered, [], emitted


def emit(kernels, chip: str) -> str:
    """The PTX module of lir `kernels` for `chip`; an instruction the chip lacks is a
    `CompileError` (E0590) at the statement that needs it."""
    from phobos.ptx import TargetError, emit_module

    try:
        return emit_module(list(kernels), chip)
    except TargetError as exc:
        span = getattr(exc, "span", None)
        label = Label(span, "needs a newer chip") if span is not None else None
        raise CompileError([Diagnostic.error("E0590", str(exc), label)]) from None


def contract_of(checked, lowered, ptx: str, chip: str, source_key: str | None = None):
    """The launch contract (`KernelContract`) of one lowered kernel and its PTX.

    The entry is the lir kernel's name; the contract's `name` is the kernel's, unless
    the entry was renamed for its variant, when it is the entry (names in one contract
    file are unique). The cache key comes from `source_key`, else from the PTX. The
    lowered kernel's TMA tensor maps become the contract's, with their slots, and a
    kernel walking the grid's blocks (`lowered.walk`) gets the block-count slots.
    """
    from phobos.runtime.cache import compiler_fingerprint, entry_key
    from phobos.runtime.contract import KernelContract

    fingerprint = compiler_fingerprint()
    variant = dict(checked.variant)
    source = source_key or hashlib.sha256(ptx.encode()).hexdigest()
    key = entry_key(source, fingerprint, chip, variant)
    contract = KernelContract.for_kernel(
        checked,
        chip=chip,
        fingerprint=fingerprint,
        entry=lowered.name,
        static_smem=0 if lowered.dynamic_smem else lowered.smem,
        dynamic_smem=lowered.smem if lowered.dynamic_smem else 0,
        cache_key=str(key),
        maps=lowered.maps,
        walk=bool(lowered.walk),
        cluster=lowered.cluster,  # CTAs a cluster (`.reqnctapercluster`), 1 for none
        threads=lowered.threads,  # the kernel's, and a producer warpgroup's where it has one
    )
    if lowered.name != checked.name:
        contract = dataclasses.replace(contract, name=lowered.name)
    return contract


# ---------------------------------------------------------------------------
# Errors that are not diagnostics


class InputError(Exception):
    """An input the compiler cannot start on (unreadable, unknown suffix): a usage error."""

    def __init__(self, code: str, message: str):
        self.code = code
        self.message = message
        super().__init__(message)

    @property
    def diagnostic(self) -> Diagnostic:
        return Diagnostic.error(self.code, self.message, None)


class InternalCompilerError(Exception):
    """An exception escaped a stage: a bug in Phobos, not in the program compiled."""

    def __init__(self, stage: str, unit: Unit, error: BaseException):
        self.stage = stage
        self.file = unit.source.name
        self.error = error
        self.traceback = "".join(traceback.format_exception(error))
        span = getattr(error, "span", None)
        self.span: Span | None = span if isinstance(span, Span) else None
        super().__init__(f"{type(error).__name__}: {error}")

    @property
    def location(self) -> str:
        """`file:line:col` when the stage said where it was, else the file."""
        if self.span is not None:
            line, col = self.span.source.line_col(self.span.start)
            return f"{self.span.source.name}:{line}:{col}"
        return self.file


# ---------------------------------------------------------------------------
# Running the table


@dataclass
class Result:
    """What compiling one file gave: its artifacts, diagnostics and emitted text."""

    source: SourceFile
    emit: str
    artifacts: dict[str, Any]
    diagnostics: list[Diagnostic]
    text: str | None  # the emitted artifact's text; None when an error stopped the stages
    ph_spans: list[tuple[int, int, Span]] | None = None
    emitted: int = 0  # the instructions the lowering emitted (the space budget counts them)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def language_of(path: str) -> str:
    """The front end's key for `path`, or an `InputError` (E0902)."""
    suffix = os.path.splitext(path)[1]
    if suffix not in FRONT_ENDS:
        shown = f"`{suffix}`" if suffix else "no suffix"
        known = " or ".join(f"`{s}`" for s in FRONT_ENDS)
        raise InputError("E0902", f"unknown input suffix {shown} for `{path}` (expected {known})")
    return suffix


def read_source(path: str, name: str | None = None) -> SourceFile:
    """Read an input file, or raise an `InputError` (E0901/E0902)."""
    language_of(path)
    try:
        return SourceFile.read(path, name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        reason = reason[:1].lower() + reason[1:]
        raise InputError("E0901", f"cannot read `{name or path}`: {reason}") from None


def compile_source(
    source: SourceFile,
    emit: str = "ast",
    language: str | None = None,
    options: Options | None = None,
) -> Result:
    """Run the stages up to `emit` (a stage's artifact or a pass's) on an already-read
    file.

    The language comes from the file name's suffix unless given. With
    `options.check_races` the stages run at least to `lir`, where the check is made.
    Raises `InternalCompilerError` if a stage fails with an exception.
    """
    names = chain(emit)
    unit = Unit(source, language or language_of(source.name), options=options or Options())
    if unit.options.check_races:
        names += [n for n in chain("lir") if n not in names]
    return _run(unit, names, emit, whole_file=True)


def compile_checked(
    kernels,
    emit: str = "json",
    options: Options | None = None,
    *,
    source_key: str | None = None,
    entry: str | None = None,
) -> Result:
    """Run the stages after `hir` on kernels already checked (`phobos.sema.hir.Kernel`),
    up to `emit` (default: the launch contract, with the PTX made on the way).

    The path of `Kernel.compile`, `phobos.build` and the tuner: the same stages as a
    file's, from the lowering on. `source_key` feeds the contracts' cache keys (None:
    each kernel's PTX); `entry` names every kernel's `.entry`. Under `PHOBOS_DUMP` each
    kernel's artifacts are written (`DIR/<kernel>[.<variant>].<artifact>`), not the
    file's.

        >>> from phobos.sema.check import check_kernel
        >>> from phobos.syntax.parser import parse
        >>> program, _ = parse(SourceFile("k.ph", '''
        ... kernel scale(x: tensor<f32>[N], alpha: f32) {
        ...   let base = ctx.block.x * 1024
        ...   x[base :+ 1024] = alpha * x[base :+ 1024]
        ... }'''))
        >>> checked, _ = check_kernel(program, "scale")
        >>> result = compile_checked([checked], options=Options(chip="sm_80"))
        >>> result.ok, ".target sm_80" in result.artifacts["ptx"]
        (True, True)
    """
    kernels = list(kernels)
    names = chain(emit)
    if "hir" not in names[:-1]:
        raise ValueError(f"`{emit}` is not made after `hir`")
    spans = [k.span for k in kernels if k.span is not None]
    source = spans[0].source if spans else SourceFile("<kernels>", "")
    language = os.path.splitext(source.name)[1]
    unit = Unit(
        source,
        language if language in FRONT_ENDS else ".ph",
        options=options or Options(),
        source_key=source_key,
        entry=entry,
    )
    unit.artifacts["hir"] = kernels
    if os.environ.get("PHOBOS_DUMP"):
        _dump_kernels(unit, "hir", kernels)
    return _run(unit, names[names.index("hir") + 1 :], emit, whole_file=False)


def _run(unit: Unit, names: list[str], emit: str, whole_file: bool) -> Result:
    """Run the stages `names` on `unit`, keeping the text of `emit`; the file's own
    dumps (`DIR/<file>.<artifact>`) only when the unit is a whole file."""
    dumping = bool(os.environ.get("PHOBOS_DUMP"))
    parts = {n: STAGES[n].parts() for n in names if STAGES[n].parts is not None}
    if dumping:
        unit.show = tuple(p for shown in parts.values() for p in shown)
    else:
        unit.show = tuple(p for shown in parts.values() for p in shown if p == emit)
    text: str | None = None
    for name in names:
        stage = STAGES[name]
        try:
            value = stage.run(unit.artifacts.get(stage.after) if stage.after else None, unit)
            unit.artifacts[name] = value
            for artifact in (*parts.get(name, ()), name):  # a stage's parts, then its own
                if artifact not in unit.artifacts or (artifact != emit and not dumping):
                    continue
                own = artifact == name
                artifact_text = stage.text(value) if own else unit.artifacts[artifact]
                if whole_file:
                    _dump(unit, artifact, artifact_text)
                if artifact == emit:
                    text = artifact_text
            if dumping:
                _dump_kernels(unit, name, value)
        except CompileError as exc:
            unit.diagnostics.extend(exc.diagnostics)
            break
        except Exception as exc:
            raise InternalCompilerError(name, unit, exc) from exc
        if unit.has_errors:
            break
    if unit.has_errors:
        text = None
    return Result(
        unit.source, emit, unit.artifacts, unit.diagnostics, text, unit.ph_spans, unit.emitted
    )


def compile_path(
    path: str, emit: str = "ast", name: str | None = None, options: Options | None = None
) -> Result:
    """Read `path` and run the stages up to `emit`; the front end follows the suffix.

    `name` is how diagnostics show the file (default: `path` as given). Raises
    `InputError` for an unreadable file or an unknown suffix.
    """
    return compile_source(read_source(path, name), emit, language_of(path), options)


def _dump(unit: Unit, artifact: str, text: str) -> None:
    log.dump(os.path.basename(unit.source.name), artifact, text)


def _dump_kernels(unit: Unit, artifact: str, value) -> None:
    """Each kernel's (and variant's) own text of `artifact`, under PHOBOS_DUMP; after
    `lir`, each pass's text of every kernel lowered, refused ones too."""
    if artifact == "ast":
        from phobos.syntax import ast

        for item in getattr(value, "items", ()):
            if isinstance(item, ast.Kernel):
                log.dump(item.name.id, "ast", ast.dump(item))
    elif artifact == "hir":
        from phobos.sema.hir import dump

        for checked in value:
            log.dump(log.kernel_stem(checked.name, variant_key(checked)), "hir",
                     dump(checked) + "\n")  # fmt: skip
    elif artifact in ("lir", "ptx", "json"):
        from phobos.lower.lir import print_kernel
        from phobos.runtime.contract import Contract

        if artifact == "lir":
            for checked, texts in unit.passes:
                for name, text in texts.items():
                    log.dump(log.kernel_stem(checked.name, variant_key(checked)), name, text)
        for checked, lowered, own in unit.lowered:
            stem = log.kernel_stem(checked.name, variant_key(checked))
            if artifact == "lir":
                log.dump(stem, "lir", print_kernel(lowered) + "\n")
            elif artifact == "ptx" and own is not None:
                log.dump(stem, "ptx", own)
            elif artifact == "json":
                kernel = next(k for k in value.kernels if k.entry == lowered.name)
                log.dump(stem, "json", Contract((kernel,)).to_json())
