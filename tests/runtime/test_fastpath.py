"""The launch fast path: a launch like an earlier one skips binding, and anything
unusual still gets the whole path's checks and errors."""

import re
import struct

import pytest
from test_cuda_fake import FakeDriver

from phobos.runtime import binding, cuda
from phobos.runtime.contract import KernelContract
from phobos.runtime.errors import ArgumentTypeError, ArgumentValueError, GridError
from phobos.runtime.launch_gpu import GpuKernel

PTX = ".version 8.0\n.target sm_90\n.address_size 64\n"


class DeviceArray:
    """A device array by `__cuda_array_interface__` alone."""

    def __init__(self, n, ptr, typestr="<f4"):
        self.__cuda_array_interface__ = {
            "shape": (n,),
            "typestr": typestr,
            "data": (ptr, False),
            "version": 3,
            "strides": None,
        }


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    fake = FakeDriver()
    previous = cuda.use_library(fake)
    contract = KernelContract.build(
        "scale",
        [("x", "tensor", ("f32", ("N",))), ("alpha", "scalar", "f32")],
        dyn_dims=("N",),
        chip="sm_90",
        fingerprint="test",
    )
    yield GpuKernel(contract, PTX), fake
    cuda.use_library(previous)


def count_binds(monkeypatch):
    calls = []
    real = binding.bind

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("phobos.runtime.launch_gpu.bind", counting)
    return calls


def test_a_repeated_launch_binds_once(kernel, monkeypatch):
    gpu, fake = kernel
    binds = count_binds(monkeypatch)
    for i in range(5):
        gpu.launch((4,), (DeviceArray(64, 0x10000 + 256 * i), 2.0 + i))
    assert len(binds) == 1
    assert len(fake.launches) == 5
    last = fake.launches[-1]
    assert last["grid"] == (4, 1, 1)
    ptr, alpha, n = last["slots"]
    assert struct.unpack("<Q", ptr)[0] == 0x10000 + 256 * 4
    assert struct.unpack("<f", alpha[:4])[0] == 6.0
    assert struct.unpack("<i", n[:4])[0] == 64


def test_a_new_signature_binds_again(kernel, monkeypatch):
    gpu, fake = kernel
    binds = count_binds(monkeypatch)
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    gpu.launch((1,), (DeviceArray(128, 0x10000), 1.0))
    assert len(binds) == 2
    assert struct.unpack("<i", fake.launches[-1]["slots"][2][:4])[0] == 128  # the extent N


def test_a_misaligned_pointer_gets_the_whole_paths_error(kernel):
    gpu, _ = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    with pytest.raises(ArgumentValueError, match="argument `x` starts at address 0x10004"):
        gpu.launch((1,), (DeviceArray(64, 0x10004), 1.0))


def test_a_scalar_out_of_range_gets_the_whole_paths_error(kernel):
    gpu, _ = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    with pytest.raises(ArgumentValueError, match="alpha"):
        gpu.launch((1,), (DeviceArray(64, 0x10000), 1e300))


def test_a_bad_grid_gets_the_whole_paths_error(kernel):
    gpu, fake = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    with pytest.raises(Exception, match="grid"):
        gpu.launch((0,), (DeviceArray(64, 0x10000), 1.0))
    assert len(fake.launches) == 1


def test_the_cubin_is_found_by_the_ptx_not_the_contract_alone(kernel):
    gpu, _ = kernel
    other = GpuKernel(gpu.contract, PTX + "// another kernel body\n")
    device = cuda.device(0)
    assert gpu.key_for(device) != other.key_for(device)
    assert gpu.key_for(device) == GpuKernel(gpu.contract, PTX).key_for(device)


def test_an_int_too_large_for_a_float_is_refused_by_name(kernel):
    gpu, _ = kernel
    with pytest.raises(ArgumentValueError, match="argument `alpha` is an integer too large"):
        gpu.launch((1,), (DeviceArray(64, 0x10000), 10**400))
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))  # a plan now exists
    with pytest.raises(ArgumentValueError, match="too large"):
        gpu.launch((1,), (DeviceArray(64, 0x10000), 10**400))


def test_a_grid_function_gets_its_own_copy_of_the_extents(kernel):
    gpu, fake = kernel
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (meta.pop("N") // 64,)

    for _ in range(3):
        gpu.launch(grid, (DeviceArray(128, 0x10000), 1.0))
    assert [m["N"] for m in seen] == [128, 128, 128]
    assert [launch["grid"] for launch in fake.launches] == [(2, 1, 1)] * 3


def test_an_unreadable_argument_has_no_signature():
    from phobos.runtime.fastpath import read

    class Odd:
        def data_ptr(self):
            return 0

        def get_device(self):
            return 0

    assert read((Odd(), 1.0), (True, False)) is None


def test_with_several_gpus_only_torch_like_arrays_take_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    previous = cuda.use_library(FakeDriver(devices=2))
    try:
        contract = KernelContract.build(
            "scale",
            [("x", "tensor", ("f32", ("N",))), ("alpha", "scalar", "f32")],
            dyn_dims=("N",),
            chip="sm_90",
            fingerprint="test",
        )
        gpu = GpuKernel(contract, PTX)
        binds = count_binds(monkeypatch)
        for _ in range(3):
            gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
        assert len(binds) == 3  # the interface dict does not say which device
    finally:
        cuda.use_library(previous)


def test_a_plan_writes_pointers_and_scalars_and_keeps_its_extents(kernel):
    gpu, fake = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    gpu.launch((1,), (DeviceArray(128, 0x20000), 2.0))  # a second signature, a second plan
    gpu.launch((1,), (DeviceArray(64, 0x30000), 3.0))  # the first plan again
    ptr, alpha, n = fake.launches[-1]["slots"]
    assert struct.unpack("<Q", ptr)[0] == 0x30000
    assert struct.unpack("<f", alpha[:4])[0] == 3.0
    assert struct.unpack("<i", n[:4])[0] == 64  # not the other plan's 128


def test_the_fast_path_passes_the_stream_and_raises_the_drivers_error(kernel):
    gpu, fake = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0), stream=0x77)
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0), stream=0x88)
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    assert [launch["stream"] for launch in fake.launches] == [0x77, 0x88, None]
    fake.fail["cuLaunchKernel"] = 701
    with pytest.raises(cuda.CudaError, match="cuLaunchKernel failed"):
        gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))


def test_a_grid_tuple_given_again_is_launched_as_checked_and_a_new_one_checked_again(kernel):
    gpu, fake = kernel
    grid = (3, 2)
    for _ in range(3):
        gpu.launch(grid, (DeviceArray(64, 0x10000), 1.0))
    gpu.launch((5,), (DeviceArray(64, 0x10000), 1.0))
    with pytest.raises(Exception, match="grid"):
        gpu.launch((0,), (DeviceArray(64, 0x10000), 1.0))
    assert [launch["grid"] for launch in fake.launches] == [(3, 2, 1)] * 3 + [(5, 1, 1)]


# ---------------------------------------------------------------------------
# After a launch made a plan, a launch of the same signature is still checked whole


def with_entries(n, ptr, **entries):
    array = DeviceArray(n, ptr)
    array.__cuda_array_interface__.update(entries)
    return array


@pytest.mark.parametrize(
    ("entries", "kind", "fragment"),
    [
        ({"mask": DeviceArray(64, 0x20000, "|b1")}, ArgumentTypeError, "masked array"),
        ({"data": (None, False)}, ArgumentTypeError, "data (None, False) is not a pair"),
        ({"data": (65536.0, False)}, ArgumentTypeError, "is not a pair"),
        ({"data": ("0x10000", False)}, ArgumentTypeError, "is not a pair"),
        ({"data": (0x10000, 0)}, ArgumentTypeError, "is not a pair"),
        ({"data": (-0x10000, False)}, ArgumentValueError, "not a 64-bit address"),
        ({"data": (0, False)}, ArgumentValueError, "a null data pointer"),
        ({"data": (2**64 + 0x10000, False)}, ArgumentValueError, "not a 64-bit address"),
        ({"shape": (64.0,)}, ArgumentTypeError, "holds a float"),  # 64.0 == 64 in a key
        ({"shape": (True,)}, ArgumentTypeError, "holds a bool"),
        ({"version": "3"}, ArgumentTypeError, "version '3'"),
    ],
)
def test_a_launch_like_a_planned_one_gets_the_whole_paths_refusal(kernel, entries, kind, fragment):
    gpu, fake = kernel
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))
    gpu.launch((1,), (DeviceArray(64, 0x10000), 1.0))  # by the plan
    with pytest.raises(kind, match=re.escape(fragment)) as info:
        gpu.launch((1,), (with_entries(64, 0x10000, **entries), 1.0))
    assert info.value.param == "x"
    assert len(fake.launches) == 2


def test_a_shape_of_true_is_not_the_plan_of_extent_one():
    from phobos.runtime.fastpath import read

    found = read((with_entries(4, 0x10000, shape=(True,)), 1.0), (True, False))
    assert found is None


@pytest.mark.parametrize("bad", [None, 0, (0,), "1", lambda meta: None])
def test_a_bad_grid_after_a_grid_function_is_the_whole_paths_grid_error(kernel, bad):
    gpu, fake = kernel
    for _ in range(2):  # a plan, then a launch by it: no tuple grid checked yet
        gpu.launch(lambda meta: (meta["N"] // 64,), (DeviceArray(64, 0x10000), 1.0))
    with pytest.raises(GridError, match="grid"):
        gpu.launch(bad, (DeviceArray(64, 0x10000), 1.0))
    assert len(fake.launches) == 2


def test_a_torch_like_pointer_that_is_not_an_int_takes_the_whole_path(kernel):
    class Odd:
        dtype, shape, requires_grad = "float32", (64,), False

        def __init__(self, ptr):
            self.ptr = ptr
            self.__cuda_array_interface__ = DeviceArray(64, ptr).__cuda_array_interface__

        def data_ptr(self):
            return float(self.ptr) if self.ptr == 0x30000 else self.ptr

        def get_device(self):
            return 0

        def stride(self):
            return (1,)

    gpu, fake = kernel
    gpu.launch((1,), (Odd(0x10000), 1.0))
    gpu.launch((1,), (Odd(0x30000), 1.0))  # the plan gets 196608.0: the whole path binds
    assert struct.unpack("<Q", fake.launches[-1]["slots"][0])[0] == 0x30000


def test_a_bare_v2_array_after_a_bf16_one_is_refused_on_the_fast_path_too(tmp_path, monkeypatch):
    # bf16 has no typestr of its own: `<V2` is bf16 only by its `descr` (or `dtype`), which
    # the signature must therefore read too, or an array of two opaque bytes an element
    # would take the plan a bf16 launch made.
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    previous = cuda.use_library(FakeDriver())
    try:
        contract = KernelContract.build(
            "half", [("x", "tensor", ("bf16", ("N",)))], dyn_dims=("N",), chip="sm_90",
            fingerprint="test",
        )  # fmt: skip
        gpu = GpuKernel(contract, PTX)
        bf16 = DeviceArray(64, 0x10000, "<V2")
        bf16.__cuda_array_interface__["descr"] = [("bfloat16", "<V2")]
        gpu.launch((1,), (bf16,))
        gpu.launch((1,), (bf16,))  # the plan's signature
        bare = DeviceArray(64, 0x10000, "<V2")
        bare.__cuda_array_interface__["descr"] = [("", "<V2")]
        with pytest.raises(ArgumentTypeError, match="`x`"):
            gpu.launch((1,), (bare,))
    finally:
        cuda.use_library(previous)
