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

import contextlib
import inspect
import os
import sys

from phobos.diagnostics import CompileError, Diagnostic
from phobos.extras import MissingExtra
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
    if not inspect.isfunction(func):
        raise TypeError(f"@ph.{kind} applies to a plain def, not {func!r}")
    path, text = source_of(func)
    translation = _translation(path, text)
    line = func.__code__.co_firstlineno
    named = [i for i in translation.items if i.kind == kind and i.name == func.__name__]
    here = [i for i in named if i.first_line <= line <= i.line]
    if inspect.iscoroutinefunction(func):
        here = named = []  # the translation refuses an `async def` (E0115)
    if len(here) == 1:
        return translation, here[0]
    if len(named) == 1:
        return translation, named[0]
    if not named and any(d.code == "E0100" for d in translation.diagnostics):
        raise KernelCompileError(translation.diagnostics)
    # The def's own refusals (both decorators on it, `async`, ...), at its lines.
    mine = _diagnostics_of(func, path, text, translation)
    if mine:
        raise KernelCompileError(mine)
    if inspect.iscoroutinefunction(func):
        raise TypeError(f"@ph.{kind} applies to a plain def, not the `async def` {func.__name__}")
    raise OSError(
        f"cannot find the @ph.{kind} `{func.__name__}` in {path}: was the file edited "
        "since it was imported?"
    )


def _diagnostics_of(func, path: str, text: str, translation: Translation) -> list:
    """The translation's errors on `func`'s lines (its decorators to its last line)."""
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return []
    last = first + len(lines) - 1
    source = SourceFile(path, text)
    return [
        d
        for d in translation.diagnostics
        if d.severity == "error"
        and d.span is not None
        and first <= source.line_col(d.span.start)[0] <= last
    ]


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
        # A plan's signature names the device whenever several GPUs could be meant, and
        # holds every extent a tuned winner was chosen by, so one table serves the view.
        # The plan launched last is tried first, by its own generated comparison
        # (phobos.runtime.hotpath); another signature is looked up by its key.
        fast = kernel._fast
        if fast and not kwargs and not interpreting():
            hot = kernel._hot
            if hot is not None and hot(self.grid, args, stream):
                return
            found = read(args, kernel._tensor_slots)
            if found is not None:
                plan = fast.get(found[0])
                if plan is not None and plan.launch(self.grid, args, found[1], stream):
                    kernel._hot = kernel._hots.get(found[0])
                    return
        checked = kernel.checked(kernel._variant)
        args = _by_position(checked, args, kwargs)
        interpret = interpreting()
        if not interpret and _device_argument(checked, args) is not None:
            return kernel._launch_gpu(self.grid, args, stream)
        from phobos.runtime.launch_cpu import launch_cpu

        launch_cpu(checked, self.grid, args, copy_device=interpret)


class VariantReport(list):
    """`kernel.variants()`: a list of `phobos.tune.variants.Compiled` and `LeftOut`,
    printed as a table of each variant and what became of it."""

    @property
    def compiled(self) -> list:
        from phobos.tune.variants import Compiled

        return [r for r in self if isinstance(r, Compiled)]

    @property
    def left_out(self) -> list:
        from phobos.tune.variants import LeftOut

        return [r for r in self if isinstance(r, LeftOut)]

    def __str__(self) -> str:
        from phobos.tune.variants import report

        return report(self)


def _tma_reads(gpu, args: tuple, stream) -> bool:
    """Whether TMA can read every tensor `gpu`'s maps name in this launch (each base and
    row pitch 16-byte aligned, every extent in range); else the launch takes the variant
    without TMA. An argument binding refuses is left for that launch to refuse."""
    from phobos.runtime import tensormap
    from phobos.runtime.launch_gpu import map_extents

    try:
        bound = gpu.bind(args, stream)
    except LaunchError:
        return True
    for m in gpu.contract.maps:
        rows, cols = map_extents(m, bound.dims)
        try:
            tensormap.arguments(m, bound.arrays[m.tensor].ptr, rows, cols, kernel=gpu.contract.name)
        except LaunchError:
            return False
    return True


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
        self._variant: dict[str, int] | None = None
        self._fast: dict[tuple, object] = {}  # argument signature -> fastpath.Plan
        self._hots: dict[tuple, object] = {}  # argument signature -> its hotpath function
        self._hot = None  # the last launched plan's hotpath function
        self._winners: dict[tuple, dict[str, int]] = {}  # (chip, card, key values) -> winner
        self._source_key: str | None = None
        self._slots: tuple[bool, ...] | None = None

    def variant(self, **constants: int) -> Kernel:
        """This kernel with its @autotune constants fixed: `k.variant(BLOCK=1024)[grid](...)`.

        Constants left out take their first choice. The view shares the kernel's
        compiled variants.
        """
        view = object.__new__(Kernel)
        view.__dict__.update(self.__dict__)
        view._variant = {**(self._variant or {}), **constants}
        view._fast = {}  # a view launches its own variant: plans of its own
        view._hots, view._hot = {}, None
        return view

    def compile(self, chip: str = "sm_90", variant: dict[str, int] | None = None):
        """Compile without a GPU: a `phobos.build.Built` (hir, lir, ptx, contract).

        The driver's stages lower and emit it for `chip` (`phobos.driver.compile_checked`,
        as `phobos-compile` and the tuner do); a launch compiles for its device's chip.
        `variant` defaults to this view's constants (each first choice otherwise).
        A kernel the checker or the lowering refuses raises `KernelCompileError`.
        """
        from phobos.build import build_checked

        checked = self.checked(variant if variant is not None else self._variant)
        try:
            return build_checked(checked, chip=chip)
        except CompileError as exc:
            raise KernelCompileError(exc.diagnostics) from None

    def _gpu_kernel(self, device=None, variant: dict[str, int] | None = None, tma: bool = True):
        """The runtime's kernel for `variant` (this view's when None) on `device`'s chip
        (a `cuda.Device`; the first GPU when None), compiled once per variant and chip;
        with `tma` False, the variant whose loops stage by cp.async, not TMA (for
        tensors whose rows TMA cannot read).

        A machine may hold GPUs of different chips: PTX for `sm_90` does not link on an
        `sm_80`, so each chip a launch's arrays live on gets its own compilation.
        """
        from phobos.runtime import cuda

        variant = self._variant if variant is None else variant
        chip = (device if device is not None else cuda.device(0)).target
        chips = self._gpu.setdefault(tuple(sorted((variant or {}).items())), {})
        slot = chip if tma else f"{chip}:no-tma"
        found = chips.get(slot)
        if found is None:
            from phobos.lower.options import without_tma
            from phobos.runtime.cache import KernelCache
            from phobos.runtime.launch_gpu import GpuKernel

            with contextlib.nullcontext() if tma else without_tma():
                built = self.compile(chip=chip, variant=variant)
            found = chips[slot] = GpuKernel(built.contract, built.ptx, KernelCache())
        return found

    def _launch_gpu(self, grid, args: tuple, stream):
        """A launch the fast path did not take: bind the arguments, pick the variant,
        launch it on the arrays' device, and keep its plan for the next launch of this
        signature."""
        from phobos.runtime.launch_gpu import first_device, open_device

        # Binding asks the driver nothing: a wrong argument is refused alike with a GPU
        # and without one, and only a launch that binds learns that no driver is there.
        bound = self._bind_gpu(args, stream)
        device = open_device(self.name, lambda: first_device(args, self._tensor_slots))
        variant = self._launch_variant(device, grid, args, stream, bound)
        gpu = self._gpu_kernel(device, variant)
        if gpu.contract.maps and not _tma_reads(gpu, args, stream):
            gpu = self._gpu_kernel(device, variant, tma=False)
        counts = gpu.launch(grid, args, stream=stream)
        found = read(args, self._tensor_slots)
        if found is not None and found[0] in gpu._plans:
            from phobos.runtime.hotpath import specialise

            plan = self._fast[found[0]] = gpu._plans[found[0]]
            self._hot = self._hots[found[0]] = specialise(plan, found[0], self._tensor_slots)
        return counts

    def _bind_gpu(self, args: tuple, stream):
        """`args` bound for a GPU launch of this view's variant, as the launch binds them."""
        from phobos.runtime.binding import bind_kernel
        from phobos.runtime.dlpack import from_dlpack
        from phobos.runtime.launch_gpu import stream_handle

        # DLPack arrays read as the launch will read them (each read takes a new capsule)
        handle = None if stream is None else stream_handle(stream)
        return bind_kernel(self.checked(self._variant), args, target="gpu",
                           from_dlpack=lambda obj: from_dlpack(obj, handle))  # fmt: skip

    def _launch_variant(self, device, grid, args: tuple, stream, bound) -> dict[str, int] | None:
        """The constants a GPU launch takes: the tuned winner for the key values the
        arguments bind (`bound`, by this view's variant), among the variants agreeing
        with this view's constants (tuning first when the decorator has `reference=`);
        else this view's constants, each other constant at its first choice."""
        from phobos.tune import tuner

        space = self.checked().attrs.space
        fixed = self._variant or {}
        if len(space) == 1 or set(fixed) >= set(space.names) or not tuner.enabled():
            return self._variant
        key = tuner.key_values(self, bound.dims)
        slot = (device.target, device.name, tuple(key.items()), tuple(sorted(fixed.items())))
        winner = self._winners.get(slot)
        if winner is None:
            winner = self._stored_winner(device, key, fixed)
        if winner is None and self.options.get("reference") is not None:
            winner = self.tune(grid, *args, stream=stream)
        if winner is None:
            return self._variant
        self._winners[slot] = winner
        return winner

    def _stored_winner(self, device, key: dict[str, int], fixed) -> dict[str, int] | None:
        """The fastest variant of a record in the kernel cache for this card and key,
        among those of the space as it stands that agree with `fixed`."""
        from phobos.tune import records

        record = records.RecordStore().load(  # tuned for what a launch compiles for
            device.target, self.name, self.source_key, device.name, key
        )
        if record is None:
            return None
        from phobos.tune.tuner import agreeing

        return record.only(agreeing(self.checked().attrs.space, fixed)).winner

    @property
    def source_key(self) -> str:
        """The key of this kernel's source in tuning records: its Phobos text without
        the `@autotune` choices, and the compiler's fingerprint."""
        if self._source_key is None:
            from phobos.tune.records import source_key

            self._source_key = source_key(self)
        return self._source_key

    @property
    def _tensor_slots(self) -> tuple[bool, ...]:
        if self._slots is None:
            from phobos.sema import hir

            self._slots = tuple(isinstance(p.type, hir.TensorT) for p in self.checked().params)
        return self._slots

    def tune(
        self,
        grid,
        *args,
        reference=None,
        rtol: float | None = None,
        atol: float | None = None,
        flush_l2: bool = True,
        stream=None,
        force: bool = False,
    ) -> dict[str, int]:
        """Tune the kernel's `@autotune` space for `args` on `grid`; the winning constants.

        Each variant is compiled (race-checked), run once on copies of the arguments
        (canary bytes after every tensor) and compared with `reference`, a function that
        computes on copies of the arguments what the kernel computes, writing its outputs
        in place. Each copy is of its argument's own kind: a torch tensor on the same
        device for a torch tensor (so `out.copy_(x + y)` works), a CuPy array for a CuPy
        array, a numpy array for any other; scalars as given. The arguments themselves
        are never written. The variants that pass are timed, and the result is kept
        in the kernel cache for this card and the key extents' values, where later
        launches (and later processes) find it. `reference`, `rtol` and `atol` default
        to the decorator's. Under `PHOBOS_TUNE=0` (or `PHOBOS_INTERPRET=1`, where every
        launch runs on the CPU interpreter) nothing is tuned and each constant's first
        choice is returned. A view tunes the constants it leaves free:
        `kernel.variant(BLOCK=4096).tune(...)` runs only the variants with BLOCK=4096.

            @ph.kernel(key=("N",))
            @ph.autotune(BLOCK=[256, 1024, 4096])
            def scale(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N]):
                base: ph.let = ph.ctx.block.x * BLOCK
                y[base:+BLOCK] = 2.0 * x[base:+BLOCK]

            def twice(x, y):
                y[:] = 2.0 * x

            best = scale.tune(lambda m: (-(-m["N"] // m["BLOCK"]),), x, y, reference=twice)
        """
        from phobos.tune import tuner

        space = self.checked().attrs.space
        if not tuner.enabled() or interpreting():  # the interpreter runs any variant alike
            return {**space.first_choice(), **(self._variant or {})}
        options = self.options
        record = tuner.tune(
            self,
            grid,
            args,
            reference=reference if reference is not None else options.get("reference"),
            rtol=rtol if rtol is not None else options.get("rtol"),
            atol=atol if atol is not None else options.get("atol"),
            flush_l2=flush_l2,
            stream=stream,
            force=force,
            fixed=self._variant,
        )
        winner = record.winner
        if winner is None:
            reasons = "; ".join(
                f"{space.variant_key(r.variant)}: {r.stage}: {r.reason}" for r in record.variants
            )
            raise tuner.TuneError(
                f"no variant of `{self.name}` passed its checks, so there is nothing to time: "
                f"{reasons}"
            )
        fixed = tuple(sorted((self._variant or {}).items()))
        self._winners[(record.chip, record.card, tuple(record.key.items()), fixed)] = dict(winner)
        self._fast.clear()  # plans made before chose their variant without this result
        self._hots.clear()
        self._hot = None
        return dict(winner)

    def variants(self, chip: str = "sm_90", check_races: bool = True):
        """What the `@autotune` space compiles to on `chip`: every variant, compiled (in
        parallel processes) and race-checked, or left out with its reason. Prints as a
        table; `.compiled` and `.left_out` hold the two kinds.

            print(saxpy.variants())
        """
        from phobos.tune.variants import compile_variants

        return VariantReport(compile_variants(self, chip, check_races=check_races))

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


def _said_alone() -> tuple[type, ...]:
    """The errors whose message says all a user needs: no traceback. Their modules
    import nothing optional, so the hook works without numpy."""
    from phobos.runtime.assemble import PtxasNotFound
    from phobos.tune.errors import TuneError

    return (LaunchError, TuneError, PtxasNotFound, MissingExtra)


def install_excepthook() -> None:
    """Print an uncaught `CompileError` as its report alone, without a traceback,
    and an uncaught `LaunchError` (a refused argument or grid), `TuneError` (tuning
    that cannot start or finish), `PtxasNotFound` (a `PHOBOS_PTXAS` naming no program)
    or `MissingExtra` (an optional dependency not installed) as its message alone.

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
        if isinstance(exc, _said_alone()) and os.environ.get("PHOBOS_TRACEBACK", "") in ("", "0"):
            sys.stderr.write(f"error: {exc}\n")
            sys.stderr.flush()
            return
        previous(exc_type, exc, tb)

    hook._phobos_hook = True  # type: ignore[attr-defined]
    sys.excepthook = hook
