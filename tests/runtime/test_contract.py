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
