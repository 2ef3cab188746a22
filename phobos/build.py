"""Compiling one kernel variant for a chip: checked program, lir, PTX and launch contract.

No GPU is needed: this is the compile-only path behind `phobos-compile --chip` and
`kernel.compile(chip=...)`, and the first half of a GPU launch.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> program, _ = parse(SourceFile("k.ph", '''
    ... kernel scale(x: tensor<f32>[N], alpha: f32) {
    ...   let base = ctx.block.x * 1024
    ...   x[base :+ 1024] = alpha * x[base :+ 1024]
    ... }'''))
    >>> built = build_kernel(program, "scale", chip="sm_90")
    >>> built.contract.entry, [p.name for p in built.contract.params]
    ('scale', ['x', 'alpha', 'N'])
    >>> ".target sm_90" in built.ptx
    True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from phobos.diagnostics import CompileError, Diagnostic, Label

CHIPS = ("sm_80", "sm_90", "sm_90a")


@dataclass(frozen=True)
class Built:
    """What compiling one kernel variant made."""

    hir: Any  # phobos.sema.hir.Kernel
    lir: Any  # phobos.lower.lir.Kernel
    ptx: str
    contract: Any  # phobos.runtime.contract.KernelContract

    @property
    def contract_json(self) -> str:
        from phobos.runtime.contract import Contract

        return Contract((self.contract,)).to_json()


def build_kernel(
    program,
    name: str,
    variant: dict[str, int] | None = None,
    *,
    chip: str = "sm_90",
    index_width: int = 32,
    source_key: str | None = None,
) -> Built:
    """Check, lower and emit kernel `name` of `program` for `chip`.

    `variant` fixes the @autotune constants (None: each one's first choice).
    Raises `CompileError` with the diagnostics when the program is refused or uses
    what is not lowered yet.
    """
    from phobos.sema.check import check_kernel

    if chip not in CHIPS:
        raise CompileError(
            [Diagnostic.error("E0908", f"unknown chip `{chip}`", None, help=_chips_help())]
        )
    checked, diagnostics = check_kernel(program, name, variant, index_width)
    _raise_errors(diagnostics)
    if checked is None:  # an unknown name always comes with a diagnostic; be safe
        raise CompileError([Diagnostic.error("E0908", f"no kernel `{name}`", None)])
    return build_checked(checked, chip=chip, source_key=source_key)


def build_checked(checked, *, chip: str = "sm_90", source_key: str | None = None) -> Built:
    """Lower and emit an already checked kernel (`hir.Kernel`)."""
    from phobos.lower.kernel import lower_kernel
    from phobos.ptx import TargetError, emit_module
    from phobos.runtime.cache import compiler_fingerprint, entry_key
    from phobos.runtime.contract import KernelContract

    lowered, diagnostics = lower_kernel(checked)
    _raise_errors(diagnostics)
    try:
        ptx = emit_module([lowered], chip)
    except TargetError as exc:
        span = getattr(exc, "span", None)
        label = Label(span, "needs a newer chip") if span is not None else None
        raise CompileError([Diagnostic.error("E0590", str(exc), label)]) from None
    fingerprint = compiler_fingerprint()
    variant = dict(checked.variant)
    key = entry_key(source_key or _sha(ptx), fingerprint, chip, variant)
    contract = KernelContract.for_kernel(
        checked,
        chip=chip,
        fingerprint=fingerprint,
        entry=lowered.name,
        static_smem=0 if lowered.dynamic_smem else lowered.smem,
        dynamic_smem=lowered.smem if lowered.dynamic_smem else 0,
        cache_key=str(key),
    )
    return Built(checked, lowered, ptx, contract)


def _raise_errors(diagnostics: list[Diagnostic]) -> None:
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise CompileError(errors)


def _chips_help() -> str:
    return "the chips are " + ", ".join(f"`{c}`" for c in CHIPS)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
