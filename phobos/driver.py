"""The pipeline: an ordered table of stages, keyed by the artifact each one makes.

`--emit NAME` runs the stages that lead to artifact NAME and prints it; the tests go
through the same path. A stage reads the artifact named by its `after` and returns
its own; it reports problems by adding diagnostics to the unit (or raising
`CompileError`), and the pipeline stops after the first stage that found an error.
Adding a stage is one entry in `STAGES`.

    >>> from phobos.source import SourceFile
    >>> list(STAGES)[:3]
    ['ast', 'ph', 'py']
    >>> chain("py")
    ['ast', 'py']

Any other exception escaping a stage is a bug in Phobos: it comes out as an
`InternalCompilerError` naming the stage and the file, which the command-line tools
report with exit status 101.

`PHOBOS_DUMP=DIR` writes the text of every artifact made to `DIR/<file>.<artifact>`.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from phobos.diagnostics.diagnostic import CompileError, Diagnostic
from phobos.source import SourceFile, Span

# ---------------------------------------------------------------------------
# One input file on its way through the stages


@dataclass
class Unit:
    """The file being compiled and what the stages have made of it so far."""

    source: SourceFile
    language: str  # the input's suffix: ".ph" or ".py"
    diagnostics: list[Diagnostic] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    # (start, end in the emitted `.ph`, span in the `.py`) for a Python input's `.ph`.
    ph_spans: list[tuple[int, int, Span]] | None = None

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
    from phobos.sema.check import check_stage

    return check_stage(program, unit)


def _dump_hir(kernels) -> str:
    from phobos.sema.check import dump_kernels

    return dump_kernels(kernels)


def _lower(kernels, unit: Unit):
    from phobos.lower.kernel import lower_stage

    return lower_stage(kernels, unit)


def _print_lir(kernels) -> str:
    from phobos.lower.kernel import print_kernels

    return print_kernels(kernels)


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
    """Makes one artifact from the artifact `after` (None: from the input file)."""

    after: str | None
    run: Callable[[Any, Unit], Any]
    text: Callable[[Any], str] = str  # how `--emit` and PHOBOS_DUMP write the artifact


STAGES: dict[str, Stage] = {
    "ast": Stage(None, _front_end, _dump_ast),  # parse `.ph` / translate `.py` -> the AST
    "ph": Stage("ast", _print_ph),  # canonical `.ph` text
    "py": Stage("ast", _print_py),  # the Python spelling (ph2py)
    "hir": Stage("ast", _check, _dump_hir),  # checked, specialised to each first choice
    "lir": Stage("hir", _lower, _print_lir),  # the per-thread IR of each kernel
}


def chain(emit: str) -> list[str]:
    """The artifacts made, in order, to emit `emit`."""
    names = []
    current: str | None = emit
    while current is not None:
        names.append(current)
        current = STAGES[current].after
    return names[::-1]


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


def compile_source(source: SourceFile, emit: str = "ast", language: str | None = None) -> Result:
    """Run the stages up to `emit` on an already-read file.

    The language comes from the file name's suffix unless given. Raises
    `InternalCompilerError` if a stage fails with an exception.
    """
    if emit not in STAGES:
        raise ValueError(f"unknown artifact {emit!r}; known: {', '.join(STAGES)}")
    unit = Unit(source, language or language_of(source.name))
    value: Any = None
    text: str | None = None
    for name in chain(emit):
        stage = STAGES[name]
        try:
            value = stage.run(value, unit)
            unit.artifacts[name] = value
            if name == emit or os.environ.get("PHOBOS_DUMP"):
                artifact_text = stage.text(value)
                _dump(unit, name, artifact_text)
                if name == emit:
                    text = artifact_text
        except CompileError as exc:
            unit.diagnostics.extend(exc.diagnostics)
            break
        except Exception as exc:
            raise InternalCompilerError(name, unit, exc) from exc
        if unit.has_errors:
            break
    if unit.has_errors:
        text = None
    return Result(source, emit, unit.artifacts, unit.diagnostics, text, unit.ph_spans)


def compile_path(path: str, emit: str = "ast", name: str | None = None) -> Result:
    """Read `path` and run the stages up to `emit`; the front end follows the suffix.

    `name` is how diagnostics show the file (default: `path` as given). Raises
    `InputError` for an unreadable file or an unknown suffix.
    """
    return compile_source(read_source(path, name), emit, language_of(path))


def _dump(unit: Unit, artifact: str, text: str) -> None:
    folder = os.environ.get("PHOBOS_DUMP")
    if not folder:
        return
    stem = os.path.basename(unit.source.name)
    path = os.path.join(folder, f"{stem}.{artifact}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        # A debugging aid must not stop the compile; say once per artifact why it is absent.
        print(
            f"warning: PHOBOS_DUMP: cannot write `{path}`: {exc.strerror or exc}", file=sys.stderr
        )
