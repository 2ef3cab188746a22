"""Built-in signatures: argument counts and types, result types and shapes (SPEC.md "Built-ins").

`check_builtin(checker, name, call, scope)` types one call for a `KernelChecker`;
a built-in with no rule here yet is a clear diagnostic, never a crash.
"""

from __future__ import annotations

from phobos.names import CONVERSIONS, SCALARS
from phobos.sema import hir
from phobos.sema.body import ERR, LANES, Bail
from phobos.sema.typing import (
    FLOATS,
    INTEGERS,
    MATH1,
    S,
    broadcast,
    elem,
    is_float,
    is_integer,
    is_quantized,
    is_shaped,
    join_names,
    power_of_two,
    shape_text,
)
from phobos.syntax import ast

U, W, V = hir.UNIFORM, hir.WARP, hir.VARYING


def _count(ck, name, call, *counts):
    n = len(call.args)
    if n not in counts:
        want = " or ".join(str(c) for c in counts)
        ck.error(
            "E0310",
            f"`{name}` takes {want} argument{'s' if counts != (1,) else ''} but {n} "
            f"{'were' if n != 1 else 'was'} given",
            call,
            f"{n} given",
        )
        raise Bail


def _no_config(ck, name, call):
    if call.config:
        ck.error(
            "E0320", f"`{name}` takes no `<...>` configuration", call.config[0], "configuration"
        )
        raise Bail


def _args(ck, call, scope):
    out = []
    for a in call.args:
        v = ck.expr(a, scope)
        if v.type == ERR:
            raise Bail
        out.append(v)
    return out


def _mk(name, args, type_, uni=None, config=(), **kw):
    if uni is None:
        uni = max([a.uni for a in args], default=U)
    return hir.Builtin(name, tuple(args), type_, uni, tuple(config), **kw)


def _shape_of(t):
    return t.dims if is_shaped(t) else None


def _like(t, e: hir.Scalar):
    return hir.TileT(e, t.dims) if is_shaped(t) else e


def _bad(ck, name, node, msg, label=""):
    ck.error("E0311", f"`{name}` {msg}", node, label or "here")
    raise Bail


def check_builtin(ck, name: str, call: ast.Call, scope) -> hir.Expr:
    span = call.span
    if is_quantized(name):
        from phobos.sema.quantized import check_quantized

        return check_quantized(ck, name, call, scope)
    if name == "attend":
        from phobos.sema.attend import check_attend

        return check_attend(ck, call, scope)
    if name in SCALARS and name not in CONVERSIONS:
        ck.error(
            "E0317",
            f"there is no conversion to `{name}`",
            call.func,
            "not a conversion",
            help="convert to a signed or float type, as in `i32(x)`"
            if name != "bool"
            else "compare instead, as in `x != 0`",
        )
        raise Bail
    if name in CONVERSIONS:
        _no_config(ck, name, call)
        _count(ck, name, call, 1)
        (x,) = _args(ck, call, scope)
        read = ck.narrow_read(x)
        if read is not None:
            x = read  # converted from the element itself: `f32(u)` of a u32 is never negative
        if elem(x.type).name == "bool":
            ck.error(
                "E0317",
                f"there is no conversion from `bool` to `{name}`",
                call.args[0],
                "a `bool`",
                help="select a number instead: `where(c, 1, 0)`",
            )
            raise Bail
        if ck.is_weak(x):
            x = ck.adopt(x, S(name), call)
        out = ck.convert(x, S(name))
        if out is x and isinstance(x, hir.Const):
            return hir.Const(x.value, S(name), span=span)
        if out is x:
            return hir.Convert(x, x.type, x.uni, span=span)
        return out
    if name in ("sum", "max", "min", "any", "all", "argmax", "reduce") and call.config:
        return _collective(ck, name, call, scope)
    if name == "shfl":
        return _shuffle(ck, call, scope)
    _no_config(ck, name, call)
    if name in ("min", "max", "tmax"):
        _count(ck, name, call, 2)
        a, b = _args(ck, call, scope)
        # The probe joins the operands' types; `<` of integer tiles is a comparison
        # only `where` may hold, which `min`'s own lowering is, so it is allowed here.
        saved, ck.in_where = ck.in_where, True
        try:
            op = "+" if is_float(a.type) or is_float(b.type) else "<"
            probe = ck.binary_typed(op, a, b, call)
        finally:
            ck.in_where = saved
        t = probe.type if probe.type != S("bool") else elem(a.type)
        if is_shaped(probe.type):
            joined = elem(probe.left.type) if op == "<" else elem(probe.type)  # not the bool
            t = hir.TileT(
                elem(ck.convert(a, elem(b.type)).type) if ck.is_weak(a) else joined,
                probe.type.dims,
            )
        a2 = ck.convert(a, elem(t)) if not ck.is_weak(a) else ck.adopt(a, elem(t), call)
        b2 = ck.convert(b, elem(t)) if not ck.is_weak(b) else ck.adopt(b, elem(t), call)
        if isinstance(a2, hir.Const) and isinstance(b2, hir.Const) and not is_shaped(t):
            v = (min if name == "min" else max)(a2.value, b2.value)
            return hir.Const(v, elem(t), span=span)
        return _mk(name, [a2, b2], t, span=span)
    if name in MATH1 or name == "pow":
        _count(ck, name, call, 2 if name == "pow" else 1)
        args = _args(ck, call, scope)
        out = []
        for a, node in zip(args, call.args, strict=True):
            e = elem(a.type)
            if name == "abs" and is_integer(a.type):
                if e.name.startswith("u"):
                    _bad(ck, name, node, f"takes a signed or float value, not `{e}`")
                out.append(a)
                continue
            if e.name == "bool" or (e.name.startswith("u")):
                _bad(ck, name, node, f"takes a number, not `{e}`")
            if is_shaped(a.type):
                if not is_float(a.type):
                    _bad(ck, name, node, f"takes a float tile, not `{a.type}`", "convert it first")
                out.append(a)
            else:
                out.append(ck.convert(a, S("f32")) if e != S("f32") else a)
        if name == "pow":
            probe = ck.binary_typed("*", out[0], out[1], call)
            return _mk(name, [ck.convert(x, elem(probe.type)) for x in out], probe.type, span=span)
        a = out[0]
        t = a.type if is_shaped(a.type) else elem(a.type)
        if isinstance(t, hir.TensorT):
            t = hir.TileT(t.elem, t.dims)
        return _mk(name, [a], t, span=span)
    if name == "where":
        _count(ck, name, call, 3)
        saved = ck.in_where
        ck.in_where = True
        try:
            c = ck.expr(call.args[0], scope)
        finally:
            ck.in_where = saved
        a, b = _args(ck, ast.Call(call.func, call.args[1:], span=call.span), scope)
        if elem(c.type) != S("bool"):
            _bad(ck, name, call.args[0], f"takes a condition, not `{c.type}`")
        j = join_names(elem(a.type).name, elem(b.type).name)
        if ck.is_weak(a) and not ck.is_weak(b):
            j = elem(ck.adopt(a, elem(b.type), call).type).name
        elif ck.is_weak(b) and not ck.is_weak(a):
            j = elem(ck.adopt(b, elem(a.type), call).type).name
        if j is None:
            _bad(
                ck,
                name,
                call,
                f"takes two values of one type, not `{elem(a.type)}` and `{elem(b.type)}`",
            )
        jt = S(j)
        a = ck.adopt(a, jt, call) if ck.is_weak(a) else ck.convert(a, jt)
        b = ck.adopt(b, jt, call) if ck.is_weak(b) else ck.convert(b, jt)
        dims = None
        for x in (c, a, b):
            if is_shaped(x.type):
                dims = x.type.dims if dims is None else broadcast(dims, x.type.dims)
                if dims is None:
                    _bad(ck, name, call, "takes operands whose shapes broadcast")
        if dims is None:
            return _mk(name, [c, a, b], jt, span=span)
        if ck.tile_target is None:
            ck.error(
                "E0312",
                "`where` of tiles is only allowed as the value of a tile assignment",
                call,
                "not assigned to a tile here",
                help="assign it: `t = where(..)`, or declare `var t: tile<..>[..] = where(..)`",
            )
            raise Bail
        return _mk(name, [c, a, b], hir.TileT(jt, dims), span=span)
    if name == "iota":
        _count(ck, name, call, 1)
        (d,) = _args(ck, call, scope)
        if not ck.tile_target:
            ck.error(
                "E0312",
                "`iota` is only allowed inside the value of a tile assignment",
                call,
                "no tile being assigned",
                help="use it in `t = where(iota(1) < n, t, 0.0)` or a tile declaration's value",
            )
            raise Bail
        axis = int_constant(d)
        if axis is None or not (0 <= axis < len(ck.tile_target)):
            _bad(
                ck,
                name,
                call.args[0],
                f"takes a literal axis below the tile's rank {len(ck.tile_target)}",
            )
        return _mk(
            name,
            [hir.Const(d.value, ck.idx)],
            hir.TileT(S("i32"), tuple(ck.tile_target)),
            span=span,
        )
    if name == "argsel":
        _count(ck, name, call, 4)
        va, vb, ia, ib = _args(ck, call, scope)
        if not (is_float(va.type) and elem(va.type) == elem(vb.type)):
            _bad(ck, name, call, "takes `va` and `vb` of one float type")
        it = elem(ia.type) if not ck.is_weak(ia) else elem(ib.type)
        ia = ck.adopt(ia, it, call) if ck.is_weak(ia) else ia
        ib = ck.adopt(ib, it, call) if ck.is_weak(ib) else ib
        if elem(ia.type) != elem(ib.type):
            _bad(ck, name, call, "takes `ia` and `ib` of one type")
        dims = None
        for x in (va, vb, ia, ib):
            if is_shaped(x.type):
                dims = x.type.dims if dims is None else broadcast(dims, x.type.dims)
                if dims is None:
                    _bad(ck, name, call, "takes operands whose shapes broadcast")
        t = hir.TileT(it, dims) if dims is not None else it
        return _mk(name, [va, vb, ia, ib], t, span=span)
    if name in ("rowmax", "rowsum", "rowargmax", "cumsum", "tril", "transpose", "flat"):
        _count(ck, name, call, 1)
        (t,) = _args(ck, call, scope)
        if not is_shaped(t.type) or len(t.type.dims) != 2:
            _bad(ck, name, call.args[0], f"takes a rank-2 tile, not `{t.type}`")
        r, c = t.type.dims
        # rowsum/rowmax fold a row of any length (a strided loop); the rest need a layout.
        static = (r,) if name in ("rowsum", "rowmax") else (r, c)
        if not all(isinstance(d, int) for d in static):
            _bad(
                ck,
                name,
                call.args[0],
                f"takes a tile with a static shape, not {shape_text(t.type.dims)}",
            )
        e = elem(t.type)
        if e.name == "bool" or e.name.startswith("u") and name != "transpose" and name != "flat":
            _bad(ck, name, call.args[0], f"takes a float or signed integer tile, not `{e}`")
        if name in ("cumsum", "tril") and not is_float(t.type):
            _bad(ck, name, call.args[0], f"takes a float tile, not `{e}`")
        if name == "flat" and not (isinstance(t, hir.Ref) and t.sym.kind == "var"):
            _bad(ck, name, call.args[0], "takes a declared tile, not a slice or an expression")
        shape = {
            "rowmax": (r, 1),
            "rowsum": (r, 1),
            "rowargmax": (r, 1),
            "cumsum": (r, c),
            "tril": (r, c),
            "transpose": (c, r),
            "flat": (1, r * c) if name == "flat" else None,
        }[name]
        rt = S("i32") if name == "rowargmax" else e
        return _tile_builtin(ck, name, [t], hir.TileT(rt, shape), call)
    if name == "gather":
        _count(ck, name, call, 2)
        table, idx = _args(ck, call, scope)
        if not is_shaped(table.type) or not (
            len(table.type.dims) == 1 or (len(table.type.dims) == 2 and table.type.dims[0] == 1)
        ):
            _bad(ck, name, call.args[0], "takes a table of shape [n] or [1, n]")
        if not is_shaped(idx.type) or not is_integer(idx.type):
            _bad(ck, name, call.args[1], "takes a tile of integer indices")
        return _tile_builtin(
            ck, name, [table, idx], hir.TileT(elem(table.type), idx.type.dims), call
        )
    if name in ("dot", "dot_t"):
        _count(ck, name, call, 2)
        a, b = _args(ck, call, scope)
        for x, node in ((a, call.args[0]), (b, call.args[1])):
            if not is_shaped(x.type) or len(x.type.dims) != 2:
                _bad(ck, name, node, f"takes rank-2 tiles, not `{x.type}`")
        (m, k), (k2, n) = a.type.dims, b.type.dims
        if name == "dot_t":
            n, k2 = k2, n
        if k != k2:
            want = "[M, K] x [K, N]" if name == "dot" else "[M, K] x [N, K]"
            ck.error(
                "E0316",
                f"`{name}` of {shape_text(a.type.dims)} and {shape_text(b.type.dims)}: "
                f"the contracted extents `{k}` and `{k2}` differ",
                call,
                f"`{name}` takes {want}",
            )
            raise Bail
        ea, eb = elem(a.type), elem(b.type)
        if ea != eb:
            _bad(ck, name, call, f"takes operands of one element type, not `{ea}` and `{eb}`")
        if ea.name == "i8":
            if name != "dot":
                acc = S("i32")
            else:
                _bad(ck, name, call, "of `i8` operands is `dot_t`")
        elif ea.name in ("f16", "bf16"):  # bf16: ours, beyond SPEC.md's table
            acc = S("f32") if ck.setup.tensorcore else S(ea.name)
            if ea.name == "f16" and getattr(ck, "accumulating", None) is call:
                acc = S("f16")  # `acc += dot(..)` into an f16 tile accumulates in f16 (ours)
        elif ea.name in ("f32",):
            acc = S("f32")
        else:
            _bad(ck, name, call, f"takes `f32`, `f16` or `i8` operands, not `{ea}`")
        return _tile_builtin(ck, name, [a, b], hir.TileT(acc, (m, n)), call)
    if name == "sum":  # no group: the sum of a thread's runs
        return _run_sum(ck, call, scope)
    if name in ("barrier",):
        _count(ck, name, call, 0)
        ck.need_control(name, call)
        ck.barrier_reached()
        return _mk(name, [], ck.idx, U, span=span)
    if name == "grid_barrier":
        _count(ck, name, call, 1)
        (t,) = _args(ck, call, scope)
        _tensor_param(ck, name, t, call.args[0], ("i32",))
        ck.need_control(name, call)
        ck.barrier_reached()
        return _mk(name, [t], ck.idx, U, span=span)
    if name in ("atomic_add", "atomic_cas", "load_acquire", "store_release"):
        counts = {"atomic_add": 3, "atomic_cas": 4, "load_acquire": 2, "store_release": 3}
        _count(ck, name, call, counts[name])
        args = _args(ck, call, scope)
        t = args[0]
        et = _tensor_param(
            ck, name, t, call.args[0], ("i32", "f32") if name == "atomic_add" else ("i32",)
        )
        rest = []
        for i, (a, node) in enumerate(zip(args[1:], call.args[1:], strict=True)):
            if is_shaped(a.type):
                _bad(ck, name, node, "takes scalars after the tensor")
            if i == 0:
                a = ck.index_expr(call.args[1], scope, f"`{name}`'s index")
            elif et.name == "f32":
                a = ck.adopt(a, et, node) if ck.is_weak(a) else ck.convert(a, et)
            else:
                if not is_integer(a.type):
                    _bad(ck, name, node, f"takes an integer, not `{a.type}`")
                a = ck.adopt(a, et, node) if ck.is_weak(a) else ck.convert(a, et)
            rest.append(a)
        ck.need_control(name, call)
        for a in rest:
            ck.need_uniform(name, a, call)
        rt = {"atomic_add": et, "atomic_cas": S("i32"), "load_acquire": S("i32")}.get(name, ck.idx)
        return _mk(name, [t, *rest], rt, U, span=span)
    if name in ("elem", "word", "store"):
        return _run_access(ck, name, call, scope)
    if name in ("dp4a", "byteperm", "popcount", "f16bits"):
        return _bit_helper(ck, name, call, scope)
    if name == "generate":
        from phobos.sema.generate import check_generate

        return check_generate(ck, call, scope)
    if name in ("any", "all", "argmax", "reduce"):
        ck.error(
            "E0320",
            f"`{name}` needs a group: `{name}<over ctx.lane>(...)`",
            call,
            "no `<over ...>`",
        )
        raise Bail
    # every name of phobos.names.BUILTINS has a rule above (tests/sema/test_check_quantized.py)
    raise AssertionError(f"built-in `{name}` has no rule in phobos.sema.builtins")


def _base_name(e) -> str:
    while isinstance(e, hir.Slice):
        e = e.base
    return e.sym.name if isinstance(e, hir.Ref) else "a buffer"


def _tile_builtin(ck, name, args, t, call):
    out = _mk(name, args, t, span=call.span)
    return out


def _tensor_param(ck, name, t, node, elems):
    if not (isinstance(t, hir.Ref) and t.sym.kind == "param" and isinstance(t.type, hir.TensorT)):
        _bad(ck, name, node, "takes a named tensor parameter")
    if t.type.elem.name not in elems:
        want = " or ".join(f"`{e}`" for e in elems)
        _bad(ck, name, node, f"takes a tensor of {want}, not `{t.type}`")
    return t.type.elem


def _run_sum(ck, call, scope):
    """`sum(e)` with no group: e over a thread's runs and scalars, summed in the thread."""
    from phobos.sema.runs import E_RUN, check_run_expr, check_run_operands

    _count(ck, "sum", call, 1)
    node = call.args[0]
    x, state = check_run_expr(ck, node, scope, "sum")
    if x.type == ERR:
        raise Bail
    if is_shaped(x.type):
        check_run_operands(ck, x, state, node)
    if not state.runs or not is_shaped(x.type):
        ck.error(
            E_RUN,
            "`sum` with no group sums a thread's runs, and this has none",
            node,
            "no run here",
            help="sum a run, `sum(W[col, k :+ 16])`, or fold across a group: "
            "`sum<over ctx.lane>(x)`",
        )
        raise Bail
    e = elem(x.type)
    if e.name == "bool" or e.name.startswith("u"):
        ck.error(
            E_RUN,
            f"`sum` adds numbers, not `{e}`",
            node,
            f"a run of `{e}`",
            help="convert it first, as in `sum(i32(a))`" if e.name != "bool" else (),
        )
        raise Bail
    # an integer run sums as an index: i8 products are a dp4a per word (SPEC.md)
    t = ck.idx if is_integer(x.type) else e
    return _mk("sum", [x], t, span=call.span)


def _run_access(ck, name, call, scope):
    """`elem(run, i)`, `word(run, t)`, `store(run, v0, ..)`: one element, word or all of them."""
    from phobos.sema.runs import E_RUN, the_run

    if name == "store" and len(call.args) < 2:
        _count(ck, name, call, 2)
    if name == "elem":
        _count(ck, name, call, 2)
    if name == "word":
        _count(ck, name, call, 1, 2)
    run, n = the_run(ck, call, scope, name)
    et = elem(run.type)
    if name == "store":
        values = _args(ck, ast.Call(call.func, call.args[1:], span=call.span), scope)
        if len(values) != n:
            ck.error(
                E_RUN,
                f"`store` writes a run of {n}, so it takes {n} values, not {len(values)}",
                call,
                f"{len(values)} value{'s' if len(values) != 1 else ''}",
                help=f"pass one value per element: `store(run, v0, .., v{n - 1})`",
            )
            raise Bail
        out = []
        for v, node in zip(values, call.args[1:], strict=True):
            if is_shaped(v.type):
                _bad(ck, name, node, f"stores scalars, not `{v.type}`")
            out.append(ck.adopt(v, et, node) if ck.is_weak(v) else ck.coerce(v, et, node))
        from phobos.sema.registers import note_update

        note_update(ck, run, call)
        level = max([ck.ctl(), run.uni] + [v.uni for v in out])
        if level > U:
            ck.mark_dirty(run, _base_name(run))
        return _mk(name, [run, *out], ck.idx, span=call.span)
    if name == "word" and et.name != "i8":
        ck.error(E_RUN, f"`word` takes a run of `i8`, not `{et}`", call.args[0], f"`{et}` here")
        raise Bail
    if name == "word" and n % 4:
        ck.error(
            E_RUN,
            f"`word` takes a whole number of words, but the run has {n} bytes",
            call.args[0],
            f"{n} is not a multiple of 4",
        )
        raise Bail
    count = n if name == "elem" else n // 4
    pos = hir.Const(0, ck.idx)
    if len(call.args) > 1:
        p = ck.expr(call.args[1], scope)
        if (
            not isinstance(p, hir.Const)
            or isinstance(p.value, bool)
            or not isinstance(p.value, int)
            or not 0 <= p.value < count
        ):
            what = "element" if name == "elem" else "word"
            ck.error(
                E_RUN,
                f"`{name}` takes a constant {what} below {count}",
                call.args[1],
                "not a constant" if not isinstance(p, hir.Const) else "out of the run",
                help=f"the run has {count} {what}{'s' if count != 1 else ''}, numbered from 0",
            )
            raise Bail
        pos = hir.Const(p.value, ck.idx)
    # a word is unsigned: as an index it is non-negative only at 64 bits (SPEC.md "Types")
    t = et if name == "elem" else ck.idx
    out = _mk(name, [run, pos], t, run.uni, span=call.span)
    return ck.scalar_read(out) if name == "elem" else out


def _bit_helper(ck, name, call, scope):
    """`dp4a`, `byteperm`, `popcount`, `f16bits`: integer scalars in, an index or f16 out."""
    counts = {"dp4a": 3, "byteperm": 3, "popcount": 1, "f16bits": 1}
    _count(ck, name, call, counts[name])
    args = _args(ck, call, scope)
    out = []
    for a, node in zip(args, call.args, strict=True):
        if is_shaped(a.type):
            _bad(ck, name, node, f"takes integer scalars, not a tile `{a.type}`")
        if not is_integer(a.type):
            _bad(ck, name, node, f"takes integers, not `{a.type}`", f"`{a.type}` here")
        out.append(ck.convert(a, ck.idx) if not ck.is_weak(a) else hir.Const(a.value, ck.idx))
    return _mk(name, out, S("f16") if name == "f16bits" else ck.idx, span=call.span)


def _collective(ck, name, call, scope):
    config = {c.key: c for c in call.config}
    over = config.get("over")
    if (
        over is None
        or not isinstance(over.value, ast.Ctx)
        or over.value.field not in ("lane", "thread")
    ):
        node = over.value if over is not None else call
        ck.error(
            "E0320",
            f"`{name}` folds over `ctx.lane` or `ctx.thread`",
            node,
            "not a group",
            help=f"write `{name}<over ctx.lane>(...)`",
        )
        raise Bail
    for key, item in config.items():
        if key not in ("over", "width"):
            ck.error("E0320", f"`{name}` takes no `{key}`", item, "not a collective's word")
            raise Bail
    group = over.value.field
    width = LANES
    if "width" in config:
        if group == "thread":
            ck.error(
                "E0320",
                f"`{name}<over ctx.thread>` takes no `width`",
                config["width"],
                "no width here",
            )
            raise Bail
        w = ck.expr(config["width"].value, scope)
        if int_constant(w) is None or not power_of_two(w.value) or LANES % w.value:
            ck.error(
                "E0320",
                f"a `width` is a constant power of two dividing {LANES}",
                config["width"].value,
                "not a power of two dividing the warp",
            )
            raise Bail
        width = w.value
    want = 2 if name == "reduce" else 1
    _count(ck, name, call, want)
    x = ck.expr(call.args[0], scope)
    if x.type == ERR:
        raise Bail
    if is_shaped(x.type):
        _bad(ck, name, call.args[0], "folds one scalar per thread, not a tile")
    e = elem(x.type)
    if name in ("any", "all"):
        if e != S("bool"):
            _bad(ck, name, call.args[0], f"folds a condition, not `{e}`")
        rt = e
    elif name == "argmax":
        if e.name == "bool":
            _bad(ck, name, call.args[0], "compares numbers, not `bool`")
        rt = ck.idx  # the lane or thread, an index (SPEC.md "Collectives and shuffles")
    else:
        if e.name == "bool" or e.name.startswith("u"):
            _bad(ck, name, call.args[0], f"folds numbers, not `{e}`")
        rt = e
    cfg = [("over", group)] + ([("width", width)] if "width" in config else [])
    extra = {}
    if name == "reduce":
        fn = _fold_fn(ck, call.args[1])
        ck.fn_checks(fn, call)  # `uses`, and recursion; the call's two operands meet its two
        from phobos.sema.scope import Binding, Scope

        a = ck.sym(fn.params[0].id, "let", e, V)
        b = ck.sym(fn.params[1].id, "let", e, V)
        inner = Scope(scope)
        inner.bind(fn.params[0].id, Binding(a))
        inner.bind(fn.params[1].id, Binding(b))
        ck.fn_stack.append((fn.name.id, call))
        try:
            body = ck.expr(fn.body, inner)
        finally:
            ck.fn_stack.pop()
        body = ck.convert(body, e) if not ck.is_weak(body) else ck.adopt(body, e, call)
        extra = {"fn_params": (a, b), "fn_body": body}
    if group == "thread":
        ck.need_control(name, call)
        uni = U
    else:
        ck.need_control(name, call, most=W)
        uni = W if width == LANES else V
    return _mk(name, [x], rt, uni, cfg, span=call.span, **extra)


def int_constant(e) -> int | None:
    """The value of `e` when it is an integer constant (not a float, not a `bool`): a
    built-in's constant argument is tested as an int before any arithmetic on it."""
    if isinstance(e, hir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _fold_fn(ck, f):
    """The fn a `reduce` folds by: a module fn `f(a, b) = e`, inlined at each step of the
    fold. SPEC.md asks it to be associative and commutative, which no check can prove;
    every stage folds in the same butterfly order, so a float fold agrees bit for bit."""
    fn = ck.fns.get(f.id) if isinstance(f, ast.Name) else None
    if fn is None:
        problem = f"`{f.id}` is not a fn" if isinstance(f, ast.Name) else "this is no fn's name"
        label = "not a fn"
    elif len(fn.params) != 2:
        n = len(fn.params)
        problem = f"`{f.id}` has {n}"
        label = f"`{f.id}` takes {n} parameter{'' if n == 1 else 's'}"
    elif isinstance(fn.body, ast.Block):
        problem, label = f"`{f.id}` has a statement body", "a statement fn"
    else:
        return fn
    ck.error(
        "E0327",
        f"`reduce` takes a fn `f(a, b) = e` of two parameters, and {problem}",
        f,
        label,
        help="define `fn f(a, b) = e`, associative and commutative, and pass `f`",
    )
    raise Bail


def _shuffle(ck, call, scope):
    config = {c.key: c for c in call.config}
    modes = [k for k in ("xor", "from", "down", "up") if k in config]
    if len(modes) != 1:
        ck.error(
            "E0320",
            "`shfl` takes one of `xor`, `from`, `down` or `up`",
            call,
            "no source lane" if not modes else "more than one source",
            help="write `shfl<xor 16>(v)` or `shfl<from s>(v)`",
        )
        raise Bail
    for key, item in config.items():
        if key not in ("xor", "from", "down", "up", "width"):
            ck.error("E0320", f"`shfl` takes no `{key}`", item, "not a shuffle's word")
            raise Bail
    _count(ck, "shfl", call, 1)
    v = ck.expr(call.args[0], scope)
    if v.type == ERR:
        raise Bail
    if is_shaped(v.type):
        _bad(ck, "shfl", call.args[0], "moves a scalar, not a tile")
    src = ck.index_expr(config[modes[0]].value, scope, "a shuffle's lane")
    cfg = [(modes[0], src)]
    if "width" in config:
        w = ck.expr(config["width"].value, scope)
        if int_constant(w) is None or not power_of_two(w.value) or LANES % w.value:
            ck.error(
                "E0320",
                f"a `width` is a constant power of two dividing {LANES}",
                config["width"].value,
                "not a power of two dividing the warp",
            )
            raise Bail
        cfg.append(("width", w.value))
    ck.need_control("shfl", call, most=W)
    return _mk("shfl", [v], v.type, max(v.uni, src.uni, W if v.uni else U), cfg, span=call.span)


__all__ = ["check_builtin", "FLOATS", "INTEGERS"]
