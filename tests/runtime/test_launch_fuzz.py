"""Launches fuzzed: valid ones mutated, on the CPU path, the GPU path and a machine
without a GPU.

A case is a description of a launch: per tensor parameter its interface dict (shape,
typestr, strides, data pointer, read-only flag, mask, version), per scalar its value,
the grid, which arguments go by name. It starts valid and takes 0 to 2 seeded
mutations; each one knows whether it keeps the launch valid and, if not, what a
refusal may name (the parameters it touched, the grid, or none for one argument too
many). The CPU path gets host arrays over real numpy memory (the interpreter is a
stand-in: the launch, not the kernel, is on trial), the GPU path fake device pointers
and the stand-in driver, each launch after a valid one of the same case, so the fast
path sees it; both are built from the one description.

The oracle, on both paths alike: a valid launch is accepted, any other is refused by a
`LaunchError` naming what the mutation touched (a `GridError` for the grid), and no
launch raises anything else. Without a GPU, a launch the GPU path refused by its
arguments is refused by the same error, and any other is a `GpuUnavailable`.

`PHOBOS_FUZZ_LAUNCHES=N` runs N cases (2,000 by default); a failure names its case,
rebuilt by `case(i)`.
"""

from __future__ import annotations

import math
import os
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

import phobos.lang as ph
from phobos.runtime import cuda
from phobos.runtime.binding import c_strides
from phobos.runtime.errors import GpuUnavailable, GridError, LaunchError

np = pytest.importorskip("numpy")

CASES = int(os.environ.get("PHOBOS_FUZZ_LAUNCHES", "2000"))


@ph.kernel
def axpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], alpha: ph.f32):  # noqa: F821
    base: ph.let = ph.ctx.block.x * 64
    y[base:+64] = alpha * x[base:+64] + y[base:+64]


@ph.kernel
def rows(a: ph.tensor[ph.f16][M, 8], out: ph.tensor[ph.f16][M, 8], n: ph.i32, flip: ph.bool):  # noqa: F821
    row: ph.let = ph.ctx.block.x
    out[row:+1, 0:+8] = a[row:+1, 0:+8]


# Per kernel: each tensor's (typestr, shape with its dimension names), each scalar's type.
SIGNATURES = {
    axpy: {"x": ("<f4", ("N",)), "y": ("<f4", ("N",)), "alpha": "f32"},
    rows: {"a": ("<f2", ("M", 8)), "out": ("<f2", ("M", 8)), "n": "i32", "flip": "bool"},
}
# Per scalar type: values a launch takes, and values it refuses.
SCALARS = {
    "f32": ([2.5, 3, -0.0, float("nan"), float("inf"), np.float32(0.5)],
            ["2", None, True, 1e300, 10**400, np.zeros(1), [1.0]]),
    "i32": ([7, -(2**31), 2**31 - 1, np.int32(5)], [2**31, 2.0, True, "1", None]),
    "bool": ([False, True, np.bool_(True)], [1, 0.0, "True", None]),
}  # fmt: skip
GRIDS = ([(1,), 1, [2], (2, 3), (1, 1, 1), lambda m: (max(m.get("N", m.get("M", 0)), 1),)],
         [None, 0, (0,), (-1,), (1.5,), "1", (1, 1, 1, 1), (), (2**31,), (1, 65536),
          lambda m: None, lambda m: (0,)])  # fmt: skip


class Interface:
    """A tensor argument's interface entries (a dict, or whatever a mutation made of it)."""

    def __init__(self, entries: Any):
        self.entries = entries

    def __repr__(self) -> str:
        return f"Interface({self.entries!r})"


@dataclass
class Case:
    kernel: Any
    values: dict[str, Any]  # per parameter: an `Interface` for a tensor, else the value
    grid: Any = (1,)
    keywords: int = 0  # the last so many arguments go by name
    drop: bool = False  # the last argument left out
    extra: bool = False  # one argument too many
    raw: set = field(default_factory=set)  # tensors whose `data` is used as it stands
    blame: set = field(default_factory=set)  # what a refusal may name; empty: valid

    def tensors(self) -> list[str]:
        return [p for p, v in self.values.items() if isinstance(v, Interface)]


def valid(rng: random.Random, kernel) -> Case:
    """A launch `kernel` takes: extents multiples of 4, aligned pointers (an offset here,
    added to each path's own base), scalars of their types."""
    extents = {"N": 4 * rng.randint(1, 64), "M": 4 * rng.randint(1, 16)}
    values = {}
    for name, spec in SIGNATURES[kernel].items():
        if isinstance(spec, str):
            values[name] = rng.choice(SCALARS[spec][0])
            continue
        typestr, dims = spec
        shape = tuple(extents.get(d, d) for d in dims)
        values[name] = Interface({"shape": shape, "typestr": typestr, "data": (0, False),
                                  "strides": None, "version": 3})  # fmt: skip
    return Case(kernel, values, grid=rng.choice(GRIDS[0]))


# ---------------------------------------------------------------------------
# Mutations: each changes one thing of a case and says what a refusal may then name.
# They run in the order of `MUTATIONS`: those that reshape every tensor first, so no
# later one leaves an earlier one's verdict stale.


def _tensor(rng, case) -> tuple[str, dict]:
    name = rng.choice(case.tensors())
    return name, case.values[name].entries


def _dims(case, name) -> tuple:
    return SIGNATURES[case.kernel][name][1]


def keywords(rng, case):
    case.keywords = rng.randint(1, len(case.values))


def extent(rng, case):
    name, d = _tensor(rng, case)
    axis = rng.randrange(len(d["shape"]))
    n, dim = d["shape"][axis], _dims(case, name)[axis]
    sharing = [t for t in case.tensors() if dim in _dims(case, t)]
    if isinstance(dim, str) and rng.random() < 0.3:  # a new extent on every tensor: valid
        new = rng.choice([0, 4 * rng.randint(1, 32)])
        for t in sharing:
            shape, at = case.values[t].entries["shape"], _dims(case, t).index(dim)
            case.values[t].entries["shape"] = shape[:at] + (new,) + shape[at + 1 :]
        return
    new = rng.choice([n + 1, n + 4, -4, 2**31, 2**40, float(n), str(n), True, None])
    d["shape"] = d["shape"][:axis] + (new,) + d["shape"][axis + 1 :]
    # A named extent is bound by the first tensor with it: a refusal may name any.
    case.blame.update(sharing if isinstance(dim, str) else [name])


def rank(rng, case):
    name, d = _tensor(rng, case)
    d["shape"] = d["shape"] + (4,) if rng.random() < 0.5 else d["shape"][:-1]
    case.blame.add(name)


def dtype(rng, case):
    name, d = _tensor(rng, case)
    d["typestr"] = rng.choice(["<f8", "<i4", "|u1", ">f4", "<f04", "f4", "<f", "<c8", 4, None])
    case.blame.add(name)


def strides(rng, case):
    name, d = _tensor(rng, case)
    shape = d["shape"]
    if not all(type(n) is int for n in shape):
        return
    typestr = d["typestr"]
    size = int(typestr[2:]) if isinstance(typestr, str) and typestr[2:].isdigit() else 4
    c = c_strides(shape, size)
    new = rng.choice([c, c + (2,), tuple(2 * s for s in c), tuple(-s for s in c),
                      tuple(float(s) for s in c), list(c), "C"])  # fmt: skip
    d["strides"] = new
    # C order spelled out is valid, and an empty array takes any ints, one per axis.
    ints = isinstance(new, tuple) and len(new) == len(shape) and all(type(s) is int for s in new)
    if not (ints and (new == c or 0 in shape)):
        case.blame.add(name)


def pointer(rng, case):
    name, d = _tensor(rng, case)
    offset, readonly = d["data"]
    choice = rng.choice(["aligned", "off", "null", "raw"])
    if choice == "aligned":  # further into its memory, still aligned: valid
        d["data"] = (offset + 16 * rng.randint(1, 8), readonly)
        return
    if choice == "off":
        d["data"] = (offset + 1, readonly)
    else:
        case.raw.add(name)
        d["data"] = (0, False) if choice == "null" else rng.choice(
            [(None, False), (1.5, False), ("0x100", False), (-16, False), (2**64, False),
             (True, False), None, [16, False], (16,)])  # fmt: skip
    if not (choice == "null" and 0 in d["shape"]):  # null only for an array with no elements
        case.blame.add(name)


def flags(rng, case):
    name, d = _tensor(rng, case)
    key, value = rng.choice([("data", True), ("data", 0), ("mask", object()), ("mask", None),
                             ("version", "3"), ("version", True), ("version", 2),
                             ("version", None)])  # fmt: skip
    if key == "data":
        ptr = d["data"]
        d["data"] = (ptr[0] if isinstance(ptr, tuple) and ptr else 0, value)
    elif key == "version" and value is None:
        del d["version"]
    else:
        d[key] = value
    if (key, value) not in (("mask", None), ("version", 2)):
        case.blame.add(name)


def kind(rng, case):
    name = rng.choice(case.tensors())
    if rng.random() < 0.5:
        case.values[name].entries = list(case.values[name].entries.items())  # not a dict
    else:
        case.values[name] = rng.choice([1.0, "x", None, [1.0] * 8])
    case.blame.add(name)


def scalar(rng, case):
    name = rng.choice([p for p, v in case.values.items() if not isinstance(v, Interface)])
    spec = SIGNATURES[case.kernel][name]
    if isinstance(spec, tuple):  # a tensor `kind` replaced: a scalar for it too
        case.values[name] = 1.0
    elif rng.random() < 0.3:
        case.values[name] = rng.choice(SCALARS[spec][0])
        return
    else:
        case.values[name] = rng.choice(SCALARS[spec][1])
    case.blame.add(name)


def count(rng, case):
    if rng.random() < 0.5:
        case.drop = True
    else:
        case.extra = True


def grid(rng, case):
    if rng.random() < 0.3:
        case.grid = rng.choice(GRIDS[0])
        return
    case.grid = rng.choice(GRIDS[1])
    case.blame.add("grid")


MUTATIONS = [keywords, extent, rank, dtype, strides, pointer, flags, kind, scalar, count,
             grid]  # fmt: skip


def case(i: int) -> tuple[Case, Case]:
    """Case `i`: the valid launch it starts from, and that launch mutated."""
    rng = random.Random(f"launch-{i}")
    kernel = rng.choice(list(SIGNATURES))
    seed = rng.random()
    base, mutated = valid(random.Random(seed), kernel), valid(random.Random(seed), kernel)
    chosen = rng.sample(range(len(MUTATIONS)), rng.randint(0, 2))
    for k in sorted(chosen):
        MUTATIONS[k](rng, mutated)
    if mutated.drop:  # the last argument is missing, and said so
        mutated.blame.add(list(mutated.values)[-1])
    if mutated.extra:  # by name, an unknown keyword; else one positional too many
        mutated.blame.add("beta" if mutated.keywords else None)
    return base, mutated


# ---------------------------------------------------------------------------
# Launching a case on a path


class Host:
    def __init__(self, interface):
        self.__array_interface__ = interface


class Dev:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


MEMORY = 1 << 16  # bytes of host memory per array: more than any valid case's needs


def launch(c: Case, path: str, kernel=None) -> None:
    """Launch case `c` on `path` ("cpu": host arrays over numpy memory, numpy arrays
    themselves where the entries are numpy's own; "gpu": device arrays at fake
    addresses), with `kernel` (a view of the case's) when given."""
    keep = []  # the numpy memory the host arrays point into, alive until the launch ends
    values = []
    for i, (name, v) in enumerate(c.values.items()):
        if not isinstance(v, Interface):
            values.append(v)
            continue
        entries = v.entries
        if isinstance(entries, dict) and name not in c.raw:
            entries = dict(entries)
            offset, readonly = entries["data"]
            if path == "cpu" and _numpy_would_say(entries) and (i + len(c.values)) % 2:
                memory = np.zeros(MEMORY, np.uint8)
                keep.append(memory)
                start = offset - memory.ctypes.data % 256 + 256
                values.append(np.ndarray(entries["shape"], entries["typestr"], memory, start))
                continue
            entries["data"] = (_base(path, i, keep) + offset, readonly)
        values.append(Host(entries) if path == "cpu" else Dev(entries))
    names = list(c.values)
    if c.drop:
        values, names = values[:-1], names[:-1]
    split = len(values) - min(c.keywords, len(values))
    args, kwargs = values[:split], dict(zip(names[split:], values[split:], strict=True))
    if c.extra:
        if kwargs:
            kwargs["beta"] = 0
        else:
            args.append(0)
    (kernel or c.kernel)[c.grid](*args, **kwargs)


def _base(path: str, i: int, keep: list) -> int:
    if path == "gpu":
        return 0x10_0000 * (i + 1)
    memory = np.zeros(MEMORY, np.uint8)
    keep.append(memory)
    return (memory.ctypes.data + 255) & ~255


def _numpy_would_say(entries: dict) -> bool:
    """Whether a numpy array in host memory would have these interface entries."""
    shape = entries["shape"]
    return (
        set(entries) == {"shape", "typestr", "data", "strides", "version"}
        and entries["typestr"] in ("<f4", "<f2")
        and entries["strides"] is None
        and entries["version"] == 3
        and entries["data"][1] is False
        and all(type(n) is int and n >= 0 for n in shape)
        and math.prod(shape) * 4 + 512 < MEMORY
    )


def outcome(c: Case, path: str, kernel=None) -> LaunchError | None:
    """The launch's `LaunchError`, or None when it was accepted; any other exception
    fails the test, naming the case."""
    try:
        launch(c, path, kernel)
    except LaunchError as err:
        return err
    except Exception as err:
        pytest.fail(f"{path}: {c}\nraised {type(err).__name__}: {err}")
    return None


def check(i: int, path: str) -> LaunchError | None:
    base, c = case(i)
    if path == "gpu":
        assert outcome(base, path) is None, f"case {i}: its valid launch was refused"
    err = outcome(c, path)
    where = f"case {i} on the {path} path: {c}"
    if not c.blame:
        assert err is None, f"{where}\nrefused a valid launch: {err}"
    elif err is None:
        pytest.fail(f"{where}\naccepted an invalid launch")
    elif isinstance(err, GridError):
        assert "grid" in c.blame, f"{where}\nblamed the grid: {err}"
    else:
        assert err.param in c.blame, f"{where}\nnamed {err.param!r}: {err}"
    return err


@pytest.fixture
def interpreter(monkeypatch):
    """The tile interpreter replaced by a recorder: a CPU launch that binds ends there."""
    calls = []
    module = types.ModuleType("phobos.interp.tiles")
    module.run_kernel = lambda kernel, grid, values, dims: calls.append(grid)
    monkeypatch.setitem(sys.modules, "phobos.interp.tiles", module)
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    return calls


def test_cpu_launches(interpreter):
    for i in range(CASES):
        check(i, "cpu")


def test_gpu_launches_and_the_same_without_a_gpu(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PHOBOS_INTERPRET", raising=False)
    seen = [check(i, "gpu") for i in range(CASES)]
    assert fake.launches  # the stand-in driver ran the valid ones
    # No driver library: views of the kernels with no plans from the launches above.
    cuda.use_library(None)
    monkeypatch.setattr(cuda, "LIBRARY", "libcuda-absent-for-the-fuzzer.so.1")
    views = {k: k.variant() for k in SIGNATURES}
    for i, before in enumerate(seen):
        _, c = case(i)
        err = outcome(c, "gpu", views[c.kernel])
        if before is None or isinstance(before, GridError):
            assert isinstance(err, GpuUnavailable), f"case {i} without a GPU: {c}\n{err!r}"
        else:
            assert (type(err), str(err)) == (type(before), str(before)), f"case {i}: {c}"
