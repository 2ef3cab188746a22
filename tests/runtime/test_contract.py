"""The launch contract (phobos.runtime.contract): the slot convention, the JSON round
trip, and a strict reader whose every refusal names the file and the field."""

from __future__ import annotations

import json

import pytest

from phobos.runtime.contract import Contract, ContractError, KernelContract
from phobos.sema import hir
from phobos.sema.attributes import KernelAttributes

F32 = hir.Scalar("f32")


def saxpy(**rest) -> KernelContract:
    return KernelContract.build(
        "saxpy",
        [
            ("x", "tensor", ("f32", ("N",))),
            ("W", "tensor", ("f16", ("M", "N", 64))),
            ("alpha", "scalar", "f32"),
            ("on", "scalar", "bool"),
        ],
        dyn_dims=("N", "M"),
        chip="sm_90",
        fingerprint="phobos-0.1.0-abc",
        **rest,
    )


def test_slot_convention():
    k = saxpy(index_width=64)
    assert [(p.slot, p.kind, p.name, p.ptx_type, p.width) for p in k.params] == [
        (0, "ptr", "x", "u64", 8),
        (1, "ptr", "W", "u64", 8),
        (2, "scalar", "alpha", "f32", 4),
        (3, "scalar", "on", "u32", 4),
        (4, "extent", "N", "s64", 8),
        (5, "extent", "M", "s64", 8),
    ]
    assert k.arguments == ("x", "W", "alpha", "on") and k.dyn_dims == ("N", "M")


def test_round_trip():
    k = saxpy(
        threads=128,
        static_smem=4096,
        dynamic_smem=65536,
        persistent=True,
        barrier="x",
        cache_key="sm_90/" + "ab" * 32,
        variant={"BLOCK": 128},
        aligned={"N": 128},
    )
    text = Contract((k,)).to_json()
    back = Contract.from_json(text, "K.json")
    assert back.kernel("saxpy") == k
    assert back.to_json() == text
    with pytest.raises(KeyError, match="no kernel `other`.*`saxpy`"):
        back.kernel("other")


def test_for_kernel_reads_a_checked_kernel():
    n, m = hir.Dyn("N"), hir.Dyn("M")
    params = (
        hir.Sym("A", 1, "param", hir.TensorT(hir.Scalar("bf16"), (m, n))),
        hir.Sym("k", 2, "param", hir.Scalar("i8")),
    )
    attrs = KernelAttributes(aligned={"N": "BLOCK"}, persistent=True)
    kernel = hir.Kernel(
        "k", params, hir.Block(()), attrs, (("BLOCK", 64),), ("M", "N"), index_width=32
    )
    c = KernelContract.for_kernel(kernel, chip="sm_90", fingerprint="fp", static_smem=16)
    assert [(p.kind, p.name, p.ptx_type) for p in c.params] == [
        ("ptr", "A", "u64"),
        ("scalar", "k", "s32"),
        ("extent", "M", "s32"),
        ("extent", "N", "s32"),
    ]
    assert c.tensors["A"].dims == ("M", "N") and c.tensors["A"].elem == "bf16"
    assert c.aligned == {"N": 64} and c.variant == {"BLOCK": 64}
    assert c.persistent and c.threads == 256 and c.static_smem == 16 and c.entry == "k"


def _data():
    return json.loads(Contract((saxpy(),)).to_json())


def _kernel(d):
    return d["kernels"][0]


MUTATIONS = [
    # (change to the data, the field named, words of the message)
    (lambda d: d.update(format="other"), "format", "not a Phobos launch contract"),
    (lambda d: d.pop("format"), "format", "not a Phobos launch contract"),
    (lambda d: d.update(version=2), "version", "reads version 1"),
    (lambda d: d.update(version="1"), "version", "not an integer"),
    (lambda d: d.update(extra=1), "extra", "not a field"),
    (lambda d: d.pop("kernels"), "kernels", "is missing"),
    (lambda d: d.update(kernels={}), "kernels", "not a list"),
    (lambda d: d["kernels"].append(3), "kernels[1]", "not an object"),
    (lambda d: d["kernels"].append(_kernel(d)), "kernels[1].name", "repeats"),
    (lambda d: _kernel(d).pop("entry"), "kernels[0].entry", "is missing"),
    (lambda d: _kernel(d).update(threads=True), "kernels[0].threads", "not an integer"),
    (lambda d: _kernel(d).update(threads=0), "kernels[0].threads", "out of range"),
    (lambda d: _kernel(d).update(persistent=1), "kernels[0].persistent", "not true or false"),
    (lambda d: _kernel(d).update(index_width=16), "kernels[0].index_width", "not 32 or 64"),
    (lambda d: _kernel(d).update(barrier=3), "kernels[0].barrier", "not a string or null"),
    (lambda d: _kernel(d).update(barrier="alpha"), "kernels[0].barrier", "not a tensor"),
    (lambda d: _kernel(d).update(variant={"B": "x"}), "kernels[0].variant.B", "not an integer"),
    (lambda d: _kernel(d)["tensors"]["x"].update(elem="f8"), "tensors.x.elem", "element type"),
    (lambda d: _kernel(d)["tensors"]["x"].update(rank=2), "tensors.x.rank", "`dims` has 1"),
    (lambda d: _kernel(d)["tensors"]["x"].update(dims=[None]), "tensors.x.dims[0]", "not an"),
    (lambda d: _kernel(d)["scalars"].update(alpha="float"), "scalars.alpha", "not a scalar"),
    (lambda d: _kernel(d)["params"][0].update(slot=3), "params[0].slot", "number 0, 1, 2"),
    (lambda d: _kernel(d)["params"][0].update(kind="ref"), "params[0].kind", "not ptr"),
    (lambda d: _kernel(d)["params"][0].pop("width"), "params[0].width", "is missing"),
    (lambda d: _kernel(d)["params"][0].update(width=4), "params[0]", "convention passes"),
    (lambda d: _kernel(d)["params"][2].update(name="beta"), "params[2].name", "does not declare"),
    (lambda d: _kernel(d)["params"][4].update(ptx_type="s64"), "params[4]", "index width 32"),
    (lambda d: _kernel(d)["params"][4].update(name="K"), "params[4].name", "not a dimension"),
    (lambda d: _kernel(d)["params"].pop(), "kernels[0].params", "no extent slot for `M`"),
    (lambda d: _kernel(d)["params"].pop(3), "params[3].slot", "number 0, 1, 2"),
]


@pytest.mark.parametrize(("mutate", "field", "words"), MUTATIONS)
def test_a_bad_contract_names_the_file_and_the_field(mutate, field, words):
    data = _data()
    mutate(data)
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "build/K.json")
    err = info.value
    assert str(err).startswith("build/K.json: ")
    assert field in err.field and words in str(err), str(err)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"x"', b"\xff\xfe"])
def test_not_a_contract_at_all(text):
    with pytest.raises(ContractError, match="^K.json: "):
        Contract.from_json(text, "K.json")


def test_a_slot_missing_for_a_parameter():
    data = _data()
    params = _kernel(data)["params"]
    del params[3]
    for i, p in enumerate(params):
        p["slot"] = i
    with pytest.raises(ContractError, match="no slot for the parameter `on`"):
        Contract.from_json(json.dumps(data), "K.json")


# ---------------------------------------------------------------------------
# A kernel walking the grid's blocks: three u32 block counts after the extents


def test_a_walking_kernel_has_the_block_counts_after_the_extents():
    k = saxpy(walk=True)
    assert [(p.slot, p.kind, p.name, p.ptx_type, p.width) for p in k.params[4:]] == [
        (4, "extent", "N", "s32", 4),
        (5, "extent", "M", "s32", 4),
        (6, "blocks", "x", "u32", 4),
        (7, "blocks", "y", "u32", 4),
        (8, "blocks", "z", "u32", 4),
    ]
    assert k.walks and not saxpy().walks
    assert k.arguments == ("x", "W", "alpha", "on") and k.dyn_dims == ("N", "M")
    assert saxpy().params == k.params[:6]  # a kernel that does not walk: as before


def test_a_walking_kernel_round_trips():
    k = saxpy(walk=True, variant={"BLOCK": 128})
    text = Contract((k,)).to_json()
    assert text.count('"kind": "blocks"') == 3
    back = Contract.from_json(text, "K.json")
    assert back.kernel("saxpy") == k and back.kernel("saxpy").walks
    assert back.to_json() == text
    assert json.loads(text)["version"] == 1


def test_a_persistent_kernel_never_walks():
    with pytest.raises(ValueError, match="sizes its own grid"):
        saxpy(walk=True, persistent=True)


def test_for_kernel_passes_walk_through():
    params = (hir.Sym("A", 1, "param", hir.TensorT(F32, (hir.Dyn("N"),))),)
    kernel = hir.Kernel("k", params, hir.Block(()), None, (), ("N",), index_width=32)
    c = KernelContract.for_kernel(kernel, chip="sm_90a", fingerprint="fp", walk=True)
    assert [(p.kind, p.name) for p in c.params] == [
        ("ptr", "A"), ("extent", "N"), ("blocks", "x"), ("blocks", "y"), ("blocks", "z"),
    ]  # fmt: skip
    assert not KernelContract.for_kernel(kernel, chip="sm_90a", fingerprint="fp").walks


def _walking_data():
    return json.loads(Contract((saxpy(walk=True),)).to_json())


def _swap(d, i, j):
    params = _kernel(d)["params"]
    params[i], params[j] = params[j], params[i]
    params[i]["slot"], params[j]["slot"] = i, j


def _another_block_count(d, name):
    params = _kernel(d)["params"]
    params.append(dict(params[-1], slot=len(params), name=name))


WALK_MUTATIONS = [
    # (change to the walking kernel's data, the field named, words of the message)
    (lambda d: _kernel(d)["params"].pop(), "kernels[0].params", "no block-count slot for `z`"),
    (lambda d: _kernel(d)["params"][7].update(ptx_type="s32"), "params[7]", ".u32 of 4"),
    (lambda d: _kernel(d)["params"][8].update(width=8), "params[8]", "a block count is .u32"),
    (lambda d: _kernel(d)["params"][7].update(name="z"), "params[7].name", "in that order"),
    (lambda d: _kernel(d)["params"][8].update(name="x"), "params[8].name", "repeats"),
    (lambda d: _kernel(d)["params"][6].update(name="w"), "params[6].name", "not an axis"),
    (lambda d: _kernel(d)["params"][6].update(kind="block"), "params[6].kind", "extent, blocks"),
    (lambda d: _another_block_count(d, "x"), "params[9].name", "repeats the block count"),
    (lambda d: _swap(d, 5, 6), "params[6]", "extent slot after a block-count slot"),
    (lambda d: _swap(d, 3, 6), "params[4]", "parameter or extent slot after a block-count"),
    (lambda d: _kernel(d).update(persistent=True), "kernels[0].persistent", "does not walk"),
]


@pytest.mark.parametrize(("mutate", "field", "words"), WALK_MUTATIONS)
def test_a_corrupt_walking_contract_names_the_field(mutate, field, words):
    data = _walking_data()
    mutate(data)
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "build/K.json")
    err = info.value
    assert str(err).startswith("build/K.json: ")
    assert field in err.field and words in str(err), str(err)


def test_block_counts_after_a_tensor_map_are_refused():
    from phobos.runtime.contract import TensorMapSpec

    A = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64))
    k = KernelContract.build("gemm", [("A", "tensor", ("f16", ("M", "K")))],
        dyn_dims=("M", "K"), chip="sm_90a", fingerprint="", maps=[A], walk=True)  # fmt: skip
    assert [p.kind for p in k.params] == ["ptr", "extent", "extent"] + ["blocks"] * 3 + ["tmap"]
    assert Contract.from_json(Contract((k,)).to_json()).kernels == (k,)
    data = json.loads(Contract((k,)).to_json())
    params = _kernel(data)["params"]
    params.insert(3, params.pop())  # the map's slot before the counts
    for i, p in enumerate(params):
        p["slot"] = i
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "K.json")
    assert info.value.field == "kernels[0].params[4]"
    assert "is a block-count slot after a tensor map slot" in str(info.value)
