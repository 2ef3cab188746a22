"""`@ph.kernel` and `@ph.fn`: the objects a decorated def becomes.

The decorator reads the def's whole module from its file (never running the
body), translates it with `phobos.pyfront`, and keeps its own item:

    import phobos.lang as ph

    @ph.fn
    def twice(a):
        return a + a

    @ph.kernel
    def k(A: ph.tensor[ph.f32][N]):
        A[0] = twice(A[0])

    k.name          # 'k'
    k.ast           # the Kernel node
    k.program       # Program(items=(twice, k))
    print(k.source) # the Phobos it spells

A def the front end refuses raises `KernelCompileError` (a `CompileError`) at the
decorator, whose text is the rendered report; an uncaught one prints only the
report (`PHOBOS_TRACEBACK=1` shows the Python traceback too).
"""

from __future__ import annotations

import inspect
import os
import sys

from phobos.diagnostics import CompileError, Diagnostic
from phobos.pyfront.reader import source_of
from phobos.pyfront.translate import ItemInfo, Translation, translate
from phobos.source import SourceFile
from phobos.syntax import ast as ph

LAUNCH_UNAVAILABLE = (
    "launching is not available yet: Phobos compiles this kernel to the AST only in this version"
)


def render(diagnostics: list[Diagnostic], color: bool = False) -> str:
    """The human report of `diagnostics`, as `phobos-compile` prints it."""
    try:
        from phobos.diagnostics.render import render_human
    except ImportError:
        return _plain(diagnostics)
    return render_human(diagnostics, color=color)


def _plain(diagnostics: list[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        head = f"{d.severity}[{d.code}]" if d.code else d.severity
        where = ""
        if d.span is not None:
            line, col = d.span.source.line_col(d.span.start)
            where = f" at {d.span.source.name}:{line}:{col}"
        lines.append(f"{head}: {d.message}{where}")
        lines.extend(f"  = help: {h}" for h in d.help)
        lines.extend(f"  = note: {n}" for n in d.notes)
    return "\n".join(lines) + "\n"


class KernelCompileError(CompileError):
    """A `CompileError` whose text is the rendered report, raised by the decorators."""

    def __str__(self) -> str:
        return render(self.diagnostics)


# Translations by (path, text): the kernels of one module share one parse.
_TRANSLATIONS: dict[tuple[str, str], Translation] = {}
_CACHE_SIZE = 32


def _translation(path: str, text: str) -> Translation:
    key = (path, text)
    found = _TRANSLATIONS.get(key)
    if found is None:
        found = translate(SourceFile(path, text))
        if len(_TRANSLATIONS) >= _CACHE_SIZE:
            _TRANSLATIONS.pop(next(iter(_TRANSLATIONS)))
        _TRANSLATIONS[key] = found
    return found


def _item_of(func, kind: str) -> tuple[Translation, ItemInfo]:
    """The translation of `func`'s module and `func`'s own item in it."""
    func = inspect.unwrap(func)
    if not inspect.isfunction(func) or inspect.iscoroutinefunction(func):
        raise TypeError(f"@ph.{kind} applies to a plain def, not {func!r}")
    path, text = source_of(func)
    translation = _translation(path, text)
    line = func.__code__.co_firstlineno
    named = [i for i in translation.items if i.kind == kind and i.name == func.__name__]
    here = [i for i in named if i.first_line <= line <= i.line]
    if len(here) == 1:
        return translation, here[0]
    if len(named) == 1:
        return translation, named[0]
    if not named and any(d.code == "E0100" for d in translation.diagnostics):
        raise KernelCompileError(translation.diagnostics)
    raise OSError(
        f"cannot find the @ph.{kind} `{func.__name__}` in {path}: was the file edited "
        "since it was imported?"
    )


def _visible_fns(translation: Translation, info: ItemInfo) -> list[ItemInfo]:
    """The module's fns `info` can call: those at its level or around it."""
    return [
        i
        for i in translation.items
        if i.kind == "fn" and i is not info and info.scope[: len(i.scope)] == i.scope
    ]


def _raise_if_errors(translation: Translation, items: list[ItemInfo]) -> None:
    """Raise the diagnostics inside `items` (errors elsewhere in the module are theirs)."""
    spans = [i.node.span for i in items]
    mine = [
        d
        for d in translation.diagnostics
        if d.span is not None and any(s.start <= d.span.start <= s.end for s in spans)
    ]
    if any(d.severity == "error" for d in mine):
        raise KernelCompileError(mine)


class _Launcher:
    """`kernel[grid]`: calling it would launch the kernel."""

    def __init__(self, kernel: Kernel, grid):
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"cannot launch `{self.kernel.name}`: {LAUNCH_UNAVAILABLE}")


class Kernel:
    """A `@ph.kernel` def, compiled to the Phobos AST.

    `name`, `key` (the `@ph.kernel(key=(...))` extents, or None), `ast` (the
    `Kernel` node), `program` (a `Program`: the module's `@ph.fn`s and this
    kernel, in source order) and `source` (the Phobos text of `program`).
    `kernel[grid](*args)` is the launch, not available in this version.
    """

    def __init__(self, func, key=None, **options):
        self.__wrapped__ = func
        self.__doc__ = func.__doc__
        self.name: str = func.__name__
        self.key: tuple[str, ...] | None = tuple(key) if key is not None else None
        self.options = options
        translation, info = _item_of(func, "kernel")
        fns = _visible_fns(translation, info)
        _raise_if_errors(translation, [*fns, info])
        self.ast: ph.Kernel = info.node
        items = [i.node for i in translation.items if i is info or i in fns]
        self.program = ph.Program(tuple(items), span=translation.program.span)

    @property
    def source(self) -> str:
        """The Phobos this kernel spells, with the module's fns, as `.ph` text."""
        from phobos.syntax.printer import print_program

        return print_program(self.program)

    def __getitem__(self, grid) -> _Launcher:
        return _Launcher(self, grid)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"a kernel is launched with a grid: `{self.name}[grid](*args)`")

    def __repr__(self) -> str:
        return f"<ph.kernel {self.name}>"


class Fn:
    """A `@ph.fn` def: inlined where a kernel calls it, never called by Python.

    `name`, `uses` (the `@ph.fn(uses=(...))` names, or None), `ast` (the
    `Function` node), `program` (a `Program` holding it) and `source`.
    """

    def __init__(self, func, uses=None):
        self.__wrapped__ = func
        self.__doc__ = func.__doc__
        self.name: str = func.__name__
        translation, info = _item_of(func, "fn")
        _raise_if_errors(translation, [info])
        self.ast: ph.Function = info.node
        self.uses: tuple[str, ...] | None = self.ast.uses
        self.program = ph.Program((self.ast,), span=self.ast.span)

    @property
    def source(self) -> str:
        """The Phobos text of this fn."""
        from phobos.syntax.printer import print_program

        return print_program(self.program)

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"`{self.name}` is a @ph.fn: it means something only inside a @ph.kernel, "
            "which inlines it"
        )

    def __repr__(self) -> str:
        return f"<ph.fn {self.name}>"


def kernel(func=None, *, key=None, reference=None, rtol=None, atol=None):
    """Make a def a Phobos kernel: `@ph.kernel` or `@ph.kernel(key=("M", "N"))`.

        @ph.kernel
        @ph.autotune(BLOCK=[16, 8192])
        def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], alpha: ph.f32):
            base: ph.let = ph.ctx.block.x * BLOCK
            y[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]

    `key` names the extents the autotuner keeps one winner for; `reference`,
    `rtol` and `atol` are the tuner's checks.
    """
    options = {"reference": reference, "rtol": rtol, "atol": atol}
    options = {k: v for k, v in options.items() if v is not None}
    if func is None:
        return lambda f: Kernel(f, key=key, **options)
    return Kernel(func, key=key, **options)


def fn(func=None, *, uses=None):
    """Make a def a Phobos fn: `@ph.fn` or `@ph.fn(uses=("W", "C"))`.

        @ph.fn
        def mad(a, b, c):
            return a * b + c

    A body of one `return e` is an expression fn; any other body is a statement fn,
    spliced in where it is called. `uses` lists the names it reads from its caller.
    """
    if func is None:
        return lambda f: Fn(f, uses=uses)
    return Fn(func, uses=uses)


def install_excepthook() -> None:
    """Print an uncaught `CompileError` as its report alone, without a traceback.

    Installed once, when `phobos.lang` is imported; any other exception goes to the
    hook that was there before. `PHOBOS_TRACEBACK=1` shows the traceback as well.
    """
    previous = sys.excepthook
    if getattr(previous, "_phobos_hook", False):
        return

    def hook(exc_type, exc, tb):
        if isinstance(exc, CompileError) and exc.diagnostics:
            if os.environ.get("PHOBOS_TRACEBACK", "") not in ("", "0"):
                previous(exc_type, exc, tb)
                return
            stream = sys.stderr
            isatty = getattr(stream, "isatty", None)
            stream.write(render(exc.diagnostics, color=bool(isatty and isatty())))
            stream.flush()
            return
        previous(exc_type, exc, tb)

    hook._phobos_hook = True  # type: ignore[attr-defined]
    sys.excepthook = hook
