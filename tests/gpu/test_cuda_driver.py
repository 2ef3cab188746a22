"""The driver binding on a real GPU: hand-written PTX assembled, cached, loaded, launched.

Skipped as a whole, with the reason, where there is no CUDA driver or no GPU.
"""

from __future__ import annotations

import pytest

from phobos.runtime import cuda


def _gpu_missing() -> str | None:
    try:
        return None if cuda.device_count() else "the CUDA driver sees no GPU"
    except cuda.DriverUnavailable as exc:
        return f"no CUDA driver here: {exc}"
    except cuda.CudaError as exc:
        return f"the CUDA driver has no usable GPU: {exc}"


_MISSING = _gpu_missing()
if _MISSING:
    pytest.skip(_MISSING, allow_module_level=True)

np = pytest.importorskip("numpy")

from phobos.runtime.assemble import AssembleError  # noqa: E402
from phobos.runtime.cache import KernelCache, entry_key  # noqa: E402
from phobos.runtime.contract import Contract, KernelContract  # noqa: E402
from phobos.runtime.errors import ArgumentValueError  # noqa: E402
from phobos.runtime.launch_gpu import GpuKernel  # noqa: E402
from phobos.runtime.module import Module, link, load_image, load_kernel  # noqa: E402

# saxpy: out[i] = alpha * x[i] + y[i] for i < N (rounded twice, as numpy computes it), one element a thread; saxpy_gs walks
# the same elements with a grid-stride loop, the shape a @persistent kernel has. Their
# parameters follow the contract's slot convention: x, y, out, alpha, then N.
PTX = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry saxpy(
    .param .u64 p_x, .param .u64 p_y, .param .u64 p_out, .param .f32 p_alpha, .param .s32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<6>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [p_x];
    ld.param.u64 %rd2, [p_y];
    ld.param.u64 %rd3, [p_out];
    ld.param.f32 %f1, [p_alpha];
    ld.param.s32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f2, [%rd8];
    ld.global.f32 %f3, [%rd9];
    mul.rn.f32 %f5, %f1, %f2;
    add.rn.f32 %f4, %f5, %f3;
    st.global.f32 [%rd10], %f4;
DONE:
    ret;
}

.visible .entry saxpy_gs(
    .param .u64 q_x, .param .u64 q_y, .param .u64 q_out, .param .f32 q_alpha, .param .s32 q_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<6>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [q_x];
    ld.param.u64 %rd2, [q_y];
    ld.param.u64 %rd3, [q_out];
    ld.param.f32 %f1, [q_alpha];
    ld.param.s32 %r1, [q_n];
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %nctaid.x;
    mul.lo.s32 %r7, %r6, %r3;
LOOP:
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f2, [%rd8];
    ld.global.f32 %f3, [%rd9];
    mul.rn.f32 %f5, %f1, %f2;
    add.rn.f32 %f4, %f5, %f3;
    st.global.f32 [%rd10], %f4;
    add.s32 %r5, %r5, %r7;
    bra LOOP;
DONE:
    ret;
}
"""

PARAMS = [
    ("x", "tensor", ("f32", ("N",))),
    ("y", "tensor", ("f32", ("N",))),
    ("out", "tensor", ("f32", ("N",))),
    ("alpha", "scalar", "f32"),
]


def contract(name="saxpy", **rest) -> KernelContract:
    return KernelContract.build(
        name, PARAMS, dyn_dims=("N",), chip="sm_90", fingerprint="t", **rest
    )


def inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32))


def expected(alpha, x, y):
    return (np.float32(alpha) * x + y).astype(np.float32)


def test_device_properties(device):
    props = device.properties
    assert device.chip.startswith("sm_") and props.sm_count > 0
    assert props.max_shared_optin >= 48 * 1024 and props.max_threads >= 256
    assert props.l2_bytes > 0 and cuda.driver_version() >= 12000


def loaded(device) -> Module:
    """PTX's module: assembled by ptxas when there is one, else compiled by the driver."""
    return Module.load(load_image(PTX, link(PTX, device)), device)


@pytest.mark.parametrize("assembler", ["ptxas", "driver"])
def test_assemble_load_and_launch(device, to_device, assembler, monkeypatch):
    if assembler == "driver":
        monkeypatch.setenv("PHOBOS_PTXAS", "none")
    elif link(PTX, device) is None:
        pytest.skip("no ptxas this driver can load the cubins of")
    n = 5000  # ragged: not a multiple of the CTA
    x, y = inputs(n)
    dx, dy, dout = to_device(x), to_device(y), to_device(np.zeros(n, np.float32))
    module = loaded(device)
    fn = module.function("saxpy")
    assert fn.registers > 0 and fn.max_threads >= 256 and fn.static_smem == 0
    c = contract()
    bound = GpuKernel(c, PTX).bind((dx, dy, dout, 2.5))
    from phobos.runtime.launch_gpu import launch_gpu

    counts = launch_gpu(fn, c, lambda m: ((m["N"] + 255) // 256,), bound)
    assert counts == (20,)
    np.testing.assert_array_equal(dout.get(), expected(2.5, x, y))


def needs_ptxas(device) -> None:
    if link(PTX, device) is None:
        pytest.skip("no ptxas this driver can load the cubins of: the cache keeps PTX alone")


def test_gpu_kernel_launch_through_the_cache(device, to_device, tmp_path):
    needs_ptxas(device)
    n = 1 << 16
    x, y = inputs(n, 1)
    dx, dy, dout = to_device(x), to_device(y), to_device(np.zeros(n, np.float32))
    cache = KernelCache(tmp_path)
    GpuKernel(contract(), PTX, cache=cache).launch((n // 256,), (dx, dy, dout, -1.25))
    np.testing.assert_array_equal(dout.get(), expected(-1.25, x, y))
    assert list((tmp_path / device.chip).glob("*.cubin"))


def test_the_cache_stores_the_cubin_and_a_second_load_hits(device, tmp_path):
    needs_ptxas(device)
    cache = KernelCache(tmp_path)
    key = entry_key("test-driver-saxpy", "t", device.chip, {})
    text = Contract((contract(),)).to_json()
    first = load_kernel(PTX, text, key, device, cache)
    assert not first.hit and first.entry.cubin and cache.path_for(key).exists()
    second = load_kernel(PTX, text, key, device, cache)
    assert second.hit and second.entry.cubin == first.entry.cubin
    assert second.module.function("saxpy").registers == first.module.function("saxpy").registers


def test_events_time_a_launch(device, to_device):
    n = 1 << 22
    x, y = inputs(n, 2)
    dx, dy, dout = to_device(x), to_device(y), to_device(np.zeros(n, np.float32))
    kernel = GpuKernel(contract(), PTX)
    stream = cuda.stream_create()
    start, end = cuda.event_create(), cuda.event_create()
    try:
        cuda.event_record(start, stream)
        kernel.launch((n // 256,), (dx, dy, dout, 3.0), stream=stream)
        cuda.event_record(end, stream)
        cuda.event_synchronize(end)
        ms = cuda.event_elapsed_ms(start, end)
        assert 0.0 < ms < 1000.0
        cuda.stream_synchronize(stream)
        np.testing.assert_array_equal(dout.get(), expected(3.0, x, y))
    finally:
        cuda.event_destroy(start)
        cuda.event_destroy(end)
        cuda.stream_destroy(stream)


def test_occupancy_and_a_persistent_cooperative_launch(device, to_device):
    fn = loaded(device).function("saxpy_gs")
    per_sm = fn.max_active_blocks(256, 0)
    assert per_sm >= 1
    n = 3 * 1024 * 1024 + 4
    x, y = inputs(n, 3)
    dx, dy, dout = to_device(x), to_device(y), to_device(np.zeros(n, np.float32))
    kernel = GpuKernel(contract("saxpy_gs", persistent=True), PTX)
    counts = kernel.launch((), (dx, dy, dout, 0.5))
    assert counts == (per_sm * device.sm_count,)
    np.testing.assert_array_equal(dout.get(), expected(0.5, x, y))


def test_dynamic_shared_memory_past_48_kb(device, to_device):
    n = 1024
    x, y = inputs(n, 4)
    dx, dy, dout = to_device(x), to_device(y), to_device(np.zeros(n, np.float32))
    GpuKernel(contract(dynamic_smem=100 * 1024), PTX).launch((4,), (dx, dy, dout, 1.0))
    np.testing.assert_array_equal(dout.get(), expected(1.0, x, y))


def test_bad_ptx_names_ptxas_and_carries_its_log(device):
    if link(PTX, device) is None:
        pytest.skip("no ptxas this driver can load the cubins of")
    bad = PTX.replace("add.rn.f32 %f4, %f5, %f3;", "add.rn.f32 %f4, %f5, %nope;", 1)
    with pytest.raises(AssembleError) as info:
        link(bad, device)
    err = info.value
    assert err.call == "ptxas" and str(err).startswith("ptxas failed: PTXAS_FAILED")
    assert "nope" in err.log and "nope" in str(err)


def test_bad_ptx_the_driver_compiles_names_the_load_and_carries_its_log(device):
    bad = PTX.replace("add.rn.f32 %f4, %f5, %f3;", "add.rn.f32 %f4, %f5, %nope;", 1)
    with pytest.raises(cuda.CudaError) as info:
        Module.load(load_image(bad, None), device)
    err = info.value
    assert err.call == "cuModuleLoadDataEx" and "CUDA_ERROR_INVALID_PTX" in str(err)
    assert "nope" in err.log


def test_ptxas_and_the_driver_compile_a_kernel_alike(device, monkeypatch):
    # Both compile a whole program: no more than 72 registers a thread for this layer norm
    # (64 on the H200). The driver's linker, which Phobos does not use, compiles
    # relocatable code and took 80.
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from benchmarks import kernels as K

    ptx = K.layer_norm.variant(BLOCK=8192, T=256).compile(chip=device.chip).ptx
    cubin = link(ptx, device)
    if cubin is None:
        pytest.skip("no ptxas this driver can load the cubins of")
    by_ptxas = Module.load(cubin, device).function("layer_norm").registers
    by_driver = Module.load(load_image(ptx, None), device).function("layer_norm").registers
    assert by_ptxas <= 72 and by_driver <= 72, (by_ptxas, by_driver)


def test_a_host_array_is_refused_before_the_driver(device, to_device):
    x, y = inputs(8)
    with pytest.raises(ArgumentValueError, match="`x` is in host memory"):
        GpuKernel(contract(), PTX).launch((1,), (x, to_device(y), to_device(y), 1.0))


def test_torch_tensors_by_both_interfaces(device):
    torch = pytest.importorskip("torch")
    n = 4096
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    kernel = GpuKernel(contract(), PTX)
    kernel.launch((n // 256,), (x, y, out, 2.0))  # __cuda_array_interface__
    torch.cuda.synchronize()
    assert torch.equal(out, 2.0 * x + y)

    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    out.zero_()
    kernel.launch((n // 256,), (OnlyDLPack(x), OnlyDLPack(y), OnlyDLPack(out), 2.0))
    torch.cuda.synchronize()
    assert torch.equal(out, 2.0 * x + y)


def test_each_launch_runs_on_its_arrays_device(to_device):
    if cuda.device_count() < 2:
        pytest.skip("one GPU here: the several-GPU launch needs two")
    second = cuda.device(1)
    n = 2048
    x, y = inputs(n, 5)
    dx, dy, dout = (to_device(a, second) for a in (x, y, np.zeros(n, np.float32)))
    GpuKernel(contract(), PTX).launch((n // 256,), (dx, dy, dout, 4.0))
    np.testing.assert_array_equal(dout.get(), expected(4.0, x, y))
