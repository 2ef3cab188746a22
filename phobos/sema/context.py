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

`@launch(T)` names an `@autotune` dimension: each variant's CTA size is its value of
`T`, refused (E0213, at the attribute, naming the variant) outside 1..1024.

    >>> p, _ = parse(SourceFile("k.ph", "@autotune(T in [128, 2048])\\n@launch(T)\\nkernel k() {}"))
    >>> kernel_setup(p.items[0], {"T": 128})[0].threads
    128
    >>> setup, diags = kernel_setup(p.items[0], {"T": 2048})
    >>> diags[0].code, diags[0].message
    ('E0213', '`@launch` threads must be from 1 to 1024, but the variant `T=2048` gives `T` = 2048')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phobos.diagnostics.diagnostic import Diagnostic, Label
from phobos.syntax import ast

MAX_THREADS = 1024  # PTX `.maxntid`; as phobos.sema.attributes.MAX_THREADS


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


def _launch_arg(kernel: ast.Kernel, index: int = 0) -> ast.PositionalArg | None:
    """Argument `index` of the kernel's `@launch` (threads, min_blocks, max_regs), if
    it has one."""
    for attr in kernel.attrs:
        if attr.name.id == "launch" and attr.args and len(attr.args) > index:
            arg = attr.args[index]
            if isinstance(arg, ast.PositionalArg):
                return arg
    return None


def _threads_from_ast(kernel: ast.Kernel) -> int | str:
    first = _launch_arg(kernel)
    if first is not None and isinstance(first.value, (ast.Int, ast.Name)):
        return first.value.value if isinstance(first.value, ast.Int) else first.value.id
    return 256


def _variant_threads(kernel, attrs, name: str, chosen: dict[str, int], diags) -> int:
    """The CTA size `@launch(name)` gives in the variant `chosen`; out of 1..1024, an
    error at the attribute naming the variant (and 256 to go on with)."""
    threads = chosen.get(name, 256)
    if 1 <= threads <= MAX_THREADS:
        return threads
    arg = _launch_arg(kernel)
    span = arg.span if arg is not None else kernel.name.span
    py = span.source.name.endswith(".py")
    at = "`@ph.launch`" if py else "`@launch`"
    variant = ", ".join(f"{k}={v}" for k, v in chosen.items())
    dim_span = (getattr(attrs, "dim_spans", None) or {}).get(name)
    searched = threads in ((getattr(attrs, "autotune", None) or {}).get(name) or ())
    diags.append(
        Diagnostic.error(
            "E0213",
            f"{at} threads must be from 1 to {MAX_THREADS}, but the variant `{variant}` "
            f"gives `{name}` = {threads}",
            Label(span, f"{threads} threads in this variant"),
            secondary=[Label(dim_span, f"`{name}` searches {threads}")]
            if dim_span and searched
            else [],
            notes=[f"a CTA holds at most {MAX_THREADS} threads (PTX `.maxntid`)"],
            help=f"drop {threads} from `{name}`'s values"
            if searched
            else f"choose a variant whose `{name}` is from 1 to {MAX_THREADS}",
        )
    )
    return 256


def _variant_occupancy(kernel, attrs, chosen: dict[str, int], diags) -> None:
    """`@launch(threads, MB, R)` with names: this variant's min_blocks at least 1 and
    max_regs from 16 to 255, else an error at the argument naming the variant."""
    from phobos.sema.attributes import LAUNCH_NOTES, LAUNCH_RANGES

    launch = getattr(attrs, "launch", None)
    for index, (which, lo, hi) in enumerate(LAUNCH_RANGES[1:], 1):
        name = getattr(launch, which, None)
        if not isinstance(name, str) or name not in chosen:
            continue
        value = chosen[name]
        if value >= lo and (hi is None or value <= hi):
            continue
        arg = _launch_arg(kernel, index)
        span = arg.span if arg is not None else kernel.name.span
        at = "`@ph.launch`" if span.source.name.endswith(".py") else "`@launch`"
        variant = ", ".join(f"{k}={v}" for k, v in chosen.items())
        bound = f"at least {lo}" if hi is None else f"from {lo} to {hi}"
        diags.append(
            Diagnostic.error(
                "E0213",
                f"{at} {which} must be {bound}, but the variant `{variant}` gives "
                f"`{name}` = {value}",
                Label(span, f"{value} in this variant"),
                notes=[LAUNCH_NOTES[which]],
                help=f"drop {value} from `{name}`'s values",
            )
        )


def kernel_setup(kernel: ast.Kernel, variant: dict[str, int] | None):
    """The `Setup` of `kernel` in `variant` (None: first choices), and diagnostics."""
    from phobos.sema.attributes import check_attributes

    # No fallback: a kernel checked without its attributes would compile into other code.
    attrs, diags = check_attributes(kernel)
    choices = None
    threads = None
    if attrs is not None:
        autotune = getattr(attrs, "autotune", None)
        if isinstance(autotune, dict):
            choices = {k: list(v) for k, v in autotune.items()}
        launch = getattr(attrs, "launch", None)
        t = getattr(launch, "threads", None) if launch is not None else None
        if isinstance(t, (int, str)):
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
    if isinstance(threads, str):  # `@launch(T)`: this variant's value of T
        threads = _variant_threads(kernel, attrs, threads, chosen, diags)
    if attrs is not None:
        _variant_occupancy(kernel, attrs, chosen, diags)
    return Setup(chosen, threads, tensorcore, attrs, choices), diags
