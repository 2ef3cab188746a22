"""The launch contract, `K.json`: everything a launch reads about a compiled kernel.

`phobos-compile -o K.ptx` writes it beside the PTX, and the kernel cache keeps one per
entry. A launch reads nothing else: not the source, not the checked program.

The slot convention (the lowering emits `.entry` parameters in this order):

1. the kernel's parameters in declaration order:
   - a tensor is one `.u64` slot, its base address (8 bytes);
   - a scalar is one slot of its type (`SCALAR_SLOTS`): `f32` as `.f32`, `f64` as
     `.f64`, `i32` as `.s32`, `i64` as `.s64`, `u32` as `.u32`, `f16` and `bf16` as
     their 16 bits in a `.b16`; the narrow integers and `bool` are widened to a
     32-bit slot — `i8` sign-extended in a `.s32`, `u8` and `u16` zero-extended in a
     `.u32`, `bool` as 0 or 1 in a `.u32` — so no parameter is narrower than a word
     except the 16-bit floats, whose bits must survive;
2. then one slot per dynamic dimension, in `dyn_dims` order (the order the tensor
   parameters first name them), of the index type: `.s32` (4 bytes) at index width
   32, `.s64` (8 bytes) at 64;
3. then, for a kernel whose CTAs walk the launch grid's blocks (an sm_90a GEMM, the
   lowering's `Kernel.walk`), three `.u32` slots `x`, `y`, `z` (4 bytes each): the
   block counts the launch asked for, which the launcher writes before it runs as
   many CTAs as the card holds at once (`phobos.runtime.launch_gpu`); such a kernel
   may run its CTAs in clusters of `cluster` along x (its PTX's `.reqnctapercluster`),
   which the launcher then launches as clusters, walking blocks by cluster;
4. then one slot per TMA tensor map (sm_90), in `maps` order: the 128 bytes of a
   `CUtensorMap` in a `.param .align 64 .b8 name[128]`, which the launcher encodes
   from the tensor's base and extents (`phobos.runtime.tensormap`).

The file:

    {"format": "phobos-launch-contract", "version": 1, "kernels": [{
        "name": "saxpy", "entry": "saxpy",
        "params": [{"slot": 0, "kind": "ptr", "name": "x", "ptx_type": "u64", "width": 8},
                   {"slot": 1, "kind": "scalar", "name": "alpha", "ptx_type": "f32", "width": 4},
                   {"slot": 2, "kind": "extent", "name": "N", "ptx_type": "s32", "width": 4}],
        "tensors": {"x": {"elem": "f32", "dims": ["N"], "rank": 1}},
        "scalars": {"alpha": "f32"}, "aligned": {},
        "index_width": 32, "threads": 256, "static_smem": 0, "dynamic_smem": 0,
        "persistent": false, "barrier": null, "chip": "sm_90",
        "fingerprint": "phobos-0.1.0-...", "cache_key": null, "variant": {"BLOCK": 256}}]}

`aligned` maps a dimension to the tile its `@aligned` promise gives, resolved for the
variant. A kernel with tensor maps also has `"maps"`, each as `{"name": "A_tmap",
"tensor": "A", "elem": "f16", "dims": ["M", "K"], "box": [128, 64], "swizzle": "128B",
"fill": "zero"}`, with its slot `{"kind": "tmap", "name": "A_tmap", "ptx_type": "tmap",
"width": 128}`; a kernel without maps has no `"maps"`, as no file written before them
has, so those read as they always did (version 1 still). A walking kernel's block
counts are `{"kind": "blocks", "name": "x", "ptx_type": "u32", "width": 4}` and the
same for `y` and `z`; a file without them reads as before too. A walking kernel of
clusters (sm_90a) has `"cluster": C`, its CTAs a cluster along x, 2 to 8 (8, the
cluster size every sm_90 part runs without opting in to a larger one); a kernel
without clusters has no `"cluster"`, and a file without it reads as cluster 1
(version 1 still). `Contract.from_json` checks all of it and refuses a corrupt or
foreign file with a `ContractError` naming the file and the field.

    >>> k = KernelContract.build("scale", [("x", "tensor", ("f32", ("N",))),
    ...     ("alpha", "scalar", "f32")], dyn_dims=("N",), chip="sm_90", fingerprint="fp")
    >>> [(p.slot, p.kind, p.name, p.ptx_type) for p in k.params]
    [(0, 'ptr', 'x', 'u64'), (1, 'scalar', 'alpha', 'f32'), (2, 'extent', 'N', 's32')]
    >>> Contract((k,)).to_json() == Contract.from_json(Contract((k,)).to_json()).to_json()
    True
    >>> w = KernelContract.build("scale", [("x", "tensor", ("f32", ("N",)))],
    ...     dyn_dims=("N",), chip="sm_90a", fingerprint="fp", walk=True)
    >>> w.walks, [(p.slot, p.kind, p.name, p.ptx_type) for p in w.params[2:]]
    (True, [(2, 'blocks', 'x', 'u32'), (3, 'blocks', 'y', 'u32'), (4, 'blocks', 'z', 'u32')])
    >>> KernelContract.build("scale", [("x", "tensor", ("f32", ("N",)))], dyn_dims=("N",),
    ...     chip="sm_90a", fingerprint="fp", walk=True, cluster=2).cluster
    2
    >>> Contract.from_json('{"format": "x"}', "K.json")
    Traceback (most recent call last):
    ...
    phobos.runtime.contract.ContractError: K.json: `format` is "x", not "phobos-launch-contract": this is not a Phobos launch contract
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phobos.runtime import tensormap

FORMAT = "phobos-launch-contract"
VERSION = 1

# Phobos scalar type -> (.param type, bytes): the scalar slots of the convention.
SCALAR_SLOTS: dict[str, tuple[str, int]] = {
    "f16": ("b16", 2),
    "bf16": ("b16", 2),
    "f32": ("f32", 4),
    "f64": ("f64", 8),
    "i8": ("s32", 4),
    "i32": ("s32", 4),
    "i64": ("s64", 8),
    "u8": ("u32", 4),
    "u16": ("u32", 4),
    "u32": ("u32", 4),
    "bool": ("u32", 4),
}
POINTER_SLOT = ("u64", 8)
EXTENT_SLOTS = {32: ("s32", 4), 64: ("s64", 8)}
BLOCK_SLOT = ("u32", 4)  # a block count of the launch grid, for a walking kernel
BLOCK_AXES = ("x", "y", "z")  # the block-count slots' names, in their order
TMAP_SLOT = ("tmap", 128)  # a CUtensorMap: `.param .align 64 .b8 name[128]`
# The most CTAs a cluster: the portable cluster size, which every sm_90 part launches
# (more, up to 16 on an H100, needs the function's non-portable-size attribute set).
MAX_CLUSTER = 8
KINDS = ("ptr", "scalar", "extent", "blocks", "tmap")
ELEMENT_TYPES = tuple(SCALAR_SLOTS)


class ContractError(ValueError):
    """A contract file that is not valid: `path`, the `field` at fault, and why."""

    def __init__(self, path: str, where: str, message: str):
        self.path = path
        self.field = where
        self.reason = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"`{self.field}` " if self.field else ""
        return f"{self.path}: {where}{self.reason}"


@dataclass(frozen=True)
class Param:
    """One `.entry` parameter slot."""

    slot: int
    kind: str  # "ptr" | "scalar" | "extent" | "blocks" | "tmap"
    name: str  # the parameter, the dimension of an extent, the axis of blocks, the map of a tmap
    ptx_type: str
    width: int


@dataclass(frozen=True)
class TensorSpec:
    """A tensor parameter: element type and dims (an int, or a dimension's name)."""

    elem: str
    dims: tuple[int | str, ...]

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class TensorMapSpec:
    """A TMA tensor map the kernel reads the 2-D tensor parameter `tensor` through:
    its slot's `name`, the tensor's `elem` and `dims` (rows, cols: an int or a
    dimension's name), the `box` (rows, cols) one copy moves, its `swizzle` in shared
    memory and the `fill` of elements past the tensor ("zero", the only one).

        >>> A = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64))
        >>> k = KernelContract.build("gemm", [("A", "tensor", ("f16", ("M", "K")))],
        ...     dyn_dims=("M", "K"), chip="sm_90", fingerprint="", maps=[A])
        >>> [(p.slot, p.kind, p.name, p.ptx_type, p.width) for p in k.params[1:]]
        [(1, 'extent', 'M', 's32', 4), (2, 'extent', 'K', 's32', 4), (3, 'tmap', 'A_tmap', 'tmap', 128)]
        >>> k.arguments, k.dyn_dims
        (('A',), ('M', 'K'))
    """

    name: str
    tensor: str
    elem: str
    dims: tuple[int | str, int | str]
    box: tuple[int, int]
    swizzle: str = "128B"
    fill: str = "zero"

    @classmethod
    def of(cls, m: Any) -> TensorMapSpec:
        """The spec of a map with these fields (an `lir.TensorMap`: its fill is zero)."""
        fill = getattr(m, "fill", "zero")
        return cls(m.name, m.tensor, m.elem, tuple(m.dims), tuple(m.box), m.swizzle, fill)


@dataclass(frozen=True)
class KernelContract:
    """The contract of one kernel of one variant.

    `cluster` is the CTAs a cluster along x of a walking kernel (its PTX's
    `.reqnctapercluster`, 1 for none): the launcher launches it by `cuLaunchKernelEx`
    with that cluster dimension and a grid x a multiple of it, and cluster q walks the
    grid's blocks a cluster block (`cluster` blocks along x) at a time.
    """

    name: str
    entry: str
    params: tuple[Param, ...]
    tensors: dict[str, TensorSpec]
    scalars: dict[str, str]
    chip: str
    fingerprint: str
    index_width: int = 32
    threads: int = 256
    static_smem: int = 0
    dynamic_smem: int = 0
    persistent: bool = False
    barrier: str | None = None
    cache_key: str | None = None
    variant: dict[str, int] = field(default_factory=dict)
    aligned: dict[str, int] = field(default_factory=dict)
    maps: tuple[TensorMapSpec, ...] = ()
    cluster: int = 1  # CTAs a cluster, along x; more than 1 for a walking kernel only

    @property
    def arguments(self) -> tuple[str, ...]:
        """The kernel's parameters, in order (the ptr and scalar slots)."""
        return tuple(p.name for p in self.params if p.kind in ("ptr", "scalar"))

    @property
    def dyn_dims(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == "extent")

    @property
    def walks(self) -> bool:
        """Whether the kernel's CTAs walk the launch grid's blocks (it has block-count
        slots): a launch writes the counts and runs only the CTAs the card holds."""
        return any(p.kind == "blocks" for p in self.params)

    @classmethod
    def build(
        cls,
        name: str,
        params: Iterable[tuple[str, str, Any]],
        *,
        dyn_dims: Sequence[str],
        chip: str,
        fingerprint: str,
        index_width: int = 32,
        entry: str | None = None,
        maps: Iterable[Any] = (),
        walk: bool = False,
        **rest: Any,
    ) -> KernelContract:
        """A contract whose slots follow the convention: `params` are (name, "tensor",
        (elem, dims)) or (name, "scalar", type), in declaration order; `maps` the
        kernel's tensor maps (`TensorMapSpec`s, or `lir.TensorMap`s); `walk` gives it
        the block-count slots of a kernel walking the grid; `rest` gives the other
        fields (`cluster`, say). A map that breaks a rule, a `@persistent` kernel that
        walks, or a cluster but for a walking kernel, is the compiler's fault: a
        `ValueError` naming the field."""
        slots: list[Param] = []
        tensors: dict[str, TensorSpec] = {}
        scalars: dict[str, str] = {}
        for pname, kind, spec in params:
            if kind == "tensor":
                elem, dims = spec
                tensors[pname] = TensorSpec(elem, tuple(dims))
                slots.append(Param(len(slots), "ptr", pname, *POINTER_SLOT))
            else:
                scalars[pname] = spec
                slots.append(Param(len(slots), "scalar", pname, *SCALAR_SLOTS[spec]))
        for dim in dyn_dims:
            slots.append(Param(len(slots), "extent", dim, *EXTENT_SLOTS[index_width]))
        if walk and rest.get("persistent"):
            raise ValueError("a `@persistent` kernel sizes its own grid: it does not walk one")
        for axis in BLOCK_AXES if walk else ():
            slots.append(Param(len(slots), "blocks", axis, *BLOCK_SLOT))
        problem = _cluster_problem(rest.get("cluster", 1), walk)
        if problem is not None:
            raise ValueError(f"`cluster` {problem}")
        specs = tuple(TensorMapSpec.of(m) for m in maps)
        for m in specs:
            problem = _map_problem(m, tensors, scalars)
            if problem is not None:
                raise ValueError(f"tensor map `{m.name}`: `{problem[0]}` {problem[1]}")
            slots.append(Param(len(slots), "tmap", m.name, *TMAP_SLOT))
        if len({m.name for m in specs}) != len(specs):
            raise ValueError("two tensor maps share a name")
        return cls(
            name=name,
            entry=entry or name,
            params=tuple(slots),
            tensors=tensors,
            scalars=scalars,
            chip=chip,
            fingerprint=fingerprint,
            index_width=index_width,
            maps=specs,
            **rest,
        )

    @classmethod
    def for_kernel(
        cls, kernel: Any, *, chip: str, fingerprint: str, maps: Iterable[Any] = (), **rest: Any
    ) -> KernelContract:
        """The contract of a checked kernel (`hir.Kernel`) by the slot convention;
        `maps` are the lowered kernel's tensor maps (`lir.Kernel.maps`), `rest` the
        fields the compiler decides (`entry`, `static_smem`, `walk`: whether the
        lowered kernel walks the grid, `lir.Kernel.walk`; `cluster`, its
        `lir.Kernel.cluster`, ..)."""
        from phobos.sema import hir

        params = []
        for p in kernel.params:
            if isinstance(p.type, hir.TensorT):
                dims = tuple(d.name if isinstance(d, hir.Dyn) else d for d in p.type.dims)
                params.append((p.name, "tensor", (p.type.elem.name, dims)))
            else:
                params.append((p.name, "scalar", p.type.name))
        variant = dict(kernel.variant)
        aligned = {}
        for dim, tile in dict(getattr(kernel.attrs, "aligned", None) or {}).items():
            aligned[dim] = variant[tile] if isinstance(tile, str) else tile
        rest.setdefault("persistent", bool(getattr(kernel.attrs, "persistent", False)))
        return cls.build(
            kernel.name,
            params,
            dyn_dims=kernel.dyn_dims,
            chip=chip,
            fingerprint=fingerprint,
            index_width=kernel.index_width,
            threads=rest.pop("threads", kernel.threads),
            variant=variant,
            aligned=aligned,
            maps=maps,
            **rest,
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "entry": self.entry,
            "params": [
                {
                    "slot": p.slot,
                    "kind": p.kind,
                    "name": p.name,
                    "ptx_type": p.ptx_type,
                    "width": p.width,
                }
                for p in self.params
            ],
            "tensors": {
                n: {"elem": t.elem, "dims": list(t.dims), "rank": t.rank}
                for n, t in self.tensors.items()
            },
            "scalars": dict(self.scalars),
            "aligned": dict(self.aligned),
            "index_width": self.index_width,
            "threads": self.threads,
            "static_smem": self.static_smem,
            "dynamic_smem": self.dynamic_smem,
            "persistent": self.persistent,
            "barrier": self.barrier,
            "chip": self.chip,
            "fingerprint": self.fingerprint,
            "cache_key": self.cache_key,
            "variant": dict(self.variant),
        }
        if self.maps:  # absent without maps: such a file reads as it always did
            data["maps"] = [
                {
                    "name": m.name,
                    "tensor": m.tensor,
                    "elem": m.elem,
                    "dims": list(m.dims),
                    "box": list(m.box),
                    "swizzle": m.swizzle,
                    "fill": m.fill,
                }
                for m in self.maps
            ]
        if self.cluster != 1:  # absent without clusters: such a file reads as it always did
            data["cluster"] = self.cluster
        return data


@dataclass(frozen=True)
class Contract:
    """The contract of one PTX file: its kernels, each by name."""

    kernels: tuple[KernelContract, ...]

    def kernel(self, name: str) -> KernelContract:
        for k in self.kernels:
            if k.name == name:
                return k
        names = ", ".join(f"`{k.name}`" for k in self.kernels) or "none"
        raise KeyError(f"the contract has no kernel `{name}` (it has {names})")

    def to_json(self) -> str:
        data = {
            "format": FORMAT,
            "version": VERSION,
            "kernels": [k.to_dict() for k in self.kernels],
        }
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, path: str = "<contract>") -> Contract:
        """Read and check a contract; a `ContractError` names `path` and the field."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ContractError(path, "", f"is not valid JSON: {exc}") from None
        return _Reader(path).contract(data)


# ---------------------------------------------------------------------------
# Reading, strictly


_KERNEL_FIELDS = {
    "name": str,
    "entry": str,
    "params": list,
    "tensors": dict,
    "scalars": dict,
    "aligned": dict,
    "index_width": int,
    "threads": int,
    "static_smem": int,
    "dynamic_smem": int,
    "persistent": bool,
    "barrier": (str, type(None)),
    "chip": str,
    "fingerprint": str,
    "cache_key": (str, type(None)),
    "variant": dict,
}
# absent in a file written before them, or of a kernel without any
_OPTIONAL_FIELDS = {"maps": list, "cluster": int}
_MAP_FIELDS = {
    "name": str,
    "tensor": str,
    "elem": str,
    "dims": list,
    "box": list,
    "swizzle": str,
    "fill": str,
}
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}
_TYPE_NAMES |= {dict: "an object"}


def _cluster_problem(cluster: Any, walks: bool) -> str | None:
    """What is wrong with a kernel's `cluster` (its CTAs a cluster), or None: 1 to
    `MAX_CLUSTER`, and more than 1 only where the kernel walks the grid's blocks (the
    launcher sizes a cluster kernel's grid from its walk).

    >>> _cluster_problem(2, True), _cluster_problem(3, False)
    (None, 'is 3, but the kernel does not walk the grid: only a walking kernel runs clusters')
    """
    if type(cluster) is not int or not 1 <= cluster <= MAX_CLUSTER:
        return f"is {json.dumps(cluster, default=repr)[:40]}, not 1 to {MAX_CLUSTER} CTAs"
    if cluster > 1 and not walks:
        return (
            f"is {cluster}, but the kernel does not walk the grid: only a walking kernel "
            "runs clusters"
        )
    return None


def _map_problem(m: TensorMapSpec, tensors, scalars) -> tuple[str, str] | None:
    """What is wrong with map `m` in a kernel of these tensors and scalars, as (its
    field, why), or None: it reads a declared 2-D tensor as declared, by the rules of
    `tensormap.map_problem`."""
    if not m.name:
        return "name", "is empty"
    if m.name in tensors or m.name in scalars:
        return "name", f"is `{m.name}`, which names a parameter too"
    t = tensors.get(m.tensor)
    if t is None:
        return "tensor", f"is `{m.tensor}`, not a tensor parameter"
    if t.rank != 2:
        return "tensor", f"is `{m.tensor}`, of rank {t.rank}: a tensor map reads a 2-D tensor"
    if m.elem != t.elem:
        return "elem", f"is {m.elem}, but `{m.tensor}` has {t.elem} elements"
    if tuple(m.dims) != t.dims:
        return "dims", f"is {list(m.dims)}, but `{m.tensor}` is {list(t.dims)}"
    return tensormap.map_problem(m)


class _Reader:
    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, message: str) -> ContractError:
        return ContractError(self.path, where, message)

    def get(self, obj: Mapping, key: str, want, where: str):
        if key not in obj:
            raise self.fail(where, "is missing")
        value = obj[key]
        kinds = want if isinstance(want, tuple) else (want,)
        # bool is an int in Python, but never a count here; null only where allowed
        ok = any(
            (isinstance(value, k) and not (k is int and isinstance(value, bool))) for k in kinds
        )
        if not ok:
            names = " or ".join("null" if k is type(None) else _TYPE_NAMES[k] for k in kinds)
            raise self.fail(where, f"is {json.dumps(value)[:40]}, not {names}")
        return value

    def contract(self, data: Any) -> Contract:
        if not isinstance(data, dict):
            raise self.fail("", "is not a JSON object: this is not a Phobos launch contract")
        fmt = data.get("format")
        if fmt != FORMAT:
            raise self.fail(
                "format",
                f"is {json.dumps(fmt)}, not {json.dumps(FORMAT)}: this is not a Phobos launch "
                "contract",
            )
        version = self.get(data, "version", int, "version")
        if version != VERSION:
            raise self.fail(
                "version",
                f"is {version}, but this Phobos reads version {VERSION}: recompile the kernel",
            )
        self.no_extra(data, {"format", "version", "kernels"}, "")
        kernels = self.get(data, "kernels", list, "kernels")
        read = tuple(self.kernel(k, f"kernels[{i}]") for i, k in enumerate(kernels))
        names = [k.name for k in read]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.fail(f"kernels[{i}].name", f"repeats the kernel name `{n}`")
        return Contract(read)

    def no_extra(self, obj: Mapping, known, where: str) -> None:
        extra = sorted(set(obj) - set(known))
        if extra:
            at = f"{where}.{extra[0]}" if where else extra[0]
            raise self.fail(at, "is not a field of a launch contract")

    def kernel(self, obj: Any, where: str) -> KernelContract:
        if not isinstance(obj, dict):
            raise self.fail(where, "is not an object")
        self.no_extra(obj, {**_KERNEL_FIELDS, **_OPTIONAL_FIELDS}, where)
        v = {k: self.get(obj, k, t, f"{where}.{k}") for k, t in _KERNEL_FIELDS.items()}
        found = self.get(obj, "maps", list, f"{where}.maps") if "maps" in obj else []
        cluster = self.get(obj, "cluster", int, f"{where}.cluster") if "cluster" in obj else 1
        if v["index_width"] not in EXTENT_SLOTS:
            raise self.fail(f"{where}.index_width", f"is {v['index_width']}, not 32 or 64")
        for key in ("threads", "static_smem", "dynamic_smem"):
            if v[key] < (1 if key == "threads" else 0):
                raise self.fail(f"{where}.{key}", f"is {v[key]}, which is out of range")
        tensors = {n: self.tensor(t, f"{where}.tensors.{n}") for n, t in v["tensors"].items()}
        scalars = {}
        for n, t in v["scalars"].items():
            if t not in SCALAR_SLOTS:
                raise self.fail(f"{where}.scalars.{n}", f"is {json.dumps(t)}, not a scalar type")
            scalars[n] = t
        params = tuple(
            self.param(p, i, v["index_width"], f"{where}.params[{i}]")
            for i, p in enumerate(v["params"])
        )
        maps = tuple(self.tensor_map(m, f"{where}.maps[{i}]") for i, m in enumerate(found))
        for i, m in enumerate(maps):
            problem = _map_problem(m, tensors, scalars)
            if problem is not None:
                raise self.fail(f"{where}.maps[{i}].{problem[0]}", problem[1])
            if m.name in [n.name for n in maps[:i]]:
                raise self.fail(f"{where}.maps[{i}].name", f"repeats the tensor map `{m.name}`")
        self.agree(params, tensors, scalars, maps, v["index_width"], where)
        if v["persistent"] and any(p.kind == "blocks" for p in params):
            raise self.fail(
                f"{where}.persistent",
                "is true, but the kernel has block-count slots: a `@persistent` kernel sizes "
                "its own grid, it does not walk one",
            )
        problem = _cluster_problem(cluster, any(p.kind == "blocks" for p in params))
        if problem is not None:
            raise self.fail(f"{where}.cluster", problem)
        for key in ("variant", "aligned"):
            for n, value in v[key].items():
                if not isinstance(value, int) or isinstance(value, bool):
                    raise self.fail(f"{where}.{key}.{n}", f"is {json.dumps(value)}, not an integer")
        if v["barrier"] is not None and v["barrier"] not in tensors:
            raise self.fail(f"{where}.barrier", f"names `{v['barrier']}`, not a tensor parameter")
        return KernelContract(
            **{k: v[k] for k in _KERNEL_FIELDS if k not in ("params", "tensors", "scalars")},
            params=params,
            tensors=tensors,
            scalars=scalars,
            maps=maps,
            cluster=cluster,
        )

    def tensor_map(self, obj: Any, where: str) -> TensorMapSpec:
        if not isinstance(obj, dict):
            raise self.fail(where, "is not an object")
        self.no_extra(obj, _MAP_FIELDS, where)
        v = {k: self.get(obj, k, t, f"{where}.{k}") for k, t in _MAP_FIELDS.items()}
        for key in ("dims", "box"):
            if len(v[key]) != 2:
                raise self.fail(f"{where}.{key}", f"has {len(v[key])} entries, not 2 (rows, cols)")
            for i, d in enumerate(v[key]):
                ok = isinstance(d, int) and not isinstance(d, bool) and d > 0
                if key == "dims":
                    ok = ok or (isinstance(d, str) and d != "")
                if not ok:
                    what = "an extent or name" if key == "dims" else "a positive integer"
                    raise self.fail(f"{where}.{key}[{i}]", f"is {json.dumps(d)}, not {what}")
        return TensorMapSpec(
            v["name"], v["tensor"], v["elem"], tuple(v["dims"]), tuple(v["box"]), v["swizzle"],
            v["fill"],
        )  # fmt: skip

    def tensor(self, obj: Any, where: str) -> TensorSpec:
        if not isinstance(obj, dict):
            raise self.fail(where, "is not an object")
        self.no_extra(obj, {"elem", "dims", "rank"}, where)
        elem = self.get(obj, "elem", str, f"{where}.elem")
        if elem not in ELEMENT_TYPES:
            raise self.fail(f"{where}.elem", f"is {json.dumps(elem)}, not an element type")
        dims = self.get(obj, "dims", list, f"{where}.dims")
        for i, d in enumerate(dims):
            if isinstance(d, bool) or not isinstance(d, (int, str)) or d == "" or d == 0:
                raise self.fail(f"{where}.dims[{i}]", f"is {json.dumps(d)}, not an extent or name")
        rank = self.get(obj, "rank", int, f"{where}.rank")
        if rank != len(dims):
            raise self.fail(f"{where}.rank", f"is {rank}, but `dims` has {len(dims)}")
        return TensorSpec(elem, tuple(dims))

    def param(self, obj: Any, index: int, index_width: int, where: str) -> Param:
        if not isinstance(obj, dict):
            raise self.fail(where, "is not an object")
        self.no_extra(obj, {"slot", "kind", "name", "ptx_type", "width"}, where)
        p = Param(
            slot=self.get(obj, "slot", int, f"{where}.slot"),
            kind=self.get(obj, "kind", str, f"{where}.kind"),
            name=self.get(obj, "name", str, f"{where}.name"),
            ptx_type=self.get(obj, "ptx_type", str, f"{where}.ptx_type"),
            width=self.get(obj, "width", int, f"{where}.width"),
        )
        if p.slot != index:
            raise self.fail(f"{where}.slot", f"is {p.slot}, but the slots number 0, 1, 2, ..")
        if p.kind not in KINDS:
            raise self.fail(
                f"{where}.kind",
                f"is {json.dumps(p.kind)}, not ptr, scalar, extent, blocks or tmap",
            )
        return p

    def agree(self, params, tensors, scalars, maps, index_width, where: str) -> None:
        """The slots follow the convention and name the declared tensors, scalars and maps."""
        seen_extent = False
        names = {d for t in tensors.values() for d in t.dims if isinstance(d, str)}
        args: list[str] = []
        blocks: list[str] = []
        slotted_maps: list[str] = []
        for p in params:
            at = f"{where}.params[{p.slot}]"
            if p.kind == "tmap":
                if p.name not in [m.name for m in maps]:
                    raise self.fail(f"{at}.name", f"is `{p.name}`, which `maps` does not declare")
                if (p.ptx_type, p.width) != TMAP_SLOT:
                    raise self.fail(
                        at,
                        f"is .{p.ptx_type} of {p.width} bytes, but a tensor map is "
                        f".{TMAP_SLOT[0]} of {TMAP_SLOT[1]}",
                    )
                slotted_maps.append(p.name)
                continue
            if slotted_maps:
                what = "block-count" if p.kind == "blocks" else "parameter or extent"
                raise self.fail(at, f"is a {what} slot after a tensor map slot")
            if p.kind == "blocks":
                self.block_count(p, blocks, at)
                blocks.append(p.name)
                continue
            if blocks:
                raise self.fail(at, "is a parameter or extent slot after a block-count slot")
            if p.kind == "ptr":
                expected, table = POINTER_SLOT, tensors
            elif p.kind == "scalar":
                expected, table = SCALAR_SLOTS.get(scalars.get(p.name, ""), None), scalars
            else:
                expected, table = None, None
            if p.kind == "extent":
                seen_extent = True
                if p.name not in names:
                    raise self.fail(f"{at}.name", f"is `{p.name}`, not a dimension of a tensor")
                expected = EXTENT_SLOTS[index_width]
                if (p.ptx_type, p.width) != expected:
                    raise self.fail(
                        at,
                        f"is .{p.ptx_type} of {p.width} bytes, but an extent at index width "
                        f"{index_width} is .{expected[0]} of {expected[1]}",
                    )
                continue
            if seen_extent:
                raise self.fail(at, "is a parameter slot after an extent slot")
            if p.name not in table:
                what = "tensors" if p.kind == "ptr" else "scalars"
                raise self.fail(f"{at}.name", f"is `{p.name}`, which `{what}` does not declare")
            if p.name in args:
                raise self.fail(f"{at}.name", f"repeats the parameter `{p.name}`")
            args.append(p.name)
            if expected and (p.ptx_type, p.width) != expected:
                raise self.fail(
                    at,
                    f"is .{p.ptx_type} of {p.width} bytes, but the convention passes it as "
                    f".{expected[0]} of {expected[1]}",
                )
        missing = [n for n in (*tensors, *scalars) if n not in args]
        if missing:
            raise self.fail(f"{where}.params", f"has no slot for the parameter `{missing[0]}`")
        dims = [p.name for p in params if p.kind == "extent"]
        if len(set(dims)) != len(dims):
            raise self.fail(f"{where}.params", "repeats an extent slot")
        unslotted = sorted(names - set(dims))
        if unslotted:
            raise self.fail(f"{where}.params", f"has no extent slot for `{unslotted[0]}`")
        if blocks and len(blocks) != len(BLOCK_AXES):
            why = f"has no block-count slot for `{BLOCK_AXES[len(blocks)]}`"
            raise self.fail(f"{where}.params", why)
        declared = [m.name for m in maps]
        if slotted_maps != declared:
            missing = [n for n in declared if n not in slotted_maps]
            if missing:
                why = f"has no slot for the tensor map `{missing[0]}`"
            elif len(set(slotted_maps)) != len(slotted_maps):
                why = "repeats a tensor map slot"
            else:
                why = "has the tensor map slots in another order than `maps`"
            raise self.fail(f"{where}.params", why)

    def block_count(self, p: Param, before: list[str], at: str) -> None:
        """`p`, a block-count slot after the block counts `before`, is the next axis's."""
        if p.name in before:
            raise self.fail(f"{at}.name", f"repeats the block count of axis `{p.name}`")
        if p.name not in BLOCK_AXES:
            raise self.fail(f"{at}.name", f"is `{p.name}`, not an axis x, y or z")
        if p.name != BLOCK_AXES[len(before)]:  # `before` is x, y, .. so far, as checked
            raise self.fail(
                f"{at}.name", f"is `{p.name}`, but the block counts are x, y and z, in that order"
            )
        if (p.ptx_type, p.width) != BLOCK_SLOT:
            raise self.fail(
                at,
                f"is .{p.ptx_type} of {p.width} bytes, but a block count is .{BLOCK_SLOT[0]} "
                f"of {BLOCK_SLOT[1]}",
            )
