"""The help of a name the checker cannot find (E0250).

A name written out of Triton or Python habit (`program_id`, `print`:
`phobos.diagnostics.habits`) is answered with what Phobos writes; any other with the
name in scope it is closest to (a typo) and, in a `.py` kernel,
a name the module binds where the kernel does not look (a global, a local of a def
around it, an import: `phobos.pyfront.outside`), with the binding as a second label.
"""

from __future__ import annotations

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.diagnostics.habits import habit
from phobos.sema.scope import did_you_mean
from phobos.source import Span

SEES = (
    "a kernel sees only its parameters, its `@ph.autotune` constants, the module's "
    "`@ph.fn`s and the built-ins"
)


def cannot_find(name: str, span: Span, candidates, *, call: bool) -> Diagnostic:
    """E0250 for `name` at `span`: a value (`call` False) or a fn being called."""
    python = span.source.name.endswith(".py")
    what = "fn " if call else ""
    helps: list[str] = []
    notes: list[str] = []
    secondary: tuple[Label, ...] = ()
    said = habit(name, python)
    close = did_you_mean(name, candidates) if said is None else None
    if close:
        helps.append(f"a {'fn' if call else 'name'} with a similar name exists: `{close}`")
    if said is not None:
        helps.append(said)
    elif python:
        from phobos.pyfront.outside import outside_binding

        found = outside_binding(span.source, name, span.start)
        if found is not None:
            label, note, fix = _outside(found, call)
            secondary = (Label(found.span, label),)
            notes.append(note)
            helps.append(fix)
    return Diagnostic.error(
        "E0250",
        f"cannot find {what}`{name}` in this scope",
        Label(span, "not found"),
        secondary=secondary,
        notes=notes,
        help=helps,
    )


def _outside(found, call: bool) -> tuple[str, str, str]:
    """(the binding's label, a note, the fix) for a name bound outside the kernel."""
    name = found.name
    if call:
        if found.kind == "import":
            return (
                f"`{name}` is imported here",
                "a kernel calls only the `@ph.fn`s of its own module: each one is written "
                "into the program the kernel compiles in",
                f"define `{name}` as a `@ph.fn` in this module (a copy of the one in "
                f"`{found.owner}`), or move the kernel into `{found.owner}`",
            )
        if found.kind == "def":
            return (
                f"`{name}` is a Python def",
                "a kernel calls only `@ph.fn`s and built-ins",
                f"decorate `{name}` with `@ph.fn` to call it from a kernel",
            )
    where = {
        "global": "a module global",
        "closure": f"a local of `{found.owner}`, around the kernel",
        "import": f"imported from `{found.owner}`" if found.owner else "imported",
        "def": "a Python def",
    }[found.kind]
    if found.value is not None:
        fix = (
            f"make it an `@ph.autotune` constant, `@ph.autotune({name}=[{found.value}])`, "
            f"or pass it as a parameter, `{name}: ph.i32`"
        )
    else:
        fix = (
            f"pass it as a parameter (`{name}: ph.f32`, or the type it has), or, for an "
            f"integer fixed when the kernel compiles, an `@ph.autotune` constant"
        )
    return f"`{name}` is {where}", SEES, fix
