"""Launching a kernel whose CTAs walk the grid's blocks (an sm_90a GEMM, the fake
driver's card): the user's grid is resolved and checked as for any kernel, its block
counts go into the three `.u32` slots after the extents (the tensor maps still last),
and the driver is asked for a 1-D grid of min(blocks, CTAs the card holds) CTAs, by
an ordinary `cuLaunchKernel`. The fast path does the same on every launch.

The fake card here holds 8 CTAs at once: 4 SMs of 2 (`FakeDriver.attributes`,
`blocks_per_sm`). Its CTAs run alone here (`PHOBOS_CLUSTER=1`): test_launch_cluster.py
launches the gemm whose CTAs pair into clusters."""

from __future__ import annotations

import ctypes
import struct

import pytest
from devkit import Dev
from test_cuda_fake import FakeDriver, fake_map_bytes
from test_launch_tma import arrays, gemm

from phobos.runtime import cuda
from phobos.runtime.cache import KernelCache
from phobos.runtime.contract import KernelContract
from phobos.runtime.errors import GridError, LaunchError
from phobos.runtime.launch_gpu import GpuKernel, Packer

RESIDENT = 8
# The walking gemm's slots: A, B, C, then M, K, N, then the counts, then the two maps.
KINDS = ["ptr"] * 3 + ["extent"] * 3 + ["blocks"] * 3 + ["tmap"] * 2
COUNTS, MAPS = slice(6, 9), slice(9, 11)


@pytest.fixture
def driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    monkeypatch.delenv("PHOBOS_WALK", raising=False)
    monkeypatch.setenv("PHOBOS_CLUSTER", "1")  # no clusters: each CTA walks alone
    fake = FakeDriver(devices=1, capabilities=[(9, 0)])
    fake.attributes[cuda.ATTR_MULTIPROCESSOR_COUNT] = 4
    fake.blocks_per_sm = 2
    fake.slot_widths = {9: 128, 10: 128}  # the maps' slots, whole
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


def walking_gemm():
    k = gemm.variant()
    k._gpu.clear()
    return k


def counts_in(launch) -> list[int]:
    return [struct.unpack("<I", s[:4])[0] for s in launch["slots"][COUNTS]]


def the_gpu_kernel(k) -> GpuKernel:
    (gpu,) = k._gpu[()].values()
    return gpu


def test_the_sm_90a_gemm_walks_and_its_contract_says_so(driver):
    k = walking_gemm()
    k[(3, 2)](*arrays(200, 136, 200))
    c = the_gpu_kernel(k).contract
    assert c.walks and [p.kind for p in c.params] == KINDS
    assert [(p.name, p.ptx_type, p.width) for p in c.params[COUNTS]] == [
        ("x", "u32", 4), ("y", "u32", 4), ("z", "u32", 4),
    ]  # fmt: skip


@pytest.mark.parametrize(("grid", "ctas"), [((3, 2), 6), ((9, 2), RESIDENT), ((2, 2, 3), 8)])
def test_a_launch_runs_min_blocks_resident_ctas_and_passes_the_counts(driver, grid, ctas):
    k = walking_gemm()
    k[grid](*arrays(200, 136, 200))
    (launch,) = driver.launches
    assert launch["call"] == "cuLaunchKernel"  # not cooperative: no CTA waits on another
    assert launch["grid"] == (ctas, 1, 1)
    assert counts_in(launch) == list((*grid, 1)[:3])
    extents = [struct.unpack("<i", s[:4])[0] for s in launch["slots"][3:6]]
    assert extents == [200, 200, 136]  # M, K, N: the counts come after them
    # A's map and B's, as the launch encoded them (its plan encodes its own after it)
    assert launch["slots"][MAPS] == [fake_map_bytes(m) for m in driver.tensor_maps[:2]]
    assert [m["address"] for m in driver.tensor_maps[:2]] == [0x100000, 0x400000]


def test_the_fast_path_rewrites_the_counts_and_the_ctas_each_launch(driver):
    k = walking_gemm()
    a, b, c = arrays(200, 136, 200)
    k[(3, 2)](a, b, c)
    (plan,) = k._fast.values()
    grids = [(9, 2), (3, 2), (1,), (2, 2, 3), lambda m: (m["M"] // 100, 1)]
    for grid in grids:
        k[grid](a, b, c)
    first, *fast = driver.launches
    plan_slots = [ctypes.addressof(v) for v in plan.packer.values]
    assert all(launch["addresses"] == plan_slots for launch in fast)  # the plan's own slots
    assert first["addresses"] != plan_slots
    assert [launch["grid"] for launch in driver.launches] == [
        (6, 1, 1), (8, 1, 1), (6, 1, 1), (1, 1, 1), (8, 1, 1), (2, 1, 1),
    ]  # fmt: skip
    assert [counts_in(launch) for launch in driver.launches] == [
        [3, 2, 1], [9, 2, 1], [3, 2, 1], [1, 1, 1], [2, 2, 3], [2, 1, 1],
    ]  # fmt: skip
    assert all(launch["slots"][MAPS] == first["slots"][MAPS] for launch in fast)
    asked = driver.names().count("cuOccupancyMaxActiveBlocksPerMultiprocessor")
    assert asked == 1  # the card's resident CTAs, asked once and kept on the function


def test_a_grid_the_kernel_cannot_count_is_refused_on_either_path(driver):
    k = walking_gemm()
    a, b, c = arrays(200, 136, 200)
    k[(3, 2)](a, b, c)
    with pytest.raises(GridError, match="more than a kernel walking them counts in 32"):
        k[((1 << 31) - 1, 3)](a, b, c)  # the fast path leaves it to the whole path
    assert len(driver.launches) == 1


def test_the_grid_is_checked_as_for_any_kernel(driver):
    k = walking_gemm()
    with pytest.raises(GridError, match="block count 0 on axis y is not positive"):
        k[(3, 0)](*arrays(200, 136, 200))
    with pytest.raises(GridError, match="which only a `@persistent` kernel takes"):
        k[()](*arrays(200, 136, 200))
    assert driver.launches == []


def test_without_walking_each_cta_is_a_block_and_no_counts_are_passed(driver, monkeypatch):
    monkeypatch.setenv("PHOBOS_WALK", "0")
    k = walking_gemm()
    k[(9, 2)](*arrays(200, 136, 200))
    c = the_gpu_kernel(k).contract
    assert not c.walks
    assert [p.kind for p in c.params] == ["ptr"] * 3 + ["extent"] * 3 + ["tmap"] * 2
    (launch,) = driver.launches
    assert launch["grid"] == (9, 2, 1) and len(launch["slots"]) == 8
    assert driver.names().count("cuOccupancyMaxActiveBlocksPerMultiprocessor") == 0


# ---------------------------------------------------------------------------
# A walking contract of its own: the packer, and a card that holds no CTA

SCALE = [("x", "tensor", ("f32", ("N",))), ("alpha", "scalar", "f32")]


def walking(**rest) -> KernelContract:
    return KernelContract.build(
        "w", SCALE, dyn_dims=("N",), chip="sm_90", fingerprint="fp", walk=True, **rest
    )


def test_the_packer_writes_the_counts_padded_with_ones():
    p = Packer(walking())
    p.write_blocks((5,))
    assert [v.value for v in p.blocks] == [5, 1, 1]
    p.write_blocks((5, 6, 7))
    assert [v.value for v in p.blocks] == [5, 6, 7]
    assert [ctypes.addressof(v) for v in p.blocks] == list(p.params[3:6])  # slots 3, 4, 5
    with pytest.raises(ValueError, match="1 to 3 block counts"):
        p.write_blocks(())
    plain = KernelContract.build("k", SCALE, dyn_dims=("N",), chip="sm_90", fingerprint="fp")
    assert Packer(plain).blocks == [] and len(Packer(plain).params) == 3


def test_a_walking_kernel_no_cta_of_fits_is_refused_before_the_launch(driver, tmp_path):
    driver.blocks_per_sm = 0
    k = GpuKernel(walking(), ".version 8.0\n.target sm_90\n", cache=KernelCache(tmp_path))
    with pytest.raises(LaunchError, match="fits on an SM, so the kernel cannot run"):
        k.launch((4,), (Dev((8,)), 2.0))
    assert driver.launches == []


def test_a_walking_gpu_kernel_launches_through_its_plan(driver, tmp_path):
    k = GpuKernel(walking(), ".version 8.0\n.target sm_90\n", cache=KernelCache(tmp_path))
    assert k.launch((20,), (Dev((8,)), 2.0)) == (20,)  # the user's counts, as ever
    k.launch((5, 1), (Dev((8,)), 3.0))
    (plan,) = k._plans.values()
    first, second = driver.launches
    assert second["addresses"] == [ctypes.addressof(v) for v in plan.packer.values]
    assert (first["grid"], second["grid"]) == ((8, 1, 1), (5, 1, 1))
    assert [s[:4] for s in second["slots"][3:6]] == [struct.pack("<I", n) for n in (5, 1, 1)]
    assert second["slots"][1][:4] == struct.pack("<f", 3.0)


def test_the_resident_ctas_are_counted_past_48_kb_of_dynamic_shared(driver, tmp_path):
    # The occupancy API counts none of a function still limited to 48 KB: the limit is
    # raised before it is asked (the sm_90a GEMM's ring takes 129 KB).
    k = GpuKernel(walking(dynamic_smem=132096), ".version 8.0\n.target sm_90\n",
                  cache=KernelCache(tmp_path))  # fmt: skip
    k.launch((20,), (Dev((8,)), 2.0))
    (launch,) = driver.launches
    assert launch["grid"] == (RESIDENT, 1, 1) and launch["shared"] == 132096
    sets = [c for c in driver.calls if c[0] == "cuFuncSetAttribute"]
    assert [c[1][1:] for c in sets] == [(cuda.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, 132096)]
