"""The names a module declares: each kernel, fn, parameter and tensor extent once, and
each name the PTX carries a PTX identifier.

A kernel's name is its `.entry`, and its parameters and extents are its `.param`
slots, so two of one name are two slots ptxas cannot tell apart; an extent named like
a parameter would also make the parameter and the launch-bound dimension one name in
the body. PTX identifiers are ASCII (`[A-Za-z][A-Za-z0-9_$]*` or `_` and at least one
more), which the `.ph` lexer's names always are, but Python's are not.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> p, _ = parse(SourceFile("k.ph", "kernel k(n: i32, x: tensor<f32>[n]) {}"))
    >>> [d.message for d in kernel_names(p.items[0])]
    ['the extent `n` is named like the parameter `n`']
    >>> p, _ = parse(SourceFile("k.ph", "kernel k() {}\\nkernel k() {}"))
    >>> [d.message for d in module_names(p)]
    ['the kernel `k` is defined twice']
"""

from __future__ import annotations

import re

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.syntax import ast

E_TWICE = "E0265"  # a kernel, fn, parameter or extent declared twice
E_NOT_PTX = "E0266"  # a name the PTX carries that is not a PTX identifier
E_EXTENT = "E0329"  # a tile or tensor extent that is not positive

# PTX ISA "Identifiers", less `$` and `%`, which no Phobos spelling writes.
PTX_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+")


def module_names(program: ast.Program) -> list[Diagnostic]:
    """A kernel or fn defined twice (a fn and a kernel of one name included)."""
    diags: list[Diagnostic] = []
    first: dict[str, ast.Name] = {}
    for item in program.items:
        if not isinstance(item, (ast.Kernel, ast.Function)):
            continue
        kind = "kernel" if isinstance(item, ast.Kernel) else "fn"
        seen = first.get(item.name.id)
        if seen is None:
            first[item.name.id] = item.name
            continue
        diags.append(
            Diagnostic.error(
                E_TWICE,
                f"the {kind} `{item.name.id}` is defined twice",
                Label(item.name.span, "defined again here"),
                secondary=[Label(seen.span, f"`{item.name.id}` first defined here")],
                help=f"rename one of the two `{item.name.id}`s",
            )
        )
    return diags


def kernel_names(kernel: ast.Kernel) -> list[Diagnostic]:
    """A kernel's own name, its parameters' and its extents': PTX identifiers, each
    once, and every literal extent of a parameter's type positive."""
    diags: list[Diagnostic] = []
    _ptx_name(kernel.name, "kernel", diags)
    params: dict[str, ast.Name] = {}
    for p in kernel.params:
        _ptx_name(p.name, "parameter", diags)
        seen = params.get(p.name.id)
        if seen is not None:
            diags.append(
                Diagnostic.error(
                    E_TWICE,
                    f"the parameter `{p.name.id}` is declared twice",
                    Label(p.name.span, "declared again here"),
                    secondary=[Label(seen.span, "first declared here")],
                    help="give each parameter of a kernel its own name",
                )
            )
        else:
            params[p.name.id] = p.name
    extents: set[str] = set()
    for p in kernel.params:
        for d in getattr(p.type, "dims", ()):
            if isinstance(d, ast.Int):
                continue  # a literal: `positive_extent` checks it where the type resolves
            if d.id in params:
                diags.append(
                    Diagnostic.error(
                        E_TWICE,
                        f"the extent `{d.id}` is named like the parameter `{d.id}`",
                        Label(d.span, "an extent bound at launch"),
                        secondary=[Label(params[d.id].span, "the parameter")],
                        notes=["an extent is a value of its own, read off the tensor's shape"],
                        help=f"rename the extent or the parameter, e.g. `{d.id.upper()}`"
                        if d.id.upper() not in params and d.id.upper() != d.id
                        else "rename the extent or the parameter",
                    )
                )
            elif d.id not in extents:
                extents.add(d.id)
                _ptx_name(d, "extent", diags)
    return diags


def positive_extent(d: ast.Int) -> Diagnostic | None:
    """A literal extent of a tile or tensor type below 1, refused."""
    if d.value >= 1:
        return None
    return Diagnostic.error(
        E_EXTENT,
        f"a tile or tensor extent must be at least 1, not `{d.value}`",
        Label(d.span, "holds no element" if d.value == 0 else "a negative extent"),
        help="give every axis at least one element",
    )


def _ptx_name(name: ast.Name, what: str, diags: list[Diagnostic]) -> None:
    # A parameter or extent that is no PTX identifier (`_`) takes a numbered slot in the
    # emitter, but its register and the PTX's comments still spell it, in ASCII only.
    if PTX_IDENT.fullmatch(name.id) or (what != "kernel" and name.id.isascii()):
        return
    ascii_only = name.id.isascii()
    diags.append(
        Diagnostic.error(
            E_NOT_PTX,
            f"the {what} name `{name.id}` is not a PTX identifier",
            Label(name.span, "not a PTX identifier" if ascii_only else "not ASCII"),
            notes=[
                f"{'an' if what[0] in 'aeiou' else 'a'} {what}'s name is written into the PTX, "
                "whose names are ASCII "
                "letters, digits and `_`, starting with a letter or with `_` and one more"
            ],
            help="spell the name in ASCII letters and digits"
            if not ascii_only
            else f"add a letter, e.g. `{name.id}k`",
        )
    )
