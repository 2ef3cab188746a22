"""The tile interpreter: runs a checked kernel (`phobos.sema.hir`) on numpy arrays.

CTAs run one after another (cooperatively, in turns, when the kernel calls
`grid_barrier` or spins on `load_acquire`). The threads of a CTA run together:
a uniform scalar is one numpy scalar, a per-thread scalar an array over the CTA's
threads, and control under a per-thread condition runs masked. A tile is one array
per CTA; a tensor slice is a `View` that reads 0 past the tensor and skips stores
there.

    >>> import numpy as np
    >>> from phobos.sema import hir
    >>> f32 = hir.Scalar("f32")
    >>> x = hir.Sym("x", 1, "param", hir.TensorT(f32, (hir.Dyn("N"),)))
    >>> i = hir.Sym("i", 2, "loop", hir.Scalar("i32"))
    >>> xi = hir.Slice(hir.Ref(x, x.type, 0), (hir.Sub(hir.Ref(i, i.type, 0), None, True),), f32, 0)
    >>> body = hir.For(i, hir.Const(0, i.type), hir.Const(3, i.type), hir.Const(1, i.type), None,
    ...                hir.Block((hir.Assign(xi, "*=", hir.Const(2.0, f32)),)))
    >>> k = hir.Kernel("double", (x,), hir.Block((body,)), None, (), ("N",), threads=32)
    >>> a = np.ones(4, np.float32)
    >>> run_kernel(k, (1,), {"x": a}, {"N": 4})
    >>> a.tolist()
    [2.0, 2.0, 2.0, 1.0]
"""

from __future__ import annotations

import itertools
import os
import time

import numpy as np

from phobos.interp import ops
from phobos.interp.builtins import BuiltinCalls, walk
from phobos.interp.collectives import LANES, Cooperative
from phobos.interp.errors import InterpError
from phobos.interp.values import DTYPES, FLOATS, View, convert, elem_name, typed
from phobos.sema import hir

QUANTIZED_SUFFIXES = ("_qgemm_t", "_qmma_staged_t")
QUANTIZED = ("qdot_t", "qmma_t", "q50_qdot_t", "q50_qmma_t", "iq1s_qmma_t")
MATH = ("exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos")
ELEMENTWISE = frozenset(MATH) | {"pow", "min", "max", "tmax", "where"} | set(DTYPES)
MAX_ITERATIONS = 10_000_000
MAX_ITERATIONS_VAR = "PHOBOS_INTERP_MAX_ITERATIONS"
# A loop of the interpreter runs some 10^4 to 10^5 turns a second, so a loop that never
# ends would take minutes to reach MAX_ITERATIONS; the time budget stops it in seconds.
LOOP_SECONDS = 10.0
LOOP_SECONDS_VAR = "PHOBOS_INTERP_LOOP_SECONDS"
_CLOCK_EVERY = 64  # turns between readings of the clock
FOLDS = {"sum", "max", "min", "any", "all", "argmax", "reduce"}


def iteration_limit() -> int:
    """The most iterations one run of a loop may take before the interpreter calls it
    endless: `PHOBOS_INTERP_MAX_ITERATIONS`, else `MAX_ITERATIONS`.

    >>> iteration_limit() == int(os.environ.get(MAX_ITERATIONS_VAR, MAX_ITERATIONS))
    True
    """
    raw = os.environ.get(MAX_ITERATIONS_VAR, "").strip()
    if not raw:
        return MAX_ITERATIONS
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise InterpError(f"`{MAX_ITERATIONS_VAR}` is `{raw}`: give a positive number")
    return n


def loop_seconds() -> float:
    """The most seconds of the interpreter's own work one run of a loop may take before
    it is called endless: `PHOBOS_INTERP_LOOP_SECONDS`, else `LOOP_SECONDS`.

    The clock is the CPU time of the thread running the CTA, so a CTA waiting for its
    turn (a cooperative launch) or a machine busy with other work does not count.

    >>> loop_seconds() == float(os.environ.get(LOOP_SECONDS_VAR, LOOP_SECONDS))
    True
    """
    raw = os.environ.get(LOOP_SECONDS_VAR, "").strip()
    if not raw:
        return LOOP_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise InterpError(f"`{LOOP_SECONDS_VAR}` is `{raw}`: give a positive number of seconds")
    return seconds


def run_kernel(
    kernel: hir.Kernel,
    grid,
    args: dict,
    dims: dict | None = None,
    *,
    max_iterations=None,
    max_seconds=None,
) -> None:
    """Run `kernel` over `grid` (1 to 3 axes) with `args` by parameter name.

    Tensors are numpy arrays, written in place; scalars are Python or numpy numbers.
    A bf16 tensor is float32 values (already rounded to bf16), or, as the card holds it,
    the uint16 bits of each value (written back rounded to nearest even).
    `dims` gives each dynamic extent its value; one left out is read off the arrays.
    A loop that runs `max_iterations` times (default: `iteration_limit()`), or for
    `max_seconds` of the interpreter's work (default: `loop_seconds()`), and would go on
    raises `InterpError` at the loop, as a loop that never ends would hang.
    """
    grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
    if not 1 <= len(grid) <= 3 or any(g < 1 for g in grid):
        raise InterpError(f"a grid has 1 to 3 positive extents, not {list(grid)}", kernel.span)
    dims = dict(dims or {})
    env: dict = {}
    bits: list = []  # (the caller's uint16 array, the float32 values run in its place)
    for p in kernel.params:
        if p.name not in args:
            raise InterpError(f"no argument for parameter `{p.name}`", kernel.span)
        value = args[p.name]
        if isinstance(p.type, hir.TensorT):
            if p.type.elem.name == "bf16" and getattr(value, "dtype", None) == np.uint16:
                values = (value.astype(np.uint32) << 16).view(np.float32)
                bits.append((value, values))
                value = values
            env[p] = _bind_tensor(p, value, dims, kernel)
        else:
            env[p] = typed(value, elem_name(p.type))
    for name in kernel.dyn_dims:
        if name not in dims:
            raise InterpError(f"no extent for dimension `{name}`", kernel.span)
    _check_aligned(kernel, dims)
    launch = Launch(kernel, grid, dims)
    launch.max_iterations = max_iterations or iteration_limit()
    launch.max_seconds = max_seconds or loop_seconds()
    blocks = list(itertools.product(*(range(g) for g in reversed(grid))))
    blocks = [tuple(reversed(b)) for b in blocks]
    with np.errstate(all="ignore"):
        if launch.cooperative:
            coop = Cooperative(len(blocks))
            launch.coop = coop
            bodies = [(lambda k=k, b=b: CTA(launch, env, b, k).run()) for k, b in enumerate(blocks)]
            coop.run(bodies)
        else:
            for k, b in enumerate(blocks):
                CTA(launch, env, b, k).run()
    for original, values in bits:
        original[...] = bf16_bits(values)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """The bf16 bits of float32 `values`, rounded to nearest even (NaN stays NaN).

    >>> bf16_bits(np.array([1.0, 1.00390625, -2.5], np.float32))
    array([16256, 16256, 49184], dtype=uint16)
    """
    word = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((word + 0x7FFF + ((word >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _while_loop(s: hir.While) -> str:
    """`while` loop whose condition reads `x`: the loop named by what it waits on."""
    names: list[str] = []
    for node in walk(s.cond):
        if isinstance(node, hir.Ref) and node.sym.name not in names:
            names.append(node.sym.name)
    if not names:
        return "`while` loop"
    return "`while` loop on " + ", ".join(f"`{n}`" for n in names)


def _first_line(span):
    """A loop's span cut to its header line, where an error about the loop points."""
    if span is None:
        return None
    cut = span.text.find("\n")
    if cut < 0:
        return span
    head = span.text[:cut].rstrip()
    return span.source.span(span.start, span.start + len(head.encode("utf-8")))


def _check_aligned(kernel: hir.Kernel, dims: dict) -> None:
    """A launch that breaks an `@aligned` promise traps at entry (SPEC.md "Bounds and masking")."""
    variant = dict(kernel.variant)
    for dim, tile in (getattr(kernel.attrs, "aligned", None) or {}).items():
        tile = variant.get(tile, tile) if isinstance(tile, str) else tile
        if dim in dims and isinstance(tile, int) and tile > 0 and dims[dim] % tile:
            raise InterpError(
                f"`@aligned({dim} = {tile})` is broken: `{dim}` is {dims[dim]}, "
                f"not a multiple of {tile}",
                kernel.span,
            )


def _bind_tensor(p: hir.Sym, value, dims: dict, kernel) -> View:
    elem = p.type.elem.name
    if not isinstance(value, np.ndarray):
        raise InterpError(f"parameter `{p.name}` takes a numpy array", kernel.span)
    if value.dtype != DTYPES[elem]:
        raise InterpError(
            f"parameter `{p.name}` is a tensor of `{elem}`, not of `{value.dtype}`", kernel.span
        )
    if value.ndim != len(p.type.dims):
        raise InterpError(
            f"parameter `{p.name}` has rank {len(p.type.dims)}, not {value.ndim}", kernel.span
        )
    for d, n in zip(p.type.dims, value.shape, strict=True):
        want = dims.setdefault(d.name, n) if isinstance(d, hir.Dyn) else d
        if want != n:
            raise InterpError(
                f"parameter `{p.name}` has extent {n} where `{d}` is {want}", kernel.span
            )
    return View(value, elem)


class Launch:
    """What every CTA of one launch shares."""

    def __init__(self, kernel: hir.Kernel, grid, dims):
        self.kernel = kernel
        self.grid = grid
        self.dims = dims
        self.threads = kernel.threads
        names = {n.name for n in walk(kernel.body) if isinstance(n, hir.Builtin)}
        self.cooperative = bool(names & {"grid_barrier", "load_acquire", "atomic_cas"})
        self.tensorcore = bool(getattr(kernel.attrs, "tensorcore", None))
        self.coop: Cooperative | None = None
        self.barriers = 0  # CTA barriers run (for tests and tracing)
        self.max_iterations = MAX_ITERATIONS
        self.max_seconds = LOOP_SECONDS


class Loop:
    def __init__(self, threads: int):
        self.broken = np.zeros(threads, bool)
        self.continued = np.zeros(threads, bool)


class CTA(BuiltinCalls):
    """One CTA's run: its bindings, its active-thread mask and its loops."""

    def __init__(self, launch: Launch, params: dict, block, index: int):
        self.launch = launch
        self.env = dict(params)
        self.block_idx = block
        self.index = index
        t = launch.threads
        self.T = t
        self.thread = np.arange(t, dtype=np.int64)
        self.returned = np.zeros(t, bool)
        self.loops: list[Loop] = []
        self.shapes: list[tuple] = []  # target shapes of enclosing tile assignments (iota)
        self.run_k: int | None = None  # the element of a thread's run being read (sum, elem)
        self.set_active(np.ones(t, bool))

    # -- control -------------------------------------------------------------

    def set_active(self, mask) -> None:
        self.active = mask
        self.full = bool(mask.all())
        self.any = self.full or bool(mask.any())

    def exited(self):
        out = self.returned
        if self.loops:
            out = out | self.loops[-1].broken | self.loops[-1].continued
        return out

    def run(self) -> None:
        self.block(self.launch.kernel.body)

    def block(self, b: hir.Block) -> None:
        for s in b.stmts:
            if not self.any:
                return
            self.stmt(s)

    def stmt(self, s: hir.Stmt) -> None:
        try:
            getattr(self, "s_" + type(s).__name__)(s)
        except InterpError as err:
            if err.span is None:
                err.span = s.span
            raise
        except (IndexError, ValueError, FloatingPointError) as err:
            raise InterpError(f"the interpreter failed here: {err}", s.span) from err

    def s_Block(self, s):
        self.block(s)

    def s_Let(self, s: hir.Let):
        if isinstance(s.sym.type, hir.Scalar):
            self.set_scalar(s.sym, self.scalar(s.value), declare=True)
        else:
            self.env[s.sym] = self.ev(s.value)

    def s_VarDecl(self, s: hir.VarDecl):
        t = s.sym.type
        if isinstance(t, hir.Scalar):
            v = self.scalar(s.value) if s.value is not None else typed(0, t.name)
            self.set_scalar(s.sym, convert(v, t.name), declare=True)
            return
        elem = t.elem.name
        value = None
        if s.value is not None:
            value = self.tile_value(s.value, self.shape_of(t, partial=True))
        shape = self.shape_of(t, partial=True)
        if None in shape:  # a slice to a dynamic end: the value's own shape
            shape = np.shape(value) if value is not None else shape
            if None in shape:
                raise InterpError(f"the shape of `{s.sym.name}` is not known at launch")
        if value is None:
            fill = np.nan if elem in FLOATS else 0  # an uninitialised tile is poisoned
            arr = np.full(shape, fill, DTYPES[elem])
        else:
            arr = np.empty(shape, DTYPES[elem])
        view = View(arr, elem)
        if value is not None:
            view.write(value)
        self.env[s.sym] = view

    def s_Assign(self, s: hir.Assign):
        target = s.target
        if isinstance(target, hir.Ref) and isinstance(target.type, hir.Scalar):
            value = self.scalar(s.value)
            name = target.type.name
            if s.op != "=":
                value = ops.binary(s.op[:-1], self.env[target.sym], value, name, self.active)
            self.set_scalar(target.sym, convert(value, name))
            return
        if isinstance(target, hir.Slice) and all(sub.point for sub in target.subs):
            view = self.view(target.base)
            idx = [self.scalar(sub.start) for sub in target.subs]
            value = self.scalar(s.value)
            if s.op != "=":
                old = self.load_point(view, idx)
                value = ops.binary(s.op[:-1], old, value, view.elem, self.active)
            self.store_point(view, idx, value)
            return
        view = self.view(target)
        value = self.tile_value(s.value, view.shape)
        if s.op != "=":
            op = s.op[:-1]
            padding = self.divisor_padding(op, view.elem, value, s.value)
            value = ops.binary(op, view.read(), value, view.elem, None, padding)
        view.write(value)

    def s_ExprStmt(self, s: hir.ExprStmt):
        self.ev(s.expr)

    def s_If(self, s: hir.If):
        c = self.scalar(s.cond)
        saved = self.active
        then = saved & c
        if then.any():
            self.set_active(then)
            self.block(s.then)
        if s.orelse is not None:
            other = saved & ~np.asarray(c)
            if other.any():
                self.set_active(other)
                self.block(s.orelse)
        self.set_active(saved & ~self.exited())

    def s_For(self, s: hir.For):
        name = s.var.type.name
        i = convert(self.scalar(s.lo), name)
        hi = self.scalar(s.hi)
        step = self.scalar(s.step) if isinstance(s.step, hir.Expr) else typed(s.step, name)
        entry = self.active
        loop = Loop(self.T)
        self.loops.append(loop)
        turns, started = 0, time.thread_time()
        try:
            while True:
                live = entry & ~loop.broken & ~self.returned & (i < hi)
                if not live.any():
                    break
                turns = self.count_turn(s, turns, f"`for` loop over `{s.var.name}`", started)
                self.set_active(live)
                self.env[s.var] = i
                self.block(s.body)
                loop.continued[:] = False
                i = convert(np.add(i, step), name)
        finally:
            self.loops.pop()
        self.set_active(entry & ~self.returned)

    def s_While(self, s: hir.While):
        entry = self.active
        loop = Loop(self.T)
        self.loops.append(loop)
        turns, started = 0, time.thread_time()
        try:
            while True:
                self.set_active(entry & ~loop.broken & ~self.returned)
                if not self.any:
                    break
                live = self.active & self.scalar(s.cond)
                if not live.any():
                    break
                turns = self.count_turn(s, turns, _while_loop(s), started)
                self.set_active(live)
                self.block(s.body)
                loop.continued[:] = False
        finally:
            self.loops.pop()
        self.set_active(entry & ~self.returned)

    def count_turn(self, s, turns: int, what: str, started: float) -> int:
        """One more iteration of the loop `s`, which began at CPU time `started`; past
        the launch's limit of turns or of seconds, an error."""
        limit = self.launch.max_iterations
        if turns >= limit:
            raise InterpError(
                f"this {what} did not finish after {limit} iterations; if it is meant to "
                f"run longer, raise the limit with `{MAX_ITERATIONS_VAR}`",
                _first_line(s.span),
            )
        if turns % _CLOCK_EVERY == 0 and turns:
            seconds = self.launch.max_seconds
            if time.thread_time() - started > seconds:
                raise InterpError(
                    f"this {what} did not finish after {seconds:g} second{'s' * (seconds != 1)} ({turns} "
                    f"iterations); if it is meant to run longer, raise the limit with "
                    f"`{LOOP_SECONDS_VAR}`",
                    _first_line(s.span),
                )
        return turns + 1

    def s_Break(self, s):
        self.loops[-1].broken |= self.active
        self.set_active(np.zeros(self.T, bool))

    def s_Continue(self, s):
        self.loops[-1].continued |= self.active
        self.set_active(np.zeros(self.T, bool))

    def s_Return(self, s):
        self.returned = self.returned | self.active
        self.set_active(np.zeros(self.T, bool))

    # -- bindings and memory -----------------------------------------------

    def set_scalar(self, sym, value, declare=False) -> None:
        old = self.env.get(sym)
        if self.full or old is None:
            self.env[sym] = value
        else:
            self.env[sym] = np.where(self.active, value, old).astype(np.asarray(old).dtype)

    def dim(self, d) -> int:
        return self.launch.dims[d.name] if isinstance(d, hir.Dyn) else int(d)

    def shape_of(self, t, partial=False):
        out = []
        for d in t.dims:
            if isinstance(d, hir.Dyn) and d.name not in self.launch.dims and partial:
                out.append(None)
            else:
                out.append(self.dim(d))
        return tuple(out)

    def uniform(self, v, what="a tile operation"):
        """A scalar that must be the same in every thread, as one value."""
        if np.ndim(v) == 0:
            return v
        act = np.asarray(v)[self.active] if self.any else np.asarray(v)
        if len(act) and np.all(act == act[0]):
            return act[0]
        raise InterpError(f"{what} takes a value that differs between threads")

    def _point_index(self, view: View, idx):
        if len(idx) != len(view.shape):
            raise InterpError("a point access names every axis")
        coords, ok = [], True
        for k, i in enumerate(idx):
            c = np.asarray(i).astype(np.int64) + view.offs[k]
            ok = ok & (c >= view.lo[k]) & (c < view.hi[k])
            coords.append(c)
        bad = ~ok & self.active if np.ndim(ok) else (~ok and self.any)
        if np.any(bad):
            where = np.flatnonzero(np.broadcast_to(bad, (self.T,)))[0]
            at = [int(np.broadcast_to(i, (self.T,))[where]) for i in idx]
            raise InterpError(
                f"index {at} is outside the [{', '.join(map(str, view.shape))}] "
                f"{'tensor' if view.whole else 'view'} (thread {where})"
            )
        return coords, ok

    def load_point(self, view: View, idx):
        coords, ok = self._point_index(view, idx)
        if np.ndim(ok) == 0:
            return view.base[tuple(coords)]
        coords = [np.where(ok, c, view.lo[k]) for k, c in enumerate(coords)]
        return view.base[tuple(coords)]

    def store_point(self, view: View, idx, value) -> None:
        coords, ok = self._point_index(view, idx)
        value = convert(value, view.elem)
        if all(np.ndim(c) == 0 for c in coords) and np.ndim(value) == 0:
            view.base[tuple(coords)] = value
            return
        sel = self.active & ok
        coords = [np.broadcast_to(c, (self.T,))[sel] for c in coords]
        view.base[tuple(coords)] = np.broadcast_to(value, (self.T,))[sel]

    def view(self, e) -> View:
        """A tensor or tile expression as a View (a temporary becomes its own array)."""
        if isinstance(e, hir.Slice):
            base = self.view(e.base)
            if self.run_k is not None:
                raise InterpError("a run slice is read only through `sum`, `elem` or `word`")
            starts, extents = [], []
            for sub in e.subs:
                starts.append(int(self.uniform(self.scalar(sub.start), "a slice")))
                if sub.point:
                    extents.append(1)
                else:
                    extents.append(None if sub.extent is None else self.dim(sub.extent))
            return base.sub(starts, extents)
        v = self.ev(e)
        if isinstance(v, View):
            return v
        arr = np.asarray(v)
        return View(arr, elem_name(e.type))

    # -- expressions -------------------------------------------------------

    def ev(self, e):
        return getattr(self, "e_" + type(e).__name__)(e)

    def scalar(self, e):
        return self.ev(e)

    def tile(self, e):
        """A tile-valued expression as an array."""
        v = self.ev(e)
        return v.read() if isinstance(v, View) else v

    def tile_value(self, e, shape):
        """The value of a tile assignment: `iota` takes the target's shape."""
        self.shapes.append(tuple(shape))
        try:
            v = self.ev(e)
        finally:
            self.shapes.pop()
        if isinstance(v, View):
            v = v.read()
        if not isinstance(e.type, hir.Scalar):
            return v
        return self.uniform(v, "a tile assignment")

    def e_Const(self, e: hir.Const):
        return typed(e.value, e.type.name)

    def e_Ref(self, e: hir.Ref):
        try:
            return self.env[e.sym]
        except KeyError:
            if e.sym.kind == "dim" and e.sym.name in self.launch.dims:  # a launch extent
                return typed(self.launch.dims[e.sym.name], elem_name(e.type))
            raise InterpError(f"`{e.sym.name}` is read before it is given a value") from None

    def e_CtxRead(self, e: hir.CtxRead):
        name = e.type.name
        axis = "xyz".index(e.axis) if e.axis else 0
        f = e.field
        if f == "block":
            v = self.block_idx[axis] if axis < len(self.block_idx) else 0
        elif f == "blocks":
            v = self.launch.grid[axis] if axis < len(self.launch.grid) else 1
        elif f == "threads":
            v = self.T
        elif f == "warps":
            v = self.T // LANES
        elif f == "lanes":
            v = LANES
        elif f == "thread":
            return convert(self.thread, name)
        elif f == "warp":
            return convert(self.thread // LANES, name)
        elif f == "lane":
            return convert(self.thread % LANES, name)
        else:
            raise InterpError(f"`ctx.{f}` is not supported by the interpreter yet")
        return typed(v, name)

    def e_Convert(self, e: hir.Convert):
        v = self.ev(e.value)
        if isinstance(v, View):
            v = v.read()
        return convert(v, elem_name(e.type))

    def e_Unary(self, e: hir.Unary):
        v = self.ev(e.operand)
        if isinstance(v, View):
            v = v.read()
        return ops.unary(e.op, v, elem_name(e.type))

    def e_Binary(self, e: hir.Binary):
        a, b = self.ev(e.left), self.ev(e.right)
        tile = not isinstance(e.type, hir.Scalar)
        if tile:
            a = a.read() if isinstance(a, View) else a
            b = b.read() if isinstance(b, View) else b
            if isinstance(e.left.type, hir.Scalar):
                a = self.uniform(a)
            if isinstance(e.right.type, hir.Scalar):
                b = self.uniform(b)
        name = elem_name(e.left.type)
        padding = self.divisor_padding(e.op, name, b, e.right) if tile else None
        return ops.binary(e.op, a, b, name, None if tile else self.active, padding)

    def divisor_padding(self, op, name, divisor, e):
        """The padding of a tile divisor that holds a zero (see `ops.int_divisor`)."""
        if op not in ("/", "//", "%") or name in FLOATS or not np.any(np.equal(divisor, 0)):
            return None
        return self.padding(e)

    def padding(self, e):
        """Where the tile `e` holds fill read past a tensor, as a mask broadcast to its
        shape, or None where it holds none that is known: a slice's elements past its
        tensor, and what an elementwise operator, conversion or built-in computes from
        them. A var tile's elements count as real, whatever they were written from.
        A slice's starts are evaluated again, as subscripts they have no effects."""
        if isinstance(e.type, hir.Scalar):
            return None
        if isinstance(e, hir.Slice):
            if self.run_k is not None or all(sub.point for sub in e.subs):
                return None
            return self.view(e).outside()
        if isinstance(e, hir.Ref):  # a let of a slice is a view; a var tile has no padding
            value = self.env.get(e.sym)
            return value.outside() if isinstance(value, View) else None
        if isinstance(e, hir.Convert):
            return self.padding(e.value)
        if isinstance(e, hir.Unary):
            return self.padding(e.operand)
        if isinstance(e, hir.Binary):
            parts = [self.padding(e.left), self.padding(e.right)]
        elif isinstance(e, hir.Builtin) and e.name in ELEMENTWISE:
            parts = [self.padding(a) for a in e.args]
        else:
            return None
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out

    def e_Slice(self, e: hir.Slice):
        if all(sub.point for sub in e.subs):
            view = self.view(e.base)
            idx = [self.scalar(sub.start) for sub in e.subs]
            try:
                return self.load_point(view, idx)
            except InterpError as err:  # at the read itself, not the statement around it
                if err.span is None:
                    err.span = e.span
                raise
        if self.run_k is not None:
            return self.run_element(e, self.run_k)
        return self.view(e)

    def e_Builtin(self, e: hir.Builtin):
        name = e.name
        method = getattr(self, "b_" + name, None)
        config = dict(e.config)
        if name in FOLDS and "over" in config:
            return self.fold(e, config)
        if method is not None:
            return method(e)
        if name in MATH:
            return ops.math1(name, self.arr(e.args[0]), elem_name(e.type))
        if name in DTYPES:
            return convert(self.arr(e.args[0]), name)
        if name in QUANTIZED or name.endswith(QUANTIZED_SUFFIXES):
            raise InterpError(f"`{name}` is not supported by the interpreter yet")
        raise InterpError(f"`{name}` is not supported by the interpreter yet")

    def arr(self, e):
        v = self.ev(e)
        return v.read() if isinstance(v, View) else v
