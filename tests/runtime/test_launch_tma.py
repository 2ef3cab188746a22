"""A launch of a kernel with a TMA ring on an sm_90a GPU (the fake driver's): its tensor
maps are encoded from the launch's arrays and passed after the extents; a launch whose
tensors' rows TMA cannot read (a pitch not a multiple of 16 bytes) takes the variant
without TMA instead, compiled once, and computes the same product (the CPU tests hold
both variants to the tile interpreter; tests/gpu/test_hopper_gemm_gpu.py, the card)."""

from __future__ import annotations

import pytest
from devkit import Dev
from test_cuda_fake import FakeDriver

import phobos.lang as ph
from phobos.runtime import cuda


@ph.kernel
@ph.tensorcore
@ph.launch(256)
@ph.dynshared
def gemm(
    A: ph.tensor[ph.f16][M, K],  # noqa: F821 (shape names)
    B: ph.tensor[ph.f16][K, N],  # noqa: F821
    C: ph.tensor[ph.f32][M, N],  # noqa: F821
):
    pm: ph.let = ph.ctx.block.x
    pn: ph.let = ph.ctx.block.y
    acc: ph.var[ph.tile[ph.f32][128, 128]] = 0.0
    for kt in range(0, K, 64):  # noqa: F821
        a: ph.var = A[pm * 128 : +128, kt:+64]
        b: ph.var = B[kt:+64, pn * 128 : +128]
        acc += ph.dot(a, b)
    C[pm * 128 : +128, pn * 128 : +128] = acc


@pytest.fixture
def driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    monkeypatch.setenv("PHOBOS_PTXAS", "none")  # the driver compiles: its images are the PTX
    fake = FakeDriver(devices=1, capabilities=[(9, 0)])
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


def arrays(m, n, k):
    return (Dev((m, k), "<f2", 0x100000), Dev((k, n), "<f2", 0x400000),
            Dev((m, n), "<f4", 0x800000))  # fmt: skip


def compiled(fake) -> list[str]:
    return [bytes(args[0]).decode(errors="replace") for name, args in fake.calls
            if name == "cuModuleLoadDataEx"]  # fmt: skip


def test_aligned_rows_launch_the_tma_variant_with_its_maps(driver):
    k = gemm.variant()
    k._gpu.clear()
    k[(2, 1)](*arrays(200, 136, 200))
    (ptx,) = compiled(driver)
    assert "cp.async.bulk.tensor.2d" in ptx and ".param .align 64 .b8 A_tmap0[128]" in ptx
    seen = {(m["address"], m["dims"], m["box"]) for m in driver.tensor_maps}
    assert seen == {(0x100000, (200, 200), (64, 128)), (0x400000, (136, 200), (64, 64))}
    first = len(driver.tensor_maps)
    k[(2, 1)](*arrays(200, 136, 200))  # the fast path: the same pointers, no new encoding
    assert len(driver.tensor_maps) == first and len(driver.launches) == 2
    a, b, c = arrays(200, 136, 200)
    moved = Dev((200, 200), "<f2", 0x200000)
    k[(2, 1)](moved, b, c)  # A moved: its map alone is encoded again
    assert [m["address"] for m in driver.tensor_maps[first:]] == [0x200000]
    assert len(driver.launches) == 3


def test_rows_tma_cannot_read_launch_the_variant_without_tma(driver):
    k = gemm.variant()
    k._gpu.clear()
    k[(2, 1)](*arrays(132, 72, 100))  # K = 100 f16: A's rows are 200 bytes
    (ptx,) = compiled(driver)
    assert "cp.async.bulk.tensor" not in ptx and "cp.async.ca.shared.global" in ptx
    assert "wgmma.mma_async" in ptx and driver.tensor_maps == []
    k[(2, 1)](*arrays(132, 72, 100))
    assert len(compiled(driver)) == 1 and len(driver.launches) == 2  # compiled once
    k[(2, 1)](*arrays(132, 72, 104))  # rows of 208 bytes: the TMA variant again
    assert len(compiled(driver)) == 2 and "cp.async.bulk.tensor" in compiled(driver)[1]
    assert sorted(k._gpu[()]) == ["sm_90a", "sm_90a:no-tma"]
