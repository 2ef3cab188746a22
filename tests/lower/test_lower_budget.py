"""The compile budget: a kernel whose lowering would pass 100,000 instructions or 200,000
registers is refused (E0515) at the line being lowered, within seconds, where a runaway
`for<unroll ..>` or a huge static extent used to lower for minutes and gigabytes."""

import time

import pytest
from lowerkit import checked

from phobos.diagnostics.render import render_human
from phobos.lower import builder
from phobos.lower.kernel import lower_kernel

UNROLLED = """kernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {
  var acc = 0.0
  for<unroll COUNT> i in range(0, COUNT) {
    acc = acc + x[i]
  }
  y[0] = acc
}
"""

WORD = """kernel k(Q: tensor<i8>[R, C], D: tensor<i32>[R]) {
  let r = ctx.thread
  D[r] = word(Q[r, 0 :+ 1048576], 1)
}
"""


@pytest.mark.parametrize("source, line", [(UNROLLED.replace("COUNT", "65536"), 3), (WORD, 3)])
def test_a_kernel_past_the_budget_is_refused_at_its_line_within_seconds(source, line):
    start = time.monotonic()
    k, diags = lower_kernel(checked(source), "sm_90")
    assert time.monotonic() - start < 20  # minutes before the budget
    assert k is None and [d.code for d in diags] == ["E0515"]
    shown = render_human(diags)
    assert "more than 100,000 instructions, the compile budget" in shown, shown
    assert f"k.ph:{line}:" in shown, shown


def test_a_kernel_under_the_budget_lowers():
    k, diags = lower_kernel(checked(UNROLLED.replace("COUNT", "256")), "sm_90")
    assert k is not None and not diags


def test_the_register_budget_is_its_own(monkeypatch):
    monkeypatch.setattr(builder, "MAX_REGISTERS", 500)
    k, diags = lower_kernel(checked(UNROLLED.replace("COUNT", "256")), "sm_90")
    assert k is None and [d.code for d in diags] == ["E0515"]
    assert "more than 500 registers" in render_human(diags)
