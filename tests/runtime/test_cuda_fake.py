"""The driver binding (phobos.runtime.cuda, module) against a fake driver, no GPU.

`FakeDriver` stands in for `libcuda.so.1`: each driver function is a method taking
what the binding passes (ctypes pointers for out-parameters, which it writes), and
every call is recorded. test_launch_gpu_pack.py launches through it too. Its
`cuTensorMapEncodeTiled` records its arguments in `tensor_maps` and writes the 128
bytes `fake_map_bytes` derives from them. Its `cuLaunchKernelEx` and
`cuOccupancyMaxActiveClusters` read the `CUlaunchConfig` they are given by the bytes
at cuda.h's offsets (`read_launch_config`), never through the binding's own structs,
so a struct of the binding that drifts from the header's layout is caught.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import struct

import pytest

from phobos.runtime import cuda
from phobos.runtime.cache import KernelCache, entry_key
from phobos.runtime.module import Module, link, load_kernel

ERROR_NAMES = {218: b"CUDA_ERROR_INVALID_PTX", 200: b"CUDA_ERROR_INVALID_IMAGE"}
ERROR_TEXTS = {218: b"a PTX JIT compilation failed", 200: b"device kernel image is invalid"}
ERROR_NAMES[912] = b"CUDA_ERROR_INVALID_CLUSTER_SIZE"
ERROR_TEXTS[912] = b"a kernel launch error due to cluster misconfiguration"
ATTRIBUTES = {
    cuda.ATTR_COMPUTE_CAPABILITY_MAJOR: 9,
    cuda.ATTR_COMPUTE_CAPABILITY_MINOR: 0,
    cuda.ATTR_MULTIPROCESSOR_COUNT: 132,
    cuda.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
    cuda.ATTR_L2_CACHE_SIZE: 52428800,
    cuda.ATTR_MAX_THREADS_PER_BLOCK: 1024,
    cuda.ATTR_COOPERATIVE_LAUNCH: 1,
}
PTXAS_LOG = b"ptxas application ptx input, line 7; error   : Unknown symbol 'nope'"

# cuda.h's CUlaunchConfig on x86-64 (checked by compiling against the CUDA 13.0 header;
# the same since 12.0): gridDimX/Y/Z, blockDimX/Y/Z and sharedMemBytes, 4-byte unsigned
# ints at 0 to 24; 4 bytes of padding; hStream at 32; attrs at 40; numAttrs at 48; 56
# bytes in all. A CUlaunchAttribute: id (a 4-byte enum), 4 bytes of padding, then the
# 64-byte CUlaunchAttributeValue union at 8, whose clusterDim is 3 unsigned ints at 0.
LAUNCH_CONFIG = struct.Struct("<7I4xQQI4x")
LAUNCH_ATTRIBUTE_BYTES = 72
LAUNCH_ATTRIBUTE_VALUE_AT = 8


def read_launch_config(config) -> dict:
    """The `CUlaunchConfig` at `config` (a ctypes pointer, or an address), with its
    attributes as (id, the first three unsigned ints of the value), read as raw bytes."""
    address = ctypes.addressof(config.contents) if hasattr(config, "contents") else config
    gx, gy, gz, bx, by, bz, shared, stream, attrs, count = LAUNCH_CONFIG.unpack(
        ctypes.string_at(address, LAUNCH_CONFIG.size)
    )
    attributes = []
    for i in range(count):
        raw = ctypes.string_at(attrs + i * LAUNCH_ATTRIBUTE_BYTES, LAUNCH_ATTRIBUTE_BYTES)
        (ident,) = struct.unpack_from("<i", raw)
        attributes.append((ident, struct.unpack_from("<3I", raw, LAUNCH_ATTRIBUTE_VALUE_AT)))
    return dict(grid=(gx, gy, gz), block=(bx, by, bz), shared=shared, stream=stream,
                attributes=attributes)  # fmt: skip


def cluster_of(attributes) -> tuple[int, int, int] | None:
    """The cluster dimension among a launch's attributes, or None."""
    dims = [v for ident, v in attributes if ident == cuda.LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION]
    return dims[0] if dims else None


def fake_map_bytes(args: dict) -> bytes:
    """The 128 bytes the fake driver encodes a tensor map of these arguments as: a
    digest of them, so two maps differ exactly where their arguments do."""
    digest = hashlib.sha256(repr(sorted(args.items())).encode()).digest()
    return digest * 4


def _handle(func) -> int:
    """A function handle as the binding passes it: an int, or a ctypes pointer."""
    return getattr(func, "value", func) or 0


class FakeDriver:
    """A CUDA driver with `devices` GPUs, recording calls. Each GPU is of compute
    capability 9.0 unless `capabilities` gives a (major, minor) per ordinal; its other
    attributes are `attributes` (`ATTRIBUTES`, 132 SMs, unless a test sets them)."""

    def __init__(self, devices=1, capabilities=None):
        self.devices = devices
        self.capabilities = list(capabilities or [(9, 0)] * devices)
        self.attributes = dict(ATTRIBUTES)
        self.calls: list[tuple[str, tuple]] = []
        self.fail: dict[str, int] = {}  # call name -> the status it returns
        self.pointer_devices: dict[int, int] = {}
        self.func_attrs = {
            cuda.FUNC_NUM_REGS: 32,
            cuda.FUNC_SHARED_SIZE_BYTES: 1024,
            cuda.FUNC_MAX_THREADS_PER_BLOCK: 1024,
            cuda.FUNC_LOCAL_SIZE_BYTES: 0,
        }
        self.blocks_per_sm = 2
        self.clusters = None  # clusters resident at once (None: CTAs resident // size)
        self.dynamic_limits: dict[int, int] = {}  # function -> its dynamic shared bytes allowed
        self.launches: list[dict] = []
        self.tensor_maps: list[dict] = []  # each cuTensorMapEncodeTiled's arguments
        self.map_addresses: list[int] = []  # and where it wrote the map
        self.slot_widths: dict[int, int] = {}  # slot index -> bytes a launch records (8)
        self._logs: dict[int, int] = {}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def _record(self, name, *args) -> int:
        self.calls.append((name, args))
        return self.fail.get(name, 0)

    def __getattr__(self, symbol):
        raise AttributeError(symbol)

    # errors
    def cuGetErrorName(self, code, out):
        if code not in ERROR_NAMES:
            return 1
        out[0] = ERROR_NAMES[code]
        return 0

    def cuGetErrorString(self, code, out):
        if code not in ERROR_TEXTS:
            return 1
        out[0] = ERROR_TEXTS[code]
        return 0

    # devices and contexts
    def cuInit(self, flags):
        return self._record("cuInit", flags)

    def cuDriverGetVersion(self, out):
        out[0] = 12040
        return self._record("cuDriverGetVersion")

    def cuDeviceGetCount(self, out):
        out[0] = self.devices
        return self._record("cuDeviceGetCount")

    def cuDeviceGet(self, out, ordinal):
        out[0] = ordinal
        return self._record("cuDeviceGet", ordinal)

    def cuDeviceGetName(self, buf, size, dev):
        buf.value = b"NVIDIA H200 (fake)"
        return self._record("cuDeviceGetName", dev)

    def cuDeviceGetAttribute(self, out, attr, dev):
        major, minor = self.capabilities[dev]  # a device's handle is its ordinal here
        if attr == cuda.ATTR_COMPUTE_CAPABILITY_MAJOR:
            out[0] = major
        elif attr == cuda.ATTR_COMPUTE_CAPABILITY_MINOR:
            out[0] = minor
        else:
            out[0] = self.attributes[attr]
        return self._record("cuDeviceGetAttribute", attr, dev)

    def cuDevicePrimaryCtxRetain(self, out, dev):
        out[0] = 0x1000 + dev
        return self._record("cuDevicePrimaryCtxRetain", dev)

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx.value if hasattr(ctx, "value") else ctx
        return self._record("cuCtxSetCurrent", ctx)

    def cuCtxGetCurrent(self, out):
        out[0] = getattr(self, "current", 0) or None
        return self._record("cuCtxGetCurrent")

    def cuCtxSynchronize(self):
        return self._record("cuCtxSynchronize")

    def cuPointerGetAttribute(self, data, attr, ptr):
        ctypes.cast(data, ctypes.POINTER(ctypes.c_int))[0] = self.pointer_devices.get(ptr, 0)
        return self._record("cuPointerGetAttribute", attr, ptr)

    # modules
    def _write_log(self, options, values, count, option, text: bytes):
        for i in range(count):
            if options[i] == option:
                ctypes.memmove(values[i], text + b"\0", len(text) + 1)

    def cuModuleLoadDataEx(self, out, image, count, options, values):
        if image.startswith(b"bad"):
            self._write_log(options, values, count, cuda.JIT_ERROR_LOG_BUFFER, b"bad image")
            self._record("cuModuleLoadDataEx", image)
            return 200
        if b"nope" in image:  # PTX the driver's JIT refuses
            self._write_log(options, values, count, cuda.JIT_ERROR_LOG_BUFFER, PTXAS_LOG)
            self._record("cuModuleLoadDataEx", image)
            return 218
        out[0] = 0x2000
        return self._record("cuModuleLoadDataEx", image)

    def cuModuleUnload(self, module):
        return self._record("cuModuleUnload", module)

    def cuModuleGetFunction(self, out, module, name):
        out[0] = 0x3000
        return self._record("cuModuleGetFunction", module, name)

    # functions and launches
    def cuFuncGetAttribute(self, out, attr, func):
        out[0] = self.func_attrs[attr]
        return self._record("cuFuncGetAttribute", attr, func)

    def cuFuncSetAttribute(self, func, attr, value):
        if attr == cuda.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            self.dynamic_limits[_handle(func)] = value
        return self._record("cuFuncSetAttribute", func, attr, value)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, out, func, threads, smem):
        # as the driver: no CTA fits whose dynamic shared memory is past the function's limit
        fits = smem <= self.dynamic_limits.get(_handle(func), 48 * 1024)
        out[0] = self.blocks_per_sm if fits else 0
        return self._record("cuOccupancyMaxActiveBlocksPerMultiprocessor", func, threads, smem)

    def cuOccupancyMaxActiveClusters(self, out, func, config):
        cfg = read_launch_config(config)
        size = cluster_of(cfg["attributes"])
        fits = cfg["shared"] <= self.dynamic_limits.get(_handle(func), 48 * 1024)
        ctas = self.blocks_per_sm * self.attributes[cuda.ATTR_MULTIPROCESSOR_COUNT]
        found = self.clusters if self.clusters is not None else ctas // size[0]
        out[0] = found if fits else 0
        return self._record("cuOccupancyMaxActiveClusters", func, cfg)

    def _launch(self, name, f, gx, gy, gz, bx, by, bz, shared, stream, params, **more):
        # the slots as they are at the call (the driver copies them then)
        addresses = [params[i] for i in range(len(params))]
        self.launches.append(
            dict(
                more,
                call=name,
                function=f,
                grid=(gx, gy, gz),
                block=(bx, by, bz),
                shared=shared,
                stream=stream,
                slots=[
                    ctypes.string_at(a, self.slot_widths.get(i, 8)) if a else b""
                    for i, a in enumerate(addresses)
                ],
                addresses=addresses,
            )
        )
        return self._record(name)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        return self._launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared, stream, params)

    def cuLaunchCooperativeKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params):
        return self._launch(
            "cuLaunchCooperativeKernel", f, gx, gy, gz, bx, by, bz, shared, stream, params
        )

    def cuLaunchKernelEx(self, config, f, params, extra):
        cfg = read_launch_config(config)
        cluster = cluster_of(cfg["attributes"])
        if cluster is not None and cfg["grid"][0] % cluster[0]:
            self._record("cuLaunchKernelEx", "a grid of part clusters")
            return 912  # as the driver: CUDA_ERROR_INVALID_CLUSTER_SIZE
        return self._launch(
            "cuLaunchKernelEx", _handle(f), *cfg["grid"], *cfg["block"], cfg["shared"], cfg["stream"],
            params, cluster=cluster, attributes=cfg["attributes"],
        )  # fmt: skip

    def cuTensorMapEncodeTiled(
        self, tmap, dtype, rank, address, dims, strides, box, estrides, interleave, swizzle,
        l2, fill,
    ):  # fmt: skip
        args = dict(
            data_type=dtype,
            rank=rank,
            address=address,
            dims=tuple(dims[:rank]),
            strides=tuple(strides[: rank - 1]),
            box=tuple(box[:rank]),
            element_strides=tuple(estrides[:rank]),
            interleave=interleave,
            swizzle=swizzle,
            l2_promotion=l2,
            oob_fill=fill,
        )
        self.tensor_maps.append(args)
        self.map_addresses.append(tmap)
        status = self._record("cuTensorMapEncodeTiled", args)
        if not status:
            ctypes.memmove(tmap, fake_map_bytes(args), 128)
        return status

    # streams, events, memory
    def cuStreamCreate(self, out, flags):
        out[0] = 0x5000
        return self._record("cuStreamCreate", flags)

    def cuStreamSynchronize(self, stream):
        return self._record("cuStreamSynchronize", stream)

    def cuStreamDestroy_v2(self, stream):
        return self._record("cuStreamDestroy_v2", stream)

    def cuEventCreate(self, out, flags):
        out[0] = 0x6000 + len(self.calls)
        return self._record("cuEventCreate", flags)

    def cuEventRecord(self, event, stream):
        return self._record("cuEventRecord", event, stream)

    def cuEventSynchronize(self, event):
        return self._record("cuEventSynchronize", event)

    def cuEventElapsedTime(self, out, start, end):
        out[0] = 1.5
        return self._record("cuEventElapsedTime", start, end)

    def cuEventDestroy_v2(self, event):
        return self._record("cuEventDestroy_v2", event)

    def cuMemAlloc_v2(self, out, size):
        out[0] = 0x7000_0000
        return self._record("cuMemAlloc_v2", size)

    def cuMemFree_v2(self, ptr):
        return self._record("cuMemFree_v2", ptr)

    def cuMemcpyHtoD_v2(self, dst, src, size):
        return self._record("cuMemcpyHtoD_v2", dst, src, size)

    def cuMemcpyDtoH_v2(self, dst, src, size):
        return self._record("cuMemcpyDtoH_v2", dst, src, size)

    def cuMemsetD8_v2(self, dst, value, size):
        return self._record("cuMemsetD8_v2", dst, value, size)


# ---------------------------------------------------------------------------


def test_missing_library_names_it(monkeypatch):
    previous = cuda.use_library(None)
    monkeypatch.setattr(cuda, "LIBRARY", "libcuda-absent-for-the-test.so.1")
    try:
        with pytest.raises(cuda.DriverUnavailable, match="libcuda-absent-for-the-test.so.1"):
            cuda.device_count()
    finally:
        cuda.use_library(previous)


def test_check_names_the_call_and_the_drivers_words(fake):
    with pytest.raises(cuda.CudaError) as info:
        cuda.check(218, "cuModuleLoadDataEx")
    err = info.value
    assert (err.call, err.code, err.name) == ("cuModuleLoadDataEx", 218, "CUDA_ERROR_INVALID_PTX")
    assert str(err) == (
        "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed"
    )


def test_check_of_a_code_the_driver_cannot_name(fake):
    with pytest.raises(cuda.CudaError, match=r"cuInit failed: CUDA_ERROR_UNKNOWN_CODE \(9999\)"):
        cuda.check(9999, "cuInit")


def test_a_failing_wrapper_raises_with_its_call(fake):
    fake.fail["cuCtxSynchronize"] = 200
    with pytest.raises(cuda.CudaError, match="^cuCtxSynchronize failed: CUDA_ERROR_INVALID"):
        cuda.ctx_synchronize()


def test_device_properties_and_chip(fake):
    dev = cuda.device(0)
    assert dev is cuda.device(0)
    assert dev.chip == "sm_90"
    assert dev.sm_count == 132
    props = dev.properties
    assert props.name == "NVIDIA H200 (fake)"
    assert props.max_shared_optin == 232448 and props.cooperative
    assert props.l2_bytes == 52428800 and props.max_threads == 1024
    before = fake.names().count("cuDeviceGetAttribute")
    assert dev.properties is props and fake.names().count("cuDeviceGetAttribute") == before
    assert fake.names().count("cuInit") == 1


def test_primary_context_retained_once_and_set_current_when_it_changes(fake):
    dev = cuda.device(0)
    dev.activate()
    dev.activate()
    assert fake.names().count("cuDevicePrimaryCtxRetain") == 1
    assert fake.names().count("cuCtxSetCurrent") == 1
    assert cuda.ctx_get_current() == 0x1000


def test_pointer_device(fake):
    fake.pointer_devices[0xABC00] = 3
    assert cuda.pointer_device(0xABC00) == 3


def test_v2_symbols_are_called(fake):
    ptr = cuda.mem_alloc(256)
    cuda.memset_d8(ptr, 0, 256)
    buf = ctypes.create_string_buffer(256)
    cuda.memcpy_htod(ptr, ctypes.addressof(buf), 256)
    cuda.memcpy_dtoh(ctypes.addressof(buf), ptr, 256)
    cuda.mem_free(ptr)
    s = cuda.stream_create()
    cuda.stream_destroy(s)
    assert {"cuMemAlloc_v2", "cuMemsetD8_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"} <= set(
        fake.names()
    )
    assert {"cuMemFree_v2", "cuStreamDestroy_v2"} <= set(fake.names())


def test_events_time(fake):
    start, end = cuda.event_create(), cuda.event_create()
    cuda.event_record(start)
    cuda.event_record(end, 0x5000)
    cuda.event_synchronize(end)
    assert cuda.event_elapsed_ms(start, end) == 1.5
    cuda.event_destroy(start)
    assert fake.names().count("cuEventDestroy_v2") == 1


def test_without_ptxas_link_gives_none_and_the_driver_compiles_the_ptx(fake, monkeypatch):
    monkeypatch.setenv("PHOBOS_PTXAS", "none")
    assert link(".version 8.0\n.target sm_90\n", cuda.device(0)) is None


def test_ptx_the_driver_refuses_names_the_load_and_carries_the_jit_log(fake):
    with pytest.raises(cuda.CudaError) as info:
        Module.load(b".version 8.0\n nope\0", cuda.device(0))
    assert info.value.call == "cuModuleLoadDataEx"
    assert "CUDA_ERROR_INVALID_PTX" in str(info.value)
    assert "Unknown symbol 'nope'" in str(info.value) and "nope" in info.value.log


def test_module_load_failure_carries_the_jit_log(fake):
    with pytest.raises(cuda.CudaError, match="(?s)cuModuleLoadDataEx failed.*bad image"):
        Module.load(b"bad cubin", cuda.device(0))


def test_module_function_and_its_attributes(fake):
    mod = Module.load(b"cubin", cuda.device(0))
    fn = mod.function("saxpy")
    assert fn is mod.function("saxpy")
    assert (fn.registers, fn.static_smem, fn.max_threads) == (32, 1024, 1024)
    assert fn.max_active_blocks(256) == 2
    fn.set_max_dynamic_shared(40000)  # under 48 KB: nothing to raise
    fn.set_max_dynamic_shared(100000)
    fn.set_max_dynamic_shared(90000)
    assert [c[1][2] for c in fake.calls if c[0] == "cuFuncSetAttribute"] == [100000]
    del mod, fn  # a function keeps its module loaded; both gone, it is unloaded
    gc.collect()
    assert "cuModuleUnload" in fake.names()


def loaded_images(fake) -> list[bytes]:
    return [bytes(args[0]) for name, args in fake.calls if name == "cuModuleLoadDataEx"]


def test_load_kernel_assembles_once_then_hits_the_cache(fake, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("PHOBOS_PTXAS", str(fake_ptxas(tmp_path, "12.4", runs)))
    cache = KernelCache(tmp_path / "cache")
    dev = cuda.device(0)
    key = entry_key("src", "fp", "sm_90", {})
    first = load_kernel(".version 8.0", '{"kernels": []}', key, dev, cache)
    assert not first.hit and first.entry.cubin == b"\x7fELF cubin for sm_90"
    second = load_kernel(".version 8.0", '{"kernels": []}', key, dev, cache)
    assert second.hit and runs.read_text().count("run") == 1
    assert loaded_images(fake) == [b"\x7fELF cubin for sm_90"] * 2
    with pytest.raises(ValueError, match="sm_80"):
        load_kernel("", "{}", entry_key("src", "fp", "sm_80", {}), dev, cache)


def test_without_ptxas_the_cache_keeps_the_ptx_and_the_driver_compiles_it(
    fake, tmp_path, monkeypatch
):
    monkeypatch.setenv("PHOBOS_PTXAS", "none")
    cache = KernelCache(tmp_path)
    key = entry_key("src", "fp", "sm_90", {})
    for _ in range(2):
        loaded = load_kernel(".version 8.0", '{"kernels": []}', key, cuda.device(0), cache)
        assert not loaded.hit and loaded.entry.cubin is None
        assert cache.get(key).ptx == ".version 8.0"
    assert loaded_images(fake) == [b".version 8.0\0"] * 2


def test_a_cached_cubin_the_driver_refuses_is_compiled_again_from_its_ptx(fake, tmp_path):
    # a cache filled on another machine, say, whose driver is newer than this one's
    cache = KernelCache(tmp_path)
    key = entry_key("src", "fp", "sm_90", {})
    cache.put(key, ".version 8.0", b"bad cubin", '{"kernels": []}')
    loaded = load_kernel(".version 8.0", '{"kernels": []}', key, cuda.device(0), cache)
    assert loaded.hit and loaded_images(fake) == [b"bad cubin", b".version 8.0\0"]


def test_a_ptxas_newer_than_the_driver_is_not_used(fake, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    monkeypatch.setenv("PHOBOS_PTXAS", str(fake_ptxas(tmp_path, "13.0", runs)))  # driver: 12.4
    loaded = load_kernel(
        ".version 8.0",
        "{}",
        entry_key("s", "fp", "sm_90", {}),
        cuda.device(0),
        KernelCache(tmp_path),
    )
    assert loaded.entry.cubin is None and loaded_images(fake) == [b".version 8.0\0"]
    assert "run" not in (runs.read_text() if runs.exists() else "")


def fake_ptxas(directory, release: str, runs):
    """A `ptxas` of `release` that writes a cubin naming its -arch, noting each run."""
    script = directory / "ptxas"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "Cuda compilation tools, release {release}, V0"; '
        "exit 0; fi\n"
        f'echo run >> "{runs}"\n'
        "arch=${1#-arch=}; out=$4\n"
        'printf "\\177ELF cubin for %s" "$arch" > "$out"\n'
    )
    script.chmod(0o755)
    return script


def test_with_several_gpus_a_context_another_library_made_current_is_replaced():
    driver = FakeDriver(devices=2)
    previous = cuda.use_library(driver)
    try:
        dev = cuda.device(0)
        dev.activate()
        driver.current = 0x2222  # torch.cuda.set_device(1), say, behind our back
        dev.activate()
        assert cuda.ctx_get_current() == dev.context
        assert driver.names().count("cuCtxSetCurrent") == 2
    finally:
        cuda.use_library(previous)
