"""Operators and elementwise built-ins on interpreter values (numpy scalars and arrays).

Integers wrap at their type's width, `/` truncates toward zero, `%` takes the
dividend's sign, `>>` is arithmetic; floats compute in their own type (f16 via
numpy's float16, bf16 as float32 rounded after each operation).

    >>> import numpy as np
    >>> int(binary("/", np.int32(-7), np.int32(2), "i32")), int(binary("%", np.int32(-7), np.int32(2), "i32"))
    (-3, -1)
"""

from __future__ import annotations

import numpy as np

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


def int_divisor(b, active):
    """`b` with zeros replaced by 1; raises when a zero divides in an active thread.

    `active` is None for a tile operation (its masked padding divides by zero freely and
    gives 0 there), else the thread mask the scalar operation runs under.
    """
    zero = np.equal(b, 0)
    if not np.any(zero):
        return b, None
    if active is not None and np.any(zero & active):
        raise InterpError("integer division by zero")
    return np.where(zero, np.ones_like(b), b), zero


def binary(op: str, a, b, name: str, active=None):
    """`a op b` for operands of scalar type `name`; comparisons give bool."""
    if op in COMPARE:
        return COMPARE[op](a, b)
    if op in LOGIC:
        return LOGIC[op](a, b)
    is_float = name in FLOATS
    if op == "+":
        out = np.add(a, b)
    elif op == "-":
        out = np.subtract(a, b)
    elif op == "*":
        out = np.multiply(a, b)
    elif op in ("/", "//") and is_float:
        out = np.divide(a, b)
    elif op == "%" and is_float:
        out = np.fmod(a, b)
    elif op in ("/", "//", "%"):
        d, zero = int_divisor(b, active)
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
        bits = INTS[name]
        s = np.asarray(b).astype(np.int64)
        big = (s >= bits) | (s < 0)
        sc = np.clip(s, 0, bits - 1).astype(DTYPES[name])
        if op == "<<":
            out = np.where(big, np.zeros_like(np.left_shift(a, sc)), np.left_shift(a, sc))
        else:
            out = np.right_shift(a, sc)  # a shift past the width fills with the sign
        if np.ndim(out) == 0:
            out = out[()]
    else:
        raise InterpError(f"operator `{op}` is not supported by the interpreter yet")
    return convert(out, name)


def unary(op: str, a, name: str):
    if op == "-":
        return convert(np.negative(a), name)
    if op == "!":
        return np.logical_not(a)
    if op == "~":
        return convert(np.invert(a), name)
    raise InterpError(f"operator `{op}` is not supported by the interpreter yet")


def minmax(which: str, a, b, name: str):
    """min/max; a float NaN gives the other operand."""
    if name in FLOATS:
        f = np.fmin if which == "min" else np.fmax
    else:
        f = np.minimum if which == "min" else np.maximum
    return convert(f(a, b), name)


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32)


MATH = {
    "exp": lambda x: np.exp(_f(x)),
    "log": lambda x: np.log(_f(x)),
    "sqrt": lambda x: np.sqrt(_f(x)),
    "tanh": lambda x: np.tanh(_f(x)),
    "round": lambda x: np.rint(_f(x)),
    "floor": lambda x: np.floor(_f(x)),
    "ceil": lambda x: np.ceil(_f(x)),
    "rsqrt": lambda x: 1 / np.sqrt(_f(x)),
    "sin": lambda x: np.sin(_f(x)),
    "cos": lambda x: np.cos(_f(x)),
}


def math1(fname: str, x, name: str):
    """An elementwise math built-in; scalars and tiles compute in f32 (f64 stays f64)."""
    if fname == "abs":
        if name in FLOATS:
            return convert(np.abs(_f(x)), name)
        return convert(np.maximum(x, np.negative(x)), name)
    return convert(MATH[fname](x), name)


def power(a, b, name: str):
    """`pow(a, b)` as exp(b * log(a))."""
    a, b = _f(a), _f(b)
    return convert(np.exp(b * np.log(a)), name)


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
