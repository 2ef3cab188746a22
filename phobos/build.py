"""Compiling one kernel variant for a chip: checked program, lir, PTX and launch contract.

No GPU is needed: this is the compile-only path behind `kernel.compile(chip=...)`, and
the first half of a GPU launch. It is a thin layer over the driver's stages
(`phobos.driver.compile_checked`), which `phobos-compile` and the tuner run too; the
steps it names (`lower`, `emit`, `contract_of`, `variant_key`, `variant_entry`,
`CHIPS`) are the driver's.

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

from dataclasses import dataclass
from typing import Any

from phobos.diagnostics import CompileError, Diagnostic
from phobos.driver import (
    CHIPS,
    Options,
    check_chip,
    compile_checked,
    contract_of,
    emit,
    lower,
    variant_entry,
    variant_key,
)


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

    def texts(self) -> dict[str, str]:
        """The text of each artifact, by the suffix `PHOBOS_DUMP` writes it under."""
        from phobos.lower.lir import print_kernel
        from phobos.sema.hir import dump

        return {
            "hir": dump(self.hir) + "\n",
            "lir": print_kernel(self.lir) + "\n",
            "ptx": self.ptx,
            "json": self.contract_json,
        }


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

    check_chip(chip)
    checked, diagnostics = check_kernel(program, name, variant, index_width)
    _raise_errors(diagnostics)
    if checked is None:  # an unknown name always comes with a diagnostic; be safe
        raise CompileError([Diagnostic.error("E0908", f"no kernel `{name}`", None)])
    return build_checked(checked, chip=chip, source_key=source_key)


def build_checked(
    checked, *, chip: str = "sm_90", source_key: str | None = None, entry: str | None = None
) -> Built:
    """Lower and emit an already checked kernel (`hir.Kernel`) through the driver.

    `entry` names the PTX `.entry` (default: the kernel's name). With `PHOBOS_DUMP=DIR`
    set, the hir, each lowering pass's text, the lir, the PTX and the contract are
    written to `DIR/<kernel>[.<variant>].*`.
    """
    result = compile_checked(
        [checked], "json", Options(chip=chip), source_key=source_key, entry=entry
    )
    _raise_errors(result.diagnostics)
    (lowered,) = result.artifacts["lir"]
    (contract,) = result.artifacts["json"].kernels
    return Built(checked, lowered, result.artifacts["ptx"], contract)


def _raise_errors(diagnostics: list[Diagnostic]) -> None:
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise CompileError(errors)


__all__ = [
    "CHIPS",
    "Built",
    "build_checked",
    "build_kernel",
    "contract_of",
    "emit",
    "lower",
    "variant_entry",
    "variant_key",
]
