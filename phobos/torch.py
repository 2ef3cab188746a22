"""A `@ph.kernel` as a torch operator: `phobos.torch.op(kernel, grid, outputs=[...])`.

The op is a `torch.library.custom_op`, so torch's dispatcher, `torch.compile`
(with `fullgraph=True`: no graph break) and CUDA graphs see one opaque operator. Its
fake implementation, which `torch.compile` traces with, is read off the kernel's
launch contract: the outputs' element types and extents, each extent a literal or
a dimension the input tensors bind. The contract does not say which tensors a kernel
writes, so the op is told:

- `outputs` are tensor parameters the op allocates and returns, new tensors shaped by
  the contract (the functional form, the one `torch.compile` handles best);
- `mutates` are tensor parameters the caller passes and the kernel writes in place
  (declared to torch as `mutates_args`);
- every other parameter is an input, in the kernel's parameter order.

    import torch
    import phobos.torch
    from examples.saxpy import saxpy      # x, y, out: tensor<f32>[N]; alpha: f32

    saxpy_op = phobos.torch.op(saxpy, lambda m: (-(-m["N"] // m["BLOCK"]),), outputs=["out"])
    out = saxpy_op(x, y, 2.0)             # a new tensor of N f32, as x and y bind N

    fused = torch.compile(lambda x, y: saxpy_op(x, y, 2.0).relu(), fullgraph=True)

On CUDA tensors the kernel is launched on torch's current stream of their device,
with no host synchronisation and no allocation but the outputs, so it can be captured
in a `torch.cuda.graph` (launch it once before capturing: the first launch compiles and
loads it). On CPU tensors it runs on the tile interpreter, in place, as a launch on
numpy arrays does. A refused argument is a `phobos.runtime.errors.LaunchError` naming
the parameter, raised before the kernel runs.

This module is ours, beyond PYTHON.md; it imports only where torch is installed.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

try:
    import torch
except ImportError:
    raise ImportError(
        "phobos.torch makes Phobos kernels torch operators, and needs torch: `pip install torch`"
    ) from None

from phobos.runtime.binding import EXTENT_MULTIPLE
from phobos.runtime.contract import KernelContract, TensorSpec
from phobos.runtime.errors import ArgumentTypeError, ArgumentValueError, LaunchError

__all__ = ["KernelOp", "OpError", "op"]

# Phobos element type -> the torch dtype of a tensor that holds it.
DTYPES: dict[str, torch.dtype] = {
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
    "i8": torch.int8,
    "i32": torch.int32,
    "i64": torch.int64,
    "u8": torch.uint8,
    "u16": torch.uint16,
    "u32": torch.uint32,
    "bool": torch.bool,
}

# Phobos scalar type -> the schema type of its argument (binding rounds and range-checks).
_SCHEMA_SCALARS = {"bool": "bool", **{t: "float" for t in ("f16", "bf16", "f32", "f64")}}
_SCHEMA_SCALARS.update({t: "int" for t in ("i8", "i32", "i64", "u8", "u16", "u32")})


class OpError(LaunchError, ValueError):
    """An op that cannot be made from the kernel as asked: `kernel`, `param` and why."""


def op(
    kernel: Any,
    grid: Any,
    *,
    outputs: Iterable[str] = (),
    mutates: Iterable[str] = (),
    name: str | None = None,
) -> KernelOp:
    """The torch operator launching `kernel[grid]`: a `KernelOp`, called as
    `op(*inputs)` with the kernel's other parameters, in order (by name too).

    `grid` is what `kernel[grid]` takes: block counts, or a function of the bound
    extents and `@autotune` constants. `outputs` name the tensor parameters the op
    allocates and returns (one tensor, or a tuple of them in the order given), each
    extent of theirs a literal or a dimension an input binds; `mutates` name those
    the caller passes for the kernel to write. `name` is the operator's
    `"namespace::name"` (a bare name goes in `phobos::`), `phobos::<kernel>` by
    default: each op made needs a name of its own.

        scale_op = phobos.torch.op(scale, (4,), outputs=["out"], name="mylib::scale")
        y = scale_op(x, 2.0)
        torch.ops.mylib.scale(x, 2.0)       # the same operator
    """
    return KernelOp(kernel, grid, outputs=outputs, mutates=mutates, name=name)


class KernelOp:
    """A kernel launch registered as a `torch.library.custom_op` (`custom_op`).

    Calling it checks the arguments' kinds and count with Phobos's errors, then calls
    the operator; `torch.ops.<namespace>.<name>` reaches the same operator with torch's
    own schema errors. `inputs`, `outputs` and `mutates` are parameter names; `schema`
    is the operator's schema. Anything else (`register_autograd`, say) is the custom
    op's.
    """

    def __init__(self, kernel, grid, *, outputs=(), mutates=(), name=None):
        from phobos.lang.kernels import Kernel

        if not isinstance(kernel, Kernel):
            raise TypeError(f"phobos.torch.op takes a @ph.kernel, not {type(kernel).__name__}")
        self.kernel = kernel
        self.grid = grid
        checked = kernel.checked(getattr(kernel, "_variant", None))
        self.contract = KernelContract.for_kernel(checked, chip="", fingerprint="")
        self.outputs = tuple(outputs)
        self.mutates = tuple(mutates)
        self._check_roles()
        self.inputs = tuple(n for n in self.contract.arguments if n not in self.outputs)
        self.tensor_inputs = tuple(n for n in self.inputs if n in self.contract.tensors)
        self._check_outputs()
        self.name = _qualified(name or kernel.name)
        self.schema = self._schema()
        self.custom_op = torch.library.custom_op(
            self.name, self._run, mutates_args=self.mutates, schema=self.schema
        )
        self.custom_op.register_fake(self._fake)

    # -- making the op -----------------------------------------------------------

    def _error(self, param: str | None, message: str, help: str | None = None) -> OpError:
        return OpError(self.contract.name, param, message, help=help)

    def _check_roles(self) -> None:
        c = self.contract
        for role, names in (("outputs", self.outputs), ("mutates", self.mutates)):
            for n in names:
                if not isinstance(n, str):
                    raise self._error(None, f"`{role}` names parameters, but holds {n!r}")
                if n in c.scalars:
                    raise self._error(
                        n, f"`{role}` names `{n}`, a scalar: only a tensor parameter is written"
                    )
                if n not in c.tensors:
                    raise self._error(
                        n,
                        f"`{role}` names `{n}`, which is not a parameter of the kernel",
                        help="the tensor parameters are " + _listed(c.tensors),
                    )
                if names.count(n) > 1:
                    raise self._error(n, f"`{role}` names `{n}` twice")
        both = [n for n in self.outputs if n in self.mutates]
        if both:
            raise self._error(
                both[0],
                f"`{both[0]}` is both an output and mutated",
                help="an output is allocated by the op; a mutated tensor is passed by the caller",
            )

    def _check_outputs(self) -> None:
        bound = {d for n in self.tensor_inputs for d in self.contract.tensors[n].dims}
        for n in self.outputs:
            free = [
                d for d in self.contract.tensors[n].dims if isinstance(d, str) and d not in bound
            ]
            if free:
                raise self._error(
                    n,
                    f"output `{n}` has the extent {free[0]}, which no input tensor binds, so "
                    "the op cannot size it",
                    help=f"pass `{n}` in: `mutates=[{n!r}]`",
                )
        if self.outputs and not self.tensor_inputs:
            raise self._error(
                self.outputs[0],
                "the op has no input tensor to take its outputs' device from",
                help=f"pass `{self.outputs[0]}` in: `mutates=[{self.outputs[0]!r}]`",
            )

    def _schema(self) -> str:
        c = self.contract
        args = []
        for n in self.inputs:
            if n in c.scalars:
                args.append(f"{_SCHEMA_SCALARS[c.scalars[n]]} {n}")
            elif n in self.mutates:
                args.append(f"Tensor(a{self.mutates.index(n)}!) {n}")
            else:
                args.append(f"Tensor {n}")
        returns = {0: "()", 1: "Tensor"}.get(len(self.outputs))
        if returns is None:
            returns = "(" + ", ".join("Tensor" for _ in self.outputs) + ")"
        return f"({', '.join(args)}) -> {returns}"

    # -- calling it --------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if not torch.compiler.is_compiling():
            # Under torch.compile the schema checks the kinds as it traces; these give
            # an eager caller Phobos's messages, naming the parameter.
            args = self._positional(args, kwargs)
            kwargs = {}
            for n, value in zip(self.inputs, args, strict=True):
                self._check_kind(n, value)
        return self.custom_op(*args, **kwargs)

    def __getattr__(self, attr: str):
        if attr == "custom_op":  # not made yet: __init__ failed before it
            raise AttributeError(attr)
        return getattr(self.custom_op, attr)

    def __repr__(self) -> str:
        return f"<phobos.torch.op {self.name}{self.schema}>"

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        names = self.inputs
        values = list(args) + [_MISSING] * (len(names) - len(args))
        if len(args) > len(names):
            raise ArgumentTypeError(
                self.contract.name,
                None,
                f"the op takes {len(names)} argument{'s' * (len(names) != 1)}, but "
                f"{len(args)} were given ({len(args) - len(names)} too many)",
                help="the op's parameters are " + _listed(names) + _returned(self.outputs),
            )
        for key, value in kwargs.items():
            if key not in names:
                why = ": it is an output, which the op returns" if key in self.outputs else ""
                raise ArgumentTypeError(
                    self.contract.name,
                    key,
                    f"the op has no parameter `{key}`{why}",
                    help="the op's parameters are " + _listed(names),
                )
            index = names.index(key)
            if values[index] is not _MISSING:
                raise ArgumentTypeError(
                    self.contract.name,
                    key,
                    f"argument `{key}` is given twice: by position and by name",
                )
            values[index] = value
        for n, value in zip(names, values, strict=True):
            if value is _MISSING:
                raise ArgumentTypeError(
                    self.contract.name,
                    n,
                    f"argument `{n}` is missing",
                    help="the op's parameters are " + _listed(names) + _returned(self.outputs),
                )
        return tuple(values)

    def _check_kind(self, n: str, value: Any) -> None:
        c = self.contract
        if n in c.tensors:
            if not isinstance(value, torch.Tensor):
                raise ArgumentTypeError(
                    c.name,
                    n,
                    f"argument `{n}` is {_kind_of(value)}, but the kernel declares "
                    f"{_spelled(c.tensors[n])}",
                    help="pass a torch.Tensor",
                )
            return
        declared = c.scalars[n]
        if isinstance(value, torch.Tensor):
            raise ArgumentTypeError(
                c.name,
                n,
                f"argument `{n}` is a tensor, but the kernel declares the scalar {declared}",
                help="pass a Python number; `x.item()` takes one out of a one-element tensor",
            )
        kind = _SCHEMA_SCALARS[declared]
        ok = isinstance(value, bool) if kind == "bool" else not isinstance(value, bool)
        if kind == "int":
            ok = ok and isinstance(value, numbers.Integral)
        elif kind == "float":
            ok = ok and isinstance(value, numbers.Real)
        if not ok:
            raise ArgumentTypeError(
                c.name,
                n,
                f"argument `{n}` is {_kind_of(value)}, but the kernel declares {declared}",
            )

    # -- the implementations -----------------------------------------------------

    def _fake(self, *args):
        values = dict(zip(self.inputs, args, strict=True))
        return self._returns(self._allocate(values))

    def _run(self, *args):
        values = dict(zip(self.inputs, args, strict=True))
        made = self._allocate(values)
        values.update(made)
        launch = [values[n] for n in self.contract.arguments]
        device = values[self.tensor_inputs[0]].device if self.tensor_inputs else None
        if device is None or device.type == "cpu":
            self.kernel[self.grid](
                *(self._host(n, v) for n, v in zip(self.contract.arguments, launch, strict=True))
            )
        elif device.type == "cuda":
            stream = torch.cuda.current_stream(device).cuda_stream
            self.kernel[self.grid](*launch, stream=stream)
        else:
            first = self.tensor_inputs[0]
            raise ArgumentValueError(
                self.contract.name,
                first,
                f"argument `{first}` is on the torch device {device}, but a Phobos kernel runs "
                "on CPU or CUDA tensors",
                help=f"move it first: `{first}.cuda()` or `{first}.cpu()`",
            )
        return self._returns(made)

    def _returns(self, made: dict[str, torch.Tensor]):
        if len(self.outputs) == 1:
            return made[self.outputs[0]]
        if self.outputs:
            return tuple(made[n] for n in self.outputs)
        return None

    def _allocate(self, values: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The outputs, new tensors on the inputs' device shaped by the extents they
        bind; every input tensor checked against the contract first. The same code
        makes fake tensors under `torch.compile` (an extent may be symbolic there)."""
        dims = self._bind(values)
        if not self.outputs:
            return {}
        like = values[self.tensor_inputs[0]]
        made = {}
        for n in self.outputs:
            spec = self.contract.tensors[n]
            shape = [d if isinstance(d, int) else dims[d] for d in spec.dims]
            made[n] = like.new_empty(shape, dtype=DTYPES[spec.elem])
        return made

    def _bind(self, values: dict[str, Any]) -> dict[str, Any]:
        """The dynamic extents the input tensors bind, by the rules of
        `phobos.runtime.binding` spelled for torch tensors: element type, rank, fixed
        extents, extents that agree and are multiples of the row pitch, contiguity and
        one device. The launch binds again, and checks the base addresses too."""
        c = self.contract
        dims: dict[str, Any] = {}
        source: dict[str, str] = {}
        first = None
        for n in self.tensor_inputs:
            t = values[n]
            spec = c.tensors[n]
            want = DTYPES[spec.elem]
            if t.dtype != want:
                raise ArgumentTypeError(
                    c.name,
                    n,
                    f"argument `{n}` has element type {_torch_name(t.dtype)}, but the kernel "
                    f"declares {spec.elem}",
                    help=f"convert it first: `{n}.to({_torch_name(want)})`",
                )
            if t.dim() != spec.rank:
                raise ArgumentTypeError(
                    c.name,
                    n,
                    f"argument `{n}` has rank {t.dim()} (shape {tuple(t.shape)}), but the kernel "
                    f"declares rank {spec.rank}: {_spelled(spec)}",
                )
            for axis, (d, size) in enumerate(zip(spec.dims, t.shape, strict=True)):
                if isinstance(d, int):
                    if size != d:
                        raise ArgumentValueError(
                            c.name,
                            n,
                            f"argument `{n}` has extent {size} on axis {axis}, but the kernel "
                            f"declares {d} ({_spelled(spec)})",
                        )
                elif d in dims:
                    if size != dims[d]:
                        raise ArgumentValueError(
                            c.name,
                            n,
                            f"argument `{n}` has {d} = {size} (axis {axis}), but argument "
                            f"`{source[d]}` bound {d} = {dims[d]}",
                            help=f"every tensor with the extent {d} must agree on it",
                        )
                else:
                    self._extent(n, d, size)
                    dims[d], source[d] = size, n
            if not t.is_contiguous():
                raise ArgumentValueError(
                    c.name,
                    n,
                    f"argument `{n}` is not row-major and contiguous: its strides are "
                    f"{tuple(t.stride())} elements",
                    help=f"pass a contiguous copy: `{n}.contiguous()`",
                )
            if first is None:
                first = n
            elif t.device != values[first].device:
                raise ArgumentValueError(
                    c.name,
                    n,
                    f"argument `{n}` is on {t.device}, but argument `{first}` is on "
                    f"{values[first].device}",
                    help="a kernel runs on one device: move the tensors to the same one",
                )
        return dims

    def _extent(self, n: str, d: str, size) -> None:
        if size % EXTENT_MULTIPLE:
            raise ArgumentValueError(
                self.contract.name,
                n,
                f"argument `{n}` binds {d} = {size}, which is not a multiple of {EXTENT_MULTIPLE}",
                help=f"tensor extents are multiples of {EXTENT_MULTIPLE} (the row pitch); pad "
                f"the tensor to {size + EXTENT_MULTIPLE - size % EXTENT_MULTIPLE}",
            )
        tile = self.contract.aligned.get(d)
        if tile and size % tile:
            raise ArgumentValueError(
                self.contract.name,
                n,
                f"argument `{n}` binds {d} = {size}, which is not a multiple of {tile}, as the "
                f"kernel's `@aligned` promises",
                help=f"pad {d} to a multiple of {tile}",
            )

    def _host(self, n: str, value: Any) -> Any:
        """What the CPU launch takes for argument `n`: a numpy view of a tensor's own
        memory, so the interpreter's stores land in it; a scalar as it is."""
        if not isinstance(value, torch.Tensor):
            return value
        if value.dtype == torch.bfloat16:
            raise ArgumentTypeError(
                self.contract.name,
                n,
                f"argument `{n}` is a bfloat16 CPU tensor, which numpy, and so the CPU "
                "interpreter, does not read",
                help="run the op on CUDA tensors",
            )
        return value.detach().numpy()


_MISSING = object()


def _qualified(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f'an op\'s `name` is a string, as "mylib::scale", not {name!r}')
    return name if "::" in name else f"phobos::{name}"


def _listed(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def _returned(outputs: Sequence[str]) -> str:
    return f"; it returns {_listed(outputs)}" if outputs else ""


def _spelled(spec: TensorSpec) -> str:
    return f"tensor<{spec.elem}>[{', '.join(map(str, spec.dims))}]"


def _torch_name(dtype: torch.dtype) -> str:
    return str(dtype)  # `torch.float32`


def _kind_of(value: Any) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
