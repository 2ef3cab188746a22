"""A tiny builder of hir kernels for the interpreter's tests (no checker needed)."""

from __future__ import annotations

import itertools

from phobos.sema import hir

_ids = itertools.count(1)
UNI, WARP, VAR = hir.UNIFORM, hir.WARP, hir.VARYING


def S(name):
    return hir.Scalar(name)


f16, bf16, f32, f64 = S("f16"), S("bf16"), S("f32"), S("f64")
i8, i32, i64, u8, u32, boolean = S("i8"), S("i32"), S("i64"), S("u8"), S("u32"), S("bool")


def tensor(elem, *dims):
    return hir.TensorT(elem, tuple(hir.Dyn(d) if isinstance(d, str) else d for d in dims))


def tile(elem, *dims):
    return hir.TileT(elem, tuple(hir.Dyn(d) if isinstance(d, str) else d for d in dims))


def sym(name, type_, kind="let", uni=UNI):
    return hir.Sym(name, next(_ids), kind, type_, uni)


def param(name, type_):
    return sym(name, type_, "param")


def ref(s):
    return hir.Ref(s, s.type, s.uni)


def c(value, t=i32):
    return hir.Const(value, t)


def uni(*es):
    return max([getattr(e, "uni", UNI) for e in es] + [UNI])


def _elem(t):
    return t if isinstance(t, hir.Scalar) else t.elem


def _bshape(a, b):
    if isinstance(a, hir.Scalar):
        return b
    if isinstance(b, hir.Scalar):
        return a
    dims = tuple(x if y == 1 else y for x, y in zip(a.dims, b.dims, strict=True))
    return hir.TileT(a.elem, dims)


def bin(op, a, b, type_=None):
    if type_ is None:
        shape = _bshape(a.type, b.type)
        if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
            type_ = boolean if isinstance(shape, hir.Scalar) else hir.TileT(boolean, shape.dims)
        else:
            type_ = shape if isinstance(shape, hir.Scalar) else hir.TileT(shape.elem, shape.dims)
    return hir.Binary(op, a, b, type_, uni(a, b))


def un(op, a):
    return hir.Unary(op, a, a.type, a.uni)


def conv(a, t):
    tt = t if isinstance(a.type, hir.Scalar) else hir.TileT(t, a.type.dims)
    return hir.Convert(a, tt, a.uni)


def ctx(field, axis=None):
    u = {"thread": VAR, "lane": VAR, "warp": WARP}.get(field, UNI)
    return hir.CtxRead(field, axis, i32, u)


def pt(base, *idx):
    return hir.Slice(base, tuple(hir.Sub(i, None, True) for i in idx), _elem(base.type), uni(*idx))


def span(start, n):
    return hir.Sub(start, n)


def point(i):
    return hir.Sub(i, None, True)


def to_end(start):
    return hir.Sub(start, None)


def sl(base, *subs):
    dims = []
    for k, s in enumerate(subs):
        if s.point:
            dims.append(1)
        elif s.extent is None:
            dims.append(base.type.dims[k])
        else:
            dims.append(s.extent)
    kind = hir.TensorT if isinstance(base.type, hir.TensorT) else hir.TileT
    return hir.Slice(base, tuple(subs), kind(base.type.elem, tuple(dims)), UNI)


def call(name, *args, type_=None, config=(), fn_params=(), fn_body=None):
    if type_ is None:
        type_ = args[0].type
    return hir.Builtin(
        name, tuple(args), type_, uni(*args), tuple(config), tuple(fn_params), fn_body
    )


def let(s, value):
    return hir.Let(s, value)


def var(s, value=None):
    return hir.VarDecl(s, value)


def assign(target, value, op="="):
    return hir.Assign(target, op, value)


def for_(v, lo, hi, *body, step=None, unroll=None):
    return hir.For(v, lo, hi, step if step is not None else c(1, v.type), unroll, block(*body))


def while_(cond, *body):
    return hir.While(cond, block(*body))


def if_(cond, then, orelse=None):
    then = then if isinstance(then, hir.Block) else block(*then)
    if orelse is not None and not isinstance(orelse, hir.Block):
        orelse = block(*orelse)
    return hir.If(cond, then, orelse)


def block(*stmts):
    return hir.Block(tuple(stmts))


def expr(e):
    return hir.ExprStmt(e)


class Attrs:
    def __init__(self, tensorcore=None):
        self.tensorcore = tensorcore


def kernel(params, *stmts, threads=32, tensorcore=None, dyn=()):
    dyn_dims = list(dyn)
    for p in params:
        for d in getattr(p.type, "dims", ()):
            if isinstance(d, hir.Dyn) and d.name not in dyn_dims:
                dyn_dims.append(d.name)
    return hir.Kernel(
        "k", tuple(params), block(*stmts), Attrs(tensorcore), (), tuple(dyn_dims), 32, threads
    )
