"""The reference values of SPEC.md's elementwise math built-ins on one scalar.

The card computes `exp`, `log`, `pow`, `sqrt`, `rsqrt`, `tanh`, `sin` and `cos` with
approximate instructions; here each is the exact function computed in f64 and rounded once,
so a test against the card allows the instruction's error. `round`, `floor`, `ceil` and
`abs` are exact on both. A float operand of f32 or narrower computes in f32 (SPEC.md: "On a
scalar it computes in f32") and rounds to its own type; an f64 one in f64.

    >>> call("exp", [1.0], F32), call("pow", [2.0, 10.0], F32), call("round", [2.5], F32)
    (2.7182817459106445, 1024.0, 2.0)
    >>> call("abs", [-2147483648], I32)
    -2147483648
"""

from __future__ import annotations

import math
from collections.abc import Callable

from phobos.semantics import floats, integers
from phobos.semantics.errors import BadOperand
from phobos.semantics.types import F64, Scalar

INF = math.inf
NAN = math.nan


def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def log(x: float) -> float:
    """`ln x`: `-inf` at zero, NaN below it.

    >>> log(0.0), math.isnan(log(-1.0)), log(math.inf)
    (-inf, True, inf)
    """
    if math.isnan(x) or x < 0.0:
        return NAN
    if x == 0.0:
        return -INF
    return math.log(x)


def pow_(a: float, b: float) -> float:
    """`pow(a, b)` as SPEC.md defines it, `exp(b * log(a))`: NaN for a negative `a`, and
    not Python's `a ** b` at the edges (`pow(0, 0)` is NaN, `pow(-8, 1/3)` too).

    >>> pow_(2.0, 3.0), pow_(0.0, 2.0), math.isnan(pow_(0.0, 0.0))
    (7.999999999999998, 0.0, True)
    """
    p = b * log(a)
    return NAN if math.isnan(p) else exp(p)


def sqrt(x: float) -> float:
    """`sqrt x`: NaN below zero, and `sqrt(-0.0)` is `-0.0`, as IEEE has it.

    >>> sqrt(2.0), math.isnan(sqrt(-1.0)), sqrt(-0.0)
    (1.4142135623730951, True, -0.0)
    """
    if math.isnan(x) or x < 0.0:
        return NAN
    return math.sqrt(x)


def rsqrt(x: float) -> float:
    """`1 / sqrt(x)`: an infinity of zero's sign at zero.

    >>> rsqrt(4.0), rsqrt(0.0), rsqrt(-0.0), rsqrt(math.inf)
    (0.5, inf, -inf, 0.0)
    """
    return floats.ieee_div(1.0, sqrt(x))


def tanh(x: float) -> float:
    return math.tanh(x)


def sin(x: float) -> float:
    return NAN if math.isinf(x) else math.sin(x)


def cos(x: float) -> float:
    return NAN if math.isinf(x) else math.cos(x)


def round_even(x: float) -> float:
    """The nearest integer, ties to even; the sign of zero kept.

    >>> round_even(0.5), round_even(1.5), round_even(-2.5), round_even(-0.25)
    (0.0, 2.0, -2.0, -0.0)
    """
    if not math.isfinite(x):
        return x
    return math.copysign(float(round(x)), x)  # Python's round() ties to even


def floor(x: float) -> float:
    """Toward minus infinity.

    >>> floor(-0.5), floor(2.0), floor(-0.0)
    (-1.0, 2.0, -0.0)
    """
    if not math.isfinite(x):
        return x
    return math.copysign(float(math.floor(x)), x)


def ceil(x: float) -> float:
    """Toward plus infinity; `ceil(-0.5)` is `-0.0`.

    >>> ceil(-0.5), ceil(0.5)
    (-0.0, 1.0)
    """
    if not math.isfinite(x):
        return x
    return math.copysign(float(math.ceil(x)), x)


# name -> (arity, the function on f64 values)
FLOAT_CALLS: dict[str, tuple[int, Callable[..., float]]] = {
    "exp": (1, exp),
    "log": (1, log),
    "pow": (2, pow_),
    "sqrt": (1, sqrt),
    "rsqrt": (1, rsqrt),
    "tanh": (1, tanh),
    "sin": (1, sin),
    "cos": (1, cos),
    "round": (1, round_even),
    "floor": (1, floor),
    "ceil": (1, ceil),
    "abs": (1, math.fabs),
}


def call(name: str, args: list[int | float], t: Scalar) -> int | float:
    """The built-in `name` on `args`, values of `t`. Only `abs` takes an integer (SPEC.md:
    "An integer takes max(x, -x)"); `min` and `max` are `fold_call`'s.

    >>> call("sqrt", [2.0], F32), call("sqrt", [2.0], F64)
    (1.4142135381698608, 1.4142135623730951)
    >>> call("exp", [1], I32)
    Traceback (most recent call last):
    ...
    phobos.semantics.errors.BadOperand: `exp` takes a float, not `i32`
    """
    if name not in FLOAT_CALLS:
        raise ValueError(f"`{name}` is not an elementwise math built-in")
    arity, fn = FLOAT_CALLS[name]
    if len(args) != arity:
        raise ValueError(f"`{name}` takes {arity} arguments, not {len(args)}")
    if name == "abs" and t.is_signed:
        return integers.int_abs(args[0], t.bits)
    if not t.is_float:
        takes = "a float or a signed integer" if name == "abs" else "a float"
        raise BadOperand(f"`{name}` takes {takes}, not `{t}`")
    r = fn(*args)
    if t == F64:
        return r
    return floats.round_to(floats.round_f32(r), t)  # computed in f32, then its own type


def fold_call(name: str, args: list[int | float], t: Scalar) -> int | float:
    """A scalar built-in call: `min`, `max` (a NaN gives the other operand) or one of
    `call`'s, on values of `t`.

    >>> fold_call("min", [math.nan, 2.0], F32), fold_call("max", [3, -4], I32)
    (2.0, 3)
    """
    if name in ("min", "max"):
        a, b = args
        if t.is_float:
            return floats.float_min(a, b) if name == "min" else floats.float_max(a, b)
        if not t.is_signed:
            raise BadOperand(f"`{name}` takes floats or signed integers, not `{t}`")
        return integers.int_min(a, b) if name == "min" else integers.int_max(a, b)
    return call(name, args, t)
