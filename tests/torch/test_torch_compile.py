"""torch.compile(fullgraph=True) of functions calling a kernel's op, on CPU tensors.

`fullgraph=True` turns any graph break into an error, so each test passing means the
op traced whole. The backend is `aot_eager`: it runs AOTAutograd (functionalisation,
the fake implementation, a mutating op's rewriting) as inductor does, but runs the
graph eagerly. Inductor itself would compile C++ for the CPU, which takes tens of
seconds a graph and a C++ compiler, for nothing the op's own path depends on.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opkit import blocks, rows, saxpy  # noqa: E402
from torch._dynamo.testing import EagerAndRecordGraphs  # noqa: E402

import phobos.torch as pt  # noqa: E402

saxpy_op = pt.op(saxpy, blocks, outputs=["out"], name="phobos_compile_tests::saxpy")
saxpy_inplace = pt.op(saxpy, blocks, mutates=["out"], name="phobos_compile_tests::saxpy_inplace")
rows_op = pt.op(
    rows, lambda m: (m["M"],), outputs=["scaled", "total"], name="phobos_compile_tests::rows"
)

rng = np.random.default_rng()


def random(*shape):
    return torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))


def wide(t):
    return t.numpy().astype(np.float64)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def fused(x, y):
    return torch.relu(saxpy_op(x, y, 2.0)) + x


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_function_calls_the_op_in_one_graph(dynamic, poisoned):
    compiled = torch.compile(fused, fullgraph=True, backend="aot_eager", dynamic=dynamic)
    for n in (1000, 4096 + 12, 60):  # ragged, and with dynamic=True one graph for all
        x, y = random(n), random(n)
        got = compiled(x, y)
        want = np.maximum(2.0 * wide(x) + wide(y), 0.0) + wide(x)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_the_op_is_one_node_of_the_traced_graph():
    recorder = EagerAndRecordGraphs()
    compiled = torch.compile(fused, fullgraph=True, backend=recorder)
    x, y = random(1000), random(1000)
    np.testing.assert_array_equal(compiled(x, y).numpy(), fused(x, y).numpy())
    (graph,) = recorder.graphs
    calls = [n for n in graph.graph.nodes if n.op == "call_function"]
    ops = [n for n in calls if n.target is torch.ops.phobos_compile_tests.saxpy.default]
    assert len(ops) == 1, graph.code


def test_a_mutating_op_compiles_and_writes_its_argument():
    def step(x, y):
        out = torch.empty_like(x)
        saxpy_inplace(x, y, out, -0.5)
        return out * 2.0

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    x, y = random(1004), random(1004)
    np.testing.assert_allclose(
        compiled(x, y).numpy(), 2.0 * (-0.5 * wide(x) + wide(y)), rtol=1e-6, atol=1e-6
    )


def test_a_mutated_graph_input_sees_the_kernel_write():
    def into(x, y, out):
        saxpy_inplace(x, y, out, 3.0)

    compiled = torch.compile(into, fullgraph=True, backend="aot_eager")
    x, y = random(1000), random(1000)
    out = torch.full((1000,), float("nan"))
    compiled(x, y, out)
    np.testing.assert_allclose(out.numpy(), 3.0 * wide(x) + wide(y), rtol=1e-6, atol=1e-6)


def test_several_outputs_compile():
    def both(x):
        scaled, total = rows_op(x, 4)
        return scaled.sum(dim=1), total

    compiled = torch.compile(both, fullgraph=True, backend="aot_eager")
    x = random(12, 200)
    s, t = compiled(x)
    np.testing.assert_allclose(s.numpy(), 4 * wide(x).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(t.numpy()[:, 0], wide(x).sum(axis=1), rtol=1e-5, atol=1e-3)


def test_a_refused_argument_under_compile_names_the_parameter():
    compiled = torch.compile(fused, fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception) as caught:
        compiled(random(1000).double(), random(1000))
    # dynamo reports the fake implementation's refusal inside its own error
    text = str(caught.value)
    assert (
        "`saxpy`: argument `x` has element type torch.float64, but the kernel declares f32" in text
    )
