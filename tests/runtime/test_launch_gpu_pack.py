"""Packing and launching on the GPU (phobos.runtime.launch_gpu), through a fake driver.

The slots a launch hands `cuLaunchKernel` are read back byte for byte as the fake
driver saw them at the call; grid, block, stream and shared memory are checked as
passed. Every refusal must come before the driver is asked to launch anything.
"""

from __future__ import annotations

import ctypes
import struct

import pytest
from devkit import Dev
from test_cuda_fake import FakeDriver

from phobos.runtime import cuda
from phobos.runtime.contract import KernelContract
from phobos.runtime.errors import ArgumentTypeError, ArgumentValueError, GridError, LaunchError
from phobos.runtime.launch_gpu import GpuKernel, Packer, params_of, stream_handle

ALL_SCALARS = ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "u16", "u32", "bool"]


def contract(params, dyn_dims=("N",), **rest) -> KernelContract:
    return KernelContract.build(
        "k", params, dyn_dims=dyn_dims, chip="sm_90", fingerprint="fp", **rest
    )


SAXPY = [
    ("x", "tensor", ("f32", ("N",))),
    ("y", "tensor", ("f32", ("N",))),
    ("alpha", "scalar", "f32"),
]


def kernel(c: KernelContract, tmp_path) -> GpuKernel:
    from phobos.runtime.cache import KernelCache

    return GpuKernel(c, ".version 8.0\n.target sm_90\n", cache=KernelCache(tmp_path))


def launched(fake):
    assert len(fake.launches) == 1, "the driver was asked to launch once"
    return fake.launches[0]


# ---------------------------------------------------------------------------
# The packer


def test_packer_slot_layout_and_values_for_every_scalar_type():
    params = [("A", "tensor", ("u8", ("M", "N")))]
    params += [(f"s_{t}", "scalar", t) for t in ALL_SCALARS]
    c = contract(params, dyn_dims=("M", "N"), index_width=64)
    packer = Packer(c)
    assert [(p.kind, p.ptx_type, p.width) for p in c.params] == [
        ("ptr", "u64", 8),
        ("scalar", "b16", 2),
        ("scalar", "b16", 2),
        ("scalar", "f32", 4),
        ("scalar", "f64", 8),
        ("scalar", "s32", 4),
        ("scalar", "s32", 4),
        ("scalar", "s64", 8),
        ("scalar", "u32", 4),
        ("scalar", "u32", 4),
        ("scalar", "u32", 4),
        ("scalar", "u32", 4),
        ("extent", "s64", 8),
        ("extent", "s64", 8),
    ]
    args = [Dev((8, 12), "|u1", ptr=0xDEAD_BEE0)]
    args += [1.5, 1.5, 0.1, 0.1, -5, -7, -(2**40), 200, 65535, 2**32 - 1, True]
    bound = GpuKernel(c, "").bind(args)
    array = packer.pack(bound)
    raw = [ctypes.string_at(array[i], p.width) for i, p in enumerate(c.params)]
    assert ctypes.sizeof(array) == 8 * len(c.params)
    assert raw[0] == struct.pack("<Q", 0xDEAD_BEE0)
    assert raw[1] == struct.pack("<e", 1.5)  # f16 bits
    assert raw[2] == struct.pack("<f", 1.5)[2:]  # bf16: the high half of the f32
    assert raw[3] == struct.pack("<f", 0.1)
    assert raw[4] == struct.pack("<d", 0.1)
    assert raw[5] == struct.pack("<i", -5)  # i8 sign-extended to 32 bits
    assert raw[6] == struct.pack("<i", -7)
    assert raw[7] == struct.pack("<q", -(2**40))
    assert raw[8:12] == [struct.pack("<I", v) for v in (200, 65535, 2**32 - 1, 1)]
    assert raw[12:] == [struct.pack("<q", 8), struct.pack("<q", 12)]


def test_packer_reuses_its_buffers(fake, tmp_path):
    k = kernel(contract(SAXPY), tmp_path)
    k.launch((1,), (Dev((8,), ptr=0x1000), Dev((8,), ptr=0x2000), 1.0))
    k.launch((1,), (Dev((16,), ptr=0x3000), Dev((16,), ptr=0x4000), 3.0))
    first, second = fake.launches
    assert first["slots"][0][:8] == struct.pack("<Q", 0x1000)
    assert second["slots"][0][:8] == struct.pack("<Q", 0x3000)
    assert second["slots"][2][:4] == struct.pack("<f", 3.0)
    assert second["slots"][3][:4] == struct.pack("<i", 16)


def test_params_of_the_contract_bind_as_the_kernel_would():
    c = contract([("A", "tensor", ("f16", ("M", 64))), ("n", "scalar", "i32")], ("M",))
    syms = params_of(c)
    assert [s.name for s in syms] == ["A", "n"]
    assert str(syms[0].type) == "tensor<f16>[M, 64]" and str(syms[1].type) == "i32"


# ---------------------------------------------------------------------------
# Launching


def test_launch_passes_grid_block_stream_and_shared(fake, tmp_path):
    k = kernel(contract(SAXPY, threads=128), tmp_path)
    counts = k.launch(
        lambda m: (m["N"] // 4, 3), (Dev((1024,)), Dev((1024,)), 2.0), stream=0x5000, shared=4096
    )
    call = launched(fake)
    assert counts == (256, 3)
    assert call["call"] == "cuLaunchKernel"
    assert call["grid"] == (256, 3, 1) and call["block"] == (128, 1, 1)
    assert call["stream"] == 0x5000 and call["shared"] == 4096
    assert call["function"] == 0x3000


def test_launch_defaults_legacy_stream_and_contract_shared(fake, tmp_path):
    k = kernel(contract(SAXPY, dynamic_smem=2048), tmp_path)
    k.launch((2,), (Dev((8,)), Dev((8,)), 2.0))
    call = launched(fake)
    assert call["stream"] in (0, None) and call["shared"] == 2048


def test_large_dynamic_shared_raises_the_limit_once(fake, tmp_path):
    k = kernel(contract(SAXPY, dynamic_smem=100 * 1024), tmp_path)
    k.launch((2,), (Dev((8,)), Dev((8,)), 2.0))
    k.launch((2,), (Dev((8,)), Dev((8,)), 2.0))
    sets = [c for c in fake.calls if c[0] == "cuFuncSetAttribute"]
    assert [c[1][1:] for c in sets] == [(cuda.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024)]


def test_persistent_kernel_launches_cooperatively_on_every_sm(fake, tmp_path):
    fake.blocks_per_sm = 3
    k = kernel(contract(SAXPY, persistent=True), tmp_path)
    counts = k.launch((), (Dev((8,)), Dev((8,)), 2.0))
    call = launched(fake)
    assert call["call"] == "cuLaunchCooperativeKernel"
    assert counts == (3 * 132,) and call["grid"] == (396, 1, 1)
    with pytest.raises(GridError, match="sizes its own grid"):
        k.launch((4,), (Dev((8,)), Dev((8,)), 2.0))


def test_persistent_kernel_that_fits_nowhere_is_refused(fake, tmp_path):
    fake.blocks_per_sm = 0
    k = kernel(contract(SAXPY, persistent=True), tmp_path)
    with pytest.raises(LaunchError, match="no CTA of 256 threads"):
        k.launch((), (Dev((8,)), Dev((8,)), 2.0))
    assert not fake.launches


def test_stream_handles():
    class TorchLike:
        cuda_stream = 0x77

    class CupyLike:
        ptr = 0x88

    assert stream_handle(None) == 0 and stream_handle(5) == 5
    assert stream_handle(TorchLike()) == 0x77 and stream_handle(CupyLike()) == 0x88
    with pytest.raises(TypeError, match="stream="):
        stream_handle("default")


# ---------------------------------------------------------------------------
# Refusals: all before the driver launches


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((Dev((8,), "<f8"), Dev((8,)), 2.0), ArgumentTypeError, "`x` has element type float64"),
        ((Dev((8,)), Dev((12,)), 2.0), ArgumentValueError, "`y` has N = 12"),
        ((Dev((8,)), Dev((8,)), "2"), ArgumentTypeError, "`alpha` is a str"),
        ((Dev((6,)), Dev((6,)), 2.0), ArgumentValueError, "not a multiple of 4"),
        ((Dev((8,), ptr=0x1002), Dev((8,)), 2.0), ArgumentValueError, "`x` starts at address"),
    ],
)
def test_bad_arguments_refused_before_the_driver(fake, tmp_path, args, error, message):
    k = kernel(contract(SAXPY), tmp_path)
    with pytest.raises(error, match=message):
        k.launch((1,), args)
    assert "cuLaunchKernel" not in fake.names()
    assert "cuModuleLoadDataEx" not in fake.names()


def test_host_array_refused_for_the_gpu(fake, tmp_path):
    np = pytest.importorskip("numpy")
    k = kernel(contract(SAXPY), tmp_path)
    x = np.zeros(8, np.float32)
    with pytest.raises(ArgumentValueError, match="`x` is in host memory"):
        k.launch((1,), (x, Dev((8,)), 2.0))
    with pytest.raises(ArgumentValueError, match="`y` is in host memory"):
        k.launch((1,), (Dev((8,)), _OnlyDLPack(x), 2.0))  # a DLPack capsule of host memory
    assert not fake.launches


class _OnlyDLPack:
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_too_many_threads_for_the_registers(fake, tmp_path):
    fake.func_attrs[cuda.FUNC_MAX_THREADS_PER_BLOCK] = 512
    k = kernel(contract(SAXPY, threads=1024), tmp_path)
    with pytest.raises(LaunchError, match="runs 1024 threads per CTA.*allows 512"):
        k.launch((1,), (Dev((8,)), Dev((8,)), 2.0))
    assert not fake.launches


def test_too_much_shared_memory(fake, tmp_path):
    k = kernel(contract(SAXPY, dynamic_smem=232448), tmp_path)  # + 1024 static
    with pytest.raises(LaunchError, match="needs 233472 bytes of shared memory"):
        k.launch((1,), (Dev((8,)), Dev((8,)), 2.0))
    assert not fake.launches


def test_extent_past_a_32_bit_index(fake, tmp_path):
    c = contract([("x", "tensor", ("u8", ("N",)))])
    k = kernel(c, tmp_path)
    with pytest.raises(ArgumentValueError, match="`x` binds N = 4294967296, more than a 32-bit"):
        k.launch((1,), (Dev((2**32,), "|u1"),))
    assert not fake.launches


def test_arrays_on_two_devices_are_refused(tmp_path):
    driver = FakeDriver(devices=2)
    previous = cuda.use_library(driver)
    try:
        driver.pointer_devices = {0x1000: 1, 0x2000: 0}
        k = kernel(contract(SAXPY), tmp_path)
        with pytest.raises(ArgumentValueError, match="`y` is on device 0, but argument `x`"):
            k.launch((1,), (Dev((8,), ptr=0x1000), Dev((8,), ptr=0x2000), 2.0))
        driver.pointer_devices = {0x1000: 1, 0x2000: 1}
        k.launch((1,), (Dev((8,), ptr=0x1000), Dev((8,), ptr=0x2000), 2.0))
        assert driver.launches and ("cuDeviceGet", (1,)) in driver.calls
    finally:
        cuda.use_library(previous)
