"""The tile interpreter on hand-built kernels: per-thread scalars, operators, control flow."""

import numpy as np
import pytest
from hirkit import (
    VAR,
    assign,
    bf16,
    bin,
    c,
    call,
    conv,
    ctx,
    expr,
    f16,
    f32,
    for_,
    i8,
    i32,
    i64,
    if_,
    kernel,
    let,
    param,
    pt,
    ref,
    sym,
    tensor,
    un,
    var,
    while_,
)

from phobos.interp import InterpError, run_kernel
from phobos.sema import hir

rng = np.random.default_rng()


def per_thread_binary(op, a, b, elem=i32, threads=64):
    """out[t] = a[t] op b[t], one element per thread."""
    A, B, Out = (
        param("A", tensor(elem, "N")),
        param("B", tensor(elem, "N")),
        param("Out", tensor(elem, "N")),
    )
    t = ctx("thread")
    k = kernel(
        [A, B, Out], assign(pt(ref(Out), t), bin(op, pt(ref(A), t), pt(ref(B), t))), threads=threads
    )
    out = np.zeros_like(a)
    run_kernel(k, (1,), {"A": a, "B": b, "Out": out}, {})
    return out


def c_div(a, b):
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


def test_integer_division_truncates_and_modulo_takes_the_dividend_sign():
    a = rng.integers(-1000, 1000, 64).astype(np.int32)
    b = rng.integers(1, 30, 64).astype(np.int32) * rng.choice([-1, 1], 64).astype(np.int32)
    q = per_thread_binary("/", a, b)
    r = per_thread_binary("%", a, b)
    assert (q == c_div(a, b)).all()
    assert (r == a - c_div(a, b) * b).all()
    assert (np.sign(r[r != 0]) == np.sign(a[r != 0])).all()


def test_integer_arithmetic_wraps_at_the_type_width():
    a = np.full(64, 2**31 - 5, np.int32) - rng.integers(0, 3, 64).astype(np.int32)
    b = rng.integers(10, 100, 64).astype(np.int32)
    s = per_thread_binary("+", a, b)
    want = ((a.astype(np.int64) + b + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert (s == want).all()
    m = per_thread_binary("*", a, b)
    want = ((a.astype(np.int64) * b + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert (m == want).all()


def test_shifts_are_arithmetic():
    a = rng.integers(-(2**20), 2**20, 64).astype(np.int32)
    s = rng.integers(0, 31, 64).astype(np.int32)
    assert (per_thread_binary(">>", a, s) == (a >> s)).all()
    assert (per_thread_binary("<<", a, s) == (a << s)).all()


def test_float_modulo_is_fmod():
    a = rng.uniform(-50, 50, 64).astype(np.float32)
    b = rng.uniform(0.5, 7, 64).astype(np.float32)
    assert np.array_equal(per_thread_binary("%", a, b, f32), np.fmod(a, b))


def test_f16_stores_round():
    a = rng.uniform(-3, 3, 64).astype(np.float16)
    b = rng.uniform(-3, 3, 64).astype(np.float16)
    got = per_thread_binary("*", a, b, f16)
    assert np.array_equal(got, (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16))


def test_bf16_values_are_rounded_f32():
    X, Out = param("X", tensor(f32, "N")), param("Out", tensor(f32, "N"))
    t = ctx("thread")
    v = sym("v", bf16, uni=VAR)
    k = kernel(
        [X, Out],
        let(v, conv(pt(ref(X), t), bf16)),
        assign(pt(ref(Out), t), conv(bin("*", hir.Ref(v, bf16, VAR), hir.Ref(v, bf16, VAR)), f32)),
        threads=64,
    )
    x = rng.uniform(-4, 4, 64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    run_kernel(k, (1,), {"X": x, "Out": out}, {})

    def to_bf16(a):  # independent: round the f64 value through a 7-bit mantissa
        m, e = np.frexp(a.astype(np.float64))
        return np.ldexp(np.round(m * 256) / 256, e)

    want = to_bf16(to_bf16(x) ** 2)
    assert np.array_equal(out, want.astype(np.float32))


def test_float_to_int_truncates_toward_zero():
    X, Out = param("X", tensor(f32, "N")), param("Out", tensor(i32, "N"))
    t = ctx("thread")
    k = kernel([X, Out], assign(pt(ref(Out), t), conv(pt(ref(X), t), i32)), threads=32)
    x = rng.uniform(-100, 100, 32).astype(np.float32)
    out = np.zeros(32, np.int32)
    run_kernel(k, (1,), {"X": x, "Out": out}, {})
    assert (out == np.trunc(x).astype(np.int32)).all()


def test_i8_conversion_wraps():
    X, Out = param("X", tensor(i32, "N")), param("Out", tensor(i8, "N"))
    t = ctx("thread")
    k = kernel([X, Out], assign(pt(ref(Out), t), conv(pt(ref(X), t), i8)), threads=32)
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    out = np.zeros(32, np.int8)
    run_kernel(k, (1,), {"X": x, "Out": out}, {})
    assert (out.astype(np.int64) == (x + 128) % 256 - 128).all()


def test_division_by_zero_raises_at_the_statement_only_in_active_threads():
    A, Out = param("A", tensor(i32, "N")), param("Out", tensor(i32, "N"))
    t = ctx("thread")
    a = pt(ref(A), t)
    guarded = if_(bin("!=", a, c(0)), [assign(pt(ref(Out), t), bin("/", c(100), a))])
    k = kernel([A, Out], guarded, threads=32)
    x = rng.integers(1, 9, 32).astype(np.int32)
    x[::3] = 0
    out = np.zeros(32, np.int32)
    run_kernel(k, (1,), {"A": x, "Out": out}, {})
    assert (out[x != 0] == 100 // x[x != 0]).all() and (out[x == 0] == 0).all()
    bare = kernel([A, Out], assign(pt(ref(Out), t), bin("/", c(100), a)), threads=32)
    with pytest.raises(InterpError, match="integer division by zero"):
        run_kernel(bare, (1,), {"A": x, "Out": out}, {})


def test_per_thread_loop_with_var_acc():
    """var acc: f32 summed over a lane-strided loop: one partial sum per thread."""
    X, Out = param("X", tensor(f32, "N")), param("Out", tensor(f32, "M"))
    t = ctx("thread")
    acc = sym("acc", f32, "var", VAR)
    i = sym("i", i32, "loop", VAR)
    k = kernel(
        [X, Out],
        var(acc, c(0.0, f32)),
        for_(
            i,
            t,
            c(1000, i32),
            assign(ref(acc), bin("*", pt(ref(X), ref(i)), pt(ref(X), ref(i))), "+="),
            step=c(64),
        ),
        assign(pt(ref(Out), t), ref(acc)),
        threads=64,
    )
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    run_kernel(k, (1,), {"X": x, "Out": out}, {})
    want = [np.sum(x[j::64].astype(np.float64) ** 2) for j in range(64)]
    assert np.allclose(out, want, rtol=1e-5)


def test_divergent_break_continue_and_return():
    """Thread t counts up to t but skips multiples of 3, breaks at 20; threads >= 40 return."""
    Out = param("Out", tensor(i32, "N"))
    t = ctx("thread")
    n = sym("n", i32, "var", VAR)
    i = sym("i", i32, "loop", VAR)
    k = kernel(
        [Out],
        if_(bin(">=", t, c(40)), [hir.Return()]),
        var(n, c(0)),
        for_(
            i,
            c(0),
            t,
            if_(bin("==", bin("%", ref(i), c(3)), c(0)), [hir.Continue()]),
            if_(bin(">=", ref(i), c(20)), [hir.Break()]),
            assign(ref(n), c(1), "+="),
        ),
        assign(pt(ref(Out), t), ref(n)),
        threads=64,
    )
    out = np.full(64, -7, np.int32)
    run_kernel(k, (1,), {"Out": out}, {})
    want = [sum(1 for j in range(min(th, 20)) if j % 3) for th in range(64)]
    assert out[:40].tolist() == want[:40]
    assert (out[40:] == -7).all()


def test_while_with_per_thread_condition():
    """Collatz steps per thread."""
    Out = param("Out", tensor(i32, "N"))
    t = ctx("thread")
    x = sym("x", i32, "var", VAR)
    n = sym("n", i32, "var", VAR)
    body = [
        if_(
            bin("==", bin("%", ref(x), c(2)), c(0)),
            [assign(ref(x), c(2), "/=")],
            [assign(ref(x), bin("+", bin("*", ref(x), c(3)), c(1)))],
        ),
        assign(ref(n), c(1), "+="),
    ]
    k = kernel(
        [Out],
        var(x, bin("+", t, c(1))),
        var(n, c(0)),
        while_(bin("!=", ref(x), c(1)), *body),
        assign(pt(ref(Out), t), ref(n)),
        threads=96,
    )
    out = np.zeros(96, np.int32)
    run_kernel(k, (1,), {"Out": out}, {})

    def steps(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    assert out.tolist() == [steps(v + 1) for v in range(96)]


def test_grid_axes_and_uniform_break_in_for_stops_the_rest():
    Out = param("Out", tensor(i32, "Y", "X"))
    i = sym("i", i32, "loop")
    n = sym("n", i32, "var")
    bx, by = ctx("block", "x"), ctx("block", "y")
    k = kernel(
        [Out],
        var(n, c(0)),
        for_(i, c(0), c(100), if_(bin("==", ref(i), bin("+", bx, c(3))), [hir.Break()]),
             assign(ref(n), c(1), "+="), unroll=4),
        if_(bin("==", ctx("thread"), c(0)),
            [assign(pt(ref(Out), by, bx), bin("+", bin("*", ref(n), c(100)), ctx("blocks", "y")))]),
    )  # fmt: skip
    out = np.full((3, 5), -1, np.int32)
    run_kernel(k, (5, 3), {"Out": out}, {})
    assert (out == (np.arange(5) + 3)[None, :] * 100 + 3).all()


def test_math_on_scalars_is_f32_and_min_max_skip_nan():
    X, Out = param("X", tensor(f32, "N")), param("Out", tensor(f32, "N"))
    t = ctx("thread")
    x = pt(ref(X), t)
    body = [
        assign(pt(ref(Out), bin("*", t, c(4))), call("exp", x)),
        assign(
            pt(ref(Out), bin("+", bin("*", t, c(4)), c(1))), call("max", x, c(float("nan"), f32))
        ),
        assign(pt(ref(Out), bin("+", bin("*", t, c(4)), c(2))), call("sqrt", call("abs", x))),
        assign(
            pt(ref(Out), bin("+", bin("*", t, c(4)), c(3))), call("round", bin("*", x, c(3.0, f32)))
        ),
    ]
    k = kernel([X, Out], *body, threads=32)
    x = rng.uniform(-3, 3, 128).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    run_kernel(k, (1,), {"X": x, "Out": out}, {})
    xs = x[:32].astype(np.float64)
    assert np.allclose(out[0::4], np.exp(xs), rtol=1e-6)
    assert np.array_equal(out[1::4], x[:32])
    assert np.allclose(out[2::4], np.sqrt(np.abs(xs)), rtol=1e-6)
    assert np.array_equal(out[3::4], np.rint(x[:32] * np.float32(3)))


def test_unary_and_bitwise():
    A, Out = param("A", tensor(i64, "N")), param("Out", tensor(i64, "N"))
    t = ctx("thread")
    a = pt(ref(A), t)
    k = kernel(
        [A, Out], assign(pt(ref(Out), t), bin("^", un("~", a), bin("&", un("-", a), c(255, i64))))
    )
    a = rng.integers(-(2**40), 2**40, 32)
    out = np.zeros(32, np.int64)
    run_kernel(k, (1,), {"A": a, "Out": out}, {})
    assert (out == (~a) ^ ((-a) & 255)).all()


def test_point_load_out_of_bounds_is_an_error_with_span():
    A, Out = param("A", tensor(f32, "N")), param("Out", tensor(f32, "N"))
    t = ctx("thread")
    k = kernel([A, Out], assign(pt(ref(Out), t), pt(ref(A), bin("+", t, c(1)))))
    with pytest.raises(InterpError, match="outside"):
        run_kernel(k, (1,), {"A": np.ones(32, np.float32), "Out": np.ones(32, np.float32)}, {})


def test_quantized_builtins_are_refused():
    Out = param("Out", tensor(f32, "N"))
    k = kernel([Out], expr(call("qdot_t", ref(Out), ref(Out), ref(Out), ref(Out))))
    with pytest.raises(InterpError, match="not supported by the interpreter yet"):
        run_kernel(k, (1,), {"Out": np.ones(4, np.float32)}, {})


def test_bad_arguments_name_the_parameter():
    Out = param("Out", tensor(f32, "N"))
    k = kernel([Out], expr(call("barrier", type_=i32)))
    with pytest.raises(InterpError, match="`Out`"):
        run_kernel(k, (1,), {"Out": np.ones(4, np.float64)}, {})
    with pytest.raises(InterpError, match="no argument"):
        run_kernel(k, (1,), {}, {})
