"""Types and shapes for the checker: scalar rules, broadcasting, built-in families.

>>> broadcast((32, 1), (32, 64))
(32, 64)
>>> broadcast((32, 64), (16, 64)) is None
True
>>> join_names("f16", "bf16"), join_names("u8", "i32")
('f32', None)
"""

from __future__ import annotations

from phobos.sema import hir
from phobos.semantics.types import join, operator_reason, scalar

FLOATS = ("f16", "bf16", "f32", "f64")
SIGNED = ("i8", "i32", "i64")
UNSIGNED = ("u8", "u16", "u32")
INTEGERS = SIGNED + UNSIGNED
# Element types a scalar read widens to an index (SPEC.md "Types"): i8 sign-extends, the
# unsigned ones zero-extend. A u32 of 2^31 or more keeps its bits as a 32-bit index, so it
# reads as non-negative only in a kernel of 64-bit indices.
WIDENED_ON_READ = ("i8",) + UNSIGNED

# Built-in families, by how the checker types them.
MATH1 = ("exp", "log", "sqrt", "tanh", "round", "floor", "ceil", "abs", "rsqrt", "sin", "cos")
REDUCTIONS = ("rowmax", "rowsum", "rowargmax")
SHAPE_OPS = ("cumsum", "tril", "transpose", "flat")
COLLECTIVES = ("sum", "max", "min", "any", "all", "argmax", "reduce")
ONCE_PER_CTA = (
    "barrier",
    "grid_barrier",
    "atomic_add",
    "atomic_cas",
    "load_acquire",
    "store_release",
)
QUANTIZED_PREFIXES = ("qdot_t", "qmma_t", "q50_")
QUANTIZED_SUFFIXES = ("_qgemm_t", "_qmma_staged_t", "_qmma_t")


def S(name: str) -> hir.Scalar:
    """The hir scalar type spelled `name`."""
    return hir.Scalar(name)


def is_shaped(t) -> bool:
    """Whether `t` is a tensor or a tile (something sliced and swept elementwise)."""
    return isinstance(t, (hir.TensorT, hir.TileT))


def elem(t) -> hir.Scalar:
    """The element type of a shaped type, or the scalar itself."""
    return t.elem if is_shaped(t) else t


def is_float(t) -> bool:
    return elem(t).name in FLOATS


def is_integer(t) -> bool:
    return elem(t).name in INTEGERS


def is_signed(t) -> bool:
    return elem(t).name in SIGNED


def widens_on_read(t) -> bool:
    """Whether a scalar read of an element of type `t` gives an index instead (SPEC.md "Types")."""
    return not is_shaped(t) and t.name in WIDENED_ON_READ


def is_quantized(name: str) -> bool:
    """Whether `name` is one of SPEC.md's quantized built-ins."""
    return name.startswith(QUANTIZED_PREFIXES) or name.endswith(QUANTIZED_SUFFIXES)


def join_names(a: str, b: str) -> str | None:
    """The join of two scalar type names (SPEC.md "Mixed types"), None when there is none."""
    j = join(scalar(a), scalar(b))
    return None if j is None else j.name


def operator_problem(op: str, t: str, *, unary: bool = False) -> str | None:
    """Why operator `op` does not take operands of scalar type `t`, or None."""
    return operator_reason(op, scalar(t), unary=unary)


def same_dim(a: hir.Dim, b: hir.Dim) -> bool:
    return a == b


def broadcast(a: tuple, b: tuple) -> tuple | None:
    """NumPy-style broadcast of two shapes of one rank over extent-1 axes, else None."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b, strict=True):
        if same_dim(x, y):
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            return None
    return tuple(out)


def fits(value: tuple, target: tuple) -> bool:
    """Whether a value of shape `value` broadcasts to exactly `target`."""
    return broadcast(value, target) == tuple(target)


def shape_text(dims) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def type_text(t) -> str:
    return str(t)


def power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
