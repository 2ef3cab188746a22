"""The built-in calls of the tile interpreter: a mixin of `phobos.interp.tiles.CTA`.

Each `b_<name>` method evaluates one `hir.Builtin` in the CTA's state: tiles as arrays,
per-thread scalars as arrays over the threads. Collectives fold by butterfly
(`phobos.interp.collectives`), atomics run once per CTA, and a thread's runs (`sum(e)`,
`elem`, `store`, `word`) read element by element as point accesses.

    >>> "b_dot_t" in dir(BuiltinCalls) and "fold" in dir(BuiltinCalls)
    True
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import numpy as np

from phobos.interp import attend, ops
from phobos.interp.collectives import LANES, argmax_op, cta_fold, lane_fold, shuffle
from phobos.interp.errors import InterpError
from phobos.interp.values import View, convert, elem_name, typed
from phobos.sema import hir


def walk(node):
    """Every hir node under `node` (a Sym's type is not entered)."""
    yield node
    if isinstance(node, (tuple, list)):
        for x in node:
            yield from walk(x)
    elif is_dataclass(node) and not isinstance(node, (hir.Sym, type)):
        for f in fields(node):
            if f.name != "span":
                yield from walk(getattr(node, f.name))


class BuiltinCalls:
    """The built-ins; the CTA supplies ev/arr/scalar/view/uniform and its thread state."""

    # -- built-ins -----------------------------------------------------------

    def b_barrier(self, e):
        self.launch.barriers += 1
        return typed(0, elem_name(e.type))

    def b_grid_barrier(self, e):
        if self.launch.coop is not None:
            self.launch.coop.barrier(self.index)
        return typed(0, elem_name(e.type))

    def _atomic_target(self, e):
        view = self.view(e.args[0])
        i = int(self.uniform(self.scalar(e.args[1]), f"`{e.name}`"))
        flat = view.base.reshape(-1)
        if not 0 <= i < flat.size:
            raise InterpError(f"`{e.name}` index {i} is outside the tensor of {flat.size}")
        return view, flat, i

    def b_atomic_add(self, e):
        view, flat, i = self._atomic_target(e)
        v = self.uniform(self.scalar(e.args[2]), "`atomic_add`")
        old = flat[i]
        flat[i] = convert(np.add(old, convert(v, view.elem)), view.elem)
        return convert(old, elem_name(e.type))

    def b_atomic_cas(self, e):
        view, flat, i = self._atomic_target(e)
        expect = self.uniform(self.scalar(e.args[2]), "`atomic_cas`")
        v = self.uniform(self.scalar(e.args[3]), "`atomic_cas`")
        old = flat[i]
        if old == expect:
            flat[i] = convert(v, view.elem)
        if self.launch.coop is not None:
            self.launch.coop.yield_turn(self.index)
        return convert(old, elem_name(e.type))

    def b_load_acquire(self, e):
        if self.launch.coop is not None:
            self.launch.coop.yield_turn(self.index)
        _, flat, i = self._atomic_target(e)
        return convert(flat[i], elem_name(e.type))

    def b_store_release(self, e):
        view, flat, i = self._atomic_target(e)
        flat[i] = convert(self.uniform(self.scalar(e.args[2]), "`store_release`"), view.elem)
        return typed(0, elem_name(e.type))

    def b_where(self, e):
        c, a, b = (self.arr(x) for x in e.args)
        return convert(np.where(c, a, b), elem_name(e.type))

    def b_iota(self, e):
        d = int(self.uniform(self.scalar(e.args[0])))
        shape = None
        if isinstance(e.type, hir.TileT) and len(e.type.dims) > d:
            try:
                shape = self.shape_of(e.type)
            except KeyError:
                shape = None
        if shape is None:
            if not self.shapes:
                raise InterpError("`iota` is read outside a tile assignment")
            shape = self.shapes[-1]
        n = shape[d]
        reshape = [1] * len(shape)
        reshape[d] = n
        return convert(np.arange(n).reshape(reshape), elem_name(e.type))

    def _minmax(self, e, which):
        a, b = (self.arr(x) for x in e.args)
        return ops.minmax(which, a, b, elem_name(e.type))

    def b_min(self, e):
        return self._minmax(e, "min")

    def b_max(self, e):
        return self._minmax(e, "max")

    def b_tmax(self, e):
        return self._minmax(e, "max")

    def b_argsel(self, e):
        va, vb, ia, ib = (self.arr(x) for x in e.args)
        return convert(np.where(np.greater_equal(va, vb), ia, ib), elem_name(e.type))

    def b_pow(self, e):
        a, b = (self.arr(x) for x in e.args)
        return ops.power(a, b, elem_name(e.type))

    def _reduced(self, e):
        arg = e.args[0]
        shape = self.shape_of(arg.type) if not isinstance(arg.type, hir.Scalar) else ()
        return np.asarray(self.tile_value(arg, shape))

    def b_rowsum(self, e):
        return ops.rowsum(self._reduced(e), elem_name(e.type))

    def b_rowmax(self, e):
        return ops.rowmax(self._reduced(e), elem_name(e.type))

    def b_rowargmax(self, e):
        return convert(ops.rowargmax(self._reduced(e)), elem_name(e.type))

    def b_cumsum(self, e):
        return ops.cumsum(self.arr(e.args[0]), elem_name(e.type))

    def b_tril(self, e):
        return np.tril(self.arr(e.args[0]))

    def b_transpose(self, e):
        return np.ascontiguousarray(np.asarray(self.arr(e.args[0])).T)

    def b_flat(self, e):
        v = self.ev(e.args[0])
        if isinstance(v, View) and v.whole:
            return v.flat()
        return np.asarray(v.read() if isinstance(v, View) else v).reshape(1, -1)

    def b_gather(self, e):
        table = np.asarray(self.arr(e.args[0])).reshape(-1)
        idx = np.asarray(self.arr(e.args[1])).astype(np.int64)
        if np.any((idx < 0) | (idx >= table.size)):
            bad = int(idx[(idx < 0) | (idx >= table.size)].flat[0])
            raise InterpError(f"`gather` index {bad} is outside the table of {table.size}")
        return convert(table[idx], elem_name(e.type))

    def _dot(self, e, transposed):
        a, b = self.arr(e.args[0]), self.arr(e.args[1])
        # SPEC.md: under @tensorcore f32 operands are rounded to f16; f16 and bf16 ones
        # are the tensor cores' own.
        rounds = self.launch.tensorcore and elem_name(e.args[0].type) in ("f32", "f64")
        return ops.dot(a, b, transposed, elem_name(e.type), rounds)

    def b_dot(self, e):
        return self._dot(e, False)

    def b_dot_t(self, e):
        return self._dot(e, True)

    def b_attend(self, e):
        q, k, v, start, stop, wm, wl, wacc = e.args
        lo = int(self.uniform(self.scalar(start), "`attend`"))
        hi = int(self.uniform(self.scalar(stop), "`attend`"))
        keys, values = self.view(k), self.view(v)
        if keys.shape[0] != values.shape[0]:
            raise InterpError(
                f"`attend` takes `K` and `V` with the same rows, not {keys.shape[0]} "
                f"and {values.shape[0]}"
            )
        warps = self.T // LANES
        out = attend.partials(self.arr(q), keys.read(), values.read(), lo, hi, warps)
        for target, value in zip((wm, wl, wacc), out, strict=True):
            self.view(target).write(value)
        return typed(0, elem_name(e.type))

    def b_popcount(self, e):
        return convert(ops.popcount(self.arr(e.args[0])), elem_name(e.type))

    def b_f16bits(self, e):
        return convert(ops.f16bits(self.arr(e.args[0])), elem_name(e.type))

    def b_dp4a(self, e):
        x, y, acc = (self.arr(a) for a in e.args)
        return convert(ops.dp4a(x, y, acc), elem_name(e.type))

    def b_byteperm(self, e):
        x, y, sel = (self.arr(a) for a in e.args)
        return convert(ops.byteperm(x, y, sel), elem_name(e.type))

    def b_generate(self, e):
        raise InterpError("`generate` is not supported by the interpreter yet")

    # -- a thread's runs: sum(e), elem, store, word ----------------------------

    def run_element(self, e: hir.Slice, k: int):
        """Element k of a thread's run `X[.., s :+ n]`, loaded as a point (never masked)."""
        view = self.view(e.base)
        idx = []
        for sub in e.subs:
            start = self.scalar(sub.start)
            if sub.point:
                idx.append(start)
            else:
                idx.append(np.add(np.asarray(start).astype(np.int64), k))
        return self.load_point(view, idx)

    def _run_length(self, e) -> int:
        for node in walk(e):
            if isinstance(node, hir.Slice) and not all(s.point for s in node.subs):
                for sub in node.subs:
                    if not sub.point and sub.extent is not None:
                        return self.dim(sub.extent)
        raise InterpError("`sum` without `over` needs a run slice `X[.., k :+ n]`")

    def b_sum(self, e):
        n = self._run_length(e.args[0])
        name = elem_name(e.type)
        acc = typed(0, name)
        saved = self.run_k
        try:
            for k in range(n):
                self.run_k = k
                acc = convert(np.add(acc, convert(self.ev(e.args[0]), name)), name)
        finally:
            self.run_k = saved
        return acc

    def b_elem(self, e):
        k = int(self.uniform(self.scalar(e.args[1])))
        return convert(self.run_element(e.args[0], k), elem_name(e.type))

    def b_word(self, e):
        t = int(self.uniform(self.scalar(e.args[1]))) if len(e.args) > 1 else 0
        word = np.int64(0)
        for b in range(4):
            byte = np.asarray(self.run_element(e.args[0], 4 * t + b)).astype(np.int64) & 0xFF
            word = word | (byte << (8 * b))
        return convert(word, elem_name(e.type))

    def b_store(self, e):
        run = e.args[0]
        view = self.view(run.base)
        for k, ve in enumerate(e.args[1:]):
            idx = []
            for sub in run.subs:
                start = self.scalar(sub.start)
                idx.append(start if sub.point else np.add(np.asarray(start).astype(np.int64), k))
            self.store_point(view, idx, self.scalar(ve))
        return typed(0, elem_name(e.type))

    # -- collectives and shuffles ----------------------------------------------

    def fold(self, e: hir.Builtin, config: dict):
        over = config["over"]
        over = getattr(over, "field", over)
        width = config.get("width")
        if isinstance(width, hir.Expr):
            width = int(self.uniform(self.scalar(width)))
        name = e.name
        x = np.broadcast_to(np.asarray(self.scalar(e.args[0])), (self.T,)).copy()
        tname = elem_name(e.args[0].type)
        if name == "argmax":
            index = self.thread if over == "thread" else self.thread % LANES
            op = argmax_op(x, index)
            pos = np.arange(self.T)
            if over == "thread":
                return convert(index[cta_fold(pos, op)], elem_name(e.type))
            return convert(index[lane_fold(pos, width or LANES, op)], elem_name(e.type))
        op = self._fold_op(e, tname)
        if over == "thread":
            return convert(cta_fold(x, op), elem_name(e.type))
        return convert(lane_fold(x, width or LANES, op), elem_name(e.type))

    def _fold_op(self, e, tname):
        name = e.name
        if name == "sum":
            return lambda a, b: convert(np.add(a, b), tname)
        if name in ("max", "min"):
            return lambda a, b: ops.minmax(name, a, b, tname)
        if name == "any":
            return np.logical_or
        if name == "all":
            return np.logical_and
        pa, pb = e.fn_params

        def op(a, b):
            saved = self.env.get(pa), self.env.get(pb), self.active, self.full, self.any
            self.env[pa], self.env[pb] = a, b
            self.set_active(np.ones(self.T, bool))
            try:
                return convert(self.ev(e.fn_body), tname)
            finally:
                self.env[pa], self.env[pb] = saved[0], saved[1]
                self.active, self.full, self.any = saved[2:]

        return op

    def b_shfl(self, e):
        config = dict(e.config)
        width = config.get("width") or LANES
        if isinstance(width, hir.Expr):
            width = int(self.uniform(self.scalar(width)))
        for kind in ("xor", "from", "from_", "down", "up"):
            if kind in config:
                amount = config[kind]
                amount = self.scalar(amount) if isinstance(amount, hir.Expr) else amount
                v = self.scalar(e.args[0])
                out = shuffle(v, kind.rstrip("_"), amount, int(width), self.T)
                return convert(out, elem_name(e.type))
        raise InterpError("a shuffle names one of `xor`, `from`, `down` or `up`")
