"""The scalar rules of Phobos, in one place: types, their join, integer and float
arithmetic, conversions and literals. The constant folder and the interpreters call these
and nothing else, so a value computes the same at compile time, on the host and (the
tests check) on the card.

Pure functions over Python ints, floats and bools. A float of any width is held as the
Python float of its value (every f16, bf16 and f32 is an f64 exactly); an integer as a
Python int in its type's range; an unsigned type's value is non-negative, as a read
zero-extends it.

    types.py        Scalar, the 11 types, index_type, join, operator_reason
    integers.py     wrap, / and % truncating, shifts clamped as PTX's, bitwise
    floats.py       rounding to f32, f16, bf16; IEEE + - * / and fmod; min/max with NaN; bits
    convert.py      T(x) conversions; float and integer literals
    fold.py         fold_binary, fold_unary, fold_convert: the AST's operators, exact or wrapping
    elementwise.py  exp, log, pow, sqrt, rsqrt, tanh, sin, cos, round, floor, ceil, abs

    >>> from phobos.semantics import F64, I32, fold_binary, fold_convert, literal_float
    >>> fold_binary("/", -7, 2, I32), fold_binary("%", -7, 3, I32)
    (-3, -1)
    >>> fold_convert(literal_float("0.1"), F32, F64)
    0.10000000149011612
"""

from phobos.semantics.convert import (
    conversion_reason,
    convert,
    float_literal_reason,
    float_to_int,
    int_literal_reason,
    literal_float,
    literal_int,
)
from phobos.semantics.elementwise import call, fold_call
from phobos.semantics.errors import BadOperand, DivisionByZero, ScalarError, ShiftOutOfRange
from phobos.semantics.floats import (
    f16bits,
    float_max,
    float_min,
    fmod,
    from_bits,
    max_finite,
    round_bf16,
    round_exact,
    round_f16,
    round_f32,
    round_to,
    to_bits,
)
from phobos.semantics.fold import fold_binary, fold_convert, fold_unary, index_fits, to_index
from phobos.semantics.integers import popcount, wrap, wrap_unsigned
from phobos.semantics.types import (
    ARITHMETIC_OPS,
    BF16,
    BITWISE_OPS,
    BOOL,
    COMPARISON_OPS,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    LOGICAL_OPS,
    SCALARS,
    U8,
    U16,
    U32,
    Scalar,
    index_type,
    join,
    operator_reason,
    scalar,
    takes_arithmetic,
)

__all__ = [
    "ARITHMETIC_OPS",
    "BF16",
    "BITWISE_OPS",
    "BOOL",
    "COMPARISON_OPS",
    "F16",
    "F32",
    "F64",
    "I8",
    "I32",
    "I64",
    "LOGICAL_OPS",
    "SCALARS",
    "U8",
    "U16",
    "U32",
    "BadOperand",
    "DivisionByZero",
    "Scalar",
    "ScalarError",
    "ShiftOutOfRange",
    "call",
    "conversion_reason",
    "convert",
    "f16bits",
    "float_literal_reason",
    "float_max",
    "float_min",
    "float_to_int",
    "fmod",
    "fold_binary",
    "fold_call",
    "fold_convert",
    "fold_unary",
    "from_bits",
    "index_fits",
    "index_type",
    "int_literal_reason",
    "join",
    "literal_float",
    "literal_int",
    "max_finite",
    "operator_reason",
    "popcount",
    "round_bf16",
    "round_exact",
    "round_f16",
    "round_f32",
    "round_to",
    "scalar",
    "takes_arithmetic",
    "to_bits",
    "to_index",
    "wrap",
    "wrap_unsigned",
]
