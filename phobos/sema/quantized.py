"""The quantized built-ins' signatures and shapes (SPEC.md "Quantized built-ins").

Each family is a row: what its operands are, in order, as `(role, element types,
shape)`, with shapes written over the symbols M, N, K of the call. The checker
binds M, N and K from the operands that define them, then holds every other
operand to its row; a dimension bound at launch is compared by name, and a
derived extent such as K/32 is only checked when K is a constant.

    >>> family("qdot_t").result, family("iq2xs_qgemm_t").tables
    (('M', 'N'), ('grid', 'masks'))
    >>> family("q4k_qgemm_t").operands[2]
    ('qb', ('i8',), (64, 'K/256*144'))
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.sema import hir
from phobos.sema.typing import elem, is_shaped, shape_text

E_OPERAND = "E0322"  # an operand of the wrong kind, type or shape
E_LAUNCH = "E0323"  # the CTA a quantized built-in needs

# SPEC.md "Formats": bytes per 256 weights.
FORMAT_BYTES = {
    "iq1s": 50, "iq1m": 56, "iq2xxs": 66, "iq2xs": 74, "iq2s": 82, "iq3xxs": 98,
    "iq3s": 110, "q4k": 144, "q5k": 176, "q6k": 208, "ptq1": 56,
}  # fmt: skip

# SPEC.md "Table operands": the tables each format's built-ins take, in order.
QGEMM_TABLES = {
    "iq1s": ("grid",), "iq1m": ("grid",), "iq2xxs": ("grid", "masks"),
    "iq2xs": ("grid", "masks"), "iq2s": ("grid", "masks"), "iq3xxs": ("grid", "masks"),
    "iq3s": ("grid", "masks"), "q4k": (), "q5k": (), "q6k": (), "ptq1": (),
}  # fmt: skip
STAGED_TABLES = {
    "iq1s": ("grid",), "iq2xxs": ("grid", "signs"), "iq2xs": ("grid", "signs"),
    "iq2s": ("grid", "signs"), "iq3xxs": ("grid", "signs"), "iq3s": ("grid", "signs"),
}  # fmt: skip

SCALES = ("f32", "f16")


@dataclass(frozen=True)
class Family:
    """One built-in's row: operands `(role, elems, shape)`, the tables, the result."""

    operands: tuple
    result: tuple = ("M", "N")
    k_multiple: int = 32
    mma: bool = False  # M and N multiples of 8
    threads: int | None = None  # the CTA size it needs
    tables: tuple[str, ...] = ()


def _q8(mma: bool, q50: bool) -> Family:
    w = ("w", ("i8",), ("N", "K/32*20") if q50 else ("N", "K"))
    w_scales = ("w_scales", SCALES, ("K/32", "N") if mma else ("N", "K/32"))
    return Family(
        (("a", ("i8",), ("M", "K")), ("a_scales", ("f32",), ("M", "K/32")), w, w_scales),
        mma=mma,
    )


def _raw(fmt: str, gemm: bool, tables: tuple[str, ...]) -> Family:
    rows_a, rows_w = (128, 64) if gemm else ("M", "N")
    b = FORMAT_BYTES[fmt]
    return Family(
        (
            ("a", ("i8",), (rows_a, "K")),
            ("a_scales", ("f32",), (rows_a, "K/32")),
            ("qb", ("i8",), (rows_w, f"K/256*{b}")),
            ("d", ("f16",), (rows_w, "K/256")),
        ),
        result=(rows_a, rows_w),
        k_multiple=256,
        mma=not gemm,
        threads=256 if gemm else None,
        tables=tables,
    )


def family(name: str) -> Family | None:
    """The row of the quantized built-in `name`, None for a name that is not one."""
    if name in ("qdot_t", "qmma_t", "q50_qdot_t", "q50_qmma_t"):
        return _q8(name.endswith("qmma_t"), name.startswith("q50_"))
    if name == "iq1s_qmma_t":
        return _raw("iq1s", False, ("grid",))
    fmt, _, kind = name.partition("_")
    if kind == "qgemm_t" and fmt in QGEMM_TABLES:
        return _raw(fmt, True, QGEMM_TABLES[fmt])
    if kind == "qmma_staged_t" and fmt in STAGED_TABLES:
        return _raw(fmt, False, STAGED_TABLES[fmt])
    return None


def _symbol_value(symbol, env: dict):
    """A shape entry's value: an int, a launch-bound `Dyn`, or None (not known here)."""
    if isinstance(symbol, int):
        return symbol
    if symbol in env:
        return env[symbol]
    k = env.get("K")
    if not isinstance(k, int):
        return None
    if symbol == "K/32":
        return k // 32
    if symbol == "K/32*20":
        return k // 32 * 20
    if symbol == "K/256":
        return k // 256
    if symbol.startswith("K/256*"):
        return k // 256 * int(symbol[6:])
    return None


def check_quantized(ck, name: str, call, scope) -> hir.Expr:
    """Type one call of a quantized built-in for the `KernelChecker` `ck`."""
    from phobos.sema.body import ERR, Bail

    row = family(name)
    if row is None:  # every quantized name of phobos.names has a row (the tests hold it)
        raise AssertionError(f"quantized built-in `{name}` has no row")
    if call.config:
        ck.error(
            "E0320", f"`{name}` takes no `<...>` configuration", call.config[0], "configuration"
        )
        raise Bail
    roles = [r for r, _, _ in row.operands] + list(row.tables)
    if len(call.args) != len(roles):
        n = len(call.args)
        ck.error(
            "E0310",
            f"`{name}` takes {len(roles)} arguments but {n} {'were' if n != 1 else 'was'} given",
            call,
            f"{n} given",
            help=f"`{name}({', '.join(roles)})`",
        )
        raise Bail
    args = []
    for a in call.args:
        v = ck.expr(a, scope)
        if v.type == ERR:
            raise Bail
        args.append(v)

    def refuse(node, message, label, help=()):
        ck.error(E_OPERAND, f"`{name}` {message}", node, label, help=help)
        raise Bail

    def operand(value, node, role, elems, shape):
        want = shape_text(shape)
        types = " or ".join(f"`{e}`" for e in elems)
        if not is_shaped(value.type):
            refuse(
                node,
                f"takes `{role}` as a {want} {types} tile or tensor",
                f"a scalar `{value.type}`",
            )
        if len(value.type.dims) != 2:
            refuse(node, f"takes `{role}` of shape {want}", f"shape {shape_text(value.type.dims)}")
        if elem(value.type).name not in elems:
            refuse(node, f"takes `{role}` of {types}", f"`{elem(value.type)}` here")

    # Bind M, N and K from the operands that define them, then hold every operand to its row.
    env: dict = {}
    for (role, elems, shape), value, node in zip(row.operands, args, call.args, strict=False):
        operand(value, node, role, elems, shape)
        for symbol, dim in zip(shape, value.type.dims, strict=True):
            if symbol in ("M", "N", "K") and symbol not in env:
                env[symbol] = dim
    k = env.get("K")
    if isinstance(k, int) and k % row.k_multiple:
        refuse(
            call.args[0],
            f"contracts K = {k}, which is not a multiple of {row.k_multiple}",
            f"K = {k}",
            help=f"the quantized blocks are {row.k_multiple} elements long",
        )
    for (role, _, shape), value, node in zip(row.operands, args, call.args, strict=False):
        for axis, (symbol, dim) in enumerate(zip(shape, value.type.dims, strict=True)):
            want = _symbol_value(symbol, env)
            if want is None or dim == want:
                continue
            if isinstance(want, hir.Dyn) and not isinstance(dim, hir.Dyn):
                continue  # a launch-bound extent against a constant: checked at launch
            if isinstance(dim, hir.Dyn) and not isinstance(want, hir.Dyn):
                continue
            expected = [_symbol_value(s, env) for s in shape]
            shown = shape_text(
                [e if e is not None else s for e, s in zip(expected, shape, strict=True)]
            )
            refuse(
                node,
                f"takes `{role}` of shape {shape_text(shape)}, here {shown}",
                f"shape {shape_text(value.type.dims)}: axis {axis} should be {want}",
            )
    if row.mma:
        for symbol in ("M", "N"):
            dim = env.get(symbol)
            if isinstance(dim, int) and dim % 8:
                where = 0 if symbol == "M" else 2
                refuse(
                    call.args[where],
                    f"runs on integer tensor cores, so {symbol} is a multiple of 8, not {dim}",
                    f"{symbol} = {dim}",
                )
    for role, value, node in zip(
        row.tables, args[len(row.operands) :], call.args[len(row.operands) :], strict=True
    ):
        t = value.type
        if (
            not isinstance(t, hir.TensorT)
            or len(t.dims) != 2
            or t.dims[0] != 1
            or t.elem.name != "i8"
        ):
            refuse(
                node,
                f"takes its table `{role}` as a [1, n] `i8` tensor, not `{t}`",
                "not a [1, n] `i8` tensor",
                help="the tables are built on the host and passed as kernel parameters",
            )
    if row.threads is not None and ck.setup.threads != row.threads:
        ck.error(
            E_LAUNCH,
            f"`{name}` needs `@launch({row.threads})`, but the CTA has {ck.setup.threads} threads",
            call.func,
            f"a fixed {row.result[0]} x {row.result[1]} tile for {row.threads} threads",
            help=f"add `@ph.launch({row.threads})` to the kernel"
            if ck.python
            else f"add `@launch({row.threads})` to the kernel",
        )
        raise Bail
    dims = tuple(env.get(s, s) if isinstance(s, str) else s for s in row.result)
    return hir.Builtin(
        name,
        tuple(args),
        hir.TileT(hir.Scalar("f32"), dims),
        max(a.uni for a in args),
        span=call.span,
    )
