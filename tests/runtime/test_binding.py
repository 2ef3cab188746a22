"""Binding a launch's arguments (phobos.runtime.binding): every rule, against fake arrays.

The fake arrays expose only an interface dict, as a foreign library's array would;
binding reads the dict and never the memory, so their pointers need point nowhere.
"""

from __future__ import annotations

import math

import pytest

from phobos.runtime.binding import (
    ELEMENT_TYPES,
    bind,
    c_strides,
    describe,
    resolve_grid,
)
from phobos.runtime.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    GridError,
    LaunchError,
)
from phobos.sema import hir

KERNEL = "k"


class Fake:
    """An array known only by its `__array_interface__` (or, on the device, CAI)."""

    def __init__(
        self,
        shape,
        typestr="<f4",
        *,
        strides=None,
        ptr=1 << 20,
        readonly=False,
        device=False,
        descr=None,
        dtype=None,
    ):
        interface = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "version": 3,
        }
        if descr is not None:
            interface["descr"] = descr
        if dtype is not None:
            self.dtype = dtype
        setattr(self, "__cuda_array_interface__" if device else "__array_interface__", interface)


class FakeDevice:
    """An array with only `__cuda_array_interface__` (set as a class attribute)."""

    def __init__(self, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (1 << 20, False),
            "strides": None,
            "version": 3,
        }


def tensor(name, elem, *dims):
    shape = tuple(hir.Dyn(d) if isinstance(d, str) else d for d in dims)
    return hir.Sym(name, 0, "param", hir.TensorT(hir.Scalar(elem), shape))


def scalar(name, t):
    return hir.Sym(name, 0, "param", hir.Scalar(t))


SAXPY = [
    tensor("x", "f32", "N"),
    tensor("y", "f32", "N"),
    tensor("out", "f32", "N"),
    scalar("alpha", "f32"),
]


def refused(params, args, kind=LaunchError, **options):
    options.setdefault("kernel_name", KERNEL)
    with pytest.raises(kind) as info:
        bind(params, args, **options)
    return info.value


def assert_names(error, param, *fragments):
    text = str(error)
    assert text.startswith(f"`{KERNEL}`: "), text
    assert f"`{param}`" in text, text
    assert error.param == param
    for fragment in fragments:
        assert fragment in text, text


# ---------------------------------------------------------------------------
# What binds


def test_saxpy_binds_arrays_dims_and_scalars():
    x, y, out = Fake((1000,)), Fake((1000,)), Fake((1000,))
    bound = bind(SAXPY, (x, y, out, 2), kernel_name=KERNEL)
    assert bound.dims == {"N": 1000}
    assert bound.values["x"] is x and bound.values["out"] is out
    assert list(bound.values) == ["x", "y", "out", "alpha"]
    assert bound.scalars == {"alpha": 2.0} and isinstance(bound.scalars["alpha"], float)
    assert bound.arrays["y"].shape == (1000,) and bound.arrays["y"].elem == "f32"


def test_dims_bound_from_the_first_tensor_in_order():
    params = [tensor("a", "f16", "M", 64, "K"), tensor("b", "f16", "K", "N"), scalar("n", "i32")]
    bound = bind(params, (Fake((12, 64, 8), "<f2"), Fake((8, 20), "<f2"), 7), kernel_name=KERNEL)
    assert list(bound.dims.items()) == [("M", 12), ("K", 8), ("N", 20)]
    assert bound.scalars == {"n": 7}


@pytest.mark.parametrize(("key", "elem"), sorted(ELEMENT_TYPES.items()))
def test_every_element_type_binds(key, elem):
    kind, size = key
    order = "|" if size == 1 else "<"
    bound = bind([tensor("t", elem, 8)], (Fake((8,), f"{order}{kind}{size}"),), kernel_name=KERNEL)
    assert bound.arrays["t"].elem == elem


def test_bf16_by_descr_or_dtype_name():
    params = [tensor("t", "bf16", 4)]
    by_descr = Fake((4,), "<V2", descr=[("bfloat16", "<V2")])
    assert bind(params, (by_descr,), kernel_name=KERNEL).arrays["t"].elem == "bf16"

    class DType:
        name = "bfloat16"

    assert bind(params, (Fake((4,), "<V2", dtype=DType()),), kernel_name=KERNEL)
    assert bind(params, (Fake((4,), "<V2", dtype="torch.bfloat16"),), kernel_name=KERNEL)
    bare = refused(params, (Fake((4,), "<V2"),), ArgumentTypeError)
    assert_names(bare, "t", "element type void16", "declares bf16")


def test_extent_one_axes_take_any_stride_as_numpy_allows():
    params = [tensor("t", "f32", 4, 1, 8)]
    bind(params, (Fake((4, 1, 8), strides=(32, 999, 4)),), kernel_name=KERNEL)
    assert c_strides((4, 1, 8), 4) == (32, 32, 4)


def test_empty_tensor_binds_zero_extent():
    bound = bind([tensor("t", "f32", "N", 8)], (Fake((0, 8), strides=(0, 0)),), kernel_name=KERNEL)
    assert bound.dims == {"N": 0}


# ---------------------------------------------------------------------------
# Refusals, in the order binding checks


def test_too_few_arguments_names_the_missing_parameter():
    err = refused(SAXPY, (Fake((8,)), Fake((8,)), Fake((8,))), ArgumentTypeError)
    assert_names(err, "alpha", "takes 4 arguments, but 3 were given")


def test_too_many_arguments():
    err = refused(SAXPY, (Fake((8,)),) * 3 + (1.0, 2.0), ArgumentTypeError)
    assert "takes 4 arguments, but 5 were given" in str(err) and "`alpha`" in str(err)


def test_not_an_array_where_a_tensor_is_declared():
    err = refused(SAXPY, ([1.0] * 8, Fake((8,)), Fake((8,)), 1.0), ArgumentTypeError)
    assert_names(err, "x", "is a list", "tensor<f32>[N]", "__array_interface__")


def test_dlpack_only_without_a_reader_is_refused():
    class Capsule:
        def __dlpack__(self, stream=None):
            raise AssertionError("never read")

    err = refused(SAXPY, (Capsule(), Fake((8,)), Fake((8,)), 1.0), ArgumentTypeError)
    assert_names(err, "x", "only `__dlpack__`")


def test_dlpack_through_a_reader_binds():
    class Capsule:
        def __dlpack__(self, stream=None):
            return None

    bound = bind(
        SAXPY,
        (Capsule(), Fake((8,)), Fake((8,)), 1.0),
        kernel_name=KERNEL,
        from_dlpack=lambda obj: Fake((8,)),
    )
    assert bound.dims == {"N": 8}


def test_unreadable_interface_names_the_parameter():
    class Broken:
        @property
        def __array_interface__(self):
            raise TypeError("unsupported ScalarType BFloat16")

    err = refused(SAXPY, (Fake((8,)), Broken(), Fake((8,)), 1.0), ArgumentTypeError)
    assert_names(err, "y", "unsupported ScalarType BFloat16")


def test_wrong_element_type():
    err = refused(SAXPY, (Fake((8,), "<f8"), Fake((8,)), Fake((8,)), 1.0), ArgumentTypeError)
    assert_names(err, "x", "has element type float64, but the kernel declares f32", "float32")


@pytest.mark.parametrize(
    ("typestr", "named"),
    [("<i2", "int16"), ("<c8", "complex64"), (">f4", "big-endian float32"), ("|u1", "uint8")],
)
def test_wrong_element_type_is_named_as_numpy_names_it(typestr, named):
    err = refused([tensor("t", "f32", 8)], (Fake((8,), typestr),), ArgumentTypeError)
    assert_names(err, "t", f"element type {named},")


def test_wrong_rank():
    err = refused([tensor("a", "f32", "M", "N")], (Fake((8,)),), ArgumentTypeError)
    assert_names(err, "a", "rank 1", "rank 2")


def test_fixed_extent_differs():
    err = refused([tensor("a", "f32", "M", 64)], (Fake((8, 32)),), ArgumentValueError)
    assert_names(err, "a", "extent 32 on axis 1", "declares 64")


def test_not_contiguous():
    err = refused([tensor("a", "f32", "M", "N")], (Fake((8, 4), strides=(4, 32)),))
    assert isinstance(err, ArgumentValueError)
    assert_names(err, "a", "not row-major and contiguous", "(4, 32)", "(16, 4)")


def test_row_slice_of_a_wider_array_is_not_contiguous():
    err = refused([tensor("a", "f32", "M", "N")], (Fake((8, 4), strides=(64, 4)),))
    assert_names(err, "a", "strides are (64, 4) bytes")


def test_dynamic_extents_disagree_naming_both_parameters():
    err = refused(SAXPY, (Fake((16,)), Fake((16,)), Fake((20,)), 1.0), ArgumentValueError)
    assert_names(err, "out", "N = 20", "argument `x` bound N = 16")


def test_dynamic_extent_not_a_multiple_of_4():
    err = refused(SAXPY, (Fake((1001,)), Fake((1001,)), Fake((1001,)), 1.0), ArgumentValueError)
    assert_names(err, "x", "N = 1001", "not a multiple of 4", "1004")


def test_aligned_literal_tile_is_checked():
    err = refused(
        SAXPY,
        (Fake((1000,)),) * 3 + (1.0,),
        ArgumentValueError,
        aligned={"N": 64},
    )
    assert_names(err, "x", "N = 1000", "multiple of 64", "@aligned(N = 64)")


def test_aligned_autotune_tile_resolves_through_the_variant():
    options = {"aligned": {"N": "BLOCK"}, "variant": (("BLOCK", 128),)}
    err = refused(SAXPY, (Fake((1024 + 64,)),) * 3 + (1.0,), ArgumentValueError, **options)
    assert_names(err, "x", "N = 1088", "BLOCK = 128", "@aligned(N = BLOCK)")
    bound = bind(SAXPY, (Fake((1024,)),) * 3 + (1.0,), kernel_name=KERNEL, **options)
    assert bound.dims == {"N": 1024}


def test_base_not_aligned_to_the_element():
    err = refused([tensor("a", "f32", "N")], (Fake((8,), ptr=4096 + 2),), ArgumentValueError)
    assert_names(err, "a", "0x1002", "element size, 4 bytes")


def test_aligned_promise_needs_16_byte_base():
    params = [tensor("a", "f32", "N")]
    bind(params, (Fake((8,), ptr=4096 + 4),), kernel_name=KERNEL)  # no promise: 4 is enough
    err = refused(params, (Fake((8,), ptr=4096 + 4),), ArgumentValueError, aligned={"N": 8})
    assert_names(err, "a", "16 bytes", "@aligned(N")


def test_read_only_array_refused():
    err = refused(SAXPY, (Fake((8,), readonly=True), Fake((8,)), Fake((8,)), 1.0))
    assert isinstance(err, ArgumentValueError)
    assert_names(err, "x", "read-only")


def test_device_array_on_a_cpu_launch_without_copies():
    err = refused(SAXPY, (Fake((8,)), FakeDevice((8,)), Fake((8,)), 1.0), ArgumentValueError)
    assert_names(err, "y", "device memory", "PHOBOS_INTERPRET=1")


def test_device_array_binds_when_the_launch_copies():
    bound = bind(SAXPY, (FakeDevice((8,)),) * 3 + (1.0,), kernel_name=KERNEL, copy_device=True)
    assert all(info.on_device for info in bound.arrays.values())


def test_host_array_on_a_gpu_launch():
    err = refused(SAXPY, (FakeDevice((8,)), Fake((8,)), FakeDevice((8,)), 1.0), target="gpu")
    assert_names(err, "y", "host memory")


def test_gpu_launch_reads_the_device_interface_when_both_exist():
    both = Fake((8,), "<f8")  # the host side says f64 ...
    both.__cuda_array_interface__ = dict(both.__array_interface__, typestr="<f4")  # ... device f32
    bound = bind([tensor("t", "f32", "N")], (both,), kernel_name=KERNEL, target="gpu")
    assert bound.arrays["t"].on_device


def test_masked_array_refused():
    masked = Fake((8,))
    masked.__array_interface__["mask"] = Fake((8,), "|b1")
    assert_names(refused([tensor("t", "f32", 8)], (masked,)), "t", "masked")


def interface(**entries):
    """A host array whose interface dict is a valid one with `entries` replaced (an
    entry given as `...` is left out)."""
    array = Fake((8,))
    d = array.__array_interface__
    d.update(entries)
    for key in [k for k, v in d.items() if v is ...]:
        del d[key]
    return array


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ({"shape": (8.0,)}, "shape (8.0,) holds a float on axis 0, not an int"),
        ({"shape": ("8",)}, "shape ('8',) holds a str on axis 0"),
        ({"shape": (True,)}, "holds a bool on axis 0"),
        ({"shape": [8]}, "shape is a list, not a tuple of ints"),
        ({"shape": 8}, "shape is an int"),
        ({"shape": ...}, "has no `shape`"),
        ({"strides": (4, 4)}, "2 strides (4, 4) for shape (8,), of rank 1"),
        ({"strides": (4.0,)}, "strides (4.0,) holds a float"),
        ({"strides": "C"}, "strides is a str"),
        ({"typestr": "<f04"}, "typestr '<f04' is not a typestr such as '<f4'"),
        ({"typestr": "f4"}, "typestr 'f4' is not a typestr"),
        ({"typestr": "<f4 "}, "is not a typestr"),
        ({"typestr": 4}, "typestr 4 is not a typestr"),
        ({"data": None}, "data None is not a pair (pointer, read-only) of an int and a bool"),
        ({"data": (1.5, False)}, "data (1.5, False) is not a pair"),
        ({"data": ("4096", False)}, "is not a pair"),
        ({"data": (True, False)}, "is not a pair"),
        ({"data": (4096, 0)}, "is not a pair"),
        ({"data": [4096, False]}, "is not a pair"),
        ({"data": (4096,)}, "is not a pair"),
        ({"version": "3"}, "version '3' is not an int"),
        ({"version": ...}, "has no `version`"),
    ],
)
def test_malformed_interfaces_are_refused_naming_the_parameter(entries, fragment):
    err = refused([tensor("t", "f32", "N")], (interface(**entries),), ArgumentTypeError)
    assert_names(err, "t", "cannot be bound", "`__array_interface__`", fragment)


def test_an_interface_that_is_not_a_dict_is_refused():
    class Listed:
        __cuda_array_interface__ = [("shape", (8,))]

    err = refused([tensor("t", "f32", "N")], (Listed(),), ArgumentTypeError, target="gpu")
    assert_names(err, "t", "its `__cuda_array_interface__` is a list, not a dict")


def test_numpy_ints_in_an_interface_bind():
    np = pytest.importorskip("numpy")
    bound = bind([tensor("t", "f32", "N")], (interface(shape=(np.int64(8),)),), kernel_name=KERNEL)
    assert bound.dims == {"N": 8} and type(bound.arrays["t"].shape[0]) is int


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_a_negative_extent_is_refused(target):
    arg = Fake((-4, 8), device=target == "gpu")
    err = refused([tensor("t", "f32", "N", 8)], (arg,), ArgumentValueError, target=target)
    assert_names(err, "t", "extent -4 on axis 0 (shape (-4, 8)), but no extent is negative")


@pytest.mark.parametrize("target", ["cpu", "gpu"])
@pytest.mark.parametrize(
    ("ptr", "fragment"),
    [
        (-16, "the data pointer -16, which is not a 64-bit address"),
        (2**64, "which is not a 64-bit address"),
        (0, "a null data pointer, but shape (8,)"),
    ],
)
def test_null_and_negative_pointers_are_refused(target, ptr, fragment):
    arg = Fake((8,), ptr=ptr, device=target == "gpu")
    err = refused([tensor("t", "f32", "N")], (arg,), ArgumentValueError, target=target)
    assert_names(err, "t", fragment)


def test_a_null_pointer_binds_for_an_array_with_no_elements():
    for target in ("cpu", "gpu"):
        arg = Fake((0, 8), ptr=0, device=target == "gpu")
        bound = bind([tensor("t", "f32", "N", 8)], (arg,), kernel_name=KERNEL, target=target)
        assert bound.dims == {"N": 0} and bound.arrays["t"].ptr == 0


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_an_extent_past_the_index_width_is_refused(target):
    params = [tensor("t", "f32", "N")]
    arg = Fake((2**31,), device=target == "gpu")
    err = refused(params, (arg,), ArgumentValueError, target=target)
    assert_names(err, "t", "binds N = 2147483648, more than a 32-bit index holds")
    bind(params, (Fake((2**31 - 4,), device=target == "gpu"),), kernel_name=KERNEL, target=target)
    bound = bind(params, (arg,), kernel_name=KERNEL, target=target, index_width=64)
    assert bound.dims == {"N": 2**31}


# ---------------------------------------------------------------------------
# Scalars


def test_array_where_a_scalar_is_declared():
    err = refused(SAXPY, (Fake((8,)),) * 4, ArgumentTypeError)
    assert_names(err, "alpha", "is an array, but the kernel declares the scalar f32")


def test_string_where_a_scalar_is_declared():
    err = refused(SAXPY, (Fake((8,)),) * 3 + ("2.0",), ArgumentTypeError)
    assert_names(err, "alpha", "is a str, but the kernel declares f32")


def test_scalar_where_a_tensor_is_declared():
    err = refused(SAXPY, (Fake((8,)), 3.0, Fake((8,)), 1.0), ArgumentTypeError)
    assert_names(err, "y", "is a float, but the kernel declares tensor<f32>[N]")


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        ("f32", 0.1, 0.10000000149011612),
        ("f16", 0.1, 0.0999755859375),
        ("bf16", 0.1, 0.10009765625),
        ("f64", 0.1, 0.1),
        ("f32", 3, 3.0),
        ("i32", -(2**31), -(2**31)),
        ("i64", 2**63 - 1, 2**63 - 1),
        ("i8", -128, -128),
        ("u32", 2**32 - 1, 2**32 - 1),
        ("bool", True, True),
    ],
)
def test_scalars_convert_to_their_declared_type(t, value, expected):
    got = bind([scalar("s", t)], (value,), kernel_name=KERNEL).scalars["s"]
    assert got == expected and type(got) is type(expected)


def test_infinities_and_nan_pass_to_float_scalars():
    bound = bind([scalar("a", "f32"), scalar("b", "f16")], (math.inf, math.nan), kernel_name=KERNEL)
    assert bound.scalars["a"] == math.inf and math.isnan(bound.scalars["b"])


def test_numpy_scalars_convert():
    np = pytest.importorskip("numpy")
    params = [scalar("a", "f32"), scalar("n", "i32"), scalar("p", "bool")]
    bound = bind(params, (np.float32(0.5), np.int64(7), np.bool_(True)), kernel_name=KERNEL)
    assert bound.scalars == {"a": 0.5, "n": 7, "p": True}
    assert type(bound.scalars["n"]) is int and type(bound.scalars["p"]) is bool
    err = refused([scalar("a", "f32")], (np.zeros(()),), ArgumentTypeError)  # a 0-d array
    assert_names(err, "a", "is an array")


@pytest.mark.parametrize(
    ("t", "value", "kind", "fragment"),
    [
        ("i32", 2**31, ArgumentValueError, "does not fit i32 (-2147483648 to 2147483647)"),
        ("i8", 200, ArgumentValueError, "does not fit i8"),
        ("u32", -1, ArgumentValueError, "does not fit u32"),
        ("i32", 1.0, ArgumentTypeError, "is a float, but the kernel declares i32"),
        ("i32", True, ArgumentTypeError, "is a bool, but the kernel declares i32"),
        ("f32", False, ArgumentTypeError, "is a bool, but the kernel declares f32"),
        ("f32", 1e39, ArgumentValueError, "overflows f32"),
        ("f16", 70000.0, ArgumentValueError, "overflows f16"),
        ("f32", 1j, ArgumentTypeError, "is a complex"),
        ("bool", 1, ArgumentTypeError, "is an int, but the kernel declares bool"),
        ("bool", None, ArgumentTypeError, "is None, but the kernel declares bool"),
    ],
)
def test_scalar_refusals(t, value, kind, fragment):
    err = refused([scalar("s", t)], (value,), kind)
    assert_names(err, "s", fragment)


def test_refusals_are_type_or_value_errors():
    assert isinstance(refused(SAXPY, ()), TypeError)
    assert isinstance(refused(SAXPY, (Fake((6,)),) * 3 + (1.0,)), ValueError)


# ---------------------------------------------------------------------------
# Reading interfaces


def test_describe_prefers_the_interface_asked_for():
    both = Fake((8,))
    both.__cuda_array_interface__ = dict(both.__array_interface__)
    assert not describe(both).on_device
    assert describe(both, "__cuda_array_interface__").on_device
    assert describe(object()) is None


def test_numpy_arrays_bind():
    np = pytest.importorskip("numpy")
    x = np.ones((12, 8), np.float32)
    bound = bind([tensor("x", "f32", "M", 8)], (x,), kernel_name=KERNEL)
    assert bound.dims == {"M": 12} and bound.values["x"] is x
    err = refused([tensor("x", "f32", "M", "N")], (x.T,))
    assert_names(err, "x", "not row-major")
    err = refused([tensor("x", "f32", "M", "N")], (x[:, :4],))
    assert_names(err, "x", "(32, 4) bytes")


# ---------------------------------------------------------------------------
# The grid


def test_grid_forms():
    meta = {"N": 1000, "BLOCK": 16}
    assert resolve_grid((4,), meta, kernel_name=KERNEL) == (4,)
    assert resolve_grid([2, 3, 4], meta, kernel_name=KERNEL) == (2, 3, 4)
    assert resolve_grid(5, meta, kernel_name=KERNEL) == (5,)
    seen = []

    def grid(m):
        seen.append(m)
        return ((m["N"] + m["BLOCK"] - 1) // m["BLOCK"], 2)

    assert resolve_grid(grid, meta, kernel_name=KERNEL) == (63, 2)
    assert seen == [meta]


def test_persistent_grid():
    assert resolve_grid((), {}, kernel_name=KERNEL, persistent=True, persistent_ctas=4) == (4,)
    with pytest.raises(GridError, match="sizes its own grid"):
        resolve_grid((8,), {}, kernel_name=KERNEL, persistent=True, persistent_ctas=4)


@pytest.mark.parametrize(
    ("grid", "fragment"),
    [
        ((), "only a `@persistent` kernel"),
        ((1, 2, 3, 4), "4 axes, more than 3"),
        ((0,), "block count 0 on axis x is not positive"),
        ((4, -1), "block count -1 on axis y"),
        ((4.0,), "is a float, not an int"),
        ((True,), "is a bool"),
        ("8", "the grid is a str"),
        (None, "the grid is None"),
        (lambda meta: 8.5, "the grid function returned a float"),
        ((1, 65536), "more than CUDA allows (65535)"),
        ((2**31,), "more than CUDA allows"),
    ],
)
def test_grid_refusals(grid, fragment):
    with pytest.raises(GridError) as info:
        resolve_grid(grid, {"N": 8}, kernel_name=KERNEL)
    assert str(info.value).startswith(f"`{KERNEL}`: ") and fragment in str(info.value)
