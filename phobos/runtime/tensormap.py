"""TMA tensor maps (sm_90): the `cuTensorMapEncodeTiled` call of one map for one launch.

A kernel that reads a 2-D tensor through the Tensor Memory Accelerator takes a
128-byte `CUtensorMap` in a `.param .align 64 .b8 name[128]` slot after the extents
(the slot convention of `phobos.runtime.contract`). The launcher encodes it from the
tensor's base pointer and extents: `arguments` gives the call's arguments and checks
them against the rules the driver documents for `cuTensorMapEncodeTiled` (CUDA driver
API, "Tensor Map Object Management"); `encode` makes the call.

The tensor is row-major and contiguous, [rows, cols], so a row's pitch is
`cols * elem_bytes`; the driver counts dimensions innermost first:

    >>> from phobos.runtime.contract import TensorMapSpec
    >>> m = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64), "128B")
    >>> a = arguments(m, 0x7F00_0000, 256, 1024, kernel="gemm")
    >>> a.dims, a.strides, a.box, a.element_strides
    ((1024, 256), (2048,), (64, 128), (1, 1))

A tensor that breaks a rule is refused before the driver is asked, naming its parameter:

    >>> try:
    ...     arguments(m, 0x7F00_0000, 256, 1001, kernel="gemm")
    ... except ArgumentValueError as err:
    ...     print(err)
    `gemm`: argument `A`: TMA reads rows at a pitch that is a multiple of 16 bytes; K = 1001 f16 elements is 2002 bytes
      = help: pad each row to a multiple of 8 f16 elements, or set PHOBOS_TMA=0 for the path without TMA

A map that breaks a rule by itself (its box, its swizzle) is the compiler's fault, a
plain `ValueError` (`check_map`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from phobos.runtime.errors import ArgumentValueError

# Phobos element type -> (CUtensorMapDataType, bytes). A copy moves bits, and the driver
# has no signed 8- or 16-bit type: i8 and i16 travel as UINT8 and UINT16. Not used:
# FLOAT32_FTZ = 10, TFLOAT32 = 11, TFLOAT32_FTZ = 12.
DATA_TYPES: dict[str, tuple[int, int]] = {
    "u8": (0, 1),  # CU_TENSOR_MAP_DATA_TYPE_UINT8
    "i8": (0, 1),
    "u16": (1, 2),  # UINT16
    "i16": (1, 2),
    "u32": (2, 4),  # UINT32
    "i32": (3, 4),  # INT32
    "u64": (4, 8),  # UINT64
    "i64": (5, 8),  # INT64
    "f16": (6, 2),  # FLOAT16
    "f32": (7, 4),  # FLOAT32
    "f64": (8, 8),  # FLOAT64
    "bf16": (9, 2),  # BFLOAT16
}
_CODE_BYTES = {code: size for code, size in DATA_TYPES.values()}

# CUtensorMapSwizzle, and the span in bytes its 16-byte chunks are swizzled within
SWIZZLES: dict[str, tuple[int, int]] = {
    "none": (0, 0),  # CU_TENSOR_MAP_SWIZZLE_NONE
    "32B": (1, 32),
    "64B": (2, 64),
    "128B": (3, 128),
}
_SPANS = dict(SWIZZLES.values())

# CUtensorMapFloatOOBfill: FILL_NONE reads an element past the tensor as zero
FILLS: dict[str, int] = {"zero": 0}

INTERLEAVE_NONE = 0  # CU_TENSOR_MAP_INTERLEAVE_NONE
L2_PROMOTION_128B = 2  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B
RANK = 2
HELP_NO_TMA = "set PHOBOS_TMA=0 for the path without TMA"


@dataclass(frozen=True)
class Encoding:
    """The arguments of one `cuTensorMapEncodeTiled` call, in its order, after the
    map itself: dimensions innermost first, `strides` in bytes (rank - 1 of them)."""

    data_type: int
    rank: int
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int

    @property
    def elem_bytes(self) -> int:
        return _CODE_BYTES[self.data_type]


# ---------------------------------------------------------------------------
# The rules the driver documents, for interleave NONE and the unpacked data types:
# (the argument, its test, the rule as the driver words it). The map's rules read only
# what a map fixes (type, box, element strides, swizzle); the launch's, only what the
# tensor gives (base, extents, pitch).

Rule = tuple[str, Callable[[Encoding], bool], str]
_INNER_BYTES = "is a multiple of 16 bytes on its inner side"
_INNER_SPAN = "fits the swizzle span on its inner side"

MAP_RULES: tuple[Rule, ...] = (
    ("tensorDataType", lambda e: e.data_type in _CODE_BYTES, "is a CUtensorMapDataType"),
    ("tensorRank", lambda e: e.rank == len(e.box) == len(e.element_strides), "is the rank"),
    ("boxDim", lambda e: all(0 < b <= 256 for b in e.box), "is 1 to 256 elements on each side"),
    ("boxDim", lambda e: e.box[0] * e.elem_bytes % 16 == 0, _INNER_BYTES),
    ("elementStrides", lambda e: all(1 <= s <= 8 for s in e.element_strides), "is 1 to 8"),
    ("interleave", lambda e: e.interleave == INTERLEAVE_NONE, "is INTERLEAVE_NONE"),
    ("swizzle", lambda e: e.swizzle in _SPANS, "is a CUtensorMapSwizzle"),
    (
        "boxDim",
        lambda e: not _SPANS[e.swizzle] or e.box[0] * e.elem_bytes <= _SPANS[e.swizzle],
        _INNER_SPAN,
    ),
    ("l2Promotion", lambda e: 0 <= e.l2_promotion <= 3, "is a CUtensorMapL2promotion"),
    ("oobFill", lambda e: e.oob_fill in (0, 1), "is a CUtensorMapFloatOOBfill"),
)

LAUNCH_RULES: tuple[Rule, ...] = (
    ("globalDim", lambda e: all(0 < d <= 1 << 32 for d in e.dims), "is 1 to 2**32"),
    ("globalStrides", lambda e: all(s % 16 == 0 for s in e.strides), "is a multiple of 16 bytes"),
    ("globalStrides", lambda e: all(s < 1 << 40 for s in e.strides), "is under 2**40 bytes"),
    ("globalStrides", lambda e: e.strides[0] >= e.dims[0] * e.elem_bytes, "holds a whole row"),
    ("globalAddress", lambda e: e.address % 16 == 0, "is a multiple of 16 bytes"),
)


def broken_rule(enc: Encoding, rules: tuple[Rule, ...] = MAP_RULES + LAUNCH_RULES):
    """The first of `rules` that `enc` breaks, as (the argument, the rule), or None.

    >>> from phobos.runtime.contract import TensorMapSpec
    >>> m = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64), "128B")
    >>> enc = arguments(m, 0x1000, 64, 64, kernel="k")
    >>> broken_rule(enc) is None
    True
    >>> import dataclasses
    >>> broken_rule(dataclasses.replace(enc, element_strides=(1, 9)))
    ('elementStrides', 'is 1 to 8')
    """
    for argument, holds, rule in rules:
        if not holds(enc):
            return argument, rule
    return None


def _encoding(m: Any, address: int, rows: int, cols: int) -> Encoding:
    code, size = DATA_TYPES[m.elem]
    return Encoding(
        data_type=code,
        rank=RANK,
        address=address,
        dims=(cols, rows),
        strides=(cols * size,),
        box=(m.box[1], m.box[0]),
        element_strides=(1, 1),
        interleave=INTERLEAVE_NONE,
        swizzle=SWIZZLES[m.swizzle][0],
        l2_promotion=L2_PROMOTION_128B,
        oob_fill=FILLS[getattr(m, "fill", "zero")],
    )


def map_problem(m: Any) -> tuple[str, str] | None:
    """What is wrong with the map `m` by itself, as (its field, why), or None.

    `m` has the fields of a `contract.TensorMapSpec` (an `lir.TensorMap` too: its fill
    is "zero"). The reader of a contract names the field; `check_map` raises.

        >>> from phobos.runtime.contract import TensorMapSpec
        >>> map_problem(TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64), "128B"))
        >>> map_problem(TensorMapSpec("B_tmap", "B", "f32", ("K", "N"), (64, 64), "128B"))
        ('box', 'is [64, 64]: its rows of 64 f32 elements are 256 bytes, more than the 128B swizzle spans')
    """
    if m.elem not in DATA_TYPES:
        return "elem", f"is `{m.elem}`, which TMA does not copy"
    if m.swizzle not in SWIZZLES:
        return "swizzle", f"is `{m.swizzle}`, not one of {', '.join(SWIZZLES)}"
    fill = getattr(m, "fill", "zero")
    if fill not in FILLS:
        return "fill", f"is `{fill}`, not one of {', '.join(FILLS)}"
    if len(m.dims) != RANK:
        return "dims", f"has {len(m.dims)} extents, not {RANK}"
    box = tuple(m.box)
    if len(box) != RANK or not all(type(b) is int for b in box):
        return "box", f"is {list(box)}, not [rows, cols] in elements"
    broken = broken_rule(_encoding(m, 0, 0, 0), MAP_RULES)
    if broken is None:
        return None
    if broken[1] not in (_INNER_BYTES, _INNER_SPAN):
        return "box", f"is {list(box)}: a TMA box {broken[1]}"
    inner = box[1] * DATA_TYPES[m.elem][1]
    why = "not a multiple of 16"
    if broken[1] == _INNER_SPAN:
        why = f"more than the {m.swizzle} swizzle spans"
    return "box", f"is {list(box)}: its rows of {box[1]} {m.elem} elements are {inner} bytes, {why}"


def check_map(m: Any) -> None:
    """Raise `ValueError` for a map that breaks a rule by itself; the compiler makes none.

    >>> from phobos.runtime.contract import TensorMapSpec
    >>> check_map(TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 300), "none"))
    Traceback (most recent call last):
    ...
    ValueError: tensor map `A_tmap`: `box` is [128, 300]: a TMA box is 1 to 256 elements on each side
    """
    problem = map_problem(m)
    if problem is not None:
        raise ValueError(f"tensor map `{m.name}`: `{problem[0]}` {problem[1]}")


def arguments(m: Any, address: int, rows: int, cols: int, *, kernel: str) -> Encoding:
    """The `cuTensorMapEncodeTiled` arguments of map `m` over a tensor at `address` of
    `rows` x `cols` elements; an `ArgumentValueError` naming `m.tensor` for a tensor
    that breaks a rule, a `ValueError` for a map that does (`check_map`)."""
    check_map(m)
    enc = _encoding(m, address, rows, cols)
    broken = broken_rule(enc, LAUNCH_RULES)
    if broken is not None:
        raise _refusal(kernel, m, enc, rows, cols, *broken)
    return enc


def encode(m: Any, address: int, rows: int, cols: int, *, kernel: str) -> bytes:
    """The 128 bytes of map `m` for one launch, from the driver (`arguments` checked first)."""
    from phobos.runtime import cuda

    e = arguments(m, address, rows, cols, kernel=kernel)
    return cuda.tensor_map_encode_tiled(
        e.data_type, e.rank, e.address, e.dims, e.strides, e.box, e.element_strides,
        e.interleave, e.swizzle, e.l2_promotion, e.oob_fill,
    )  # fmt: skip


def _refusal(kernel, m, enc: Encoding, rows, cols, argument: str, rule: str):
    tensor = m.tensor
    if argument == "globalDim":
        name, n = m.dims[0], rows
        for d, extent in zip(m.dims, (rows, cols), strict=True):
            if not 0 < extent <= 1 << 32:
                name, n = d, extent
                break
        what = f"{name} = {n}" if isinstance(name, str) else f"an extent of {n}"
        return ArgumentValueError(
            kernel,
            tensor,
            f"argument `{tensor}` has {what}, but TMA reads a tensor whose every extent {rule}",
            help=f"skip the launch of an empty tensor, or {HELP_NO_TMA}",
        )
    if argument == "globalStrides":
        cols_name = m.dims[1]
        row = f"{cols_name} = {cols}" if isinstance(cols_name, str) else f"a row of {cols}"
        fix = HELP_NO_TMA
        if "multiple" in rule:
            per = 16 // enc.elem_bytes  # elements in 16 bytes
            fix = f"pad each row to a multiple of {per} {m.elem} elements, or {fix}"
        return ArgumentValueError(
            kernel,
            tensor,
            f"argument `{tensor}`: TMA reads rows at a pitch that {rule}; {row} {m.elem} "
            f"elements is {enc.strides[0]} bytes",
            help=fix,
        )
    return ArgumentValueError(
        kernel,
        tensor,
        f"argument `{tensor}` starts at address {enc.address:#x}, but TMA reads a tensor whose "
        f"base {rule}",
        help=f"pass an array that starts on a 16-byte boundary (a fresh allocation does), or "
        f"{HELP_NO_TMA}",
    )
