"""Names a kernel writer brings from Triton or from Python, and what Phobos writes instead.

A name that is not found (E0250), a `ph.name` that `phobos.lang` lacks (E0112) and a
dot read of another module, `tl.program_id(0)` (E0113), look here for their `help`.
One row a name; the text is written once for both spellings, with `{ph}` where the
Python spelling puts `ph.` and `{at}` where an attribute is written (`@ph.` or `@`):

    >>> habit("program_id", python=True)
    'Phobos reads the block index as `ph.ctx.block.x` (`.y`, `.z` for axes 1 and 2)'
    >>> habit("program_id", python=False)
    'Phobos reads the block index as `ctx.block.x` (`.y`, `.z` for axes 1 and 2)'
    >>> habit("alpah", python=True) is None
    True
"""

from __future__ import annotations

# Triton's `tl.` names (and the launch options of a Triton kernel), by their name alone.
TRITON: dict[str, str] = {
    "program_id": "Phobos reads the block index as `{ph}ctx.block.x` (`.y`, `.z` for axes 1 and 2)",
    "num_programs": "Phobos reads the grid's block count as `{ph}ctx.blocks.x`",
    "arange": "Phobos has no `arange`: a run of elements is a slice, `x[base:+BLOCK]`, and "
    "`{ph}iota(0)` is each element's index along axis 0 of the tile being assigned",
    "load": "Phobos has no `load`: read a tensor parameter by slicing it, `x[base:+BLOCK]` "
    "(elements past the end read 0)",
    "store": "write a tensor parameter by assigning to a slice, `out[base:+BLOCK] = t` "
    "(elements past the end are skipped)",
    "num_warps": "Phobos sets the CTA's size in threads: `{at}launch(128)` is 4 warps",
    "constexpr": "a value fixed when the kernel compiles is an `{at}autotune` constant, "
    "`{at}autotune(BLOCK=[64])`, or a literal",
    "zeros": "declare a tile with a value: `{zeros}`",
    "cdiv": "write `(a + b - 1) // b`",
    "device_print": "Phobos has no print on the device: store the value into an output "
    "tensor and print that after the launch",
    "static_print": "Phobos has no print: `phobos-compile --emit hir` shows every value's "
    "type and shape",
    "jit": "a kernel is a `@ph.kernel` def",
}

# Python's own built-ins, met as a bare name in a kernel.
PYTHON: dict[str, str] = {
    "print": "Phobos has no print on the device: store the value into an output tensor "
    "and print that after the launch",
    "float": "convert with `{ph}f32(x)`",
    "int": "convert with `{ph}i32(x)`",
    "len": "a tensor's extent is its dimension's name, `N` in `{tensor_n}`",
}

# The modules a Triton kernel reads its names through: `tl.arange`, `triton.language.load`.
TRITON_MODULES = ("tl", "triton", "language")


def habit(name: str, python: bool, *, triton_only: bool = False) -> str | None:
    """The `help` for `name` written out of Triton or Python habit, in the file's
    spelling (`python`: a `.py` source), or None when `name` is no such habit."""
    text = TRITON.get(name)
    if text is None and not triton_only:
        text = PYTHON.get(name)
    if text is None:
        return None
    if python:
        fields = {
            "ph": "ph.",
            "at": "@ph.",
            "zeros": "t: ph.var[ph.tile[ph.f32][R, C]] = 0.0",
            "tensor_n": "x: ph.tensor[ph.f32][N]",
        }
    else:
        fields = {
            "ph": "",
            "at": "@",
            "zeros": "var t: tile<f32>[R, C] = 0.0",
            "tensor_n": "x: tensor<f32>[N]",
        }
    text = text.format(**fields)
    if not python:
        text = text.replace(":+", " :+ ")
    return text
