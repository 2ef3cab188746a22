"""What a kernel's attributes fix before its body is checked: the variant and the CTA size.

`phobos.sema.attributes` validates attributes and `phobos.sema.space` enumerates an
`@autotune` space; where they are not importable, the choices are read from the
attribute directly (two values a, b: a first; three or more: the first).

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> p, _ = parse(SourceFile("k.ph", "@autotune(T in [32, 256])\\n@launch(128)\\nkernel k() {}"))
    >>> setup, diags = kernel_setup(p.items[0], None)
    >>> setup.variant, setup.threads, diags
    ({'T': 32}, 128, [])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.syntax import ast


@dataclass
class Setup:
    variant: dict[str, int]
    threads: int = 256
    tensorcore: bool = False
    attrs: Any = None
    choices: dict[str, list[int]] = field(default_factory=dict)


def _choices_from_ast(kernel: ast.Kernel) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for attr in kernel.attrs:
        if attr.name.id != "autotune" or not attr.args:
            continue
        for arg in attr.args:
            if isinstance(arg, ast.SearchDim):
                values = [v.value for v in arg.values]
                if len(values) == 2 and 0 < values[0] <= values[1]:
                    seq, v = [], values[0]
                    while v <= values[1]:
                        seq.append(v)
                        v *= 2
                    values = seq
                out[arg.name.id] = values
    return out


def _threads_from_ast(kernel: ast.Kernel) -> int:
    for attr in kernel.attrs:
        if attr.name.id == "launch" and attr.args:
            first = attr.args[0]
            if isinstance(first, ast.PositionalArg) and isinstance(first.value, ast.Int):
                return first.value.value
    return 256


def kernel_setup(kernel: ast.Kernel, variant: dict[str, int] | None):
    """The `Setup` of `kernel` in `variant` (None: first choices), and diagnostics."""
    diags: list[Diagnostic] = []
    attrs = None
    try:  # the attribute checker, when it is there
        from phobos.sema.attributes import check_attributes

        attrs, adiags = check_attributes(kernel)
        diags.extend(adiags)
    except ImportError:
        attrs = None
    except Exception:  # a half-written attribute checker must not stop this one
        attrs = None
    choices = None
    threads = None
    if attrs is not None:
        autotune = getattr(attrs, "autotune", None)
        if isinstance(autotune, dict):
            choices = {k: list(v) for k, v in autotune.items()}
        launch = getattr(attrs, "launch", None)
        t = getattr(launch, "threads", None) if launch is not None else None
        if isinstance(t, int):
            threads = t
    if choices is None:
        choices = _choices_from_ast(kernel)
    if threads is None:
        threads = _threads_from_ast(kernel)
    tensorcore = any(a.name.id == "tensorcore" for a in kernel.attrs)
    chosen: dict[str, int] = {}
    for name, values in choices.items():
        if variant is not None and name in variant:
            chosen[name] = variant[name]
        elif values:
            chosen[name] = values[0]
    if variant is not None:
        for name in variant:
            if name not in choices:
                diags.append(
                    Diagnostic.error(
                        "E0453",
                        f"`{name}` is not an `@autotune` constant of `{kernel.name.id}`",
                        Label(kernel.name.span, "this kernel"),
                    )
                )
    return Setup(chosen, threads, tensorcore, attrs, choices), diags
