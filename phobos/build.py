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

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from phobos import log
from phobos.diagnostics import CompileError, Diagnostic, Label
from phobos.sema.space import Space

log.configure()

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

    _check_chip(chip)
    checked, diagnostics = check_kernel(program, name, variant, index_width)
    _raise_errors(diagnostics)
    if checked is None:  # an unknown name always comes with a diagnostic; be safe
        raise CompileError([Diagnostic.error("E0908", f"no kernel `{name}`", None)])
    return build_checked(checked, chip=chip, source_key=source_key)


def build_checked(
    checked, *, chip: str = "sm_90", source_key: str | None = None, entry: str | None = None
) -> Built:
    """Lower and emit an already checked kernel (`hir.Kernel`).

    `entry` names the PTX `.entry` (default: the kernel's name). With `PHOBOS_DUMP=DIR`
    set, the hir, lir, PTX and contract are written to `DIR/<kernel>[.<variant>].*`.
    """
    _check_chip(chip)
    lowered = lower(checked, entry)
    ptx = emit([lowered], chip)
    built = Built(checked, lowered, ptx, contract_of(checked, lowered, ptx, chip, source_key))
    stem = log.kernel_stem(checked.name, variant_key(checked))
    for artifact, text in built.texts().items():
        log.dump(stem, artifact, text)
    return built


# ---------------------------------------------------------------------------
# The steps, shared with the driver's `lir`, `ptx` and `json` stages


def variant_key(checked) -> str:
    """The variant's key (`BLOCK=1024`, `""` without `@autotune`), in the space's order."""
    variant = dict(checked.variant)
    space = getattr(checked.attrs, "space", None)
    if isinstance(space, Space):
        try:
            return space.variant_key(variant)
        except ValueError:
            pass
    return ",".join(f"{name}={value}" for name, value in checked.variant)


def variant_entry(checked) -> str:
    """An `.entry` name unique to the variant: `saxpy__BLOCK_16` (the name without one).

    >>> from types import SimpleNamespace as K
    >>> variant_entry(K(name="mm", variant=(("TILE_M", 32), ("TILE_K", 4)), attrs=None))
    'mm__TILE_M_32_TILE_K_4'
    """
    if not checked.variant:
        return checked.name
    parts = (f"{name}_{value}".replace("-", "m") for name, value in checked.variant)
    return checked.name + "__" + "_".join(parts)


def lower(checked, entry: str | None = None):
    """The lir kernel of a checked kernel, its entry renamed to `entry` if given.

    Raises `CompileError` with the lowering's diagnostics (a construct not lowered yet).
    The lowering's log lines (`PHOBOS_LOG=debug`) name this kernel and variant.
    """
    from phobos.lower.kernel import lower_kernel

    key = variant_key(checked)
    with log.lowering(f"{checked.name}[{key}]" if key else checked.name):
        lowered, diagnostics = lower_kernel(checked)
    _raise_errors(diagnostics)
    if lowered is None:  # the lowering always says why; be safe
        raise CompileError([Diagnostic.error("E0500", f"`{checked.name}` was not lowered", None)])
    if entry is not None and entry != lowered.name:
        lowered = dataclasses.replace(lowered, name=entry)
    return lowered


def emit(kernels, chip: str) -> str:
    """The PTX module of lir `kernels` for `chip`; an instruction the chip lacks is a
    `CompileError` (E0590) at the statement that needs it."""
    from phobos.ptx import TargetError, emit_module

    try:
        return emit_module(list(kernels), chip)
    except TargetError as exc:
        span = getattr(exc, "span", None)
        label = Label(span, "needs a newer chip") if span is not None else None
        raise CompileError([Diagnostic.error("E0590", str(exc), label)]) from None


def contract_of(checked, lowered, ptx: str, chip: str, source_key: str | None = None):
    """The launch contract (`KernelContract`) of one lowered kernel and its PTX.

    The entry is the lir kernel's name; the contract's `name` is the kernel's, unless
    the entry was renamed for its variant, when it is the entry (names in one contract
    file are unique).
    """
    from phobos.runtime.cache import compiler_fingerprint, entry_key
    from phobos.runtime.contract import KernelContract

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
    if lowered.name != checked.name:
        contract = dataclasses.replace(contract, name=lowered.name)
    return contract


def _check_chip(chip: str) -> None:
    if chip not in CHIPS:
        raise CompileError(
            [Diagnostic.error("E0908", f"unknown chip `{chip}`", None, help=_chips_help())]
        )


def _raise_errors(diagnostics: list[Diagnostic]) -> None:
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise CompileError(errors)


def _chips_help() -> str:
    return "the chips are " + ", ".join(f"`{c}`" for c in CHIPS)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
