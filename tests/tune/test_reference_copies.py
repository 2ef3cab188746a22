"""The reference runs on copies of the launch's arguments made by their own library
(phobos.tune.copies): torch tensors for torch, CuPy arrays for CuPy, numpy for the rest;
never on the caller's arrays."""

from __future__ import annotations

import contextlib
import io
import sys
import types

import numpy as np
import pytest
from tune_fakes import HostBackend
from tune_kernels import seeded

from phobos.tune import copies, tuner
from phobos.tune.device import TensorArg, TuneError

N = 1024


def grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    monkeypatch.delenv("PHOBOS_TUNE", raising=False)
    monkeypatch.setenv("PHOBOS_PROGRESS", "0")


def tune(kernel, args, reference, **kw):
    return tuner.tune(kernel, grid, args, reference=reference, backend=HostBackend(kernel, args),
                      out=io.StringIO(), jobs=1, **kw)  # fmt: skip


def statuses(record):
    return {r.stage or r.status for r in record.variants}


def tensors(*names):
    return [TensorArg(name, i, (N,), "<f4", "f32", 0) for i, name in enumerate(names)]


class FakeCupyArray:
    """What the copies need of a CuPy array: `device` (a context) and `copy()`; its
    type's module is `cupy`, as CuPy's own is."""

    entered = 0

    def __init__(self, data):
        self.data = data

    @property
    @contextlib.contextmanager
    def device(self):
        FakeCupyArray.entered += 1
        yield

    def copy(self):
        return FakeCupyArray(self.data.copy())


FakeCupyArray.__module__ = "cupy"


class FakeTorchTensor:
    """What the copies need of a torch tensor; its type's module is `torch`."""

    __module__ = "torch"

    def __init__(self, data, grad=False):
        self.data, self.grad = data, grad

    def detach(self):
        return FakeTorchTensor(self.data)

    def clone(self):
        assert not self.grad, "a tensor that needs grad is detached before it is cloned"
        return FakeTorchTensor(self.data.copy())

    def cpu(self):
        return self

    def numpy(self):
        return self.data


def test_numpy_arguments_give_numpy_copies_the_reference_cannot_mutate_the_originals():
    view = seeded.variant(V=1)
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, np.nan, dtype=np.float32)
    seen = []

    def doubled_and_scribbled(x_copy, y_copy):
        seen.append((type(x_copy), type(y_copy)))
        assert not np.shares_memory(x_copy, x) and not np.shares_memory(y_copy, y)
        y_copy[:] = 2.0 * x_copy

    record = tune(view, (x, y), doubled_and_scribbled)
    assert seen == [(np.ndarray, np.ndarray)]
    assert statuses(record) == {"timed"} and record.winner is not None
    assert np.isnan(y).all() and (x == np.arange(N)).all()  # the caller's, untouched


def test_a_reference_writing_every_argument_leaves_the_originals_alone():
    x, y = np.ones(N, dtype=np.float32), np.zeros(N, dtype=np.float32)

    def scribble(x, y, alpha):
        x[:] = -1.0
        y[:] = alpha

    args = (x, y, 3.0)
    expected = copies.run_reference(scribble, args, tensors("x", "y"),
                                    lambda t: np.array(args[t.index]))  # fmt: skip
    assert (expected["x"] == -1.0).all() and (expected["y"] == 3.0).all()
    assert (x == 1.0).all() and (y == 0.0).all()


def test_the_kind_is_read_from_the_type_without_importing_torch_or_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of either would fail
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert copies.kind(np.zeros(2)) == copies.kind(1.5) == "numpy"
    assert copies.kind(FakeTorchTensor(np.zeros(2))) == "torch"
    assert copies.kind(FakeCupyArray(np.zeros(2))) == "cupy"

    class DeviceOnly:  # only `__cuda_array_interface__`: copied to numpy on the host
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False)}

    assert copies.kind(DeviceOnly()) == "numpy"
    x = np.arange(N, dtype=np.float32)
    out = copies.run_reference(lambda x, y: None, (x, DeviceOnly()), tensors("x", "y"),
                               lambda t: np.zeros(N, np.float32))  # fmt: skip
    assert type(out["y"]) is np.ndarray


def test_torch_like_arguments_get_detached_clones():
    x = FakeTorchTensor(np.arange(N, dtype=np.float32), grad=True)
    y = FakeTorchTensor(np.zeros(N, dtype=np.float32))
    seen = []

    def reference(x, y):
        seen.append((type(x), type(y)))
        y.data[:] = 2.0 * x.data
        return y  # torch's in-place methods return the tensor they wrote

    expected = copies.run_reference(reference, (x, y), tensors("x", "y"), lambda t: None)
    assert seen == [(FakeTorchTensor, FakeTorchTensor)]
    assert type(expected["y"]) is np.ndarray and (expected["y"] == 2.0 * x.data).all()
    assert (y.data == 0.0).all()


def test_cupy_like_arguments_get_copies_on_their_device_and_compare_as_numpy(monkeypatch):
    fake = types.ModuleType("cupy")
    fake.asnumpy = lambda a: np.array(a.data)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    x = FakeCupyArray(np.arange(N, dtype=np.float32))
    y = FakeCupyArray(np.zeros(N, dtype=np.float32))
    before = FakeCupyArray.entered

    def reference(x, y):
        assert type(x) is FakeCupyArray and type(y) is FakeCupyArray
        y.data[:] = x.data + 1.0

    expected = copies.run_reference(reference, (x, y), tensors("x", "y"), lambda t: None)
    assert FakeCupyArray.entered == before + 2  # each copied on its own device
    assert type(expected["y"]) is np.ndarray and (expected["y"] == x.data + 1.0).all()
    assert (y.data == 0.0).all()


def test_a_torch_reference_tunes_a_kernel_launched_on_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    view = seeded.variant(V=1)
    x = torch.arange(N, dtype=torch.float32)
    y = torch.full((N,), float("nan"))
    seen = []

    def doubled(x, y):
        seen.append((type(x), type(y), x.device.type))
        return y.copy_(2 * x)

    record = tune(view, (x, y), doubled)
    assert seen == [(torch.Tensor, torch.Tensor, "cpu")]
    assert statuses(record) == {"timed"} and record.winner is not None
    assert torch.isnan(y).all()  # the reference wrote a clone

    # compared as numpy: a torch reference that disagrees leaves every variant out
    view = seeded.variant(V=1, BLOCK=256)
    tripled = tune(view, (x, y), lambda x, y: y.copy_(3 * x), force=True)
    assert statuses(tripled) == {"mismatch"} and tripled.winner is None


def test_a_reference_returning_a_new_value_still_stops_tuning():
    torch = pytest.importorskip("torch")
    view = seeded.variant(V=1, BLOCK=256)
    x, y = torch.ones(N), torch.zeros(N)
    with pytest.raises(TuneError, match="returned a value; it must write"):
        tune(view, (x, y), lambda x, y: 2 * x)
