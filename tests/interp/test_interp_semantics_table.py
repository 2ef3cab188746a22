"""The value rows of spec/PYTHON.md "Where Phobos and Python differ", on the tile
interpreter, with every operand read from a tensor at run time so nothing folds.

The expected values are worked out here, from C's definitions, not from phobos.semantics.
"""

from __future__ import annotations

import importlib.util
import random
import uuid

import numpy as np
import pytest

import phobos.lang as ph
from phobos.diagnostics import CompileError
from phobos.interp import InterpError, run_kernel
from phobos.sema.check import check_kernel

# The kernels' shape names (N, M, K, G) are Phobos names, never Python ones.
# ruff: noqa: F821


@ph.kernel
def divide(A: ph.tensor[ph.i32][N], Q: ph.tensor[ph.i32][N], R: ph.tensor[ph.i32][N]):
    a: ph.let = A[0]
    b: ph.let = A[1]
    Q[0] = a // b
    R[0] = a % b


@ph.kernel
def literal(X: ph.tensor[ph.f64][N], D: ph.tensor[ph.f64][N]):
    x: ph.let = X[0]
    D[0] = 0.1
    D[1] = x * 0.1
    D[2] = x + 0.1


@ph.kernel
def wrap(A: ph.tensor[ph.i32][N], S: ph.tensor[ph.i32][N], T: ph.tensor[ph.i64][N]):
    n: ph.let = A[0]  # an i32: the literal takes its type
    S[0] = 2147483647 + n
    i: ph.let = ph.ctx.block.x  # an index, as wide as the kernel's
    T[i] = 2147483647 + i


@ph.kernel
def both(
    A: ph.tensor[ph.f32][M],
    L: ph.tensor[ph.i32][K],
    And: ph.tensor[ph.i32][G],
    Or: ph.tensor[ph.i32][G],
):
    i: ph.let = ph.ctx.block.x
    n: ph.let = L[0]
    And[i] = ph.where(i < n and A[i] > 0.0, 1, 0)
    Or[i] = ph.where(i >= n or A[i] <= 0.0, 1, 0)


def c_divmod(a: int, b: int) -> tuple[int, int]:
    """C's `/` and `%`: the quotient truncated toward zero, the remainder a - b * q."""
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    return q, a - b * q


def poisoned(dtype, n=4):
    return np.full(n, 0x5A5A5A5A if np.dtype(dtype).kind == "i" else np.nan, dtype)


@pytest.mark.parametrize(("a", "b"), [(-7, 2), (7, -2), (-7, 3), (7, -3)])
def test_integer_division_truncates_and_remainder_takes_the_dividends_sign(a, b):
    q, r = poisoned(np.int32), poisoned(np.int32)
    divide[(1,)](np.array([a, b, 0, 0], np.int32), q, r)
    assert (q[0], r[0]) == c_divmod(a, b)
    assert (a // b, a % b) != c_divmod(a, b)  # Python floors


def test_table_values_of_division():
    assert c_divmod(-7, 2)[0] == -3 and c_divmod(7, -2)[0] == -3
    assert c_divmod(-7, 3)[1] == -1 and c_divmod(7, -3)[1] == 1


def test_random_division_matches_c():
    a = random.randint(-(2**31) + 1, 2**31 - 1)  # -2**31 // -1 has no i32 quotient
    b = random.choice([-1, 1]) * random.randint(1, 2**16)
    q, r = poisoned(np.int32), poisoned(np.int32)
    divide[(1,)](np.array([a, b, 0, 0], np.int32), q, r)
    assert (q[0], r[0]) == c_divmod(a, b)


def test_float_literal_is_an_f32_widened_into_an_f64():
    widened = float(np.float32(0.1))
    assert widened == 0.10000000149011612 != 0.1
    d = poisoned(np.float64)
    literal[(1,)](np.array([1.0, 0, 0, 0]), d)
    assert d[0] == d[1] == widened
    assert d[2] == 1.0 + widened != 1.0 + 0.1


def wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def test_integers_wrap_at_the_index_width():
    n = random.randint(1, 2**16)
    s, t = poisoned(np.int32), poisoned(np.int64)
    wrap[(4,)](np.array([n, 0, 0, 0], np.int32), s, t)
    assert s[0] == wrap32(2147483647 + n) == -2147483648 + n - 1
    assert list(t) == [wrap32(2147483647 + i) for i in range(4)]
    assert t[1] == -2147483648


def test_an_index_sum_is_exact_at_64_bits():
    kernel, diagnostics = check_kernel(wrap.program, "wrap", index_width=64)
    assert kernel is not None, diagnostics
    n = random.randint(1, 2**16)
    s, t = poisoned(np.int32), poisoned(np.int64)
    run_kernel(kernel, (4,), {"A": np.array([n, 0, 0, 0], np.int32), "S": s, "T": t})
    assert s[0] == wrap32(2147483647 + n)  # an i32 sum wraps at 32 bits at any index width
    assert list(t) == [2147483647 + i for i in range(4)]


def test_and_or_compute_the_same_values_in_bounds():
    a = np.random.default_rng().standard_normal(8).astype(np.float32)
    n = random.randint(0, 8)
    out_and, out_or = poisoned(np.int32, 8), poisoned(np.int32, 8)
    both[(8,)](a, np.array([n, 0, 0, 0], np.int32), out_and, out_or)
    i = np.arange(8)
    assert np.array_equal(out_and, (i < n) & (a > 0))
    assert np.array_equal(out_or, (i >= n) | (a <= 0))


def test_and_reads_its_right_side_even_where_the_left_is_false():
    # Python would stop at `i < n` for i = 8 and never read A[8]; Phobos reads it, and a
    # point subscript is not masked (only slices are), so the interpreter reports it.
    a = np.ones(8, np.float32)
    out_and, out_or = poisoned(np.int32, 12), poisoned(np.int32, 12)
    with pytest.raises(InterpError, match=r"index \[8\] is outside the \[8\] tensor"):
        both[(9,)](a, np.array([8, 0, 0, 0], np.int32), out_and, out_or)


REFUSED = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def int_div(A: ph.tensor[ph.i32][N]):
    A[0] = A[1] / A[2]


@ph.kernel
def float_floordiv(X: ph.tensor[ph.f32][N]):
    X[0] = X[1] // X[2]
"""


REFUSALS = [
    ("int_div", 8, np.int32, "write `//`, or convert an operand"),
    ("float_floordiv", 13, np.float32, "write `/`, or `ph.floor` of it"),
]


@pytest.mark.parametrize(("name", "line", "dtype", "help"), REFUSALS)
def test_refused_rows_are_reported_at_the_python_line(tmp_path, name, line, dtype, help):
    path = tmp_path / f"refused_{uuid.uuid4().hex}.py"
    path.write_text(REFUSED)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the front end passes them: the checker refuses
    array = np.array([0, 7, 2, 0], dtype)
    with pytest.raises(ph.KernelCompileError) as info:
        getattr(module, name)[(1,)](array)
    assert list(array) == [0, 7, 2, 0]  # nothing ran
    assert isinstance(info.value, CompileError)
    (error,) = info.value.diagnostics
    assert error.severity == "error" and error.span.source.name == str(path)
    assert error.span.source.line_col(error.span.start) == (line, 12)
    assert f"--> {path}:{line}:12" in str(info.value) and help in str(info.value)
