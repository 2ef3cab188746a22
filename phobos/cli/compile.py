"""`phobos-compile`: compile `.ph` and `.py` files to the artifact `--emit` names.

    phobos-compile FILE [FILE...] [--emit ARTIFACT] [-o OUT]
                   [--chip sm_80|sm_90|sm_90a] [--all-variants] [--check-races]
                   [--jobs N] [--error-format human|json] [--origin MAP] [--explain CODE]
    phobos-compile --list-passes
    phobos-compile --version

`--emit` names a stage's artifact (ast, ph, py, hir, lir, ptx, json) or one of the
lowering's passes (normalise, place, generate, overlap, verify: `--list-passes` says what each
makes), whose text is printed for every kernel of the file.

`-o K.ptx` (with `--emit ptx`, or with no `--emit` and the `.ptx` suffix) writes the
PTX and, beside it, `K.json`, the launch contract. Compiling needs no GPU: `--chip`
names the target. With `--all-variants`, a variant that fails (a lowering error, a
race under `--check-races`) is a warning naming it and is left out of the PTX and the
contract; it is an error only when no variant of its kernel is left. The kernels are
lowered and race-checked in `--jobs` processes (default: one per CPU; `--jobs 1` in
this one); the output is the same whatever the count.

A file that holds no kernel (only `fn`s, or nothing Phobos reads) compiles with a
warning, since it makes no PTX to launch (not with `--emit ast`, `ph` or `py`, which
print what the front end read). `--error-format json` writes one JSON object
a line, each with `"version": 1` (`phobos.diagnostics.render.JSON_VERSION`).

Exit status: 0 compiled, 1 the program has errors (diagnostics on stderr), 2 the
command line is wrong (unknown flag, unreadable file, unknown suffix, bad span map),
101 a bug in Phobos (an internal compiler error).

    >>> import io
    >>> out, err = io.StringIO(), io.StringIO()
    >>> run(["--explain", "E0905"], stdout=out, stderr=err)
    0
    >>> out.getvalue().splitlines()[0]
    '# E0905: `-o` with more than one input'
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from phobos import driver, spanmap
from phobos.diagnostics import codes
from phobos.diagnostics.diagnostic import Diagnostic
from phobos.diagnostics.render import render_human, render_json, summary
from phobos.driver import CHIPS

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_ICE = 101


class UsageError(Exception):
    """A command line the tool cannot act on; the message is one line."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one clear line and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


@dataclass
class Session:
    """Where a tool writes, and how it draws diagnostics."""

    prog: str
    stdout: TextIO
    stderr: TextIO
    error_format: str = "human"
    color: bool = False

    def report(self, diags: list[Diagnostic]) -> None:
        if not diags:
            return
        if self.error_format == "json":
            self.stderr.write(render_json(diags))
        else:
            self.stderr.write(render_human(diags, color=self.color))

    def usage(self, diag: Diagnostic) -> int:
        """Report a usage error (one diagnostic, no summary) and give exit status 2."""
        if self.error_format == "json":
            self.stderr.write(render_json([diag]))
        else:
            self.stderr.write(render_human([diag], color=self.color).rstrip("\n") + "\n")
        return EXIT_USAGE

    def finish(self, diags: list[Diagnostic]) -> int:
        """The closing lines after all diagnostics, and the exit status they give."""
        errors = any(d.severity == "error" for d in diags)
        if self.error_format == "human":
            self.stderr.write(summary(diags, color=self.color))
            if errors:
                self.stderr.write(_explain_hint(diags, "phobos-compile"))  # the tool that explains
        return EXIT_ERRORS if errors else EXIT_OK

    def internal_error(self, ice: driver.InternalCompilerError) -> int:
        """The banner of an internal compiler error, and exit status 101."""
        notes = [
            "this is a bug in Phobos; please report it with the file that triggered it",
            f"compiling `{ice.location}`, stage `{ice.stage}`",
        ]
        backtrace = os.environ.get("PHOBOS_BACKTRACE", "") not in ("", "0")
        if not backtrace:
            notes.append("run with `PHOBOS_BACKTRACE=1` for a backtrace")
        message = f"internal compiler error: {ice}"
        if self.error_format == "json":
            diag = Diagnostic.error(None, message, None, notes=notes)
            self.stderr.write(render_json([diag]))
        else:
            self.stderr.write(_paint_error(self.color) + f": {message}\n")
            for note in notes:
                self.stderr.write(f"note: {note}\n")
        if backtrace:
            self.stderr.write("\n" + ice.traceback)
        return EXIT_ICE


def _paint_error(color: bool) -> str:
    return "\x1b[1m\x1b[31merror\x1b[0m" if color else "error"


def _explain_hint(diags: list[Diagnostic], prog: str) -> str:
    """rustc's pointer to `--explain` for the codes that have an explanation."""
    known = set(codes.known_codes())
    found = sorted({d.code for d in diags if d.code in known and d.severity == "error"})
    if not found:
        return ""
    if len(found) == 1:
        return f"For more information about this error, try `{prog} --explain {found[0]}`.\n"
    return (
        f"Some errors have detailed explanations: {', '.join(found)}.\n"
        f"For more information about an error, try `{prog} --explain {found[0]}`.\n"
    )


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# ---------------------------------------------------------------------------
# Shared by phobos-compile and ph2py


def compile_files(
    session: Session,
    files: Sequence[str],
    emit: str,
    output: str | None = None,
    origin: str | None = None,
    options: driver.Options | None = None,
    warn_no_kernel: bool = False,
) -> int:
    """Compile every file to `emit`, report, and give the exit status.

    With `emit` "ptx" and an `output`, the launch contract is written beside it. With
    `warn_no_kernel`, a file without a kernel is a warning.
    """
    if output is not None and len(files) > 1:
        return session.usage(
            Diagnostic.error(
                "E0905", f"`-o` needs exactly one input file, but {len(files)} were given", None
            )
        )
    # Read every input first: a usage error stops the run before any work.
    sources = []
    for path in files:
        try:
            sources.append(driver.read_source(path))
        except driver.InputError as exc:
            return session.usage(exc.diagnostic)

    remap = None
    if origin is not None:
        if len(sources) != 1 or driver.language_of(files[0]) != ".ph":
            raise UsageError("`--origin` needs exactly one `.ph` input file")
        try:
            remap = spanmap.load(origin, sources[0]).lookup
        except spanmap.SpanMapError as exc:
            return session.usage(
                Diagnostic.error("E0903", f"cannot use span map `{origin}`: {exc}", None)
            )

    all_diags: list[Diagnostic] = []
    for path, source in zip(files, sources, strict=True):
        try:
            stop = "json" if emit == "ptx" and output is not None else emit
            result = driver.compile_source(source, stop, driver.language_of(path), options)
        except driver.InternalCompilerError as ice:
            session.report(all_diags)
            return session.internal_error(ice)
        diags = result.diagnostics
        if warn_no_kernel and not any(d.severity == "error" for d in diags):
            diags = [*diags, *_no_kernel(result, source)]
        if remap is not None:
            diags = [d.mapped(remap) for d in diags]
        session.report(diags)
        all_diags.extend(diags)
        if result.text is None:
            continue
        if output is None:
            session.stdout.write(result.text)
            continue
        try:
            if stop != emit:  # the PTX, and its contract beside it
                _write(output, driver.STAGES[emit].text(result.artifacts[emit]))
                _write(contract_path(output), result.text)
            else:
                _write(output, result.text)
            if result.ph_spans is not None:
                smap = spanmap.build(output, result.text, result.ph_spans, source)
                spanmap.write(smap, spanmap.map_path_for(output))
        except OSError as exc:
            where = exc.filename or output
            reason = exc.strerror or str(exc)
            return session.usage(
                Diagnostic.error(
                    "E0904", f"cannot write `{where}`: {reason[:1].lower() + reason[1:]}", None
                )
            )
    return session.finish(all_diags)


def _no_kernel(result, source) -> list[Diagnostic]:
    """The warning for a compiled file that holds no kernel, or nothing."""
    from phobos.syntax import ast

    program = result.artifacts.get("ast")
    if program is None or any(isinstance(i, ast.Kernel) for i in program.items):
        return []
    python = source.name.endswith(".py")
    fns = sum(isinstance(i, ast.Function) for i in program.items)
    what = f"only {fns} fn{'s' * (fns != 1)}" if fns else "nothing Phobos reads"
    kernel = "`@ph.kernel` def" if python else "`kernel`"
    return [
        Diagnostic.warning(
            None,
            f"`{source.name}` holds no kernel ({what}), so it compiles to nothing to launch",
            None,
            help=f"a kernel is a {kernel}; a module's fns compile only into its kernels",
        )
    ]


def version() -> str:
    """`phobos 0.1.0`: the installed package's version, else this checkout's."""
    from importlib import metadata

    try:
        number = metadata.version("phobos")
    except metadata.PackageNotFoundError:
        from phobos import __version__ as number
    return f"phobos {number}"


def contract_path(output: str) -> str:
    """Where the launch contract of `output` goes: `K.ptx` -> `K.json`.

    >>> contract_path("out/k.ptx"), contract_path("k")
    ('out/k.json', 'k.json')
    """
    return os.path.splitext(output)[0] + ".json"


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def explain_code(session: Session, code: str) -> int:
    """Print the long explanation of `code` (exit 0), or refuse an unknown code (exit 2)."""
    try:
        text = codes.explain(code)
    except codes.UnknownCode:
        return session.usage(
            Diagnostic.error(
                "E0906",
                f"`{code}` is not a known error code",
                None,
                help=f"codes are spelled like `E0001`; `{session.prog} --explain E0906` says more",
            )
        )
    session.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


# ---------------------------------------------------------------------------
# phobos-compile


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="phobos-compile",
        description="Compile Phobos kernels (.ph text or @ph.kernel Python).",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="a .ph or .py file")
    parser.add_argument(
        "--emit",
        choices=driver.artifacts(),
        default=None,
        metavar="ARTIFACT",
        help="the artifact to write: a stage's (ast, ph, py, hir, lir, ptx, json) or a "
        "lowering pass's (see --list-passes); default: ptx for `-o K.ptx`, else ast",
    )
    parser.add_argument(
        "-o", dest="output", metavar="OUT", help="write the artifact to OUT (PTX: and OUT's .json)"
    )
    parser.add_argument(
        "--chip",
        choices=list(CHIPS),
        default="sm_90",
        help="the chip to lower and emit PTX for; no GPU is needed (default: sm_90)",
    )
    parser.add_argument(
        "--all-variants",
        action="store_true",
        help="compile every variant of each @autotune space, not only the first choices",
    )
    parser.add_argument(
        "--check-races",
        action="store_true",
        help="run each lowered kernel on small random inputs and report shared-memory races",
    )
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="lower and race-check the kernels in N processes (default: one per CPU)",
    )
    parser.add_argument(
        "--error-format",
        choices=["human", "json"],
        default="human",
        help="diagnostics as rustc lays them out, or one JSON object per line",
    )
    parser.add_argument(
        "--origin",
        metavar="MAP",
        help="report diagnostics at the Python lines MAP maps the .ph to",
    )
    parser.add_argument("--explain", metavar="CODE", help="explain an error code and exit")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--list-passes",
        action="store_true",
        help="list the lowering's passes in order, each with what it makes, and exit",
    )
    return parser


def _jobs(text: str) -> int:
    """`--jobs N`: a count of processes, at least 1."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number of processes (1 or more)")
    return count


def run_tool(prog, parser, argv, stdout, stderr, color, body) -> int:
    """What `phobos-compile` and `ph2py` share: the session, parsing `argv` with
    `parser`, usage errors as one line (exit 2); `body(session, opts)` does the rest."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    session = Session(prog, stdout, stderr)
    session.color = use_color(stderr) if color is None else color
    try:
        try:
            opts = parser.parse_intermixed_args(list(argv))
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        session.error_format = opts.error_format
        return body(session, opts)
    except UsageError as exc:
        stderr.write(f"{_paint_error(session.color)}: {exc}\n")
        return EXIT_USAGE


def run(
    argv: Sequence[str],
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    color: bool | None = None,
) -> int:
    """Run `phobos-compile` with `argv` (without the program name); return the exit status."""

    def body(session, opts) -> int:
        if opts.version:
            session.stdout.write(version() + "\n")
            return EXIT_OK
        if opts.explain is not None:
            return explain_code(session, opts.explain)
        if opts.list_passes:
            from phobos.lower.passes import describe

            session.stdout.write(describe())
            return EXIT_OK
        if not opts.files:
            raise UsageError("no input files (see `phobos-compile --help`)")
        if opts.check_races:  # checked here, before a worker process fails on it
            from phobos.extras import MissingExtra, require

            try:
                require("numpy", "`--check-races`")
            except MissingExtra as exc:
                raise UsageError(str(exc)) from None
        emit = opts.emit
        if emit is None:
            ptx_out = opts.output is not None and opts.output.endswith(".ptx")
            emit = "ptx" if ptx_out else "ast"
        jobs = opts.jobs
        if jobs is None:
            from phobos.workers import cpu_count

            jobs = cpu_count()
        options = driver.Options(opts.chip, opts.all_variants, opts.check_races, jobs)
        # Printing what the front end read (`ast`, `ph`, `py`) is not compiling it.
        compiles = emit not in ("ast", "ph", "py")
        return compile_files(
            session, opts.files, emit, opts.output, opts.origin, options, warn_no_kernel=compiles
        )

    return run_tool("phobos-compile", build_parser(), argv, stdout, stderr, color, body)


def main(argv: Sequence[str] | None = None) -> int:
    """The `phobos-compile` console script."""
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
