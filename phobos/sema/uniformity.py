"""Uniformity (SPEC.md "Per-thread values"): how far each value and control may differ.

The lattice is `hir.UNIFORM < hir.WARP < hir.VARYING`; a join is the max. The checker
keeps a table across passes: each var's level (as varying as anything assigned to
it and the control it was assigned under), each loop's taint (a `break`,
`continue` or `return` under varying control), and the buffers stored per thread at
the end of each loop body. Passes repeat until the table stops rising.

The three rules and their messages:

    >>> once_per_cta("barrier")
    '`barrier` runs once per CTA, so every thread must reach it'
    >>> differs("atomic_add", "i")
    '`atomic_add` takes `i`, which differs between lanes'
    >>> stale("rowsum", "t")
    '`rowsum` reads `t` after a per-thread store to it with no `barrier()` between'
"""

from __future__ import annotations

from phobos.sema import hir

U, W, V = hir.UNIFORM, hir.WARP, hir.VARYING


def once_per_cta(op: str) -> str:
    return f"`{op}` runs once per CTA, so every thread must reach it"


def differs(op: str, x: str) -> str:
    return f"`{op}` takes `{x}`, which differs between lanes"


def stale(op: str, t: str) -> str:
    return f"`{op}` reads `{t}` after a per-thread store to it with no `barrier()` between"


def scalar_operands(e):
    """The scalar expressions a tile op takes: slice offsets and broadcast scalars."""
    from phobos.sema.typing import is_shaped

    if isinstance(e, hir.Slice):
        if is_shaped(e.type):
            for s in e.subs:
                yield s.start
        return
    if isinstance(e, (hir.Binary,)):
        for side in (e.left, e.right):
            if is_shaped(side.type):
                yield from scalar_operands(side)
            elif is_shaped(e.type):
                yield side
        return
    if isinstance(e, (hir.Unary, hir.Convert)):
        inner = e.operand if isinstance(e, hir.Unary) else e.value
        yield from scalar_operands(inner)
        return
    if isinstance(e, hir.Builtin) and is_shaped(e.type):
        for a in e.args:
            if is_shaped(a.type):
                yield from scalar_operands(a)
            else:
                yield a


def buffers_read(e, op=None):
    """`(ref, op)` for each tensor or tile binding a CTA-wide op reads, whole or through
    slices; `op` is the innermost built-in reading it (None: the statement itself)."""
    from phobos.sema.typing import is_shaped

    if isinstance(e, hir.Ref) and is_shaped(e.type):
        yield e, op
    elif isinstance(e, hir.Slice):
        if is_shaped(e.type):
            yield from buffers_read(e.base, op)
    elif isinstance(e, hir.Binary):
        yield from buffers_read(e.left, op)
        yield from buffers_read(e.right, op)
    elif isinstance(e, hir.Unary):
        yield from buffers_read(e.operand, op)
    elif isinstance(e, hir.Convert):
        yield from buffers_read(e.value, op)
    elif isinstance(e, hir.Builtin):
        for a in e.args:
            yield from buffers_read(a, e.name)


def describe(e) -> str:
    """A short name for an operand in a message."""
    if isinstance(e, (hir.Ref, hir.CtxRead, hir.Const)):
        return hir._expr(e)
    if e.span is not None and e.span.source.name.endswith(".py"):
        return hir._expr(e)
    if e.span is not None:
        text = e.span.text.strip()
        if text and len(text) <= 40 and "\n" not in text:
            return text
    return hir._expr(e)


class UniformityMixin:
    """The uniformity state of a `KernelChecker` pass."""

    def init_uniformity(self):
        self.control = U
        self.taint = U  # break/continue under varying control: the rest of the loop
        self.ret_taint = U  # return under varying control: the rest of the kernel
        self.loop_keys: list = []
        self.dirty: dict = {}  # buffer key -> name, stored per thread since the last barrier
        self.buffer_keys: dict = {}

    def ctl(self) -> int:
        return max(self.control, self.taint, self.ret_taint)

    def bump(self, key, level):
        old = self.table.get(key, U)
        if level > old:
            self.table[key] = level
            self.changed = True
            return level
        return old

    def raise_var(self, key, level) -> int:
        return self.bump(("var", key), level)

    def read_uni(self, binding) -> int:
        sym = binding.sym
        if sym.kind == "var" and not isinstance(sym.type, (hir.TensorT, hir.TileT)):
            return max(sym.uni, self.table.get(("var", binding.key), U))
        return sym.uni

    # control

    def enter_branch(self, cond_uni):
        saved = (self.control, self.taint, dict(self.dirty))
        self.control = max(self.control, cond_uni)
        return saved

    def between_branches(self, saved):
        then_dirty = dict(self.dirty)
        self.dirty = dict(saved[2])
        self.taint = max(self.taint, saved[1])
        return then_dirty

    def leave_branch(self, saved, then_dirty):
        self.control = saved[0]
        if then_dirty:
            self.dirty.update(then_dirty)

    def enter_loop(self, key, bound_uni):
        saved = (self.control, self.taint)
        self.control = max(self.control, bound_uni, self.table.get(key, U))
        self.loop_keys.append(key)
        carried = self.table.get(("dirty",) + key)
        if carried:
            self.dirty.update(carried)
        return saved

    def leave_loop(self, key, saved):
        self.loop_keys.pop()
        if self.dirty:
            old = self.table.get(("dirty",) + key, {})
            if not set(self.dirty) <= set(old):
                self.table[("dirty",) + key] = {**old, **self.dirty}
                self.changed = True
        self.control, self.taint = saved

    def jump_under_control(self):
        level = self.ctl()
        if level > U and self.loop_keys:
            self.taint = max(self.taint, level)
            self.bump(self.loop_keys[-1], level)

    def return_under_control(self):
        level = self.ctl()
        if level > U:
            self.ret_taint = max(self.ret_taint, level)
            for key in self.loop_keys:
                self.bump(key, level)

    # the three rules

    def need_control(self, op, node, *, most=U):
        if self.ctl() > most:
            self.error(
                "E0400",
                once_per_cta(op)
                if most == U
                else f"`{op}` needs every lane of its warp to reach it",
                node,
                "under control that differs between threads"
                if most == U
                else "under control that differs between lanes",
                help="move it out of the `if` or loop whose condition depends on the thread",
            )

    def need_uniform(self, op, operand, node=None, *, most=U):
        if operand.uni > most:
            where = operand if operand.span is not None else node
            self.error(
                "E0401",
                differs(op, describe(operand)),
                where,
                "differs between lanes" if operand.uni == V else "differs between warps",
                help="compute it from uniform values, or reduce it first (`sum<over ctx.thread>(x)`)",
            )

    def buffer_key(self, ref):
        while isinstance(ref, hir.Slice):
            ref = ref.base
        if isinstance(ref, hir.Ref):
            return ("buffer", ref.sym.name, self.buffer_keys.get(id(ref.sym), ref.sym.id))
        return None

    def mark_dirty(self, base, name):
        key = self.stable_buffer(base)
        if key is not None:
            self.dirty[key] = name

    def stable_buffer(self, base):
        while isinstance(base, hir.Slice):
            base = base.base
        if not isinstance(base, hir.Ref):
            return None
        sym = base.sym
        return (sym.kind, sym.name) if sym.kind == "param" else ("sym", sym.name, sym.kind)

    def barrier_reached(self):
        self.dirty = {}

    def tile_statement(self, node, value, op, target=None):
        """The rules for a statement that is a tile op (its value or target is shaped)."""
        from phobos.sema.typing import is_shaped

        shaped = is_shaped(value.type) or (target is not None and is_shaped(target.type))
        if not shaped:
            return
        if isinstance(value, hir.Builtin):
            op = value.name
        elif isinstance(value, hir.Slice) and value.span is not None:
            op = value.span.text.strip()  # a tile copy: named by the slice it copies
        self.need_control(op, node)
        operands = list(scalar_operands(value))
        if target is not None and isinstance(target, hir.Slice):
            operands += [s.start for s in target.subs]
        seen = set()
        for operand in operands:
            if id(operand) in seen:
                continue
            seen.add(id(operand))
            self.need_uniform(op, operand, node)
        for ref, reader in buffers_read(value):
            key = self.stable_buffer(ref)
            if key in self.dirty:
                self.error(
                    "E0402",
                    stale(reader or op, ref.sym.name),
                    node,
                    "reads the whole buffer",
                    help="put a `barrier()` between the per-thread stores and this read",
                )
