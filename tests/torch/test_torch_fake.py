"""The op's fake implementation: outputs of the contract's types and extents, no launch.

torch.compile traces with it, and so does `torch.library.opcheck`, which also checks the
schema against what the op does and runs it under the dispatcher's fake and aot paths.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opkit import blocks, rows, saxpy  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import phobos.torch as pt  # noqa: E402
from phobos.runtime.errors import ArgumentValueError  # noqa: E402

saxpy_op = pt.op(saxpy, blocks, outputs=["out"], name="phobos_fake_tests::saxpy")
saxpy_inplace = pt.op(saxpy, blocks, mutates=["out"], name="phobos_fake_tests::saxpy_inplace")
rows_op = pt.op(
    rows, lambda m: (m["M"],), outputs=["scaled", "total"], name="phobos_fake_tests::rows"
)


@pytest.mark.parametrize(("m", "k"), [(4, 8), (36, 252)])
def test_fake_outputs_follow_the_contract(m, k):
    with FakeTensorMode():
        x = torch.empty(m, k)
        scaled, total = rows_op(x, 2)
    for t in (scaled, total):
        assert isinstance(t, FakeTensor) and t.device == x.device
    # the contract: scaled is tensor<f64>[M, K], total tensor<f32>[M, 1]
    assert (tuple(scaled.shape), scaled.dtype) == ((x.shape[0], x.shape[1]), torch.float64)
    assert (tuple(total.shape), total.dtype) == ((x.shape[0], 1), torch.float32)


def test_fake_outputs_keep_symbolic_extents_symbolic():
    gm = make_fx(lambda x: rows_op(x, 2), tracing_mode="symbolic")(torch.randn(8, 100))
    (x,) = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    (scaled, total) = next(
        n.meta["val"]
        for n in gm.graph.nodes
        if n.target is torch.ops.phobos_fake_tests.rows.default
    )
    m, k = x.shape
    assert isinstance(m, torch.SymInt) and isinstance(k, torch.SymInt)
    assert str(scaled.shape[0]) == str(m) and str(scaled.shape[1]) == str(k)
    assert str(total.shape[0]) == str(m) and total.shape[1] == 1
    # the row-pitch rule is a guard on the symbols, not a specialisation to 8 and 100
    guards = [str(g.expr) for g in gm.shape_env.guards]
    assert f"Eq(Mod({m}, 4), 0)" in guards and f"Eq(Mod({k}, 4), 0)" in guards


def test_meta_tensors_take_the_fake_implementation():
    x = torch.empty(12, 64, device="meta")
    scaled, total = rows_op(x, 1)
    assert scaled.device.type == "meta" and scaled.shape == x.shape
    assert total.shape == (x.shape[0], 1)


def test_the_fake_implementation_refuses_what_the_launch_would():
    with FakeTensorMode():
        x, y = torch.empty(1000), torch.empty(996)
        with pytest.raises(ArgumentValueError, match="bound N = 1000") as caught:
            saxpy_op(x, y, 1.0)
    assert caught.value.param == "y"


@pytest.mark.parametrize("n", [8, 1004])
def test_opcheck_functional(n):
    x, y = torch.randn(n), torch.randn(n)
    results = torch.library.opcheck(saxpy_op.custom_op, (x, y, 0.25))
    assert set(results.values()) == {"SUCCESS"}, results


def test_opcheck_mutating():
    x, y = torch.randn(1000), torch.randn(1000)
    results = torch.library.opcheck(saxpy_inplace.custom_op, (x, y, torch.empty(1000), 0.25))
    assert set(results.values()) == {"SUCCESS"}, results


def test_opcheck_several_outputs():
    results = torch.library.opcheck(rows_op.custom_op, (torch.randn(8, 100), 5))
    assert set(results.values()) == {"SUCCESS"}, results
