"""Launching on the CPU (phobos.runtime.launch_cpu) and `kernel[grid](*args)`.

Most tests run a stub in place of the tile interpreter, which records what it is
given and computes saxpy in numpy, so the launch path is tested on its own: which
arrays and extents reach the interpreter, that stores land in the caller's arrays,
that device arrays go to the host and back through the copier. The last test runs
examples/saxpy.py end to end on the real checker and interpreter.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from phobos.lang.kernels import KernelCompileError, install_excepthook  # noqa: E402
from phobos.runtime.errors import (  # noqa: E402
    ArgumentTypeError,
    ArgumentValueError,
    GridError,
    LaunchError,
)
from phobos.runtime.launch_cpu import (  # noqa: E402
    PERSISTENT_CPU_CTAS,
    launch_cpu,
    numpy_module,
    set_copier,
)
from phobos.sema import hir  # noqa: E402
from phobos.sema.attributes import KernelAttributes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
F32 = hir.Scalar("f32")
N = hir.Dyn("N")


def saxpy_hir(**attributes) -> hir.Kernel:
    """saxpy's signature as the checker gives it, with an empty body (the stub runs it)."""
    params = tuple(
        hir.Sym(name, i, "param", hir.TensorT(F32, (N,)))
        for i, name in enumerate(("x", "y", "out"))
    ) + (hir.Sym("alpha", 3, "param", F32),)
    attrs = KernelAttributes(autotune={"BLOCK": (16, 32)}, **attributes)
    return hir.Kernel("saxpy", params, hir.Block(()), attrs, (("BLOCK", 16),), ("N",))


class Interpreter:
    """Stands in for `phobos.interp.tiles.run_kernel`: records each call, runs saxpy."""

    def __init__(self):
        self.calls = []

    def run_kernel(self, kernel, grid, args, dims):
        self.calls.append((kernel, grid, dict(args), dict(dims)))
        block = dict(kernel.variant)["BLOCK"]
        n = min(dims["N"], grid[0] * block)  # only the CTAs launched store
        out = args["alpha"] * args["x"][:n].astype(np.float64) + args["y"][:n]
        args["out"][:n] = out.astype(np.float32)


@pytest.fixture
def interp(monkeypatch):
    stub = Interpreter()
    module = types.ModuleType("phobos.interp.tiles")
    module.run_kernel = stub.run_kernel
    monkeypatch.setitem(sys.modules, "phobos.interp.tiles", module)
    return stub


def cdiv_grid(meta):
    return ((meta["N"] + meta["BLOCK"] - 1) // meta["BLOCK"],)


def inputs(n, rng=None):
    rng = rng or np.random.default_rng()
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    y = rng.uniform(-2.0, -0.5, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    return x, y, out


def reference(x, y, alpha):
    return alpha * x.astype(np.float64) + y.astype(np.float64)


# ---------------------------------------------------------------------------
# launch_cpu


def test_interpreter_gets_views_of_the_callers_arrays(interp):
    x, y, out = inputs(1000)
    kernel = saxpy_hir()
    bound = launch_cpu(kernel, cdiv_grid, (x, y, out, 1.5))
    [(got_kernel, grid, args, dims)] = interp.calls
    assert got_kernel is kernel and grid == (63,) and dims == {"N": 1000}
    assert bound.dims == dims
    for name, array in (("x", x), ("y", y), ("out", out)):
        assert isinstance(args[name], np.ndarray) and np.shares_memory(args[name], array)
    assert args["alpha"] == 1.5 and type(args["alpha"]) is float
    np.testing.assert_allclose(out, reference(x, y, 1.5), rtol=1e-6)


def test_grid_function_sees_extents_and_constants(interp):
    seen = []
    x, y, out = inputs(64)
    launch_cpu(saxpy_hir(), lambda meta: seen.append(meta) or (4, 2), (x, y, out, 1.0))
    assert seen == [{"N": 64, "BLOCK": 16}]
    assert interp.calls[0][1] == (4, 2)


class HostWrapper:
    """A foreign host array: only `__array_interface__`, over a numpy array's memory."""

    def __init__(self, array):
        self._array = array
        self.__array_interface__ = array.__array_interface__


def test_any_array_interface_object_runs_in_place(interp):
    x, y, out = inputs(36)
    launch_cpu(saxpy_hir(), (3,), (HostWrapper(x), HostWrapper(y), HostWrapper(out), -0.5))
    np.testing.assert_allclose(out, reference(x, y, -0.5), rtol=1e-6)


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ({"shape": (36.0,)}, "shape (36.0,) holds a float"),
        ({"shape": ("36",)}, "shape ('36',) holds a str"),
        ({"typestr": "<f04"}, "typestr '<f04' is not a typestr"),
        ({"data": (-4096, False)}, "the data pointer -4096, which is not a 64-bit address"),
        ({"shape": (2**31,)}, "binds N = 2147483648, more than a 32-bit index holds"),
    ],
)
def test_a_malformed_host_array_is_refused_before_the_interpreter(interp, entries, fragment):
    x, y, out = inputs(36)
    wild = HostWrapper(x)
    wild.__array_interface__ = {**x.__array_interface__, **entries}
    with pytest.raises(LaunchError) as info:
        launch_cpu(saxpy_hir(), (3,), (wild, y, out, 1.0))
    assert info.value.param == "x" and fragment in str(info.value)
    assert interp.calls == []


class DeviceArray:
    """A fake device array: `__cuda_array_interface__` over memory the test keeps."""

    def __init__(self, host):
        self.memory = host.copy()  # "device memory", reachable only through the copier
        self.__cuda_array_interface__ = {
            "shape": host.shape,
            "typestr": host.dtype.str,
            "data": (0x7F0000000000, False),
            "strides": None,
            "version": 3,
        }


class Copier:
    def __init__(self):
        self.log = []

    def to_host(self, obj, info):
        self.log.append(("to_host", info.shape))
        return obj.memory.copy()

    def to_device(self, obj, host, info):
        self.log.append(("to_device", info.shape))
        obj.memory[...] = host


def test_device_arrays_copy_to_the_host_and_back(interp):
    x, y, out = inputs(40)
    dx, dy, dout = DeviceArray(x), DeviceArray(y), DeviceArray(out)
    copier = Copier()
    launch_cpu(saxpy_hir(), cdiv_grid, (dx, dy, dout, 2.0), copy_device=True, copier=copier)
    np.testing.assert_allclose(dout.memory, reference(x, y, 2.0), rtol=1e-6)
    assert copier.log.count(("to_host", (40,))) == 3
    assert copier.log.count(("to_device", (40,))) == 3
    assert copier.log.index(("to_device", (40,))) > 2  # back only after the kernel ran


def test_the_copier_in_use_is_pluggable(interp, monkeypatch):
    x, y, out = inputs(8)
    copier = Copier()
    previous = set_copier(copier)
    try:
        args = (DeviceArray(x), DeviceArray(y), DeviceArray(out), 1.0)
        launch_cpu(saxpy_hir(), (1,), args, copy_device=True)
    finally:
        set_copier(previous)
    assert len(copier.log) == 6


def test_device_arrays_without_copies_are_refused_before_running(interp):
    x, y, out = inputs(8)
    with pytest.raises(ArgumentValueError, match="argument `y` is in device memory"):
        launch_cpu(saxpy_hir(), (1,), (x, DeviceArray(y), out, 1.0))
    assert interp.calls == []


def test_a_copier_that_fails_names_the_parameter(interp):
    x, y, out = inputs(8)

    class Failing(Copier):
        def to_host(self, obj, info):
            raise RuntimeError("the device is gone")

    args = (x, y, DeviceArray(out), 1.0)
    with pytest.raises(ArgumentValueError, match="`out` could not be copied to the host"):
        launch_cpu(saxpy_hir(), (1,), args, copy_device=True, copier=Failing())
    assert interp.calls == []


def test_bad_argument_refused_before_running(interp):
    x, y, out = inputs(12)
    with pytest.raises(ArgumentTypeError, match="argument `y` has element type float64"):
        launch_cpu(saxpy_hir(), (1,), (x, y.astype(np.float64), out, 1.0))
    with pytest.raises(ArgumentValueError, match="argument `out` has N = 16"):
        launch_cpu(saxpy_hir(), (1,), (x, y, np.zeros(16, np.float32), 1.0))
    with pytest.raises(ArgumentValueError, match="argument `x` is read-only"):
        x.flags.writeable = False
        launch_cpu(saxpy_hir(), (1,), (x, y, out, 1.0))
    assert interp.calls == []


def test_bad_grid_refused_before_running(interp):
    x, y, out = inputs(12)
    for grid in ((0,), (1.5,), "12", lambda meta: None):
        with pytest.raises(GridError):
            launch_cpu(saxpy_hir(), grid, (x, y, out, 1.0))
    assert interp.calls == []


def test_aligned_promise_uses_the_variant(interp):
    kernel = saxpy_hir(aligned={"N": "BLOCK"})
    x, y, out = inputs(40)  # a multiple of 4, not of BLOCK = 16
    with pytest.raises(ArgumentValueError, match=r"not a multiple of BLOCK = 16"):
        launch_cpu(kernel, cdiv_grid, (x, y, out, 1.0))
    x, y, out = inputs(48)
    launch_cpu(kernel, cdiv_grid, (x, y, out, 1.0))
    assert interp.calls[0][1] == (3,)


def test_persistent_kernel_sizes_its_own_grid(interp):
    x, y, out = inputs(16)
    launch_cpu(saxpy_hir(persistent=True), (), (x, y, out, 1.0))
    assert interp.calls[0][1] == (PERSISTENT_CPU_CTAS,)
    with pytest.raises(GridError, match="sizes its own grid"):
        launch_cpu(saxpy_hir(persistent=True), (4,), (x, y, out, 1.0))


def test_missing_numpy_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(
        ImportError, match=r'the tile interpreter needs numpy: pip install "phobos\[numpy\]"'
    ):
        numpy_module()


# ---------------------------------------------------------------------------
# kernel[grid](*args)


def load_example(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"phobos_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Checker:
    """Stands in for `phobos.sema.check`: gives saxpy's hir, counting the checks."""

    def __init__(self, diagnostics=()):
        self.calls = []
        self.diagnostics = list(diagnostics)

    def check_kernel(self, program, name, variant=None):
        self.calls.append((name, variant))
        if self.diagnostics:
            return None, self.diagnostics
        return saxpy_hir(), []


@pytest.fixture
def checker(monkeypatch):
    stub = Checker()
    module = types.ModuleType("phobos.sema.check")
    module.check_kernel = stub.check_kernel
    monkeypatch.setitem(sys.modules, "phobos.sema.check", module)
    return stub


@pytest.fixture
def saxpy():
    return load_example("saxpy").saxpy


def test_launch_checks_once_and_runs_on_numpy(interp, checker, saxpy, monkeypatch):
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    for n in (1000, 200):
        x, y, out = inputs(n)
        saxpy[cdiv_grid](x, y, out, 0.25)
        np.testing.assert_allclose(out, reference(x, y, 0.25), rtol=1e-6)
    assert checker.calls == [("saxpy", None)]
    assert [call[3] for call in interp.calls] == [{"N": 1000}, {"N": 200}]


def test_launch_takes_arguments_by_name(interp, checker, saxpy):
    x, y, out = inputs(20)
    saxpy[(2,)](x, y, alpha=3.0, out=out)
    np.testing.assert_allclose(out, reference(x, y, 3.0), rtol=1e-6)
    with pytest.raises(ArgumentTypeError, match="no parameter `beta`"):
        saxpy[(2,)](x, y, out, beta=1.0)
    with pytest.raises(ArgumentTypeError, match="`x` is given twice"):
        saxpy[(2,)](x, y, out, x=x)
    with pytest.raises(ArgumentTypeError, match="argument `out` is missing"):
        saxpy[(2,)](x, y, alpha=1.0)


def test_launch_refusal_names_the_parameter(interp, checker, saxpy):
    x, y, out = inputs(20)
    with pytest.raises(LaunchError, match=r"^`saxpy`: argument `alpha` is a str"):
        saxpy[(2,)](x, y, out, "2")
    with pytest.raises(LaunchError, match="takes 4 arguments, but 3 were given"):
        saxpy[(2,)](x, y, out)
    assert interp.calls == []


def test_device_arrays_need_interpret_mode(interp, checker, saxpy, monkeypatch):
    from phobos.runtime import cuda

    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    # A device array goes to the GPU; with no driver (forced here), the error says so,
    # once the arguments bind: host arrays beside it are refused as on a GPU.
    monkeypatch.setattr(cuda, "LIBRARY", "libcuda-absent-for-this-test.so.1")
    monkeypatch.setattr(cuda, "_LIB", None)
    x, y, out = inputs(8)
    with pytest.raises(ArgumentValueError, match="argument `x` is in host memory"):
        saxpy[(1,)](x, DeviceArray(y), out, 1.0)
    with pytest.raises(cuda.DriverUnavailable, match="PHOBOS_INTERPRET=1 runs it on the CPU"):
        saxpy[(1,)](DeviceArray(x), DeviceArray(y), DeviceArray(out), 1.0)

    monkeypatch.setenv("PHOBOS_INTERPRET", "1")
    copier = Copier()
    previous = set_copier(copier)
    try:
        dout = DeviceArray(out)
        saxpy[(1,)](x, DeviceArray(y), dout, 1.0)
    finally:
        set_copier(previous)
    np.testing.assert_allclose(dout.memory, reference(x, y, 1.0), rtol=1e-6)
    assert len(copier.log) == 4  # y and out, there and back


def test_checker_errors_raise_the_report(interp, saxpy, monkeypatch):
    from phobos.diagnostics import Diagnostic

    stub = Checker([Diagnostic.error("E0250", "something is wrong", None)])
    module = types.ModuleType("phobos.sema.check")
    module.check_kernel = stub.check_kernel
    monkeypatch.setitem(sys.modules, "phobos.sema.check", module)
    x, y, out = inputs(8)
    with pytest.raises(KernelCompileError, match="something is wrong"):
        saxpy[(1,)](x, y, out, 1.0)
    assert interp.calls == []


def test_uncaught_launch_error_prints_its_message_alone(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: seen.append(exc))
    monkeypatch.delenv("PHOBOS_TRACEBACK", raising=False)
    install_excepthook()
    error = ArgumentTypeError("saxpy", "x", "argument `x` is a str", help="pass an array")
    sys.excepthook(type(error), error, None)
    assert capsys.readouterr().err == (
        "error: `saxpy`: argument `x` is a str\n  = help: pass an array\n"
    )
    assert seen == []
    from phobos.tune.device import TuneError

    tuning = TuneError("`saxpy` cannot be tuned while a CUDA graph is being captured")
    sys.excepthook(TuneError, tuning, None)
    assert capsys.readouterr().err == f"error: {tuning}\n"
    from phobos.runtime.assemble import PtxasNotFound, find_ptxas

    with pytest.raises(PtxasNotFound) as setting:
        find_ptxas({"PHOBOS_PTXAS": "/no/such/ptxas"})
    sys.excepthook(PtxasNotFound, setting.value, None)
    assert capsys.readouterr().err.startswith(
        "error: PHOBOS_PTXAS='/no/such/ptxas' is not a program that can be run (set it to"
    )
    other = RuntimeError("not ours")
    sys.excepthook(RuntimeError, other, None)
    assert seen == [(RuntimeError, other, None)]


# ---------------------------------------------------------------------------
# End to end: examples/saxpy.py on the real checker and interpreter


def test_saxpy_example_end_to_end(monkeypatch):
    pytest.importorskip("phobos.interp.tiles")
    pytest.importorskip("phobos.sema.check")
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    saxpy = load_example("saxpy").saxpy
    rng = np.random.default_rng()
    for n in (1000, 36):  # ragged: multiples of 4, not of BLOCK (16)
        x, y, out = inputs(n, rng)
        alpha = float(rng.uniform(0.5, 2.0))
        saxpy[cdiv_grid](x, y, out, alpha)
        assert not np.isnan(out).any()
        want = reference(x, y, np.float32(alpha))
        np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-6)
