"""Launching a walking kernel of thread-block clusters (sm_90a, the fake driver's card):
its contract says how many CTAs a cluster (`cluster`), and a launch goes by
`cuLaunchKernelEx` with the cluster dimension {C, 1, 1} as its one attribute, on a 1-D
grid of C * min(cluster blocks, clusters the card runs at once) CTAs, where a grid of
block counts (x, y, z) has ceil(x / C) * y * z cluster blocks. The block-count slots
hold the grid's counts, as for any walking kernel. The fast path launches the same way;
a kernel of cluster 1 still goes by `cuLaunchKernel`.

The fake card holds 8 CTAs at once (4 SMs of 2), and as many clusters of C as fit in
them unless a test says otherwise (`FakeDriver.clusters`). The fake driver reads a
`CUlaunchConfig` by the bytes at cuda.h's offsets (`read_launch_config`)."""

from __future__ import annotations

import ctypes
import json
import struct

import pytest
from devkit import Dev
from test_cuda_fake import LAUNCH_CONFIG, FakeDriver, read_launch_config
from test_launch_tma import arrays, gemm

from phobos.runtime import cuda
from phobos.runtime.cache import KernelCache
from phobos.runtime.contract import Contract, ContractError, KernelContract
from phobos.runtime.errors import GridError, LaunchError
from phobos.runtime.launch_gpu import GpuKernel, walking_ctas

PTX = ".version 8.0\n.target sm_90a\n"
SCALE = [("x", "tensor", ("f32", ("N",))), ("alpha", "scalar", "f32")]
COUNTS = slice(3, 6)  # x, alpha, N, then the block counts


@pytest.fixture
def driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    monkeypatch.delenv("PHOBOS_WALK", raising=False)
    monkeypatch.delenv("PHOBOS_CLUSTER", raising=False)
    fake = FakeDriver(devices=1, capabilities=[(9, 0)])
    fake.attributes[cuda.ATTR_MULTIPROCESSOR_COUNT] = 4
    fake.blocks_per_sm = 2
    previous = cuda.use_library(fake)
    yield fake
    cuda.use_library(previous)


def walking(cluster: int = 2, walk: bool = True, **rest) -> KernelContract:
    return KernelContract.build("w", SCALE, dyn_dims=("N",), chip="sm_90a", fingerprint="fp",
                                walk=walk, cluster=cluster, **rest)  # fmt: skip


def kernel(tmp_path, contract: KernelContract) -> GpuKernel:
    return GpuKernel(contract, PTX, cache=KernelCache(tmp_path))


def counts_in(launch) -> list[int]:
    return [struct.unpack("<I", s[:4])[0] for s in launch["slots"][COUNTS]]


# ---------------------------------------------------------------------------
# The structs cuLaunchKernelEx reads, as cuda.h lays them out


def test_the_launch_config_has_the_headers_layout():
    # cuda.h (12.0 on; here as the CUDA 13.0 header compiles on x86-64): seven unsigned
    # ints, 4 bytes of padding, the stream, the attributes' pointer, their count.
    c = cuda.LaunchConfig
    offsets = {name: getattr(c, name).offset for name, _ in c._fields_}
    assert offsets == {
        "gridDimX": 0, "gridDimY": 4, "gridDimZ": 8, "blockDimX": 12, "blockDimY": 16,
        "blockDimZ": 20, "sharedMemBytes": 24, "hStream": 32, "attrs": 40, "numAttrs": 48,
    }  # fmt: skip
    assert ctypes.sizeof(c) == 56 == LAUNCH_CONFIG.size


def test_the_launch_attribute_has_the_headers_layout():
    # {CUlaunchAttributeID id; char pad[8 - sizeof(id)]; CUlaunchAttributeValue value;}
    # with the value a union padded to 64 bytes, 8-byte aligned (it holds pointers).
    a, v = cuda.LaunchAttribute, cuda.LaunchAttributeValue
    assert (ctypes.sizeof(a), a.id.offset, a.value.offset) == (72, 0, 8)
    assert (ctypes.sizeof(v), ctypes.alignment(v), v.clusterDim.offset) == (64, 8, 0)
    assert cuda.LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == 4  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION


def test_a_config_reads_back_by_the_headers_offsets():
    config = cuda.launch_config((6, 1, 1), (384, 1, 1), 132096, 0x5000, 2)
    assert read_launch_config(ctypes.pointer(config)) == dict(
        grid=(6, 1, 1), block=(384, 1, 1), shared=132096, stream=0x5000,
        attributes=[(4, (2, 1, 1))],
    )  # fmt: skip


# ---------------------------------------------------------------------------
# The contract's `cluster`


def test_a_cluster_round_trips_and_a_kernel_without_one_writes_none():
    k = walking(cluster=2)
    text = Contract((k,)).to_json()
    assert json.loads(text)["kernels"][0]["cluster"] == 2 and json.loads(text)["version"] == 1
    assert Contract.from_json(text, "K.json").kernels == (k,)
    assert "cluster" not in json.loads(Contract((walking(cluster=1),)).to_json())["kernels"][0]


def test_a_contract_written_before_clusters_reads_cluster_1():
    data = json.loads(Contract((walking(cluster=1),)).to_json())
    assert "cluster" not in data["kernels"][0]  # as every file written before clusters
    assert Contract.from_json(json.dumps(data)).kernel("w").cluster == 1


def test_a_cluster_on_a_kernel_that_does_not_walk_is_refused_naming_cluster():
    with pytest.raises(ValueError, match="^`cluster` is 3, but the kernel does not walk"):
        KernelContract.build("k", SCALE, dyn_dims=("N",), chip="sm_90a", fingerprint="fp",
                             cluster=3)  # fmt: skip
    data = json.loads(Contract((walking(cluster=1, walk=False),)).to_json())
    data["kernels"][0]["cluster"] = 3
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "K.json")
    assert info.value.field == "kernels[0].cluster"
    assert "only a walking kernel runs clusters" in str(info.value)


@pytest.mark.parametrize("value", [0, 9, True, "2", 2.0, None])
def test_a_cluster_out_of_range_is_refused_naming_cluster(value):
    data = json.loads(Contract((walking(),)).to_json())
    data["kernels"][0]["cluster"] = value
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "K.json")
    assert info.value.field == "kernels[0].cluster"
    with pytest.raises(ValueError, match="`cluster`"):
        walking(cluster=value)


# ---------------------------------------------------------------------------
# The grid


@pytest.mark.parametrize(
    ("counts", "resident", "cluster", "ctas"),
    [
        ((5, 2), 16, 2, 12),  # 3 x 2 cluster blocks, 8 clusters resident
        ((5, 2), 8, 2, 8),  # 4 clusters resident
        ((6,), 64, 3, 6),  # 2 cluster blocks
        ((7, 1, 2), 9, 3, 9),  # 6 cluster blocks, 3 clusters resident
        ((1,), 1, 4, 4),  # one cluster at least
        ((9, 2), 8, 1, 8),  # no clusters: as ever
    ],
)
def test_walking_ctas_of_clusters(counts, resident, cluster, ctas):
    assert walking_ctas(counts, resident, "w", cluster) == ctas
    assert ctas % cluster == 0


def test_a_grid_of_clusters_the_kernel_cannot_count_is_refused():
    with pytest.raises(GridError, match="more than a kernel walking them counts in 32"):
        walking_ctas(((1 << 31) - 1, 2), 8, "w", 2)


# ---------------------------------------------------------------------------
# Launching


def test_a_cluster_kernel_goes_by_cuLaunchKernelEx_with_its_cluster(driver, tmp_path):
    k = kernel(tmp_path, walking(cluster=2, dynamic_smem=132096, threads=384))
    assert k.launch((5, 2), (Dev((8,)), 2.0)) == (5, 2)  # the user's counts, as ever
    (launch,) = driver.launches
    assert launch["call"] == "cuLaunchKernelEx"
    assert launch["cluster"] == (2, 1, 1) and len(launch["attributes"]) == 1
    assert launch["grid"] == (8, 1, 1)  # 2 * min(3 * 2 cluster blocks, 4 clusters)
    assert launch["block"] == (384, 1, 1) and launch["shared"] == 132096
    assert launch["stream"] == 0 and launch["function"] == 0x3000
    assert counts_in(launch) == [5, 2, 1]  # the grid's counts: the kernel pairs them itself
    assert launch["slots"][1][:4] == struct.pack("<f", 2.0)
    assert "cuLaunchKernel" not in driver.names()


def test_the_fast_path_launches_clusters_too(driver, tmp_path):
    k = kernel(tmp_path, walking(cluster=2))
    x = Dev((8,))
    k.launch((20,), (x, 2.0))
    for grid in [(3,), (5, 2), (1,), (2, 2, 3), lambda m: (m["N"] // 4, 1)]:
        k.launch(grid, (x, 3.0), stream=0x5000)
    (plan,) = k._plans.values()
    first, *fast = driver.launches
    plan_slots = [ctypes.addressof(v) for v in plan.packer.values]
    assert all(launch["addresses"] == plan_slots for launch in fast)  # the plan's own slots
    assert {launch["call"] for launch in driver.launches} == {"cuLaunchKernelEx"}
    assert all(launch["cluster"] == (2, 1, 1) for launch in driver.launches)
    assert [launch["grid"][0] for launch in driver.launches] == [8, 4, 8, 2, 8, 2]
    assert [counts_in(launch) for launch in driver.launches] == [
        [20, 1, 1], [3, 1, 1], [5, 2, 1], [1, 1, 1], [2, 2, 3], [2, 1, 1],
    ]  # fmt: skip
    assert [launch["stream"] for launch in fast] == [0x5000] * 5
    assert all(launch["block"] == (256, 1, 1) and launch["shared"] == 0 for launch in fast)
    assert driver.names().count("cuOccupancyMaxActiveClusters") == 1  # asked once


def test_the_fast_path_raises_the_drivers_error_naming_cuLaunchKernelEx(driver, tmp_path):
    k = kernel(tmp_path, walking(cluster=2))
    k.launch((4,), (Dev((8,)), 2.0))
    driver.fail["cuLaunchKernelEx"] = 200
    with pytest.raises(cuda.CudaError, match="^cuLaunchKernelEx failed"):
        k.launch((4,), (Dev((8,)), 2.0))


def test_a_kernel_of_cluster_1_still_goes_by_cuLaunchKernel(driver, tmp_path):
    k = kernel(tmp_path, walking(cluster=1))
    k.launch((5, 2), (Dev((8,)), 2.0))
    k.launch((5, 2), (Dev((8,)), 2.0))
    assert [launch["call"] for launch in driver.launches] == ["cuLaunchKernel"] * 2
    assert [launch["grid"] for launch in driver.launches] == [(8, 1, 1)] * 2
    assert "cuOccupancyMaxActiveClusters" not in driver.names()


def test_the_clusters_resident_are_the_drivers_count(driver, tmp_path):
    driver.clusters = 3  # fewer than 8 CTAs // 2: a cluster's CTAs share a GPC
    k = kernel(tmp_path, walking(cluster=2, dynamic_smem=132096))
    k.launch((9, 2), (Dev((8,)), 2.0))
    (launch,) = driver.launches
    assert launch["grid"] == (6, 1, 1)
    (asked,) = [args for name, args in driver.calls if name == "cuOccupancyMaxActiveClusters"]
    assert asked[1] == dict(grid=(2, 1, 1), block=(256, 1, 1), shared=132096, stream=0,
                            attributes=[(4, (2, 1, 1))])  # fmt: skip
    # asked past 48 KB of dynamic shared memory only once the function allows it
    assert driver.dynamic_limits[0x3000] == 132096


def test_a_card_that_runs_no_cluster_refuses_the_launch(driver, tmp_path):
    driver.clusters = 0
    k = kernel(tmp_path, walking(cluster=2))
    with pytest.raises(LaunchError, match="no cluster of 2 CTAs .* fits on the card"):
        k.launch((4,), (Dev((8,)), 2.0))
    assert driver.launches == []


class NoClusterOccupancy(FakeDriver):
    """A driver without `cuOccupancyMaxActiveClusters`."""

    def __getattribute__(self, name):
        if name == "cuOccupancyMaxActiveClusters":
            raise AttributeError(name)
        return super().__getattribute__(name)


@pytest.mark.parametrize(("per_sm", "cluster", "ctas"), [(2, 3, 6), (1, 8, 8)])
def test_without_the_drivers_count_the_ctas_resident_make_whole_clusters(
    tmp_path, monkeypatch, per_sm, cluster, ctas
):
    # 4 SMs: 8 CTAs make 2 clusters of 3; 4 CTAs not one of 8, which runs all the same
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    fake = NoClusterOccupancy(devices=1, capabilities=[(9, 0)])
    fake.attributes[cuda.ATTR_MULTIPROCESSOR_COUNT] = 4
    fake.blocks_per_sm = per_sm
    previous = cuda.use_library(fake)
    try:
        k = kernel(tmp_path, walking(cluster=cluster))
        k.launch((40,), (Dev((8,)), 2.0))
        k.launch((40,), (Dev((8,)), 2.0))
    finally:
        cuda.use_library(previous)
    assert [launch["grid"] for launch in fake.launches] == [(ctas, 1, 1)] * 2
    assert [launch["cluster"] for launch in fake.launches] == [(cluster, 1, 1)] * 2


def test_a_grid_of_part_clusters_is_the_drivers_error(driver):
    # The launcher never makes one; the fake refuses it as the driver does.
    config = cuda.launch_config((3, 1, 1), (256, 1, 1), 0, 0, 2)
    params = (ctypes.c_void_p * 1)()
    with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_CLUSTER_SIZE"):
        cuda.check(driver.cuLaunchKernelEx(ctypes.pointer(config), 0x3000, params, None), "x")


# ---------------------------------------------------------------------------
# The sm_90a GEMM whose CTAs pair into clusters, through the whole pipeline


def test_the_paired_gemm_launches_in_clusters(driver, monkeypatch):
    monkeypatch.setenv("PHOBOS_CLUSTER", "2")  # asked for: none by default
    k = gemm.variant()
    k._gpu.clear()
    a, b, c = arrays(200, 136, 200)
    for grid in [(1, 1), (3, 1), (9, 2)]:  # the second and third by the fast path
        k[grid](a, b, c)
    (gpu,) = k._gpu[()].values()
    assert gpu.contract.walks and gpu.contract.cluster == 2
    assert ".reqnctapercluster 2, 1, 1" in gpu.ptx
    assert [launch["call"] for launch in driver.launches] == ["cuLaunchKernelEx"] * 3
    assert [launch["cluster"] for launch in driver.launches] == [(2, 1, 1)] * 3
    # 8 CTAs resident make 4 clusters; (1, 1) is 1 cluster block, (3, 1) 2, (9, 2) 5 x 2
    assert [launch["grid"] for launch in driver.launches] == [(2, 1, 1), (4, 1, 1), (8, 1, 1)]
    assert [launch["block"] for launch in driver.launches] == [(gpu.contract.threads, 1, 1)] * 3
    counts = [struct.unpack("<I", s[:4])[0] for s in driver.launches[2]["slots"][6:9]]
    assert counts == [9, 2, 1]  # after A, B, C and M, K, N: the grid's own counts


@pytest.mark.parametrize("asked", [None, "1"])
def test_by_default_or_phobos_cluster_1_the_gemm_runs_without_clusters(driver, monkeypatch, asked):
    if asked:
        monkeypatch.setenv("PHOBOS_CLUSTER", asked)
    k = gemm.variant()
    k._gpu.clear()
    k[(3, 2)](*arrays(200, 136, 200))
    (gpu,) = k._gpu[()].values()
    assert gpu.contract.walks and gpu.contract.cluster == 1
    assert ".reqnctapercluster" not in gpu.ptx
    assert [launch["call"] for launch in driver.launches] == ["cuLaunchKernel"]
