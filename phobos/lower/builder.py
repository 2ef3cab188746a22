"""Building lir: fresh registers, instructions into the current block, nested regions.

The lowering emits into a stack of open blocks: `emit` appends to the innermost,
`region()` opens a nested one and gives back its `lir.Block` when closed. Registers are
named after what they hold (`%x3`, `%p7`) and never clash with a parameter slot.
Values that every thread computes once at entry (`tid.x`, `ctaid.x`) go to the
prologue, so they dominate every use.

    >>> b = Builder({"x"})
    >>> r = b.op("add", "s32", Imm(1, "s32"), Imm(2, "s32"), hint="x")
    >>> with b.region() as body:
    ...     _ = b.op("mul", "s32", r, Imm(3, "s32"))
    >>> b.add(lir.If(b.op("setp", "pred", r, Imm(0, "s32"), cmp="gt", type="s32"), body.block))
    >>> print(lir.print_item(b.finish().items[0]))
    %x1 = add.s32 1:s32, 2:s32
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

from phobos.lower import lir
from phobos.lower.errors import NotLowered
from phobos.lower.lir import Imm, Reg

# The compile budget: the lowering refuses a kernel (E0515) once it has emitted this many
# instructions or made this many registers. The largest kernel of the examples, every
# variant, emits under 9,000 instructions; the lowering takes some 30 µs an instruction,
# so the bound stops a runaway `for<unroll ..>` or a huge static extent within seconds,
# where it used to run for minutes and gigabytes before ptxas choked on the PTX.
MAX_INSTRUCTIONS = 100_000
MAX_REGISTERS = 200_000

# The hint a register's name starts with, by type, when the caller gives none.
HINTS = {"pred": "p", "f32": "f", "f64": "d", "f16": "h", "bf16": "hb", "u64": "a", "s64": "l"}


@dataclass
class Region:
    """A nested block; `block` is what was emitted in it, once it is closed (None while
    open). It is read from `items` when asked for, so a pass that settles after the
    region closes (the barrier tracker's loop entry) still shapes it."""

    items: list
    closed: bool = False

    @property
    def block(self) -> lir.Block | None:
        return lir.Block(tuple(self.items)) if self.closed else None


class Builder:
    """Emits lir items into nested blocks; hands out fresh registers."""

    def __init__(self, reserved: set[str] | frozenset[str] = frozenset()):
        self.reserved = set(reserved)
        self.count = 0
        self.emitted = 0  # instructions emitted, against the compile budget
        self.stack: list[list] = [[]]
        self.prologue: list = []
        self.span = None  # the span of the user's line being lowered
        self.cache: dict = {}  # prologue values by key (tid.x, ctaid.x, ...)

    # -- registers -----------------------------------------------------------

    def reg(self, type_: str, hint: str | None = None) -> Reg:
        """A fresh register of `type_`."""
        if self.count >= MAX_REGISTERS:
            raise over_budget(f"{MAX_REGISTERS:,} registers", self.span)
        base = re.sub(r"\W", "_", hint or HINTS.get(type_, "r"))
        if not base or not (base[0].isalpha() or base[0] == "_"):
            base = "r" + base
        if base[-1].isdigit():
            # `o1` and its 17th register would be `%o117`, which `o` also names at its 117th
            base += "_"
        while True:
            self.count += 1
            name = f"{base}{self.count}"
            if name not in self.reserved:
                return Reg(name, type_)

    # -- emission ------------------------------------------------------------

    def add(self, item) -> None:
        self.stack[-1].append(item)

    def emit(self, op: str, dests=(), srcs=(), *, guard=None, negated=False, **attrs) -> lir.Inst:
        if attrs.get("vec") == 1:  # the text form leaves a scalar access's width out
            del attrs["vec"]
        i = lir.inst(op, dests, srcs, guard=guard, guard_negated=negated, span=self.span, **attrs)
        self.stack[-1].append(i)
        self.emitted += 1
        if self.emitted > MAX_INSTRUCTIONS:
            raise over_budget(f"{MAX_INSTRUCTIONS:,} instructions", self.span)
        return i

    def op(self, op: str, type_: str, *srcs, dest_type=None, hint=None, guard=None, **attrs) -> Reg:
        """`dest = op.type srcs` into a fresh register; returns it.

        `type_` is the instruction's type attribute and, unless `dest_type` says
        otherwise, the destination's type (`setp` writes a pred: pass `"pred"` as the
        type and the compared type as `type=`).
        """
        if op == "setp":
            dest = self.reg("pred", hint)
            self.emit(op, (dest,), srcs, guard=guard, **attrs)
            return dest
        dest = self.reg(dest_type or type_, hint)
        if op != "sreg":
            attrs.setdefault("type", type_)
        self.emit(op, (dest,), srcs, guard=guard, **attrs)
        return dest

    def mov(self, dest: Reg, src, type_: str | None = None, guard=None) -> None:
        self.emit("mov", (dest,), (src,), type=type_ or dest.type, guard=guard)

    def copy(self, src, type_: str, hint=None) -> Reg:
        """A fresh register holding `src`."""
        dest = self.reg(type_, hint)
        self.mov(dest, src, type_)
        return dest

    @contextmanager
    def region(self):
        """Open a nested block; on exit `region.block` holds what was emitted in it."""
        r = Region([])
        self.stack.append(r.items)
        try:
            yield r
        finally:
            self.stack.pop()
            r.closed = True

    @contextmanager
    def at_prologue(self):
        """Emit into the kernel's entry code (values every later item may read)."""
        saved = self.stack
        self.stack = [self.prologue]
        try:
            yield
        finally:
            self.stack = saved

    def once(self, key, make):
        """The prologue value `key`, made by `make()` in the prologue the first time."""
        if key not in self.cache:
            with self.at_prologue():
                self.cache[key] = make()
        return self.cache[key]

    def finish(self) -> lir.Block:
        """The kernel body: the prologue, then everything emitted at the top level."""
        assert len(self.stack) == 1, "a region is still open"
        return lir.Block(tuple(self.prologue + self.stack[0]))


def imm(value, type_: str) -> Imm:
    """An immediate of `type_` (ints for integer types, floats for float types)."""
    if lir.is_float(type_):
        return Imm(float(value), type_)
    if type_ == "pred":
        return Imm(int(bool(value)), "pred")
    return Imm(int(value), type_)


# ---------------------------------------------------------------------------
# Index arithmetic, folded where the operands are known


def iadd(b: Builder, t: str, x, y):
    """`x + y` in the integer type `t` (either an int, an `Imm` or a register)."""
    x, y = _val(x, t), _val(y, t)
    if isinstance(x, Imm) and isinstance(y, Imm):
        return Imm(x.value + y.value, t)
    if isinstance(x, Imm):
        x, y = y, x
    if isinstance(y, Imm) and y.value == 0:
        return x
    return b.op("add", t, x, y)


def isub(b: Builder, t: str, x, y):
    x, y = _val(x, t), _val(y, t)
    if isinstance(y, Imm):
        return iadd(b, t, x, Imm(-y.value, t))
    if isinstance(x, Imm):
        x = b.copy(x, t)
    return b.op("sub", t, x, y)


def imul(b: Builder, t: str, x, y):
    """`x * y` in the integer type `t`, folded where one side is 0 or 1 or both known."""
    x, y = _val(x, t), _val(y, t)
    if isinstance(x, Imm) and isinstance(y, Imm):
        return Imm(x.value * y.value, t)
    if isinstance(x, Imm):
        x, y = y, x
    if isinstance(y, Imm):
        if y.value == 0:
            return Imm(0, t)
        if y.value == 1:
            return x
    return b.op("mul", t, x, y)


def _val(x, t: str):
    return Imm(x, t) if isinstance(x, int) else x


def reg_or_imm(b: Builder, v: lir.Value, t: str) -> lir.Value:
    """`v` as a value of the integer type `t`: an immediate retyped, or a register
    moved into one of `t` where its type differs."""
    if isinstance(v, Imm):
        return Imm(int(v.value), t)
    if v.type != t:
        return b.op("mov", "b32" if lir.WIDTH[t] == 4 else "b64", v, dest_type=t)
    return v


def over_budget(what: str, span) -> NotLowered:
    """E0515 at the line being lowered when the kernel passed the compile budget."""
    return NotLowered(
        "",
        span,
        code="E0515",
        message=f"this kernel would lower to more than {what}, the compile budget",
        note="the lowering stopped at this line; its size grows with `for<unroll ..>` "
        "counts and with the static extents of the tiles each thread holds",
        help="unroll less (`for<unroll 4>` ..), or bind the extent at launch instead of "
        "fixing it, so that a loop walks it",
    )
