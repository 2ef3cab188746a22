"""A loop that never ends stops the interpreter with an error at the loop, not a hang."""

import numpy as np
import pytest

from phobos.interp import InterpError, run_kernel
from phobos.interp.tiles import MAX_ITERATIONS, MAX_ITERATIONS_VAR, iteration_limit
from phobos.sema.check import check_kernel
from phobos.source import SourceFile
from phobos.syntax.parser import parse


def checked(source: str):
    program, diags = parse(SourceFile("limit.ph", source))
    assert not diags, diags
    kernel, diags = check_kernel(program, "k")
    assert kernel is not None, diags
    return kernel


ENDLESS = """
kernel k(A: tensor<i32>[N]) {
  var flag: i32 = A[0]
  var n: i32 = 0
  while flag == 0 {
    n += 1
  }
  A[1] = n
}"""

SPIN = """
kernel k(F: tensor<i32>[2]) {
  if ctx.block.x == 0 {
    while load_acquire(F, 0) == 0 {
    }
  }
}"""

COUNTED = """
kernel k(A: tensor<i32>[N]) {
  var n: i32 = 0
  for i in range(0, A[0]) {
    n += 1
  }
  A[1] = n
}"""


def at(err: InterpError) -> tuple[int, int]:
    return err.span.source.line_col(err.span.start)


def test_an_endless_while_stops_at_the_loop_naming_its_variable():
    limit = int(np.random.default_rng().integers(5, 50))
    a = np.zeros(4, np.int32)
    with pytest.raises(InterpError) as info:
        run_kernel(checked(ENDLESS), (1,), {"A": a}, max_iterations=limit)
    err = info.value
    assert err.message == (
        f"this `while` loop on `flag` did not finish after {limit} iterations; if it is "
        f"meant to run longer, raise the limit with `{MAX_ITERATIONS_VAR}`"
    )
    assert at(err) == (5, 3) and str(err).startswith("limit.ph:5:3: ")
    assert a[1] == 0  # nothing after the loop ran


def test_the_same_loop_that_ends_is_not_stopped():
    a = np.array([1, 0, 0, 0], np.int32)
    run_kernel(checked(ENDLESS), (1,), {"A": a}, max_iterations=1)
    assert a[1] == 0


def test_a_spin_on_load_acquire_stops_under_the_environment_limit(monkeypatch):
    monkeypatch.setenv(MAX_ITERATIONS_VAR, "40")
    with pytest.raises(InterpError, match=r"`while` loop on `F` did not finish after 40 it"):
        run_kernel(checked(SPIN), (2,), {"F": np.zeros(2, np.int32)})


def test_a_for_loop_counts_too_and_runs_to_the_limit_exactly():
    k = checked(COUNTED)
    a = np.array([30, 0, 0, 0], np.int32)
    run_kernel(k, (1,), {"A": a}, max_iterations=30)
    assert a[1] == 30
    with pytest.raises(InterpError, match=r"`for` loop over `i` did not finish after 29 it"):
        run_kernel(k, (1,), {"A": np.array([30, 0, 0, 0], np.int32)}, max_iterations=29)


def test_the_limit_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(MAX_ITERATIONS_VAR, raising=False)
    assert iteration_limit() == MAX_ITERATIONS == 10_000_000
    monkeypatch.setenv(MAX_ITERATIONS_VAR, "123")
    assert iteration_limit() == 123
    for bad in ("0", "-3", "lots"):
        monkeypatch.setenv(MAX_ITERATIONS_VAR, bad)
        with pytest.raises(InterpError, match=f"`{MAX_ITERATIONS_VAR}` is `{bad}`"):
            iteration_limit()
