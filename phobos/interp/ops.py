"""Operators and elementwise built-ins on interpreter values (numpy scalars and arrays).

The rules are `phobos.semantics`'s, and only theirs: a numpy scalar (a uniform value)
goes through `phobos.semantics` itself, an array through numpy code that computes the
same bits (tests/interp/test_interp_vs_semantics.py compares the two element by
element). Integers wrap at their type's width, `/` truncates toward zero, `%` takes the
dividend's sign, a shift count past the width shifts every bit out, `>>` is arithmetic;
a float operation is computed in f64 and rounded once to its type (an f32 one in f32,
which is the same); the math built-ins compute in f64 and round to f32, then to their
type (an f64 one stays in f64).

    >>> import numpy as np
    >>> int(binary("/", np.int32(-7), np.int32(2), "i32")), int(binary("%", np.int32(-7), np.int32(2), "i32"))
    (-3, -1)
    >>> binary(">>", np.array([-8, 8], np.int32), np.array([-1, 40], np.int32), "i32").tolist()
    [-1, 0]
"""

from __future__ import annotations

import numpy as np

from phobos import semantics
from phobos.interp.errors import InterpError
from phobos.interp.values import DTYPES, FLOATS, INTS, convert

COMPARE = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
LOGIC = {"&&": np.logical_and, "||": np.logical_or}
BITWISE = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}
DIVISION_BY_ZERO = "integer division by zero"


# -- uniform values: phobos.semantics itself ----------------------------------------------


def _is_scalar(*xs) -> bool:
    return all(np.ndim(x) == 0 for x in xs)


def _py(x, t: semantics.Scalar):
    """A numpy scalar as the Python value `phobos.semantics` takes for type `t`."""
    v = np.asarray(x).item()
    if t.is_signed:
        return semantics.wrap(int(v), t.bits)
    if t.is_unsigned:
        return semantics.wrap_unsigned(int(v), t.bits)
    if t.is_float:
        return float(v)
    return bool(v)


def _np(v, name: str):
    """A value `phobos.semantics` computed, as the numpy scalar of type `name`."""
    return np.array(v, DTYPES[name])[()]


def _scalar_binary(op: str, a, b, name: str):
    t = semantics.scalar(name)
    try:
        v = semantics.fold_binary("/" if op == "//" else op, _py(a, t), _py(b, t), t)
    except semantics.DivisionByZero:
        raise InterpError(DIVISION_BY_ZERO) from None
    except semantics.BadOperand:
        return None  # not a program's operation (a `u32` counter, say): numpy's
    return _np(v, "bool" if isinstance(v, bool) else name)


# -- arrays: numpy, the same bits -----------------------------------------------------------


def int_divisor(b, active, padding=None):
    """`b` with zeros replaced by 1, and where they were; raises when a zero divides.

    `active` is the thread mask a scalar operation runs under: a zero divisor in an
    active thread raises (an inactive thread's quotient is never kept). A tile operation
    (`active` None) raises for a zero divisor anywhere but in the tile's padding, the
    elements `padding` marks: those were read past a tensor's end as the fill 0, the
    card divides by them without a fault, and their quotient (0 here) is masked out
    where it is stored.
    """
    zero = np.equal(b, 0)
    if not np.any(zero):
        return b, None
    if active is not None:
        if np.any(zero & active):
            raise InterpError(DIVISION_BY_ZERO)
    elif padding is None or np.any(zero & ~np.asarray(padding, bool)):
        raise InterpError(DIVISION_BY_ZERO)
    return np.where(zero, np.ones_like(b), b), zero


def _shift(op: str, a, b, name: str):
    bits = INTS[name]
    s = np.asarray(b).astype(np.int64)
    big = (s < 0) | (s >= bits)  # read unsigned, a negative count is past the width too
    sc = np.where(big, 0, s).astype(DTYPES[name])
    if op == "<<":
        return np.where(big, 0, np.left_shift(a, sc))
    fill = np.where(np.less(a, 0), -1, 0)  # every bit shifted out: the sign's
    return np.where(big, fill, np.right_shift(a, sc))


def _float_binary(op: str, a, b, name: str):
    if name in ("f16", "bf16"):  # in f64, rounded once to the type below
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if op == "+":
        return np.add(a, b)
    if op == "-":
        return np.subtract(a, b)
    if op == "*":
        return np.multiply(a, b)
    if op in ("/", "//"):
        return np.divide(a, b)
    if op == "%":
        return np.fmod(a, b)  # exact: C's fmod, the dividend's sign
    raise InterpError(f"operator `{op}` is not supported by the interpreter yet")


def binary(op: str, a, b, name: str, active=None, padding=None):
    """`a op b` for operands of scalar type `name`; comparisons give bool.

    `active` and `padding` say where an integer division by zero is a fault: see
    `int_divisor`.
    """
    if _is_scalar(a, b) and op not in LOGIC:
        out = _scalar_binary(op, a, b, name)
        if out is not None:
            return out
    if op in COMPARE:
        return COMPARE[op](a, b)
    if op in LOGIC:
        return LOGIC[op](a, b)
    if name in FLOATS and op in ("+", "-", "*", "/", "//", "%"):
        return convert(_float_binary(op, a, b, name), name)
    if op == "+":
        out = np.add(a, b)
    elif op == "-":
        out = np.subtract(a, b)
    elif op == "*":
        out = np.multiply(a, b)
    elif op in ("/", "//", "%"):
        d, zero = int_divisor(b, active, padding)
        r = np.fmod(a, d)  # C remainder: the dividend's sign
        if op == "%":
            out = r
        else:
            out = np.floor_divide(np.subtract(a, r), d)  # exact, so truncating
        if zero is not None:
            out = np.where(zero, np.zeros_like(out), out)
    elif op in BITWISE:
        out = BITWISE[op](a, b)
    elif op in ("<<", ">>"):
        out = _shift(op, a, b, name)
    else:
        raise InterpError(f"operator `{op}` is not supported by the interpreter yet")
    return convert(out, name)


def unary(op: str, a, name: str):
    if _is_scalar(a):
        t = semantics.scalar(name)
        try:
            return _np(semantics.fold_unary(op, _py(a, t), t), name)
        except semantics.BadOperand:
            pass
    if op == "-":
        return convert(np.negative(a), name)
    if op == "!":
        return np.logical_not(a)
    if op == "~":
        return convert(np.invert(a), name)
    raise InterpError(f"operator `{op}` is not supported by the interpreter yet")


def minmax(which: str, a, b, name: str):
    """min/max: a float NaN gives the other operand, and `-0.0` is below `0.0`."""
    if _is_scalar(a, b):
        t = semantics.scalar(name)
        try:
            return _np(semantics.fold_call(which, [_py(a, t), _py(b, t)], t), name)
        except semantics.BadOperand:
            pass
    if name in FLOATS:
        f = np.fmin if which == "min" else np.fmax
        out = f(a, b)
        # fmin and fmax may give either zero of a tie: the negative one is the least
        neg = np.signbit(a)
        tie = np.where(neg, a, b) if which == "min" else np.where(neg, b, a)
        out = np.where(np.equal(a, b), tie, out)
    else:
        out = (np.minimum if which == "min" else np.maximum)(a, b)
    return convert(out, name)


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _rsqrt(x):
    return np.divide(1.0, np.sqrt(x))


MATH = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "round": np.rint,  # ties to even, the sign of zero kept
    "floor": np.floor,
    "ceil": np.ceil,
    "rsqrt": _rsqrt,
    "sin": np.sin,
    "cos": np.cos,
    "abs": np.abs,
}


def _math_result(r, name: str):
    """A math built-in's f64 result: kept for f64, else rounded to f32, then to `name`."""
    if name == "f64":
        return r
    return convert(r.astype(np.float32), name)


def math1(fname: str, x, name: str):
    """An elementwise math built-in, as `phobos.semantics.call` computes it: in f64,
    rounded to f32 and then to the operand's type (f64 stays f64)."""
    if _is_scalar(x):
        t = semantics.scalar(name)
        try:
            return _np(semantics.call(fname, [_py(x, t)], t), name)
        except semantics.BadOperand:
            pass
    if fname == "abs" and name not in FLOATS:
        return convert(np.maximum(x, np.negative(x)), name)  # the least value stays negative
    return _math_result(MATH[fname](_f64(x)), name)


def power(a, b, name: str):
    """`pow(a, b)` as exp(b * log(a)), computed as `math1` computes."""
    if _is_scalar(a, b):
        t = semantics.scalar(name)
        try:
            return _np(semantics.call("pow", [_py(a, t), _py(b, t)], t), name)
        except semantics.BadOperand:
            pass
    return _math_result(np.exp(_f64(b) * np.log(_f64(a))), name)


# ---------------------------------------------------------------------------
# Reductions and shape


def _acc_dtype(arr):
    return np.float32 if arr.dtype == np.float16 else arr.dtype


def rowsum(t, name: str):
    return convert(np.sum(t, axis=1, keepdims=True, dtype=_acc_dtype(t)), name)


def rowmax(t, name: str):
    f = np.fmax if name in FLOATS else np.maximum
    return convert(f.reduce(t, axis=1, keepdims=True), name)


def rowargmax(t):
    t = np.asarray(t)
    if t.dtype.kind == "f":
        t = np.where(np.isnan(t), -np.inf, t.astype(np.float64))
    return np.argmax(t, axis=1).astype(np.int32).reshape(-1, 1)


def cumsum(t, name: str):
    return convert(np.cumsum(t, axis=0, dtype=_acc_dtype(t)), name)


def dot(a, b, transposed: bool, name: str, tensorcore: bool):
    """`a @ b` (or `a @ b.T`): f32, f16 operands under tensor cores, i8 into i32."""
    a, b = np.asarray(a), np.asarray(b)
    if transposed:
        b = b.T
    if a.dtype.kind in "iu":
        return convert(a.astype(np.int64) @ b.astype(np.int64), name)
    if tensorcore:
        a = a.astype(np.float16).astype(np.float32)
        b = b.astype(np.float16).astype(np.float32)
    wide = np.float64 if np.float64 in (a.dtype, b.dtype) else np.float32
    return convert(a.astype(wide) @ b.astype(wide), name)


# ---------------------------------------------------------------------------
# Bit-level helpers


def popcount(x):
    v = np.asarray(x).astype(np.int64) & 0xFFFFFFFF
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return ((v * 0x01010101) & 0xFFFFFFFF) >> 24


def f16bits(x):
    v = (np.asarray(x).astype(np.int64) & 0xFFFF).astype(np.uint16)
    return v.view(np.float16)


def dp4a(x, y, acc):
    x = np.asarray(x).astype(np.int64)
    y = np.asarray(y).astype(np.int64)
    total = np.asarray(acc).astype(np.int64)
    for k in range(4):
        bx = ((x >> (8 * k)) & 0xFF).astype(np.uint8).astype(np.int8).astype(np.int64)
        by = ((y >> (8 * k)) & 0xFF).astype(np.uint8).astype(np.int8).astype(np.int64)
        total = total + bx * by
    return total


def byteperm(x, y, sel):
    x = np.asarray(x).astype(np.int64) & 0xFFFFFFFF
    y = np.asarray(y).astype(np.int64) & 0xFFFFFFFF
    sel = np.asarray(sel).astype(np.int64)
    both = x | (y << 32)
    out = np.zeros(np.broadcast(x, y, sel).shape, np.int64)
    for i in range(4):
        n = (sel >> (4 * i)) & 7
        out = out | (((both >> (8 * n)) & 0xFF) << (8 * i))
    return out
