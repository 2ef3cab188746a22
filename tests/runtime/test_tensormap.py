"""TMA tensor maps in the launcher (phobos.runtime.tensormap), through a fake driver.

The expected arguments of `cuTensorMapEncodeTiled` are written here from the CUDA
driver API's documentation (its enum values and rules), not read from the code under
test. The fake driver records each call's arguments and writes 128 bytes derived from
them (`fake_map_bytes`), so a slot's bytes say which arguments made them.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import threading
from types import SimpleNamespace

import pytest
from devkit import Dev
from test_cuda_fake import fake_map_bytes

from phobos.lower import lir
from phobos.runtime import binding, cuda, tensormap
from phobos.runtime.contract import Contract, ContractError, KernelContract, TensorMapSpec
from phobos.runtime.errors import ArgumentValueError
from phobos.runtime.launch_gpu import GpuKernel, Packer
from phobos.sema import hir

# From cuda.h, as the driver API documents them
DATA_TYPE = {"u8": 0, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "f16": 6, "f32": 7}
DATA_TYPE |= {"f64": 8, "bf16": 9}
SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
INTERLEAVE_NONE, L2_PROMOTION_L2_128B, OOB_FILL_NONE = 0, 2, 0
ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4}


def documented(elem, address, rows, cols, box, swizzle) -> dict:
    """The arguments the documentation asks for a row-major [rows, cols] tensor."""
    return dict(
        data_type=DATA_TYPE[elem],
        rank=2,
        address=address,
        dims=(cols, rows),  # innermost first
        strides=(cols * ELEM_BYTES[elem],),  # rank - 1 strides, in bytes
        box=(box[1], box[0]),
        element_strides=(1, 1),
        interleave=INTERLEAVE_NONE,
        swizzle=SWIZZLE[swizzle],
        l2_promotion=L2_PROMOTION_L2_128B,
        oob_fill=OOB_FILL_NONE,
    )


# ---------------------------------------------------------------------------
# The arguments of cuTensorMapEncodeTiled


@pytest.mark.parametrize(
    ("elem", "box", "swizzle"),
    [
        ("f16", (128, 64), "128B"),  # 64 f16 = 128 bytes: the 128B span exactly
        ("bf16", (64, 32), "64B"),
        ("f32", (256, 8), "32B"),
        ("f32", (16, 4), "none"),  # 16 bytes: the least a box row may be
    ],
)
def test_every_field_passed_to_the_driver(fake, elem, box, swizzle):
    m = TensorMapSpec("A_tmap", "A", elem, ("M", "K"), box, swizzle)
    address, rows, cols = 0x7F12_3400, 384, 1000
    data = tensormap.encode(m, address, rows, cols, kernel="k")
    (args,) = fake.tensor_maps
    want = documented(elem, address, rows, cols, box, swizzle)
    assert args == want
    assert data == fake_map_bytes(want) and len(data) == 128
    assert fake.map_addresses[0] % 64 == 0  # the driver writes a CUtensorMap 64-byte aligned
    # and the rules the documentation sets on them
    size = ELEM_BYTES[elem]
    assert args["address"] % 16 == 0
    assert all(0 < d <= 2**32 for d in args["dims"])
    assert all(s % 16 == 0 and s < 2**40 for s in args["strides"])
    assert all(0 < b <= 256 for b in args["box"])
    assert args["box"][0] * size % 16 == 0
    span = {"none": None, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    assert span is None or args["box"][0] * size <= span
    assert all(1 <= s <= 8 for s in args["element_strides"])


@pytest.mark.parametrize(
    ("elem", "code"),
    [("u8", 0), ("i8", 0), ("u16", 1), ("i16", 1), ("u32", 2), ("i32", 3), ("u64", 4)]
    + [("i64", 5), ("f16", 6), ("f32", 7), ("f64", 8), ("bf16", 9)],
)
def test_data_type_of_every_element_type(elem, code):
    m = TensorMapSpec("A_tmap", "A", elem, ("M", "K"), (8, 16), "none")
    assert tensormap.arguments(m, 0, 8, 64, kernel="k").data_type == code


def test_a_fixed_extent_is_taken_as_it_is(fake):
    c = gemm_contract(dims=("M", 64), box=(64, 64))
    packer = Packer(c)
    packer.pack(
        bind(c, [Dev((256, 64), "<f2", ptr=0x10000), Dev((64, 64), "<f2"), Dev((256, 64), "<f4")])
    )
    assert fake.tensor_maps[0]["dims"] == (64, 256)


def test_the_driver_refusing_names_the_call(fake):
    fake.fail["cuTensorMapEncodeTiled"] = 1
    m = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64))
    with pytest.raises(cuda.CudaError, match="^cuTensorMapEncodeTiled failed"):
        tensormap.encode(m, 0x1000, 128, 64, kernel="k")


# ---------------------------------------------------------------------------
# A tensor that breaks a rule: refused, naming the parameter and the rule


MISALIGNED = "`A` starts at address 0x1008, but TMA reads a tensor whose base is a multiple of 16"
PITCH = "TMA reads rows at a pitch that is a multiple of 16 bytes"


@pytest.mark.parametrize(
    ("address", "rows", "cols", "words"),
    [
        (0x1008, 128, 64, MISALIGNED + " bytes"),
        (0x1000, 128, 1001, f"argument `A`: {PITCH}; K = 1001 f16 elements is 2002 bytes"),
        (0x1000, 0, 64, "`A` has M = 0, but TMA reads a tensor whose every extent is 1 to 2**32"),
        (0x1000, 128, 0, "`A` has K = 0"),
        (0x1000, 2**32 + 1, 64, "`A` has M = 4294967297"),
    ],
)
def test_a_tensor_breaking_a_rule_is_refused(fake, address, rows, cols, words):
    m = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64))
    with pytest.raises(ArgumentValueError) as info:
        tensormap.encode(m, address, rows, cols, kernel="gemm")
    err = info.value
    assert (err.kernel, err.param) == ("gemm", "A")
    assert words in err.message, err.message
    assert "PHOBOS_TMA=0" in err.help
    assert not fake.tensor_maps  # refused before the driver is asked


def test_the_pitch_refusal_says_how_to_pad():
    m = TensorMapSpec("A_tmap", "A", "f32", ("M", "K"), (64, 32), "128B")
    with pytest.raises(ArgumentValueError, match="K = 1002 f32 elements is 4008 bytes") as info:
        tensormap.arguments(m, 0x1000, 64, 1002, kernel="k")
    assert info.value.help.startswith("pad each row to a multiple of 4 f32 elements")


@pytest.mark.parametrize(
    ("elem", "box", "swizzle", "words"),
    [
        ("f16", (128, 300), "none", "a TMA box is 1 to 256 elements on each side"),
        ("f16", (0, 64), "none", "a TMA box is 1 to 256 elements on each side"),
        ("f16", (128, 4), "none", "rows of 4 f16 elements are 8 bytes, not a multiple of 16"),
        ("f16", (128, 128), "128B", "are 256 bytes, more than the 128B swizzle spans"),
        ("f32", (64, 32), "64B", "are 128 bytes, more than the 64B swizzle spans"),
        ("f16", (128, 64), "256B", "`swizzle` is `256B`"),
        ("bool", (128, 64), "none", "`elem` is `bool`, which TMA does not copy"),
    ],
)
def test_a_map_breaking_a_rule_is_the_compilers_fault(elem, box, swizzle, words):
    m = TensorMapSpec("A_tmap", "A", elem, ("M", "K"), box, swizzle)
    with pytest.raises(ValueError, match="^tensor map `A_tmap`: ") as info:
        tensormap.arguments(m, 0x1000, 128, 64, kernel="k")
    assert not isinstance(info.value, ArgumentValueError)
    assert words in str(info.value), str(info.value)
    with pytest.raises(ValueError, match=words.replace("*", r"\*")):
        KernelContract.build(
            "k", [("A", "tensor", (elem, ("M", "K")))], dyn_dims=("M", "K"), chip="sm_90",
            fingerprint="", maps=[m],
        )  # fmt: skip


def test_the_documented_rules_of_an_encoding():
    m = TensorMapSpec("A_tmap", "A", "f16", ("M", "K"), (128, 64))
    good = tensormap.arguments(m, 0x1000, 128, 64, kernel="k")
    assert tensormap.broken_rule(good) is None
    for change, argument in [
        (dict(element_strides=(0, 1)), "elementStrides"),
        (dict(element_strides=(1, 9)), "elementStrides"),
        (dict(interleave=1), "interleave"),
        (dict(swizzle=9), "swizzle"),
        (dict(data_type=13), "tensorDataType"),
        (dict(box=(64, 257)), "boxDim"),
        (dict(address=0x1004), "globalAddress"),
        (dict(strides=(2**40,)), "globalStrides"),
        (dict(strides=(64,)), "globalStrides"),  # shorter than a row of 64 f16
        (dict(dims=(64, 0)), "globalDim"),
    ]:
        assert tensormap.broken_rule(dataclasses.replace(good, **change))[0] == argument, change


# ---------------------------------------------------------------------------
# The contract


def gemm_contract(dims=("M", "K"), box=(128, 64), **rest) -> KernelContract:
    """C[M, N] = A[dims] @ B[K, N], A and B read through tensor maps."""
    return KernelContract.build(
        "gemm",
        [
            ("A", "tensor", ("f16", dims)),
            ("B", "tensor", ("f16", ("K", "N"))),
            ("C", "tensor", ("f32", ("M", "N"))),
        ],
        dyn_dims=("M", "K", "N"),
        chip="sm_90a",
        fingerprint="fp",
        maps=[
            TensorMapSpec("A_tmap", "A", "f16", dims, box, "128B"),
            TensorMapSpec("B_tmap", "B", "f16", ("K", "N"), (64, 64), "128B"),
        ],
        **rest,
    )


def test_the_map_slots_follow_the_extents():
    c = gemm_contract()
    assert [(p.slot, p.kind, p.name, p.ptx_type, p.width) for p in c.params] == [
        (0, "ptr", "A", "u64", 8),
        (1, "ptr", "B", "u64", 8),
        (2, "ptr", "C", "u64", 8),
        (3, "extent", "M", "s32", 4),
        (4, "extent", "K", "s32", 4),
        (5, "extent", "N", "s32", 4),
        (6, "tmap", "A_tmap", "tmap", 128),
        (7, "tmap", "B_tmap", "tmap", 128),
    ]
    assert c.arguments == ("A", "B", "C") and c.dyn_dims == ("M", "K", "N")


def test_round_trip_with_maps():
    c = gemm_contract(threads=256, variant={"T": 256})
    text = Contract((c,)).to_json()
    back = Contract.from_json(text, "K.json").kernel("gemm")
    assert back == c and back.maps == c.maps
    assert Contract((back,)).to_json() == text
    assert json.loads(text)["kernels"][0]["maps"][0] == {
        "name": "A_tmap",
        "tensor": "A",
        "elem": "f16",
        "dims": ["M", "K"],
        "box": [128, 64],
        "swizzle": "128B",
        "fill": "zero",
    }


def test_a_contract_without_maps_is_written_and_read_as_before():
    c = KernelContract.build(
        "k", [("x", "tensor", ("f32", ("N",)))], dyn_dims=("N",), chip="sm_90", fingerprint=""
    )
    data = json.loads(Contract((c,)).to_json())
    assert data["version"] == 1 and "maps" not in data["kernels"][0]
    assert Contract.from_json(json.dumps(data)).kernel("k").maps == ()


def test_for_kernel_and_contract_of_take_the_lowered_kernels_maps():
    from phobos.driver import contract_of

    m, k = hir.Dyn("M"), hir.Dyn("K")
    params = (hir.Sym("A", 0, "param", hir.TensorT(hir.Scalar("bf16"), (m, k))),)
    kernel = hir.Kernel("k", params, hir.Block(()), None, (), ("M", "K"), index_width=32)
    tmap = lir.TensorMap("A_tmap0", "A", "bf16", ("M", "K"), (64, 64), "128B")
    lowered = SimpleNamespace(
        name="k", smem=1024, dynamic_smem=True, maps=(tmap,), threads=384, walk=(), cluster=1
    )
    c = contract_of(kernel, lowered, ".version 8.0", "sm_90a")
    assert c.threads == 384  # the lowered kernel's: a producer warpgroup's too
    assert c.maps == (TensorMapSpec("A_tmap0", "A", "bf16", ("M", "K"), (64, 64), "128B"),)
    assert [p.kind for p in c.params] == ["ptr", "extent", "extent", "tmap"]
    assert c.dynamic_smem == 1024 and not c.walks
    lowered.walk = ("blocks_x1", "blocks_y2", "blocks_z3")  # its CTAs walk the grid
    c = contract_of(kernel, lowered, ".version 8.0", "sm_90a")
    assert [(p.kind, p.name) for p in c.params[3:]] == [
        ("blocks", "x"), ("blocks", "y"), ("blocks", "z"), ("tmap", "A_tmap0"),
    ]  # fmt: skip
    assert c.walks and c.cluster == 1
    lowered.cluster = 2  # its CTAs pair into clusters (`.reqnctapercluster 2, 1, 1`)
    assert contract_of(kernel, lowered, ".version 8.0", "sm_90a").cluster == 2


def _k(d):
    return d["kernels"][0]


def _map(d, i=0):
    return _k(d)["maps"][i]


MAP_MUTATIONS = [
    # (change to the data, the field named, words of the message)
    (lambda d: _k(d).update(maps={}), "kernels[0].maps", "not a list"),
    (lambda d: _k(d)["maps"].__setitem__(0, 3), "maps[0]", "not an object"),
    (lambda d: _map(d).update(extra=1), "maps[0].extra", "not a field"),
    (lambda d: _map(d).pop("fill"), "maps[0].fill", "is missing"),
    (lambda d: _map(d).update(name=7), "maps[0].name", "not a string"),
    (lambda d: _map(d).update(name=""), "maps[0].name", "is empty"),
    (lambda d: _map(d).update(name="B"), "maps[0].name", "names a parameter too"),
    (lambda d: _map(d, 1).update(name="A_tmap"), "maps[1].name", "repeats"),
    (lambda d: _map(d).update(tensor="X"), "maps[0].tensor", "not a tensor parameter"),
    (lambda d: _map(d).update(elem="f32"), "maps[0].elem", "`A` has f16 elements"),
    (lambda d: _map(d).update(elem=16), "maps[0].elem", "not a string"),
    (lambda d: _map(d).update(dims=["M"]), "maps[0].dims", "not 2 (rows, cols)"),
    (lambda d: _map(d).update(dims=["M", None]), "maps[0].dims[1]", "not an extent or name"),
    (lambda d: _map(d).update(dims=["K", "M"]), "maps[0].dims", "but `A` is ['M', 'K']"),
    (lambda d: _map(d).update(box=[128]), "maps[0].box", "not 2 (rows, cols)"),
    (lambda d: _map(d).update(box=[128, "64"]), "maps[0].box[1]", "not a positive integer"),
    (lambda d: _map(d).update(box=[0, 64]), "maps[0].box[0]", "not a positive integer"),
    (lambda d: _map(d).update(box=[300, 64]), "maps[0].box", "1 to 256 elements"),
    (lambda d: _map(d).update(box=[128, 4]), "maps[0].box", "not a multiple of 16"),
    (lambda d: _map(d).update(box=[128, 128]), "maps[0].box", "more than the 128B swizzle"),
    (lambda d: _map(d).update(swizzle="256B"), "maps[0].swizzle", "not one of none, 32B"),
    (lambda d: _map(d).update(fill="nan"), "maps[0].fill", "not one of zero"),
    (lambda d: _k(d)["params"][6].update(width=64), "params[6]", "a tensor map is .tmap of 128"),
    (lambda d: _k(d)["params"][6].update(ptx_type="b8"), "params[6]", ".tmap of 128"),
    (lambda d: _k(d)["params"][6].update(name="C_tmap"), "params[6].name", "does not declare"),
    (lambda d: _k(d)["params"][7].update(name="A_tmap"), "kernels[0].params", "no slot for the"),
    (lambda d: _k(d)["params"].pop(), "kernels[0].params", "no slot for the tensor map `B_tmap`"),
    (lambda d: _swap_map_slots(d), "kernels[0].params", "another order than `maps`"),
    (lambda d: _extent_after_a_map(d), "params[6]", "after a tensor map slot"),
]


def _swap_map_slots(d):
    params = _k(d)["params"]
    params[6]["name"], params[7]["name"] = params[7]["name"], params[6]["name"]


def _extent_after_a_map(d):
    params = _k(d)["params"]
    params[5], params[6] = params[6], params[5]
    params[5]["slot"], params[6]["slot"] = 5, 6


@pytest.mark.parametrize(("mutate", "field", "words"), MAP_MUTATIONS)
def test_a_corrupt_map_names_the_field(mutate, field, words):
    data = json.loads(Contract((gemm_contract(),)).to_json())
    mutate(data)
    with pytest.raises(ContractError) as info:
        Contract.from_json(json.dumps(data), "build/K.json")
    err = info.value
    assert str(err).startswith("build/K.json: ")
    assert field in err.field and words in str(err), str(err)


def test_a_map_of_a_tensor_that_is_not_2d_is_refused():
    with pytest.raises(ValueError, match="of rank 1: a tensor map reads a 2-D tensor"):
        KernelContract.build(
            "k", [("x", "tensor", ("f16", ("N",)))], dyn_dims=("N",), chip="sm_90",
            fingerprint="", maps=[TensorMapSpec("x_tmap", "x", "f16", ("N", 64), (8, 64))],
        )  # fmt: skip


# ---------------------------------------------------------------------------
# The packer and the fast path


def bind(c: KernelContract, args):
    return GpuKernel(c, "").bind(args)


def gemm_args(m=256, k=512, n=128, a=0x10_0000, b=0x20_0000, c=0x30_0000):
    return [Dev((m, k), "<f2", ptr=a), Dev((k, n), "<f2", ptr=b), Dev((m, n), "<f4", ptr=c)]


def map_calls(fake) -> int:
    return fake.names().count("cuTensorMapEncodeTiled")


def test_the_packer_writes_each_map_into_its_slot_after_the_extents(fake):
    c = gemm_contract()
    packer = Packer(c)
    params = packer.pack(bind(c, gemm_args()))
    a_bytes = fake_map_bytes(documented("f16", 0x10_0000, 256, 512, (128, 64), "128B"))
    b_bytes = fake_map_bytes(documented("f16", 0x20_0000, 512, 128, (64, 64), "128B"))
    assert ctypes.string_at(params[6], 128) == a_bytes
    assert ctypes.string_at(params[7], 128) == b_bytes
    assert params[6] % 64 == 0 and params[7] % 64 == 0  # `.param .align 64`
    assert ctypes.string_at(params[5], 4) == (128).to_bytes(4, "little")  # N, before them


def test_the_packer_encodes_again_only_what_changed(fake):
    c = gemm_contract()
    packer = Packer(c)
    packer.pack(bind(c, gemm_args()))
    assert map_calls(fake) == 2
    packer.pack(bind(c, gemm_args()))  # the same pointers and extents
    assert map_calls(fake) == 2
    packer.pack(bind(c, gemm_args(a=0x40_0000)))  # A moved: its map alone
    assert map_calls(fake) == 3 and fake.tensor_maps[-1]["address"] == 0x40_0000
    packer.pack(bind(c, gemm_args(m=512, a=0x40_0000)))  # M changed: A's map, not B's
    assert map_calls(fake) == 4 and fake.tensor_maps[-1]["dims"] == (512, 512)
    packer.pack(bind(c, gemm_args(m=512, n=256, a=0x40_0000)))  # N changed: B's map alone
    assert map_calls(fake) == 5 and fake.tensor_maps[-1]["dims"] == (256, 512)


def test_the_packer_refuses_a_misaligned_base(fake):
    c = gemm_contract()
    bound = bind(c, gemm_args())
    # binding for the GPU refuses such a base first; the packer checks it for itself
    bound.arrays["B"] = dataclasses.replace(bound.arrays["B"], ptr=0x20_0008)
    with pytest.raises(ArgumentValueError, match="`B` starts at address 0x200008") as info:
        Packer(c).pack(bound)
    assert info.value.param == "B"


def kernel(c: KernelContract, tmp_path) -> GpuKernel:
    from phobos.runtime.cache import KernelCache

    return GpuKernel(c, ".version 8.0\n.target sm_90a\n", cache=KernelCache(tmp_path))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (gemm_args(k=1004), f"`A`: {PITCH}; K = 1004 f16 elements is 2008 bytes"),
        (gemm_args(m=0), "`A` has M = 0"),
        (gemm_args(n=4), f"`B`: {PITCH}; N = 4 f16 elements is 8 bytes"),
    ],
)
def test_a_launch_refused_before_the_driver_launches(fake, tmp_path, args, words):
    k = kernel(gemm_contract(), tmp_path)
    with pytest.raises(ArgumentValueError, match=words):
        k.launch((1,), args)
    assert not fake.launches


def test_a_launch_passes_the_maps(fake, tmp_path):
    fake.slot_widths = {6: 128, 7: 128}
    k = kernel(gemm_contract(), tmp_path)
    k.launch((2, 1), gemm_args())
    (call,) = fake.launches
    assert call["slots"][6] == fake_map_bytes(
        documented("f16", 0x10_0000, 256, 512, (128, 64), "128B")
    )
    assert call["slots"][7] == fake_map_bytes(
        documented("f16", 0x20_0000, 512, 128, (64, 64), "128B")
    )


def test_the_fast_path_encodes_a_map_again_when_its_pointer_changes(fake, tmp_path, monkeypatch):
    binds = []
    real = binding.bind
    monkeypatch.setattr(
        "phobos.runtime.launch_gpu.bind", lambda *a, **kw: binds.append(1) or real(*a, **kw)
    )
    fake.slot_widths = {6: 128, 7: 128}
    k = kernel(gemm_contract(), tmp_path)
    k.launch((2, 1), gemm_args())
    first = map_calls(fake)  # the whole path's maps, and the plan's own
    k.launch((2, 1), gemm_args())
    assert len(binds) == 1 and map_calls(fake) == first  # the fast path, nothing new
    k.launch((2, 1), gemm_args(a=0x50_0000))
    assert len(binds) == 1 and map_calls(fake) == first + 1
    last = fake.launches[-1]
    assert last["slots"][6] == fake_map_bytes(
        documented("f16", 0x50_0000, 256, 512, (128, 64), "128B")
    )
    assert last["slots"][7] == fake.launches[0]["slots"][7]  # B's map as it was
    with pytest.raises(ArgumentValueError, match="`A` starts at address 0x500008"):
        k.launch((2, 1), gemm_args(a=0x50_0008))  # misaligned: the whole path refuses it
    assert len(binds) == 2 and len(fake.launches) == 3


def test_the_fast_path_keeps_each_launchs_map_with_its_pointer(fake, tmp_path):
    """Threads launching one signature with different arrays: every launch's A map is
    the encoding of the A pointer in the same launch."""
    fake.slot_widths = {6: 128}
    k = kernel(gemm_contract(), tmp_path)
    k.launch((2, 1), gemm_args())
    errors = []

    def launches(t):
        try:
            for i in range(50):
                k.launch((2, 1), gemm_args(a=0x1000_0000 + (t * 64 + i) * 256))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=launches, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(fake.launches) == 1 + 4 * 50
    for call in fake.launches:
        ptr = int.from_bytes(call["slots"][0], "little")
        want = documented("f16", ptr, 256, 512, (128, 64), "128B")
        assert call["slots"][6] == fake_map_bytes(want)
