"""`@registers(t, ..)` (SPEC.md "Attributes"): which tiles live in registers, and their rules.

Each named tile is a `var t: tile<T>[dims] = e` of the kernel; every thread holds
the elements tid, tid + threads, .. of its row-major order, so the CTA's thread
count must divide the element count and a thread holds at most 64 of them. An
update under an `if` or a `while` would leave some threads' elements behind, so it
is refused; a `for` carries the tile.

    >>> per_thread(4096, 256), per_thread(96, 256)
    (16, None)
"""

from __future__ import annotations

from math import prod

from phobos.sema import hir
from phobos.syntax import ast

E_REGISTERS = "E0324"  # a tile @registers cannot hold
E_UPDATE = "E0325"  # a register tile updated under an `if` or `while`
MOST_PER_THREAD = 64


def per_thread(count: int, threads: int) -> int | None:
    """Elements per thread of a tile of `count` elements, None when `threads` does not divide it."""
    return count // threads if count % threads == 0 else None


def named(ck) -> tuple[str, ...]:
    return tuple(getattr(ck.setup.attrs, "registers", ()) or ())


def register_decl(ck, s: ast.Var, sym: hir.Sym) -> None:
    """Check and record the kernel-level `var` `s` when `@registers` names it."""
    if s.name.id not in named(ck) or ck.frames[-1]["fn"] is not None:
        return
    name = s.name.id
    if not isinstance(sym.type, hir.TileT) or s.type is None:
        spelled = (
            f"{name}: ph.var[ph.tile[ph.f32][R, C]] = e"
            if ck.python
            else (f"var {name}: tile<f32>[R, C] = e")
        )
        ck.error(
            E_REGISTERS,
            f"`@registers` keeps a declared tile, but `{name}` is declared without a tile type",
            s.name,
            "named in `@registers`",
            help=f"declare it with its type: `{spelled}`",
        )
        return
    if s.value is None:
        ck.error(
            E_REGISTERS,
            f"`@registers` keeps a tile with a value, but `{name}` starts uninitialised",
            s.name,
            "no value",
            help="give it one; a scalar broadcasts, as in `= 0.0`",
        )
        return
    dims = sym.type.dims
    if not all(isinstance(d, int) for d in dims):
        return  # a tile's dims are constants; a bad one was refused where it was written
    count, threads = prod(dims), ck.setup.threads
    each = per_thread(count, threads)
    if each is None:
        ck.error(
            E_REGISTERS,
            f"the CTA's {threads} threads do not divide the {count} elements of `{name}`",
            s.name,
            f"{count} elements in registers",
            help="every thread holds the same number of its elements; resize the tile or the CTA",
        )
        return
    if each > MOST_PER_THREAD:
        ck.error(
            E_REGISTERS,
            f"`{name}` keeps {each} elements per thread in registers, more than {MOST_PER_THREAD}",
            s.name,
            f"{count} elements over {threads} threads",
            help="keep a smaller tile in registers, or take `{name}` out of `@registers`".replace(
                "{name}", name
            ),
        )
        return
    ck.registers[id(sym)] = (sym, ck.cond_depth)


def note_update(ck, target, node) -> None:
    """Refuse an update of a register tile under an `if` or `while` it was declared outside."""
    base = target
    while isinstance(base, hir.Slice):
        base = base.base
    if not isinstance(base, hir.Ref) or id(base.sym) not in ck.registers:
        return
    _, depth = ck.registers[id(base.sym)]
    if ck.cond_depth > depth:
        ck.error(
            E_UPDATE,
            f"`{base.sym.name}` is kept in registers, so it cannot be updated inside an `if` "
            "or `while`",
            node,
            "updated under an `if` or `while`",
            help="update it in every thread, selecting per element: "
            f"`{base.sym.name} = where(cond, new, {base.sym.name})`",
        )


def kernel_registers(ck) -> tuple[hir.Sym, ...]:
    return tuple(sym for sym, _ in ck.registers.values())
