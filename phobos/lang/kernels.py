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
from phobos.runtime.errors import ArgumentTypeError, LaunchError
from phobos.runtime.fastpath import read
from phobos.source import SourceFile
from phobos.syntax import ast as ph


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


def interpreting() -> bool:
    """Whether `PHOBOS_INTERPRET` asks every launch to run on the CPU interpreter."""
    if _ENV_DATA is not None:
        # Read on every launch, so the environment's encoded copy is read: `os.environ`
        # would encode the name again each time (half a microsecond of a launch).
        value = _ENV_DATA.get(_INTERPRET_KEY)
        return value is not None and value not in (b"", b"0", "", "0")
    return os.environ.get("PHOBOS_INTERPRET", "") not in ("", "0")


def _environment_data():
    data = getattr(os.environ, "_data", None)
    encode = getattr(os.environ, "encodekey", None)
    if type(data) is not dict or encode is None:
        return None, None
    return data, encode("PHOBOS_INTERPRET")


_ENV_DATA, _INTERPRET_KEY = _environment_data()


class _Launcher:
    """`kernel[grid]`: calling it with the kernel's arguments launches it.

    The launch checks the kernel (once per variant) and binds the arguments by
    `phobos.runtime.binding`. When every tensor argument is a host array (numpy), or
    `PHOBOS_INTERPRET=1` is set, it runs on the CPU interpreter (device arrays then
    copied to the host and back). Otherwise it runs on the GPU the arrays live on:
    compiled once per variant and chip (PTX through the kernel cache), launched on
    the legacy default stream unless `stream=` names another.
    """

    def __init__(self, kernel: Kernel, grid):
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args, stream=None, **kwargs):
        kernel = self.kernel
        # The hot path: a GPU launch like an earlier one (see phobos.runtime.fastpath).
        # A plan's signature names the device whenever several GPUs could be meant, so
        # the plans of this variant's kernels (one per chip launched on) never clash.
        chips = kernel._gpu_chips
        if chips and not kwargs and not interpreting():
            found = read(args, next(iter(chips.values()))._tensor_slots)
            if found is not None:
                key, pointers = found
                for gpu in chips.values():
                    plan = gpu._plans.get(key)
                    if plan is not None and plan.launch(self.grid, args, pointers, stream):
                        return
        checked = kernel.checked(kernel._variant)
        args = _by_position(checked, args, kwargs)
        interpret = interpreting()
        if not interpret and _device_argument(checked, args) is not None:
            from phobos.runtime import cuda
            from phobos.runtime.launch_gpu import first_device
            from phobos.sema import hir

            slots = [isinstance(p.type, hir.TensorT) for p in checked.params]
            device = cuda.device(first_device(args, slots))
            return kernel._gpu_kernel(device).launch(self.grid, args, stream=stream)
        from phobos.runtime.launch_cpu import launch_cpu

        launch_cpu(checked, self.grid, args, copy_device=interpret)


def _by_position(kernel, args: tuple, kwargs: dict) -> tuple:
    """`args` with the arguments given by parameter name put in their places."""
    if not kwargs:
        return args
    names = [p.name for p in kernel.params]
    values = list(args) + [_MISSING] * (len(names) - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise ArgumentTypeError(
                kernel.name,
                key,
                f"the kernel has no parameter `{key}`",
                help="the parameters are " + ", ".join(f"`{n}`" for n in names),
            )
        index = names.index(key)
        if index < len(args):
            raise ArgumentTypeError(
                kernel.name, key, f"argument `{key}` is given twice: by position and by name"
            )
        values[index] = value
    return tuple(_take_given(kernel, names, values))


def _take_given(kernel, names, values):
    for name, value in zip(names, values, strict=False):
        if value is _MISSING:
            raise ArgumentTypeError(kernel.name, name, f"argument `{name}` is missing")
        yield value
    yield from values[len(names) :]


_MISSING = object()


def _device_argument(kernel, args: tuple) -> str | None:
    """The first tensor parameter given a device array that no host interface reads."""
    from phobos.runtime.binding import DEVICE, HOST, has_interface
    from phobos.sema import hir

    for param, arg in zip(kernel.params, args, strict=False):
        if not isinstance(param.type, hir.TensorT) or has_interface(arg, HOST):
            continue
        if has_interface(arg, DEVICE) or _dlpack_on_device(arg):
            return param.name
    return None


def _dlpack_on_device(arg) -> bool:
    try:
        device_type, _ = arg.__dlpack_device__()
    except Exception:
        return False
    return int(device_type) != 1  # DLPack's kDLCPU


class Kernel:
    """A `@ph.kernel` def, compiled to the Phobos AST.

    `name`, `key` (the `@ph.kernel(key=(...))` extents, or None), `ast` (the
    `Kernel` node), `program` (a `Program`: the module's `@ph.fn`s and this
    kernel, in source order) and `source` (the Phobos text of `program`).
    `kernel[grid](*args)` is the launch: on the CPU interpreter, for numpy arrays
    (or any with `__array_interface__`), or for every array under `PHOBOS_INTERPRET=1`.
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
        self._checked: dict[tuple | None, object] = {}
        # variant -> chip -> GpuKernel, shared by the views of this kernel
        self._gpu: dict[tuple, dict[str, object]] = {}
        self._gpu_chips: dict[str, object] | None = None  # this view's entry, once compiled
        self._variant: dict[str, int] | None = None

    def variant(self, **constants: int) -> Kernel:
        """This kernel with its @autotune constants fixed: `k.variant(BLOCK=1024)[grid](...)`.

        Constants left out take their first choice. The view shares the kernel's
        compiled variants.
        """
        view = object.__new__(Kernel)
        view.__dict__.update(self.__dict__)
        view._variant = {**(self._variant or {}), **constants}
        view._gpu_chips = None
        return view

    def compile(self, chip: str = "sm_90", variant: dict[str, int] | None = None):
        """Compile without a GPU: a `phobos.build.Built` (hir, lir, ptx, contract).

        `variant` defaults to this view's constants (each first choice otherwise).
        A kernel the checker or the lowering refuses raises `KernelCompileError`.
        """
        from phobos.build import build_checked

        checked = self.checked(variant if variant is not None else self._variant)
        try:
            return build_checked(checked, chip=chip)
        except CompileError as exc:
            raise KernelCompileError(exc.diagnostics) from None

    def _gpu_kernel(self, device=None):
        """The runtime's kernel for this view's variant on `device`'s chip (a
        `cuda.Device`; the first GPU when None), compiled once per variant and chip.

        A machine may hold GPUs of different chips: PTX for `sm_90` does not link on an
        `sm_80`, so each chip a launch's arrays live on gets its own compilation.
        """
        from phobos.runtime import cuda

        chip = (device if device is not None else cuda.device(0)).chip
        chips = self._gpu.setdefault(tuple(sorted((self._variant or {}).items())), {})
        found = chips.get(chip)
        if found is None:
            from phobos.runtime.cache import KernelCache
            from phobos.runtime.launch_gpu import GpuKernel

            built = self.compile(chip=chip)
            found = chips[chip] = GpuKernel(built.contract, built.ptx, KernelCache())
        self._gpu_chips = chips
        return found

    def checked(self, variant: dict[str, int] | None = None):
        """The checked kernel (`hir.Kernel`) of `variant`, None for each `@autotune`
        constant's first choice; checked once per variant. A kernel the checker refuses
        raises `KernelCompileError` with the report.
        """
        key = None if variant is None else tuple(sorted(variant.items()))
        found = self._checked.get(key)
        if found is None:
            from phobos.sema.check import check_kernel

            found, diagnostics = check_kernel(self.program, self.name, variant)
            errors = [d for d in diagnostics if d.severity == "error"]
            if found is None or errors:
                raise KernelCompileError(errors or diagnostics)
            self._checked[key] = found
        return found

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
    """Print an uncaught `CompileError` as its report alone, without a traceback,
    and an uncaught `LaunchError` (a refused argument or grid) as its message alone.

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
        if isinstance(exc, LaunchError) and os.environ.get("PHOBOS_TRACEBACK", "") in ("", "0"):
            sys.stderr.write(f"error: {exc}\n")
            sys.stderr.flush()
            return
        previous(exc_type, exc, tb)

    hook._phobos_hook = True  # type: ignore[attr-defined]
    sys.excepthook = hook
