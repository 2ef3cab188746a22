"""A kernel as a torch op on CPU tensors: the tile interpreter against float64 numpy.

Sizes are ragged (not multiples of the kernel's BLOCK), inputs random, and every output
poisoned before the kernel runs: functional outputs by torch's own fill of what it
allocates, mutated ones by the test.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from opkit import blocks, rows, saxpy  # noqa: E402

import phobos.torch as pt  # noqa: E402
from phobos.runtime.errors import ArgumentTypeError, ArgumentValueError, LaunchError  # noqa: E402

saxpy_op = pt.op(saxpy, blocks, outputs=["out"], name="phobos_tests::saxpy")
saxpy_inplace = pt.op(saxpy, blocks, mutates=["out"], name="phobos_tests::saxpy_inplace")
rows_op = pt.op(rows, lambda m: (m["M"],), outputs=["scaled", "total"], name="phobos_tests::rows")

rng = np.random.default_rng()
SIZES = [4, 60, 1000, 4096 + 12]


def saxpy_reference(x, y, alpha):
    return alpha * x.numpy().astype(np.float64) + y.numpy().astype(np.float64)


def random(*shape):
    return torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))


@pytest.mark.parametrize("n", SIZES)
def test_functional_op_computes_saxpy(n, poisoned):
    x, y = random(n), random(n)
    out = saxpy_op(x, y, 2.5)
    assert out.shape == x.shape and out.dtype == torch.float32 and out.device == x.device
    assert not torch.isnan(out).any(), "an element of the output was never written"
    np.testing.assert_allclose(out.numpy(), saxpy_reference(x, y, 2.5), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
def test_mutating_op_writes_in_place(n):
    x, y = random(n), random(n)
    out = torch.full((n,), float("nan"))
    assert saxpy_inplace(x, y, out, -1.5) is None
    np.testing.assert_allclose(out.numpy(), saxpy_reference(x, y, -1.5), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("m", "k"), [(4, 4), (12, 200), (8, 256)])
def test_several_outputs_of_their_own_types_and_extents(m, k, poisoned):
    x = random(m, k)
    scaled, total = rows_op(x, 3)
    assert scaled.dtype == torch.float64 and scaled.shape == (m, k)
    assert total.dtype == torch.float32 and total.shape == (m, 1)
    wide = x.numpy().astype(np.float64)
    np.testing.assert_array_equal(scaled.numpy(), 3 * wide)  # exact: f32 -> f64 times 3
    np.testing.assert_allclose(total.numpy()[:, 0], wide.sum(axis=1), rtol=1e-5, atol=1e-5 * k)


def test_arguments_by_name_and_through_torch_ops():
    x, y = random(1000), random(1000)
    by_name = saxpy_op(x, alpha=0.5, y=y)
    through = torch.ops.phobos_tests.saxpy(x, y, 0.5)
    np.testing.assert_array_equal(by_name.numpy(), through.numpy())
    np.testing.assert_allclose(by_name.numpy(), saxpy_reference(x, y, 0.5), rtol=1e-6, atol=1e-6)


def test_the_schema_follows_the_contract():
    # inputs in parameter order, an output returned, a mutated tensor annotated as such
    assert saxpy_op.schema == "(Tensor x, Tensor y, float alpha) -> Tensor"
    assert saxpy_inplace.schema == "(Tensor x, Tensor y, Tensor(a0!) out, float alpha) -> ()"
    assert rows_op.schema == "(Tensor x, int k) -> (Tensor, Tensor)"
    assert rows_op.inputs == ("x", "k") and rows_op.outputs == ("scaled", "total")


x4 = torch.zeros(1000)
BAD_CALLS = [
    ((x4.double(), x4, 2.0), {}, ArgumentTypeError, "x", "element type torch.float64"),
    ((x4, x4.view(10, 100), 2.0), {}, ArgumentTypeError, "y", "rank 2"),
    ((x4[:998], x4[:998], 2.0), {}, ArgumentValueError, "x", "not a multiple of 4"),
    ((x4, x4[:996], 2.0), {}, ArgumentValueError, "y", "bound N = 1000"),
    ((torch.zeros(2000)[::2], x4, 2.0), {}, ArgumentValueError, "x", "contiguous"),
    ((x4, 1.0, 2.0), {}, ArgumentTypeError, "y", "is a float"),
    ((x4, x4, x4), {}, ArgumentTypeError, "alpha", "is a tensor"),
    ((x4, x4, True), {}, ArgumentTypeError, "alpha", "is a bool"),
    ((x4, x4, "2"), {}, ArgumentTypeError, "alpha", "is a str"),
    ((x4, x4), {}, ArgumentTypeError, "alpha", "is missing"),
    ((x4, x4, 2.0, 3.0), {}, ArgumentTypeError, None, "4 were given"),
    ((x4, x4, 2.0), {"out": x4}, ArgumentTypeError, "out", "an output"),
    ((x4, x4, 2.0), {"y": x4}, ArgumentTypeError, "y", "given twice"),
]


@pytest.mark.parametrize(("args", "kwargs", "error", "param", "says"), BAD_CALLS)
def test_a_wrong_argument_names_its_parameter(args, kwargs, error, param, says):
    with pytest.raises(error) as caught:
        saxpy_op(*args, **kwargs)
    assert caught.value.param == param
    assert caught.value.kernel == "saxpy"
    assert says in str(caught.value)
    if param is not None:
        assert f"`{param}`" in str(caught.value)


def test_an_integer_scalar_out_of_range_is_refused_by_the_launch():
    with pytest.raises(ArgumentValueError, match="does not fit i32") as caught:
        rows_op(torch.zeros(4, 4), 2**40)
    assert caught.value.param == "k"


@pytest.mark.parametrize(
    ("kernel", "roles", "param", "says"),
    [
        (saxpy, {"outputs": ["alpha"]}, "alpha", "a scalar"),
        (saxpy, {"outputs": ["z"]}, "z", "not a parameter"),
        (saxpy, {"outputs": ["out"], "mutates": ["out"]}, "out", "both an output and mutated"),
        (saxpy, {"mutates": ["y", "y"]}, "y", "twice"),
        (saxpy, {"outputs": ["x", "y", "out"]}, "x", "which no input tensor binds"),
        (rows, {"outputs": ["x", "scaled"]}, "x", "the extent K, which no input tensor binds"),
    ],
)
def test_an_op_the_contract_cannot_make_is_refused(kernel, roles, param, says):
    with pytest.raises(pt.OpError) as caught:
        pt.op(kernel, blocks, name="phobos_tests::refused", **roles)
    assert caught.value.param == param and says in str(caught.value)
    assert isinstance(caught.value, LaunchError)


def test_only_a_kernel_makes_an_op():
    with pytest.raises(TypeError, match="takes a @ph.kernel"):
        pt.op(lambda x: x, (1,), outputs=["x"])


def test_bf16_on_the_cpu_is_refused_naming_the_parameter():
    from opkit import scale_bf16

    op = pt.op(scale_bf16, (1,), outputs=["y"], name="phobos_tests::scale_bf16")
    with pytest.raises(ArgumentTypeError, match="bfloat16 CPU tensor") as caught:
        op(torch.zeros(8, dtype=torch.bfloat16))
    assert caught.value.param == "x"


def test_without_torch_the_import_says_how_to_install_it():
    code = "import sys; sys.modules['torch'] = None\nimport phobos.torch\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and "`pip install torch`" in last
    # one exception, raised from nothing: no chain back through Phobos's own import
    assert "During handling" not in result.stderr and "direct cause" not in result.stderr
