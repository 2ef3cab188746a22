"""`attend(q, K, V, start, stop, WM, WL, WACC)`: the attention built-in's operands.

SPEC.md's Attention row gives the shapes and names no built-in; the spelling, the key
range [start, stop) and the per-warp split are ours (docs/attention.md). With W the
CTA's warps (`@launch` threads / 32):

    q     a declared [QG, D] tile of f16 or f32      (read)
    K, V  named f16 tensor parameters [Nk, D]         (read; Nk may be bound at launch)
    start, stop   uniform integers                    (the keys j of [start, stop) in [0, Nk))
    WM, WL        declared f32 tiles [QG, W]          (written)
    WACC          a declared f32 tile [QG * W, D]     (written)

with D a multiple of 32 and QG * D at most 2048 (a lane keeps QG * D / 32 sums). It is
a statement of the whole CTA, as `barrier` is: never a value, never under control that
differs between threads.

    >>> limits(4, 128), limits(4, 48), limits(32, 128)
    (None, 'D', 'QG * D')
"""

from __future__ import annotations

from phobos.sema import hir
from phobos.sema.registers import note_update
from phobos.sema.typing import elem, is_shaped, shape_text
from phobos.sema.uniformity import buffers_read, stale
from phobos.syntax import ast

NAME = "attend"
E_OPERAND = "E0328"  # an `attend` operand of the wrong kind, type or shape
E_VALUE = "E0263"  # a statement used as a value
ROLES = ("q", "K", "V", "start", "stop", "WM", "WL", "WACC")
LANES = 32
MOST_SUMS = 2048  # QG * D: each of a warp's 32 lanes keeps at most 64 running sums
SPELLED = "attend(q, K, V, start, stop, WM, WL, WACC)"


def limits(qg: int, d: int) -> str | None:
    """Which of q's limits [qg, d] breaks: "D" (not a multiple of 32), "QG * D", or None."""
    if d % LANES:
        return "D"
    if qg * d > MOST_SUMS:
        return "QG * D"
    return None


def check_attend(ck, call: ast.Call, scope) -> hir.Builtin:
    """Type one `attend` call for the `KernelChecker` `ck`; the statement's `hir.Builtin`."""
    from phobos.sema.body import ERR, Bail

    spelled = f"ph.{SPELLED}" if ck.python else SPELLED

    def refuse(code, node, message, label, help=()):
        ck.error(code, message, node, label, help=help)
        raise Bail

    if call.config:
        refuse("E0320", call.config[0], "`attend` takes no `<...>` configuration", "configuration")
    if len(call.args) != len(ROLES):
        n = len(call.args)
        refuse(
            "E0310",
            call,
            f"`attend` takes {len(ROLES)} arguments but {n} {'were' if n != 1 else 'was'} given",
            f"{n} given",
            help=f"`{spelled}`",
        )
    if ck.statement is not call:
        refuse(
            E_VALUE,
            call,
            "`attend` is a statement, so it has no value",
            "used as a value",
            help="call it on a line of its own; it writes its results to `WM`, `WL` and `WACC`",
        )
    nodes = dict(zip(ROLES, call.args, strict=True))
    args = {}
    for role, node in nodes.items():
        if role in ("start", "stop"):
            args[role] = ck.index_expr(node, scope, f"`attend`'s `{role}`")
            continue
        value = ck.expr(node, scope)
        if value.type == ERR:
            raise Bail
        args[role] = value

    def operand(role, message, label, help=()):
        refuse(E_OPERAND, nodes[role], f"`attend` {message}", label, help)

    threads = ck.setup.threads
    if threads % LANES:
        at = "@ph.launch" if ck.python else "@launch"
        refuse(
            E_OPERAND,
            call.func,
            f"`attend` splits its keys over whole warps, but the CTA has {threads} threads",
            f"{threads} threads are not whole warps",
            help=f"give the kernel `{at}(T)` with T a multiple of 32",
        )
    warps = threads // LANES

    # q: a tile of its own, [QG, D]
    q = args["q"]
    qg, d = _query(ck, q, nodes["q"], scope, operand)
    broken = limits(qg, d)
    if broken == "D":
        operand(
            "q",
            f"takes `q` with D a multiple of 32, not {d}",
            f"shape {shape_text(q.type.dims)}: D = {d}",
            help="a warp's 32 lanes hold D / 32 elements of a row each",
        )
    if broken == "QG * D":
        operand(
            "q",
            f"keeps QG * D = {qg * d} sums across a warp's lanes, more than {MOST_SUMS}",
            f"shape {shape_text(q.type.dims)}",
            help=f"each lane keeps QG * D / 32 of them, at most {MOST_SUMS // LANES}; "
            "give each call fewer query rows",
        )

    # K and V: the f16 tensor parameters themselves, [Nk, D]
    for role in ("K", "V"):
        t = args[role]
        if not (
            isinstance(t, hir.Ref) and t.sym.kind == "param" and isinstance(t.type, hir.TensorT)
        ):
            operand(
                role,
                f"takes `{role}` as a named tensor parameter",
                "not a tensor parameter",
                help=f"pass the kernel's parameter itself; `attend` reads the rows of `{role}` "
                "that [start, stop) names",
            )
        if t.type.elem.name != "f16":
            operand(role, f"takes `{role}` of `f16`, not `{t.type.elem}`", f"`{t.type}` here")
        if len(t.type.dims) != 2:
            operand(role, f"takes `{role}` of shape [Nk, D]", f"shape {shape_text(t.type.dims)}")
        if t.type.dims[1] != d:
            operand(
                role,
                f"takes `{role}` of shape [Nk, D] with `q`'s D = {d}, here "
                f"{shape_text(t.type.dims)}",
                f"axis 1 should be {d}",
            )
    k_rows, v_rows = args["K"].type.dims[0], args["V"].type.dims[0]
    if k_rows != v_rows and isinstance(k_rows, hir.Dyn) == isinstance(v_rows, hir.Dyn):
        operand(
            "V",
            f"takes `K` and `V` with the same rows, not {k_rows} and {v_rows}",
            f"{v_rows} rows, where `K` has {k_rows}",
        )

    # WM, WL and WACC: f32 tiles the call writes, one column or QG rows per warp
    want = {"WM": (qg, warps), "WL": (qg, warps), "WACC": (qg * warps, d)}
    seen: dict[int, str] = {id(q.sym): "q"}
    for role, dims in want.items():
        t = args[role]
        if not (isinstance(t, hir.Ref) and t.sym.kind == "var" and isinstance(t.type, hir.TileT)):
            operand(
                role,
                f"writes `{role}`, so it takes a declared `var` tile",
                "not a `var` tile",
                help=f"declare one first: `{_decl(ck, role.lower(), dims)}`",
            )
        if t.type.elem.name != "f32":
            operand(role, f"writes `{role}` in `f32`, not `{t.type.elem}`", f"`{t.type}` here")
        if tuple(t.type.dims) != dims:
            symbolic = "[QG * W, D]" if role == "WACC" else "[QG, W]"
            operand(
                role,
                f"takes `{role}` of shape {symbolic} = {shape_text(dims)}, here "
                f"{shape_text(t.type.dims)}",
                f"should be {shape_text(dims)}",
                help=f"W = {threads} threads / 32 = {warps} warps, each writing its own "
                + ("rows" if role == "WACC" else "column"),
            )
        other = seen.get(id(t.sym))
        if other is not None:
            operand(
                role,
                f"takes `{other}` and `{role}` as two tiles, but both are `{t.sym.name}`",
                f"`{t.sym.name}` is also `{other}`",
                help="give `q`, `WM`, `WL` and `WACC` a tile each",
            )
        seen[id(t.sym)] = role

    # the whole CTA runs it: reached by every thread, from operands the same in each
    ck.need_control(NAME, call)
    for role in ("start", "stop"):
        ck.need_uniform(NAME, args[role], nodes[role])
    for role in ("q", "K", "V"):
        for ref, _ in buffers_read(args[role]):
            if ck.stable_buffer(ref) in ck.dirty:
                ck.error(
                    "E0402",
                    stale(NAME, ref.sym.name),
                    nodes[role],
                    "reads the whole buffer",
                    help="put a `barrier()` between the per-thread stores and this read",
                )
    for role in ("WM", "WL", "WACC"):
        note_update(ck, args[role], call)
    return hir.Builtin(NAME, tuple(args[r] for r in ROLES), ck.idx, hir.UNIFORM, span=call.span)


def _query(ck, q, node, scope, operand) -> tuple[int, int]:
    """q's [QG, D]: a rank-2 f16 or f32 tile of its own, with a static shape."""
    tile = isinstance(q, hir.Ref) and q.sym.kind in ("var", "let") and isinstance(q.type, hir.TileT)
    view = tile and q.sym.kind == "let" and _is_view(node, scope)
    if view:
        declare = "`ph.var`" if ck.python else "`var`"
        operand(
            "q",
            "takes `q` as a declared tile, not a slice or an expression",
            "a view of a slice",
            help=f"`{q.sym.name}` is a `let` view; declare it {declare} to copy the slice "
            "into a tile of its own",
        )
    if not tile:
        e = elem(q.type).name if is_shaped(q.type) else "f16"
        dims = q.type.dims if is_shaped(q.type) else ("QG", "D")
        operand(
            "q",
            "takes `q` as a declared tile, not a slice or an expression",
            "not a declared tile",
            help=f"copy it into a tile first: `{_decl(ck, 'q', dims, e, ck.text(node))}`",
        )
    if len(q.type.dims) != 2:
        operand("q", "takes `q` of shape [QG, D]", f"shape {shape_text(q.type.dims)}")
    e = elem(q.type).name
    if e not in ("f16", "f32"):
        operand("q", f"takes `q` of `f16` or `f32`, not `{e}`", f"`{q.type}` here")
    qg, d = q.type.dims
    if not (isinstance(qg, int) and isinstance(d, int)):
        operand(
            "q",
            f"takes `q` with a static shape, not {shape_text(q.type.dims)}",
            "an extent bound at launch",
            help="slice a constant extent, as in "
            + ("`Q[r:+4, 0:+128]`" if ck.python else "`Q[r :+ 4, 0 :+ 128]`"),
        )
    return qg, d


def _is_view(node, scope) -> bool:
    """Whether the name `node` is a `let` of a slice or of another name: a view, no tile."""
    b = scope.lookup(node.id) if isinstance(node, ast.Name) else None
    origin = getattr(b, "origin", None)
    return isinstance(origin, ast.Let) and isinstance(origin.value, (ast.Index, ast.Name))


def _decl(ck, name, dims, e="f32", value=None) -> str:
    """A declaration of the tile `name` in the source's spelling, for a `help`."""
    shown = ", ".join(map(str, dims))
    init = f" = {value}" if value is not None else ""
    if ck.python:
        return f"{name}: ph.var[ph.tile[ph.{e}][{shown}]]{init}"
    return f"var {name}: tile<{e}>[{shown}]{init}"
