"""The objects `phobos.lang` holds for the names of the language.

A kernel's body is read from source, never run, so these objects only need to
exist (Python evaluates decorators, and annotations without
`from __future__ import annotations`) and to say so clearly when ordinary Python
calls one:

    >>> exp = Builtin("exp", "(x)", "e^x (approximate).")
    >>> exp(1.0)
    Traceback (most recent call last):
      ...
    phobos.lang.placeholders.OutsideKernelError: `ph.exp` means something only inside a @ph.kernel or a @ph.fn: the compiler reads it from the source, Python never runs it
    >>> tensor = TypeConstructor("tensor")
    >>> tensor[ScalarType("f16")]["M", 64]
    ph.tensor[ph.f16]['M', 64]
"""

from __future__ import annotations

import sys

from phobos.names import CTX_AXES, CTX_FIELDS


class OutsideKernelError(RuntimeError):
    """A name of the language was used by Python code outside a kernel."""


def _outside(name: str) -> OutsideKernelError:
    return OutsideKernelError(
        f"`ph.{name}` means something only inside a @ph.kernel or a @ph.fn: "
        "the compiler reads it from the source, Python never runs it"
    )


class ScalarType:
    """A scalar type, `ph.f32`; called, `ph.f32(x)`, it is a conversion in a kernel."""

    def __init__(self, name: str):
        self.name = name
        self.__doc__ = f"The scalar type `{name}`; `ph.{name}(x)` converts inside a kernel."

    def __repr__(self) -> str:
        return f"ph.{self.name}"

    def __call__(self, *args, **kwargs):
        raise _outside(self.name)


class TypeSpelling:
    """A type written out, `ph.tensor[ph.f16][M, 64]`, kept only to be shown."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __getitem__(self, dims) -> TypeSpelling:
        dims = dims if isinstance(dims, tuple) else (dims,)
        return TypeSpelling(f"{self.text}[{', '.join(repr(d) for d in dims)}]")


class TypeConstructor:
    """`ph.tensor` or `ph.tile`: `ph.tensor[ph.f16][M, 64]` in an annotation."""

    def __init__(self, name: str):
        self.name = name
        self.__doc__ = f"`ph.{name}[T][dims]`: a {name} type, written in annotations."

    def __repr__(self) -> str:
        return f"ph.{self.name}"

    def __getitem__(self, elem) -> TypeSpelling:
        # Only a `def` Python runs without `from __future__ import annotations` gets here:
        # its dimensions come next, and they are names Python does not know.
        from phobos.pyfront.future import eager_annotation

        refused = eager_annotation(sys._getframe(1))
        if refused:
            from phobos.lang.kernels import KernelCompileError

            raise KernelCompileError(refused)
        return TypeSpelling(f"ph.{self.name}[{elem!r}]")

    def __call__(self, *args, **kwargs):
        raise _outside(self.name)


class Declaration:
    """`ph.let` or `ph.var`: `x: ph.let = e`, `t: ph.var[T] = e` declare a local."""

    def __init__(self, name: str):
        self.name = name
        self.__doc__ = f"`x: ph.{name} = e` or `x: ph.{name}[T] = e` declares a local."

    def __repr__(self) -> str:
        return f"ph.{self.name}"

    def __getitem__(self, type_) -> TypeSpelling:
        return TypeSpelling(f"ph.{self.name}[{type_!r}]")

    def __call__(self, *args, **kwargs):
        raise _outside(self.name)


class Builtin:
    """A built-in function of the language, `ph.exp(x)`, `ph.sum(x, over=ph.ctx.lane)`."""

    def __init__(self, name: str, signature: str, summary: str):
        self.name = name
        self.signature = signature
        self.__doc__ = summary
        self.__name__ = name

    def __repr__(self) -> str:
        return f"ph.{self.name}{self.signature}"

    def __call__(self, *args, **kwargs):
        raise _outside(self.name)


class AttributeDecorator:
    """An attribute, `@ph.pipeline` or `@ph.autotune(X=[32, 256])`.

    Python runs decorators, so this one returns what it decorates unchanged; the
    compiler reads the attribute from the source.

        >>> pipeline = AttributeDecorator("pipeline", "")
        >>> def f(): pass
        >>> pipeline(f) is f and pipeline()(f) is f and pipeline(256)(f) is f
        True
    """

    def __init__(self, name: str, summary: str):
        self.name = name
        self.__doc__ = summary
        self.__name__ = name

    def __repr__(self) -> str:
        return f"ph.{self.name}"

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and _decorates(args[0]):
            return args[0]  # bare `@ph.name`
        return _identity


def _identity(target):
    return target


def _decorates(value) -> bool:
    from phobos.lang.kernels import Fn, Kernel

    return isinstance(value, (Kernel, Fn)) or (callable(value) and hasattr(value, "__code__"))


class Unroll(Builtin):
    """`ph.unroll(n, range(lo, hi))`: only a loop header spells it."""

    def __init__(self):
        super().__init__("unroll", "(n, r)", "`for i in ph.unroll(n, range(lo, hi)):` unrolls n.")


class CtxValue:
    """One field of `ph.ctx` (or one axis of it): a value only inside a kernel."""

    def __init__(self, path: str):
        self.path = path

    def __repr__(self) -> str:
        return f"ph.ctx.{self.path}"

    def __index__(self) -> int:
        raise _outside(f"ctx.{self.path}")

    __int__ = __index__

    def __bool__(self) -> bool:
        raise _outside(f"ctx.{self.path}")


class CtxAxes(CtxValue):
    """A field read along an axis: `ph.ctx.block.x`."""

    def __init__(self, path: str):
        super().__init__(path)
        for axis in CTX_AXES:
            setattr(self, axis, CtxValue(f"{path}.{axis}"))


class Ctx:
    """`ph.ctx`: `ph.ctx.block.x`, `ph.ctx.lane`, ... (SPEC.md "Indexing and synchronization")."""

    def __init__(self):
        for name, has_axes in CTX_FIELDS.items():
            setattr(self, name, CtxAxes(name) if has_axes else CtxValue(name))

    def __repr__(self) -> str:
        return "ph.ctx"
