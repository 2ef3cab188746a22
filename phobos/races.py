"""The race check behind `phobos-compile --check-races`: run each lowered kernel in the
threads interpreter on small random inputs and report what it saw at the user's lines.

`check_races(checked, lowered)` makes inputs (`make_inputs`), places the tensors in a
`GlobalMemory` and runs `interp.threads.run_lir` with `check_races=True` over a few
CTAs, twice: once with extents of a few tiles, once with extents under one tile (so
the masked paths run too). Every race found is a diagnostic (E0909) at the second access, with the first as
a secondary label; a run that faults (an access past a tensor, a `bar` not every thread
reaches) is a diagnostic (E0910) at the statement that faulted.

The inputs, by rule:

| what | value |
| --- | --- |
| a dynamic dimension that is the last of some tensor | `2 * T + T // 4` (two tiles and a ragged remainder), `T` the kernel's tile guess; under one tile: `T // 2 + 4` |
| any other dynamic dimension | `2 * min(T, 32) + 4`; under one tile: `12` |
| a dimension `@aligned` to `A` | `3 * A`, and `2 * A` for the second run: whole tiles only, as the promise says, so the grid's CTAs each read a whole tile unmasked, and a loop over it turns three times |
| a float tensor or scalar | standard normal |
| an integer tensor or scalar | small integers (0 to 3 for scalars); zeros for a tensor passed to `grid_barrier` |
| the grid | `(2,)`; `(2, 2)` when the kernel reads `ctx.block.y`; `(2, 2, 2)` for `.z` |

`T`, the tile guess, is the largest `@autotune` constant of the variant, or the CTA's
thread count when it has none (capped at 16384). Every extent is a multiple of 4, as a
launch requires.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> from phobos.sema.check import check_kernel
    >>> from phobos.build import lower
    >>> program, _ = parse(SourceFile("k.ph", '''
    ... kernel scale(x: tensor<f32>[N], a: f32) {
    ...   let base = ctx.block.x * 1024
    ...   x[base :+ 1024] = a * x[base :+ 1024]
    ... }'''))
    >>> checked, _ = check_kernel(program, "scale")
    >>> check_races(checked, lower(checked))
    []
    >>> make_inputs(checked, lower(checked)).dims
    {'N': 576}
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from phobos.diagnostics import Diagnostic, Label
from phobos.extras import require
from phobos.lower import lir
from phobos.lower.types import BYTES

np = require("numpy", "the race check")  # the threads interpreter's memory

RACE = "E0909"
FAULT = "E0910"
UNCHECKED = "E0912"
# The most bytes of tensors one run of the check allocates: a fixed extent past it (a
# `tensor<f32>[M, 4294967296]`) is not allocated (it once asked for 2 TiB) but reported.
MAX_INPUT_BYTES = 256 << 20


class InputsTooLarge(Exception):
    """A tensor whose fixed extents make the check's inputs past `MAX_INPUT_BYTES`."""

    def __init__(self, param, shape: tuple[int, ...], nbytes: int):
        self.param, self.shape, self.nbytes = param, shape, nbytes
        super().__init__(f"`{param.name}` of shape {list(shape)} takes {nbytes:,} bytes")


MAX_TILE = 16384

# Element type -> the numpy dtype the threads interpreter's global memory holds it as.
MEMORY_DTYPE = {
    "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
    "i8": np.int8, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "bool": np.uint8,
}  # fmt: skip


@dataclass
class Inputs:
    """One run's inputs: tensors (numpy, by name, as global memory holds them),
    scalars (as the parameter slots take them), dynamic extents and the grid."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    scalars: dict[str, object] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)
    grid: tuple[int, ...] = (2,)

    def describe(self) -> str:
        dims = ", ".join(f"{n} = {v}" for n, v in self.dims.items())
        return f"grid {self.grid}" + (f", {dims}" if dims else "")


def tile_guess(checked) -> int:
    """The tile extent the kernel most likely steps by (see the module's table)."""
    values = [v for _, v in checked.variant if isinstance(v, int) and v > 0]
    return min(max(values) if values else checked.threads, MAX_TILE)


def make_inputs(checked, lowered: lir.Kernel, seed: int = 0, *, ragged: bool = False) -> Inputs:
    """Random inputs for one run of `checked` (and its lowering), by the module's rules;
    `ragged` asks for the extents under one tile."""
    from phobos.sema import hir

    rng = np.random.default_rng(seed)
    tile = tile_guess(checked)
    last = set()
    for p in checked.params:
        if isinstance(p.type, hir.TensorT) and p.type.dims:
            d = p.type.dims[-1]
            if isinstance(d, hir.Dyn):
                last.add(d.name)
    variant = dict(checked.variant)
    aligned = {}
    for dim, t in dict(getattr(checked.attrs, "aligned", None) or {}).items():
        aligned[dim] = variant.get(t, 1) if isinstance(t, str) else t
    inputs = Inputs()
    for name in checked.dyn_dims:
        if ragged:
            size = tile // 2 + 4 if name in last else 12
        else:
            size = 2 * tile + tile // 4 if name in last else 2 * min(tile, 32) + 4
        step = int(aligned.get(name) or 1)
        step = step * 4 // math.gcd(step, 4)  # a multiple of both 4 and the promise
        if name in aligned:  # whole tiles only: three (two when ragged) of its own tile
            size = (2 if ragged else 3) * int(aligned[name] or 1)
        inputs.dims[name] = -(-size // step) * step
    total = 0
    for p in checked.params:
        if isinstance(p.type, hir.TensorT):
            shape = _shape(p, inputs.dims)
            total += math.prod(shape) * BYTES.get(p.type.elem.name, 4)
            if total > MAX_INPUT_BYTES:  # before any allocation
                raise InputsTooLarge(p, shape, math.prod(shape) * BYTES.get(p.type.elem.name, 4))
    barriers = _grid_barriers(checked)
    for p in checked.params:
        elem = p.type.elem.name if isinstance(p.type, hir.TensorT) else p.type.name
        if isinstance(p.type, hir.TensorT):
            inputs.arrays[p.name] = _random(rng, elem, _shape(p, inputs.dims))
            if p.name in barriers:  # a grid barrier's words start at 0, as its docs ask
                inputs.arrays[p.name][...] = 0
        else:
            inputs.scalars[p.name] = _scalar(rng, elem)
    sregs = {i.attr("name") for i in lir.insts(lowered.body) if i.op == "sreg"}
    if "ctaid.z" in sregs:
        inputs.grid = (2, 2, 2)
    elif "ctaid.y" in sregs:
        inputs.grid = (2, 2)
    return inputs


def _grid_barriers(checked) -> set[str]:
    """The tensors `checked` passes to `grid_barrier`."""
    from phobos.lower.hirwalk import walk
    from phobos.sema import hir

    return {
        n.args[0].sym.name
        for n in walk(checked.body)
        if isinstance(n, hir.Builtin) and n.name == "grid_barrier" and n.args
        and isinstance(getattr(n.args[0], "sym", None), hir.Sym)
    }  # fmt: skip


def _shape(p, dims: dict[str, int]) -> tuple[int, ...]:
    from phobos.sema import hir

    return tuple(dims[d.name] if isinstance(d, hir.Dyn) else int(d) for d in p.type.dims)


def run(checked, lowered: lir.Kernel, inputs: Inputs, *, check_races: bool = True):
    """Run `lowered` on `inputs` in the threads interpreter: (report, memory, addresses).

    Raises `InterpError` when the run faults.
    """
    from phobos.interp.threads import GlobalMemory, run_lir

    memory = GlobalMemory()
    params: dict[str, object] = {}
    addresses = {}
    for name, array in inputs.arrays.items():
        addresses[name] = params[name] = memory.place(array.copy(), name)
    params.update(inputs.scalars)
    params.update(inputs.dims)
    dynamic = lowered.smem if lowered.dynamic_smem else 0
    report = run_lir(
        lowered, inputs.grid, params, memory, check_races=check_races, dynamic_smem=dynamic
    )
    return report, memory, addresses


def check_races(checked, lowered: lir.Kernel, seed: int = 0) -> list[Diagnostic]:
    """The races and faults of two runs of `lowered` on random inputs, as diagnostics
    (a race both runs find is reported once)."""
    from phobos.interp.errors import InterpError

    out: list[Diagnostic] = []
    seen = set()
    for ragged in (False, True):
        try:
            inputs = make_inputs(checked, lowered, seed, ragged=ragged)
        except InputsTooLarge as exc:
            span = getattr(checked, "span", None)
            message = (f"`{checked.name}` was not race-checked: its argument {exc}, past the "
                       f"check's {MAX_INPUT_BYTES >> 20} MiB of inputs")  # fmt: skip
            label = Label(span, f"`{exc.param.name}`'s fixed extents") if span is not None else None
            out.append(Diagnostic.warning(UNCHECKED, message, label,
                                          help="make the large extent a shape name bound at "
                                          "launch, and the check picks a small one"))  # fmt: skip
            return out
        note = f"found by running `{checked.name}` in the threads interpreter: {inputs.describe()}"
        try:
            report, _, _ = run(checked, lowered, inputs)
        except InterpError as exc:
            label = Label(exc.span, "the run faulted here") if exc.span is not None else None
            message = f"`{checked.name}` faulted in the race check's run: {exc.message}"
            out.append(Diagnostic.error(FAULT, message, label, notes=[note]))
            return out
        for race in report.races:
            diag = race.diagnostic()
            key = (race.kind, id(race.inst_a), id(race.inst_b))
            if key not in seen:
                seen.add(key)
                out.append(dataclasses.replace(diag, code=RACE, notes=(*diag.notes, note)))
    return out


def _random(rng, elem: str, shape) -> np.ndarray:
    if elem in ("f16", "f32", "f64"):
        return rng.standard_normal(shape).astype(MEMORY_DTYPE[elem])
    if elem == "bf16":
        bits = rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16)
    if elem == "bool":
        return rng.integers(0, 2, shape).astype(np.uint8)
    low = -8 if elem.startswith("i") else 0
    return rng.integers(low, 16, shape).astype(MEMORY_DTYPE[elem])


def _scalar(rng, elem: str):
    if elem in ("f32", "f64"):
        return float(rng.standard_normal())
    if elem == "f16":
        return np.float16(rng.standard_normal())
    if elem == "bf16":
        return int(np.float32(rng.standard_normal()).view(np.uint32) >> 16)
    if elem == "bool":
        return bool(rng.integers(0, 2))
    return int(rng.integers(0, 4))
