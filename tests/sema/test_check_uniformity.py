"""Uniformity (SPEC.md "Per-thread values"): values, vars, loops, control, the three rules."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check, syms

from phobos.sema import hir

HEAD_PH = "kernel k(A: tensor<f32>[N], F: tensor<i32>[4], n: i32) {\n"
HEAD_PY = "@ph.kernel\ndef k(A: ph.tensor[ph.f32][N], F: ph.tensor[ph.i32][4], n: ph.i32):\n"


def ph(body: str) -> str:
    return HEAD_PH + body + "}\n"


def py(body: str) -> str:
    return HEAD_PY + body


REFUSED = [
    (
        "barrier_under_varying_if",
        "  if ctx.thread < 4 {\n    barrier() // <-\n  }\n",
        "    if ph.ctx.thread < 4:\n        ph.barrier()  # <-\n",
        "E0400",
        "`barrier` runs once per CTA, so every thread must reach it",
    ),
    (
        "tile_op_under_varying_if",
        "  var t: tile<f32>[4, 4] = 0.0\n  if ctx.lane == 0 {\n    t = t * 2.0 // <-\n  }\n",
        "    t: ph.var[ph.tile[ph.f32][4, 4]] = 0.0\n    if ph.ctx.lane == 0:\n        t = t * 2.0  # <-\n",
        "E0400",
        "runs once per CTA, so every thread must reach it",
    ),
    (
        "var_assigned_under_varying_control",
        "  var i = 0\n  if ctx.thread < 4 {\n    i = 1\n  }\n  var t = A[i :+ 4] // <-\n",
        "    i: ph.var = 0\n    if ph.ctx.thread < 4:\n        i = 1\n    t: ph.var = A[i:+4]  # <-\n",
        "E0401",
        "takes `i`, which differs between lanes",
    ),
    (
        "loop_carried_var",
        "  var j = 0\n  for k in range(0, n) {\n    var t = A[j :+ 4] // <-\n    j = ctx.lane\n  }\n",
        "    j: ph.var = 0\n    for k in range(0, n):\n        t: ph.var = A[j:+4]  # <-\n        j = ph.ctx.lane\n",
        "E0401",
        "takes `j`, which differs between lanes",
    ),
    (
        "break_under_varying_control",
        "  for i in range(0, n) {\n    if ctx.thread < 3 {\n      break\n    }\n    barrier() // <-\n  }\n",
        "    for i in range(0, n):\n        if ph.ctx.thread < 3:\n            break\n        ph.barrier()  # <-\n",
        "E0400",
        "`barrier` runs once per CTA",
    ),
    (
        "return_under_varying_control",
        "  if ctx.lane == 0 {\n    return\n  }\n  barrier() // <-\n",
        "    if ph.ctx.lane == 0:\n        return\n    ph.barrier()  # <-\n",
        "E0400",
        "`barrier` runs once per CTA",
    ),
    (
        "store_then_tile_read",
        "  var t: tile<f32>[1, 256]\n  t[0, ctx.thread] = 1.0\n  var s = rowsum(t) // <-\n",
        "    t: ph.var[ph.tile[ph.f32][1, 256]]\n    t[0, ph.ctx.thread] = 1.0\n    s: ph.var = ph.rowsum(t)  # <-\n",
        "E0402",
        "reads `t` after a per-thread store to it with no `barrier()` between",
    ),
    (
        "store_then_read_next_iteration",
        "  var t: tile<f32>[1, 256] = 0.0\n  for i in range(0, n) {\n    var s = rowsum(t) // <-\n"
        "    t[0, ctx.thread] = 1.0\n  }\n",
        "    t: ph.var[ph.tile[ph.f32][1, 256]] = 0.0\n    for i in range(0, n):\n"
        "        s: ph.var = ph.rowsum(t)  # <-\n        t[0, ph.ctx.thread] = 1.0\n",
        "E0402",
        "reads `t` after a per-thread store",
    ),
    (
        "atomic_varying_index",
        "  let old = atomic_add(F, ctx.lane, 1) // <-\n",
        "    old: ph.let = ph.atomic_add(F, ph.ctx.lane, 1)  # <-\n",
        "E0401",
        "`atomic_add` takes `ctx.lane`, which differs between lanes",
    ),
    (
        "lane_collective_under_lane_control",
        "  let v = A[ctx.thread]\n  if ctx.lane < 4 {\n    let s = sum<over ctx.lane>(v) // <-\n  }\n",
        "    v: ph.let = A[ph.ctx.thread]\n    if ph.ctx.lane < 4:\n        s: ph.let = ph.sum(v, over=ph.ctx.lane)  # <-\n",
        "E0400",
        "`sum` needs every lane of its warp",
    ),
    (
        "cta_collective_under_warp_control",
        "  let v = A[ctx.thread]\n  if ctx.warp == 0 {\n    let s = sum<over ctx.thread>(v) // <-\n  }\n",
        "    v: ph.let = A[ph.ctx.thread]\n    if ph.ctx.warp == 0:\n        s: ph.let = ph.sum(v, over=ph.ctx.thread)  # <-\n",
        "E0400",
        "`sum` runs once per CTA",
    ),
]


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph_body, py_body, code, fragment = case
    if spelling == "ph":
        assert_refused(ph(ph_body), code, fragment, "k.ph")
    else:
        assert_refused(py(py_body), code, fragment, "k.py")


def test_barrier_between_store_and_read_is_clean():
    assert_clean(
        ph(
            "  var t: tile<f32>[1, 256]\n  t[0, ctx.thread] = 1.0\n  barrier()\n  var s = rowsum(t)\n"
        )
    )


def test_scalar_work_under_any_control():
    assert_clean(
        ph("  if ctx.thread < n {\n    A[ctx.thread] = 1.0\n    var x = A[ctx.thread + 1]\n  }\n")
    )


def test_lane_collective_under_warp_uniform_control():
    assert_clean(
        ph(
            "  let v = A[ctx.thread]\n  if ctx.warp == 0 {\n    let s = sum<over ctx.lane>(v)\n  }\n"
        )
    )


def test_levels_recorded_on_syms():
    (kernel,) = assert_clean(
        ph(
            "  let u = ctx.block.x * 4 + n\n"
            "  let w = ctx.warp * 2\n"
            "  let t = ctx.thread\n"
            "  var acc: f32 = 0.0\n"
            "  for i in range(ctx.lane, n, 32) {\n    acc += A[i]\n  }\n"
            "  var c = 0\n"
            "  for j in range(0, n) {\n    if acc > 0.0 {\n      c = 1\n    }\n  }\n"
            "  let loaded = A[u]\n"
        )
    )
    level = {s.name: s.uni for s in syms(kernel)}
    assert level["u"] == hir.UNIFORM
    assert level["w"] == hir.WARP
    assert level["t"] == hir.VARYING
    assert level["acc"] == hir.VARYING  # one partial sum per thread
    assert level["i"] == hir.VARYING  # as varying as its bounds
    assert level["j"] == hir.UNIFORM
    assert level["c"] == hir.VARYING  # assigned under varying control
    assert level["loaded"] == hir.UNIFORM  # a load at a uniform address


def test_var_made_varying_late_in_a_loop_reaches_its_earlier_reads():
    (kernel,) = assert_clean(
        ph("  var j = 0\n  for k in range(0, n) {\n    let r = j + 1\n    j = ctx.lane\n  }\n")
    )
    level = {s.name: s.uni for s in syms(kernel)}
    assert level["j"] == hir.VARYING and level["r"] == hir.VARYING


def test_messages_are_specs():
    _, diags = check(ph("  if ctx.thread < 4 {\n    barrier()\n  }\n"))
    assert diags[0].message == "`barrier` runs once per CTA, so every thread must reach it"
