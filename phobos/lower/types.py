"""How each Phobos scalar type is held in lir: in a register, in memory, in a slot.

Rules as tables. A register holds a value of the scalar type widened the way a load
widens it: `i8` sign-extended in an `s32`, `u8`/`u16` zero-extended in a `u32`, `bool`
a predicate. Memory holds the type's own bytes; a 16-bit float moves as `b16`.

| Phobos | register | memory (ld/st) | `.entry` slot (index width 32 / 64 for dims) |
|--------|----------|----------------|----------------------------------------------|
| f32    | f32      | f32            | f32                                          |
| f64    | f64      | f64            | f64                                          |
| f16    | f16      | b16            | b16                                          |
| bf16   | bf16     | b16            | b16                                          |
| i8     | s32      | s8             | s32                                          |
| i32    | s32      | s32            | s32                                          |
| i64    | s64      | s64            | s64                                          |
| u8     | u32      | u8             | u32                                          |
| u16    | u32      | u16            | u32                                          |
| u32    | u32      | u32            | u32                                          |
| bool   | pred     | (none)         | u32 (nonzero = true)                         |

    >>> REG["i8"], MEM["f16"], SLOT["bool"], BYTES["bf16"]
    ('s32', 'b16', 'u32', 2)
"""

from __future__ import annotations

REG = {
    "f32": "f32", "f64": "f64", "f16": "f16", "bf16": "bf16", "i8": "s32", "i32": "s32",
    "i64": "s64", "u8": "u32", "u16": "u32", "u32": "u32", "bool": "pred",
}  # fmt: skip
MEM = {
    "f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "i8": "s8", "i32": "s32",
    "i64": "s64", "u8": "u8", "u16": "u16", "u32": "u32",
}  # fmt: skip
SLOT = {
    "f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "i8": "s32", "i32": "s32",
    "i64": "s64", "u8": "u32", "u16": "u32", "u32": "u32", "bool": "u32",
}  # fmt: skip
BYTES = {
    "f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "i64": 8, "u8": 1, "u16": 2,
    "u32": 4,
}  # fmt: skip
FLOATS = ("f16", "bf16", "f32", "f64")
NARROW_FLOATS = ("f16", "bf16")  # computed in f32, rounded back after each operation
# The bits a narrow integer keeps in its 32-bit register (sign- or zero-extended).
NARROW_INTS = {"i8": 8, "u8": 8, "u16": 16}


def index_reg(width: int) -> str:
    """The register type of an index at `width`-bit indices.

    >>> index_reg(32), index_reg(64)
    ('s32', 's64')
    """
    return "s32" if width == 32 else "s64"


def elem_of(t) -> str:
    """The scalar type name of a hir type (a Scalar's own, a tensor's or tile's element)."""
    return t.name if hasattr(t, "name") else t.elem.name


def mov_type(rt: str) -> str:
    """The type a `mov` of a register of type `rt` is written with: a 16-bit float
    moves as its bits.

    >>> mov_type("f16"), mov_type("f32")
    ('b16', 'f32')
    """
    return {"f16": "b16", "bf16": "b16"}.get(rt, rt)
