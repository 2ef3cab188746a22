"""The value ops of lir on numpy arrays over threads: arithmetic, bits, comparisons, math.

Each function takes the operands already read in the instruction's type and returns the
result in it (or in the type the op writes: `setp` a pred, `mul_wide` twice the width,
`popc` u32). Integers wrap; floats round once to nearest (or as `rounding` says), from
the exact result, as PTX's IEEE instructions do.

    >>> import numpy as np
    >>> arith("add", "s32", [np.array([2**31 - 1], np.int32), np.array([1], np.int32)]).tolist()
    [-2147483648]
    >>> compare("ltu", "f32", np.array([np.nan, 1.0], np.float32), np.float32(2.0)).tolist()
    [True, True]
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_values import DTYPE, UINT, float_result, int_range, round_nearest
from phobos.lower import lir

# ---------------------------------------------------------------------------
# Exact float helpers: a result as (nearest f64, sign of exact - nearest)


def _two_sum_err(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_sum(a, b):
    s, err = _two_sum_err(a, b)
    return s, np.where(np.isfinite(s), np.sign(err), 0)


def _split(a):
    c = a * 134217729.0  # 2**27 + 1: Veltkamp's split of a float64 into two halves
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """a * b as (p, e) with p + e exact (Dekker), for finite products away from overflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p), e, 0.0)


def _float_op(op: str, t: str, xs, rounding):
    """A float op's exact result rounded to `t`: computed in f64 with the sign of its error."""
    xs = [np.asarray(x).astype(np.float64) for x in xs]
    zero = np.zeros(np.broadcast(*xs).shape)
    narrow = t != "f64"  # f16, bf16, f32 operands multiply exactly in f64
    if op in ("add", "sub"):
        a, b = xs
        s, side = _two_sum(a, b if op == "add" else -b)
    elif op == "mul":
        a, b = xs
        if narrow:
            s, side = a * b, zero
        else:
            s, e = _two_prod(a, b)
            side = np.sign(e)
    elif op in ("fma", "mad"):
        a, b, c = xs
        if narrow:
            s, side = _two_sum(a * b, c)
        else:
            p, e = _two_prod(a, b)
            s0, err = _two_sum_err(p, c)
            tail = np.where(np.isfinite(s0), err + e, 0.0)
            s = s0 + tail  # faithful, not always correctly rounded, for f64
            side = np.where(np.isfinite(s), np.sign((s0 - s) + tail), 0)
    elif op == "div":
        a, b = xs
        s = a / b
        p, e = _two_prod(s, b)
        rest = np.where(np.isfinite(s) & (b != 0), (a - p) - e, 0.0)
        side = np.sign(rest) * np.sign(b)
    elif op == "sqrt":
        (a,) = xs
        s = np.sqrt(a)
        p, e = _two_prod(s, s)
        side = np.where(np.isfinite(s) & (a > 0), np.sign((a - p) - e), 0)
    elif op == "rem":
        a, b = xs
        s, side = np.fmod(a, b), zero  # fmod is exact
    else:
        raise InterpError(f"`{op}` is not a float op")
    side = np.where(np.isnan(side), 0, side)
    if rounding in (None, "rn", "approx", "full"):
        rounding = "rn"
    return float_result(s, side, t, rounding)


def _float_minmax(which: str, a, b):
    """PTX min/max: a NaN operand gives the other one; -0.0 is below 0.0."""
    out = (np.fmin if which == "min" else np.fmax)(a, b)
    zeros = (a == 0) & (b == 0)
    neg = np.signbit(a) | np.signbit(b) if which == "min" else np.signbit(a) & np.signbit(b)
    signed_zero = np.where(neg, -0.0, 0.0).astype(out.dtype)
    return np.where(zeros, signed_zero, out)


# ---------------------------------------------------------------------------
# Integers


def _trunc_div(a, b, t: str, active):
    zero = (b == 0) & active
    if zero.any():
        raise InterpError("integer division by zero")
    dtype = DTYPE[t]
    b_safe = np.where(b == 0, dtype(1), b)
    if lir.is_signed(t):
        lo, _ = int_range(t)
        overflow = (a == dtype(lo)) & (b_safe == dtype(-1))
        b_safe = np.where(overflow, dtype(1), b_safe)  # lo / -1 wraps to lo; lo % -1 is 0
        q = a // b_safe
        r = a - q * b_safe
        fix = (r != 0) & ((a < 0) != (b_safe < 0))  # floor -> toward zero
        q = np.where(fix, q + dtype(1), q)
    else:
        q = a // b_safe
    q = q.astype(dtype)
    return q, (a - q * np.where(b == 0, dtype(1), b)).astype(dtype)


def _mul_hi64(a, b, signed: bool):
    m = np.uint64(0xFFFFFFFF)
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)
    al, ah, bl, bh = ua & m, ua >> np.uint64(32), ub & m, ub >> np.uint64(32)
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> np.uint64(32)) + (lh & m) + (hl & m)
    hi = hh + (lh >> np.uint64(32)) + (hl >> np.uint64(32)) + (mid >> np.uint64(32))
    if signed:
        hi = hi - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
        return hi.astype(np.int64)
    return hi


def _int_arith(op: str, t: str, xs, active, sat: bool):
    dtype = DTYPE[t]
    bits = 8 * lir.WIDTH[t]
    xs = [np.asarray(x).astype(dtype, copy=False) for x in xs]
    if sat and op in ("add", "sub"):
        a, b = (x.astype(np.int64) for x in xs)
        lo, hi = int_range(t)
        return np.clip(a + b if op == "add" else a - b, lo, hi).astype(dtype)
    if op == "add":
        return xs[0] + xs[1]
    if op == "sub":
        return xs[0] - xs[1]
    if op == "mul":
        return xs[0] * xs[1]
    if op == "mad":
        return xs[0] * xs[1] + xs[2]
    if op == "neg":
        return (dtype(0) - xs[0]).astype(dtype)
    if op == "abs":
        return np.where(xs[0] < 0, dtype(0) - xs[0], xs[0]).astype(dtype)
    if op in ("min", "max"):
        return (np.minimum if op == "min" else np.maximum)(xs[0], xs[1])
    if op in ("div", "rem"):
        q, r = _trunc_div(xs[0], xs[1], t, active)
        return q if op == "div" else r
    if op == "mul_hi":
        if bits == 64:
            return _mul_hi64(xs[0], xs[1], lir.is_signed(t)).astype(dtype)
        wide = np.int64 if lir.is_signed(t) else np.uint64
        p = xs[0].astype(wide) * xs[1].astype(wide)
        return (p >> wide(bits)).astype(dtype)
    if op == "mul_wide":
        if bits > 32:
            raise InterpError(f"`mul_wide` takes 16- or 32-bit operands, not {t}")
        wide_t = ("s" if lir.is_signed(t) else "u") + str(2 * bits)
        wide = DTYPE[wide_t]
        return xs[0].astype(wide) * xs[1].astype(wide)
    raise InterpError(f"`{op}` does not take integers")


def arith(op: str, t: str, xs, active=None, *, rounding=None, sat=False):
    """The arithmetic family (`lir.ARITH`) in type `t`; `active` marks the threads whose
    faults count (an integer division by zero)."""
    if active is None:
        active = np.ones(np.broadcast(*xs).shape, bool)
    with np.errstate(all="ignore"):
        if lir.is_int(t):
            return _int_arith(op, t, xs, active, sat)
        if op in ("neg", "abs"):
            x = np.asarray(xs[0]).astype(DTYPE[t])
            return np.negative(x) if op == "neg" else np.abs(x)
        if op in ("min", "max"):
            a, b = (np.asarray(x).astype(DTYPE[t]) for x in xs)
            return _float_minmax(op, a, b)
        if op in ("mul_hi", "mul_wide"):
            raise InterpError(f"`{op}` does not take floats")
        out = _float_op(op, t, xs, rounding)
        if sat:
            out = np.where(np.isnan(out), 0, np.clip(out, 0, 1)).astype(out.dtype)
        return out


# ---------------------------------------------------------------------------
# Bits


def _popcount(x, width: int):
    x = np.asarray(x).astype(np.uint64)
    count = np.zeros(x.shape, np.uint32)
    for _ in range(8 * width):
        count += (x & np.uint64(1)).astype(np.uint32)
        x = x >> np.uint64(1)
    return count


# prmt's special modes: the source byte of each result byte i, from the selector c[1:0].
_PRMT_MODES = {
    "f4e": lambda s, i: (s + i) & 7,  # forward 4 extract
    "b4e": lambda s, i: (s - i) & 7,  # backward 4 extract
    "rc8": lambda s, i: s,  # replicate byte s
    "ecl": lambda s, i: np.maximum(s, i),  # edge clamp left
    "ecr": lambda s, i: np.minimum(s, i),  # edge clamp right
    "rc16": lambda s, i: (s & 1) * 2 + (i & 1),  # replicate half s
}


def _prmt(a, b, c, mode=None):
    """prmt.b32: byte i of the result is a byte of the pool {b, a} (a's bytes 0-3, b's
    4-7): in the default mode byte c[4i+2:4i], or its sign replicated when bit 4i+3 is
    set; in the special modes the byte `_PRMT_MODES[mode](c[1:0], i)`."""
    pool = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
    c = c.astype(np.int64)
    out = np.zeros(np.shape(pool), np.uint64)
    for i in range(4):
        if mode is None:
            nibble = (c >> (4 * i)) & 0xF
            sel = nibble & 7
        else:
            sel = _PRMT_MODES[mode](c & 3, i)
        byte = (pool >> (np.asarray(sel).astype(np.uint64) * np.uint64(8))) & np.uint64(0xFF)
        if mode is None:
            sign = np.where(byte >> np.uint64(7) == 1, np.uint64(0xFF), np.uint64(0))
            byte = np.where(nibble & 8 != 0, sign, byte)
        out |= byte << np.uint64(8 * i)
    return out.astype(np.uint32)


def _dp4a(a, b, c, a_signed: bool, b_signed: bool):
    """dp4a: c + the sum of the four byte products of a and b (each signed or not)."""
    total = c.astype(np.int64)
    for i in range(4):
        bytes_ = []
        for x, signed in ((a, a_signed), (b, b_signed)):
            byte = (x.astype(np.uint32).astype(np.int64) >> (8 * i)) & 0xFF
            bytes_.append(np.where(signed & (byte >= 128), byte - 256, byte))
        total = total + bytes_[0] * bytes_[1]
    return total


def bits(op: str, t: str, xs, *, mode=None, from_type=None):
    """The bits family (`lir.BITS`) in type `t`; shift amounts are u32, clamped to the width."""
    with np.errstate(all="ignore"):
        if op in ("and", "or", "xor", "not"):
            if t == "pred":
                fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
                return np.logical_not(xs[0]) if op == "not" else fn[op](xs[0], xs[1])
            if not lir.is_int(t):
                raise InterpError(f"`{op}` takes integers or preds, not {t}")
            if op == "not":
                return np.invert(xs[0])
            fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            return fn(xs[0], xs[1])
        if op in ("shl", "shr"):
            width = 8 * lir.WIDTH[t]
            dtype = DTYPE[t]
            a = np.asarray(xs[0]).astype(dtype)
            n = np.minimum(np.asarray(xs[1]).astype(np.uint32), np.uint32(width)).astype(dtype)
            if op == "shl":
                out = np.where(n >= width, dtype(0), a << np.minimum(n, dtype(width - 1)))
            elif lir.is_signed(t):  # arithmetic: the sign fills
                out = a >> np.minimum(n, dtype(width - 1))
            else:
                out = np.where(n >= width, dtype(0), a >> np.minimum(n, dtype(width - 1)))
            return out.astype(dtype)
        if op == "popc":
            return _popcount(xs[0], lir.WIDTH[t])
        if op == "prmt":
            if mode is not None and mode not in _PRMT_MODES:
                raise InterpError(f"`prmt.{mode}` is not a byte-permute mode")
            return _prmt(*(np.asarray(x).astype(np.uint32) for x in xs), mode=mode)
        if op == "dp4a":
            a_signed = lir.is_signed(t)
            b_signed = lir.is_signed(from_type or t)
            out = _dp4a(*(np.asarray(x) for x in xs), a_signed, b_signed)
            return out.astype(np.int32 if a_signed or b_signed else np.uint32)
    raise InterpError(f"`{op}` is not a bits op")


# ---------------------------------------------------------------------------
# Comparisons

_ORDERED = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}  # fmt: skip
_UNSIGNED_NAMES = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def compare(cmp: str, t: str, a, b):
    """`setp.cmp.t`: integers compare by their type's signedness (`lo ls hi hs` always
    unsigned); a float's `eq ne lt le gt ge` are false where either is NaN, the `u` forms
    (`equ`, ...) true there; `num` holds where neither is NaN, `nan` where either is."""
    with np.errstate(invalid="ignore"):
        if lir.is_float(t):
            nan = np.isnan(a) | np.isnan(b)
            if cmp == "num":
                return ~nan
            if cmp == "nan":
                return nan
            if cmp.endswith("u") and cmp[:-1] in _ORDERED:
                return _ORDERED[cmp[:-1]](a, b) | nan
            if cmp in _ORDERED:
                return _ORDERED[cmp](a, b) & ~nan
        elif lir.is_int(t) or t == "pred":
            if cmp in _UNSIGNED_NAMES:
                width = lir.WIDTH.get(t, 1)
                a = np.asarray(a).astype(UINT[width])
                b = np.asarray(b).astype(UINT[width])
                cmp = _UNSIGNED_NAMES[cmp]
            if cmp in _ORDERED:
                return _ORDERED[cmp](a, b)
    raise InterpError(f"`setp.{cmp}` does not compare {t}")


# ---------------------------------------------------------------------------
# Approximate math: computed in f64, rounded to f32 (f64 kept for an f64 instruction)

MATH = {
    "ex2": np.exp2,
    "lg2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "rcp": lambda x: 1.0 / x,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
}


TINY_F32 = float(np.finfo(np.float32).tiny)  # 2^-126, the least normal f32


def flush_subnormal(x):
    """`.ftz`: an f32 below the least normal magnitude becomes a zero of its sign."""
    x = np.asarray(x)
    return np.where(np.abs(x) < TINY_F32, np.copysign(0.0, x), x).astype(x.dtype)


def math(op: str, t: str, x, rounding=None, ftz=False):
    """The math family: `sqrt` and `rcp` with an IEEE rounding (`rn`...) are exact-rounded;
    the approximate forms are the f64 value rounded to f32, then to `t`. `ftz` on an f32
    flushes subnormal inputs and results to zero (`ex2.approx.ftz.f32`)."""
    if not lir.is_float(t):
        raise InterpError(f"`{op}` takes floats, not {t}")
    with np.errstate(all="ignore"):
        if op == "sqrt" and rounding not in (None, "approx"):
            return _float_op("sqrt", t, [x], rounding)
        if op == "rcp" and rounding not in (None, "approx"):
            one = np.ones(np.shape(x))
            return _float_op("div", t, [one, x], rounding)
        wide = np.asarray(x).astype(np.float64)
        flush = ftz and t == "f32"
        r = MATH[op](flush_subnormal(wide) if flush else wide)
        if t == "f64":
            return r
        r = r.astype(np.float32)
        return round_nearest(flush_subnormal(r) if flush else r, t)
