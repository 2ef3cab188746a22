"""A kernel's torch op on CUDA tensors: on torch's current stream, inside CUDA graphs,
under torch.compile; and a plain launch on a torch stream by `stream=`.

Inputs random at ragged sizes, outputs poisoned with NaN (torch's fill of what it
allocates, or the test's), results against float64 numpy.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from gpukit import ROOT, torch_on_a_gpu

torch = torch_on_a_gpu()
sys.path.insert(0, str(ROOT / "tests" / "torch"))

from opkit import blocks, saxpy  # noqa: E402

import phobos.torch as pt  # noqa: E402

N = 4096 * 64 + 12  # ragged: the last CTA's slice is masked
# About 20 ms of the card's cycles: a stream held this long runs its later work late, so
# a launch on another stream would read what was there before.
HOLD = 30_000_000


saxpy_op = pt.op(saxpy, blocks, outputs=["out"], name="phobos_gpu_tests::saxpy")
saxpy_inplace = pt.op(saxpy, blocks, mutates=["out"], name="phobos_gpu_tests::saxpy_inplace")
rng = np.random.default_rng()


@pytest.fixture
def poisoned():
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # torch then fills what it allocates with NaN
    yield
    torch.use_deterministic_algorithms(was)


def random(n=N):
    return torch.from_numpy(rng.standard_normal(n, dtype=np.float32)).cuda()


def expected(alpha, x, y):
    return alpha * x.cpu().numpy().astype(np.float64) + y.cpu().numpy().astype(np.float64)


def close(got, want):
    # the card may fuse alpha * x + y into one rounding, the reference rounds none
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6, atol=1e-6)


def test_the_op_computes_on_cuda_tensors(poisoned):
    x, y = random(), random()
    out = saxpy_op(x, y, 2.5)
    assert out.device == x.device and out.dtype == torch.float32
    torch.cuda.synchronize()
    assert not torch.isnan(out).any()
    close(out, expected(2.5, x, y))


def test_the_op_runs_on_the_current_stream():
    x, y = torch.zeros(N, device="cuda"), random()
    saxpy_op(x, y, 1.0)  # compile and load first, so the stream below holds only its work
    torch.cuda.synchronize()
    side = torch.cuda.Stream()  # torch's pool streams never wait on the legacy one
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(HOLD)
        x.fill_(2.0)
        out = saxpy_op(x, y, 3.0)  # ordered after the fill only on `side`
        done = torch.cuda.Event()
        done.record()
    done.synchronize()
    close(out, expected(3.0, torch.full((N,), 2.0), y))


def test_a_plain_launch_takes_a_torch_stream():
    x, y = torch.zeros(N, device="cuda"), random()
    out = torch.full((N,), float("nan"), device="cuda")
    saxpy[blocks](x, y, out, 1.0)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(HOLD)
        x.fill_(-1.0)
        out.fill_(float("nan"))
    saxpy[blocks](x, y, out, 4.0, stream=side)  # a torch stream object, read for its handle
    side.synchronize()
    close(out, expected(4.0, torch.full((N,), -1.0), y))


def warmed(fn):
    """`fn()` run once on a side stream, as torch asks before a capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def test_cuda_graph_capture_and_replay_of_the_op():
    x, y = random(), random()
    warmed(lambda: saxpy_op(x, y, 2.0))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = saxpy_op(x, y, 2.0)  # allocated in the graph's pool, written at each replay
    for _ in range(3):
        x.copy_(random())
        y.copy_(random())
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        close(out, expected(2.0, x, y))


def test_cuda_graph_capture_of_a_mutating_op_and_a_plain_launch():
    x, y = random(), random()
    a = torch.empty(N, device="cuda")
    b = torch.empty(N, device="cuda")

    def step():
        saxpy_inplace(x, y, a, -1.0)
        saxpy[blocks](a, y, b, 0.5, stream=torch.cuda.current_stream())

    warmed(step)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(2):
        x.copy_(random())
        a.fill_(float("nan"))
        b.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want_a = expected(-1.0, x, y)
        close(a, want_a)
        close(b, 0.5 * want_a + y.cpu().numpy().astype(np.float64))


BACKENDS = [
    pytest.param("aot_eager", None, id="aot_eager"),
    pytest.param(
        "inductor",
        None,
        id="inductor",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("triton") is None, reason="inductor on CUDA needs triton"
        ),
    ),
    pytest.param(
        "inductor",
        "reduce-overhead",  # inductor's CUDA graphs around the op
        id="inductor-cudagraphs",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("triton") is None, reason="inductor on CUDA needs triton"
        ),
    ),
]


@pytest.mark.parametrize(("backend", "mode"), BACKENDS)
def test_torch_compile_fullgraph_on_cuda_tensors(backend, mode):
    torch._dynamo.reset()

    def fused(x, y):
        return torch.relu(saxpy_op(x, y, 2.0)) * y

    compiled = torch.compile(fused, fullgraph=True, backend=backend, mode=mode)
    for n in (N, 1000, N):  # ragged sizes; the last one again, as cudagraphs replay it
        x, y = random(n), random(n)
        got = compiled(x, y)
        torch.cuda.synchronize()
        wy = y.cpu().numpy().astype(np.float64)
        np.testing.assert_allclose(
            got.cpu().numpy(), np.maximum(expected(2.0, x, y), 0.0) * wy, rtol=2e-6, atol=2e-6
        )
    torch._dynamo.reset()
