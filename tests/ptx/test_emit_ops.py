"""Every op family, at every type combination the template table claims, assembles on
sm_80 and sm_90; what has no template, or needs a newer chip, raises an error naming it."""

import pytest

from phobos.lower import lir
from phobos.lower.lir import Block, Imm, Kernel, Param, Reg, SharedBuffer, inst
from phobos.lower.verify import verify
from phobos.ptx import NoTemplate, TargetError, emit_kernel, emit_module

TARGETS = ("sm_80", "sm_90")
BUF = Reg("buf", "u64")
INTS = ("s16", "u16", "b16", "s32", "u32", "b32", "s64", "u64", "b64")
FLOATS = ("f16", "bf16", "f32", "f64")


def r(name: str, type_: str) -> Reg:
    return Reg(f"{name}_{type_}", type_)


def defs(items) -> list:
    """Loads of every register the items read before writing, so the kernel verifies."""
    written, out = {"buf"}, []

    def need(v):
        if isinstance(v, Reg) and v.name not in written:
            written.add(v.name)
            if v.type == "pred":
                word = Reg(f"{v.name}_word", "u32")
                out.append(inst("ld", (word,), (BUF,), space="global", type="u32"))
                out.append(inst("setp", (v,), (word, Imm(0, "u32")), cmp="ne", type="u32"))
            else:
                out.append(inst("ld", (v,), (BUF,), space="global", type=v.type))

    def walk(block):
        for item in block:
            if isinstance(item, lir.Inst):
                for v in (*item.srcs, item.guard):
                    need(v)
                for d in item.dests:
                    written.add(d.name)
            elif isinstance(item, lir.For):
                written.add(item.var.name)
                for v in (item.lo, item.hi, item.step):
                    need(v)
                walk(item.body.items)
            elif isinstance(item, lir.If):
                need(item.cond)
                walk(item.then.items)
                walk((item.orelse or Block(())).items)
            elif isinstance(item, lir.Loop):
                walk(item.body.items)
            elif item.cond is not None:
                need(item.cond)

    walk(items)
    return out


def kernel(name: str, items, **opts) -> Kernel:
    items = tuple(items)
    opts.setdefault("smem", 256)
    opts.setdefault("shared", (SharedBuffer("tile", 0, 256),))
    k = Kernel(name, (Param("buf", "u64"),), Block((*defs(items), *items)), **opts)
    verify(k)
    return k


def module(cases: dict[str, list], target: str) -> str:
    return emit_module([kernel(name, items) for name, items in cases.items()], target)


def one(op, dest, srcs, **attrs):
    return [inst(op, (dest,) if dest is not None else (), srcs, **attrs)]


def binary(op: str, types, **attrs) -> dict[str, list]:
    return {f"{op}_{t}": one(op, r("d", t), (r("a", t), r("b", t)), type=t, **attrs) for t in types}


# ---------------------------------------------------------------------------
# The claims: family -> target -> {entry name: lir items}


def arith(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    for op in ("add", "sub", "mul"):
        c |= binary(op, (*INTS, *FLOATS))
    c |= binary("add", ("f32", "f16"), ftz=True, sat=True)
    c["add_sat_s32"] = one(
        "add", r("d", "s32"), (r("a", "s32"), Imm(-5, "s32")), type="s32", sat=True
    )
    c["add_rz_f32"] = one(
        "add", r("d", "f32"), (r("a", "f32"), r("b", "f32")), type="f32", rounding="rz"
    )
    c["add_imm_f32"] = one("add", r("d", "f32"), (r("a", "f32"), Imm(1.5, "f32")), type="f32")
    c["add_imm_f16"] = one("add", r("d", "f16"), (r("a", "f16"), Imm(1.5, "f16")), type="f16")
    c["add_imm_bf16"] = one("add", r("d", "bf16"), (Imm(2.0, "bf16"), r("b", "bf16")), type="bf16")
    c["add_imm_f64"] = one("add", r("d", "f64"), (r("a", "f64"), Imm(-0.1, "f64")), type="f64")
    c["add_imm_u64"] = one("add", r("d", "u64"), (r("a", "u64"), Imm(2**64 - 1, "u64")), type="u64")
    c |= binary("mul_hi", INTS)
    for t, w in (("s16", "s32"), ("u16", "u32"), ("s32", "s64"), ("u32", "u64"), ("b32", "u64")):
        c[f"mul_wide_{t}"] = one("mul_wide", r("d", w), (r("a", t), Imm(3, t)), type=t)
    for op, types in (("mad", (*INTS, *FLOATS)), ("fma", FLOATS)):
        for t in types:
            c[f"{op}_{t}"] = one(op, r("d", t), (r("a", t), r("b", t), r("c", t)), type=t)
    c |= binary("div", (*INTS, *FLOATS))
    for rnd in ("approx", "full", "rz", "rm", "rp"):
        c[f"div_{rnd}_f32"] = one(
            "div", r("d", "f32"), (r("a", "f32"), r("b", "f32")), type="f32", rounding=rnd, ftz=True
        )
    c["div_rz_f64"] = one(
        "div", r("d", "f64"), (r("a", "f64"), r("b", "f64")), type="f64", rounding="rz"
    )
    c |= binary("rem", INTS)
    for op in ("neg", "abs"):
        for t in ("s16", "s32", "s64", "u16", "u32", "u64", "b32", *FLOATS):
            c[f"{op}_{t}"] = one(op, r("d", t), (r("a", t),), type=t)
    for op in ("min", "max"):
        c |= binary(op, (*INTS, *FLOATS))
        for t in ("f16", "bf16", "f32"):
            c[f"{op}_nan_{t}"] = one(op, r("d", t), (r("a", t), r("b", t)), type=t, nan=True)
    return c


def bits_ops(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    for op in ("and", "or", "xor"):
        c |= binary(op, ("pred", "u8", *INTS, "f16"))
    for t in ("pred", "u8", *INTS):
        c[f"not_{t}"] = one("not", r("d", t), (r("a", t),), type=t)
    for op in ("shl", "shr"):
        c |= binary(op, INTS)
        c[f"{op}_imm"] = one(op, r("d", "s64"), (r("a", "s64"), Imm(3, "u32")), type="s64")
        c[f"{op}_wide_amount"] = one(op, r("d", "u32"), (r("a", "u32"), r("n", "u64")), type="u32")
        c[f"{op}_narrow_amount"] = one(
            op, r("d", "u32"), (r("a", "u32"), r("n", "u16")), type="u32"
        )
    for t in ("b32", "u32", "b64", "s64"):
        c[f"popc_{t}"] = one("popc", r("d", "u32"), (r("a", t),), type=t)
    c["prmt"] = one(
        "prmt", r("d", "b32"), (r("a", "b32"), r("b", "b32"), Imm(0x3210, "b32")), type="b32"
    )
    c["prmt_f4e"] = one(
        "prmt", r("d", "u32"), (r("a", "u32"), r("b", "u32"), r("c", "u32")), type="u32", mode="f4e"
    )
    for t in ("s32", "u32"):
        c[f"dp4a_{t}"] = one("dp4a", r("d", t), (r("a", t), r("b", t), r("c", t)), type=t)
    return c


CMPS = {"s": ("eq", "ne", "lt", "le", "gt", "ge"), "u": ("eq", "ne", "lt", "le", "gt", "ge", "lo", "hs"),
        "b": ("eq", "ne"), "f": ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu",
                                "geu", "num", "nan")}  # fmt: skip


def compare(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    p = Reg("p", "pred")
    for t in (*INTS, *FLOATS):
        items = [inst("setp", (p,), (r("a", t), r("b", t)), cmp=cmp, type=t) for cmp in CMPS[t[0]]]
        items.append(
            inst("setp", (p,), (r("a", t), Imm(1, t)), cmp="lt" if t[0] != "b" else "eq", type=t)
        )
        c[f"setp_{t}"] = items
    c["setp_ftz"] = one("setp", p, (r("a", "f32"), r("b", "f32")), cmp="gt", type="f32", ftz=True)
    for t in ("u8", *INTS, *FLOATS):
        c[f"selp_{t}"] = one("selp", r("d", t), (r("a", t), r("b", t), p), type=t)
    for t in FLOATS:
        c[f"selp_imm_{t}"] = one("selp", r("d", t), (Imm(1.0, t), r("b", t), p), type=t)
    c["selp_imm_s32"] = one("selp", r("d", "s32"), (Imm(1, "s32"), Imm(-1, "s32"), p), type="s32")
    return c


CVT_TYPES = (
    "s8",
    "u8",
    "s16",
    "u16",
    "s32",
    "u32",
    "s64",
    "u64",
    "b32",
    "f16",
    "bf16",
    "f32",
    "f64",
)


def cvt_needs_sm90(to: str, frm: str) -> bool:
    """bf16 conversions sm_80 lacks and that f32 cannot stand in for without rounding twice."""
    if to == "bf16":
        return frm in ("s32", "u32", "s64", "u64", "b32", "f64")
    return False


def convert(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    for to in (*CVT_TYPES, "pred"):
        items = []
        for frm in (*CVT_TYPES, "pred"):
            if target == "sm_80" and cvt_needs_sm90(to, frm):
                continue
            items.append(inst("cvt", (r("d", to),), (r("a", frm),), type=to, from_type=frm))
        c[f"cvt_to_{to}"] = items
    # explicit roundings and saturation
    cases = [("f16", "f32", "rz", False), ("f32", "f64", "rm", True), ("s32", "f32", "rni", False),
             ("u8", "f32", "rpi", True), ("s8", "s32", None, True), ("u16", "s64", None, True),
             ("s32", "u32", None, True), ("s64", "s32", None, True), ("f32", "f32", "rni", False),
             ("f32", "s32", "rz", False), ("s32", "f64", "rz", False), ("f16", "f16", "rzi", False),
             ("bf16", "f32", "rz", False), ("f32", "f16", None, True), ("bf16", "bf16", "rni", False),
             ("f16", "bf16", "rn", False), ("s32", "bf16", "rmi", True)]  # fmt: skip
    for to, frm, rnd, sat in cases:
        attrs = {"rounding": rnd} if rnd else {}
        if sat:
            attrs["sat"] = True
        c[f"cvt_{to}_{frm}_{rnd}_{sat}"] = one(
            "cvt", r("d", to), (r("a", frm),), type=to, from_type=frm, **attrs
        )
    c["cvt_ftz"] = one(
        "cvt", r("d", "f16"), (r("a", "f32"),), type="f16", from_type="f32", ftz=True
    )
    c["cvt_imm"] = one("cvt", r("d", "f32"), (Imm(5, "s32"),), type="f32", from_type="s32")
    for t in ("pred", "u8", "s16", "u16", "f16", "bf16", "s32", "u32", "f32", "s64", "f64"):
        val = Imm(1.0 if lir.is_float(t) else 1, t)
        c[f"mov_{t}"] = [
            inst("mov", (r("d", t),), (val,), type=t),
            inst("mov", (r("e", t),), (r("d", t),), type=t),
        ]
    for a, b in (
        ("f32", "u32"),
        ("u32", "f32"),
        ("f64", "s64"),
        ("f16", "u16"),
        ("bf16", "f16"),
        ("s32", "b32"),
    ):
        c[f"bitcast_{a}_{b}"] = one("bitcast", r("d", a), (r("a", b),), type=a)
    c["bitcast_imm"] = one("bitcast", r("d", "u32"), (Imm(1.0, "f32"),), type="u32")
    return c


MATH_CLAIMS = {
    "f32": {"ex2": ("approx",), "lg2": ("approx",), "sin": ("approx",), "cos": ("approx",),
            "tanh": ("approx",), "rsqrt": ("approx",), "sqrt": ("approx", "rn", "rz", "rm", "rp"),
            "rcp": ("approx", "rn", "rz", "rm", "rp")},
    "f64": {"sqrt": ("rn", "rz", "rm", "rp"), "rcp": ("rn", "rz", "rm", "rp", "approx"),
            "rsqrt": ("approx",)},
    "f16": {op: ("approx",) for op in sorted(lir.MATH)},
    "bf16": {op: ("approx",) for op in sorted(lir.MATH)},
}  # fmt: skip


def math(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    for t, table in MATH_CLAIMS.items():
        for op, roundings in table.items():
            c[f"{op}_{t}"] = [
                inst(op, (r("d", t),), (r("a", t),), type=t),
                *(inst(op, (r("d", t),), (r("a", t),), type=t, rounding=rnd) for rnd in roundings),
            ]
    for op in ("ex2", "lg2", "sin", "cos", "rsqrt", "sqrt", "rcp"):
        c[f"{op}_ftz"] = one(op, r("d", "f32"), (r("a", "f32"),), type="f32", ftz=True)
    c["rcp_approx_ftz_f64"] = one(
        "rcp", r("d", "f64"), (r("a", "f64"),), type="f64", rounding="approx", ftz=True
    )
    c["sqrt_imm"] = one("sqrt", r("d", "f32"), (Imm(2.0, "f32"),), type="f32")
    return c


MEM_TYPES = (
    "s8",
    "u8",
    "s16",
    "u16",
    "f16",
    "bf16",
    "s32",
    "u32",
    "b32",
    "f32",
    "s64",
    "u64",
    "f64",
)


def memory(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    g, s = Reg("g", "u64"), Reg("s", "u32")
    for t in MEM_TYPES:
        items = []
        for vec in (1, 2, 4):
            if vec * lir.WIDTH[t] > 16:
                continue
            vals = tuple(Reg(f"v{n}_{t}", t) for n in range(vec))
            for space, addr in (
                ("global", g),
                ("shared", s),
                ("local", s),
                ("shared", Reg("s64", "u64")),
            ):
                items.append(inst("ld", vals, (addr,), space=space, type=t, vec=vec))
                items.append(
                    inst("st", (), (addr, *vals), space=space, type=t, vec=vec, offset=16 * vec)
                )
        c[f"ldst_{t}"] = items
    f = Reg("f", "f32")
    c["ld_param"] = one("ld", f, (g,), space="param", type="f32")
    c["st_imm"] = [
        inst("st", (), (g, Imm(0, "u32")), space="global", type="u32"),
        inst("st", (), (g, Imm(1.0, "f32"), Imm(2.0, "f32")), space="global", type="f32", vec=2),
        inst("st", (), (g, Imm(1.0, "f16")), space="global", type="f16"),
    ]
    c["ld_acquire"] = [
        inst("ld", (f,), (g,), space="global", type="f32", sem="acquire", scope=scope)
        for scope in ("cta", "gpu", "sys")
    ] + [inst("ld", (f,), (g,), space="global", type="f32", sem="acquire")]
    c["st_release"] = [
        inst("st", (), (g, f), space="global", type="f32", sem="release", scope="sys"),
        inst("st", (), (s, f), space="shared", type="f32", sem="relaxed", scope="cta"),
    ]
    c["ld_cache"] = [
        inst("ld", (f,), (g,), space="global", type="f32", cache=cache)
        for cache in ("ca", "cg", "cs", "lu", "cv", "nc", "volatile")
    ] + [
        inst("st", (), (g, f), space="global", type="f32", cache=cache)
        for cache in ("wb", "cg", "cs", "wt", "volatile")
    ]
    c["ld_nc_v4"] = [inst("ld", tuple(Reg(f"q{n}", "f32") for n in range(4)), (g,), space="global",
                          type="f32", vec=4, cache="nc")]  # fmt: skip
    for op, types in (
        ("add", ("u32", "s32", "b32", "u64", "s64", "f32", "f64", "f16")),
        ("min", ("u32", "s32", "u64", "s64")),
        ("max", ("u32", "s32", "u64", "s64")),
        ("inc", ("u32",)),
        ("dec", ("u32",)),
        ("and", ("b32", "u32", "s64")),
        ("or", ("b32", "s32", "u64")),
        ("xor", ("b32", "b64")),
        ("exch", ("b32", "f32", "u64", "f64")),
        ("cas", ("b32", "u32", "f32", "u64", "b16")),
    ):
        if target == "sm_90" and op == "add":
            types = (*types, "bf16")
        items = []
        for t in types:
            srcs = (r("a", t), r("b", t)) if op == "cas" else (r("a", t),)
            for space, addr in (("global", g), ("shared", s)):
                items.append(
                    inst("atom", (r("d", t),), (addr, *srcs), space=space, atom=op, type=t)
                )
                items.append(inst("atom", (), (addr, *srcs), space=space, atom=op, type=t))
                if op not in ("exch", "cas"):
                    items.append(inst("red", (), (addr, *srcs), space=space, atom=op, type=t))
            items.append(
                inst(
                    "atom",
                    (r("d", t),),
                    (g, *srcs),
                    space="global",
                    atom=op,
                    type=t,
                    sem="acq_rel",
                    scope="gpu",
                )
            )
        c[f"atom_{op}"] = items
    c["atom_imm"] = one(
        "atom", r("d", "u32"), (g, Imm(1, "u32")), space="global", atom="add", type="u32"
    )
    c["red_release"] = one("red", None, (g, Imm(1.0, "f32")), space="global", atom="add", type="f32",
                           sem="release", scope="gpu")  # fmt: skip
    return c


def special_sync_warp(target: str) -> dict[str, list]:
    c: dict[str, list] = {}
    c["sreg"] = [
        inst("sreg", (Reg(f"s{n}", "u32"),), (), name=name)
        for n, name in enumerate(lir.SPECIAL_REGS)
        if "cluster" not in name or target != "sm_80"  # a cluster's need sm_90
    ]
    c["sreg_wide"] = [
        inst("sreg", (Reg("w", "u64"),), (), name="ctaid.x"),
        inst("sreg", (Reg("v", "s64"),), (), name="tid.x"),
        inst("sreg", (Reg("h", "u16"),), (), name="laneid"),
    ]
    c["bar"] = [
        inst("bar", (), ()),
        inst("bar", (), (Imm(0, "u32"),)),
        inst("bar", (), (Imm(1, "u32"), Imm(64, "u32"))),
        inst("bar", (), (r("id", "u32"), r("n", "u32"))),
    ]
    c["fence"] = [
        inst("fence", (), ()),
        *(
            inst("fence", (), (), sem=sem, scope=scope)
            for sem in ("sc", "acq_rel")
            for scope in ("cta", "gpu", "sys")
        ),
    ]
    if target == "sm_90":
        c["fence_proxy"] = [
            inst("fence", (), (), proxy="async"),
            inst("fence", (), (), proxy="async", space="shared"),
            inst("fence", (), (), proxy="async", space="global"),
        ]
    items = []
    for mode in ("bfly", "up", "down", "idx"):
        for t in ("f32", "u32", "s32", "b32"):
            items.append(inst("shfl", (r("d", t),), (r("a", t), Imm(1, "u32")), mode=mode, type=t))
        items.append(
            inst(
                "shfl",
                (r("d", "f32"),),
                (r("a", "f32"), r("l", "u32"), Imm(0x1F, "u32")),
                mode=mode,
                type="b32",
            )
        )
        items.append(
            inst(
                "shfl",
                (r("d", "f32"), Reg("ok", "pred")),
                (r("a", "f32"), r("l", "u32"), r("c", "u32"), r("m", "u32")),
                mode=mode,
                type="b32",
            )
        )
        items.append(
            inst(
                "shfl",
                (r("d", "u32"),),
                (r("a", "u32"), Imm(2, "u32")),
                mode=mode,
                type="b32",
                mask=0xFFFF,
            )
        )
    c["shfl"] = items
    p = Reg("p", "pred")
    c["vote"] = [
        inst("vote", (Reg("q", "pred"),), (p,), mode="any"),
        inst("vote", (Reg("q", "pred"),), (p,), mode="all"),
        inst("vote", (Reg("q", "pred"),), (p,), mode="uni"),
        inst("vote", (r("b", "u32"),), (p,), mode="ballot"),
        inst("vote", (r("b", "u32"),), (p, r("m", "u32")), mode="ballot"),
        inst("vote", (Reg("q", "pred"),), (Imm(1, "pred"),), mode="any", mask=0xF),
    ]
    c["trap"] = [inst("trap", guard=p), inst("trap")]
    c["guards"] = [
        inst("add", (r("d", "f32"),), (r("a", "f32"), r("a", "f32")), type="f32", guard=p),
        inst(
            "add",
            (r("d", "f16"),),
            (r("a", "f16"), Imm(1.0, "f16")),
            type="f16",
            guard=p,
            guard_negated=True,
        ),
        inst("div", (r("d", "bf16"),), (r("a", "bf16"), r("b", "bf16")), type="bf16", guard=p),
    ]
    return c


def async_copies(target: str) -> dict[str, list]:
    """cp.async of every size, with and without a source size, and its groups."""
    dst, n, p = r("s", "u32"), r("n", "u32"), Reg("p", "pred")
    c: dict[str, list] = {}
    for size in (4, 8, 16):
        c[f"cp_async_{size}"] = [
            inst("cp_async", (), (dst, BUF), size=size),
            inst("cp_async", (), (dst, BUF, n), size=size, guard=p),
            inst("cp_async", (), (r("s", "u64"), BUF, Imm(0, "u32")), size=size),
        ]
    c["cp_async_ca_16"] = [inst("cp_async", (), (dst, BUF), size=16, cache="ca")]
    c["cp_async_groups"] = [
        inst("cp_async_commit"),
        inst("cp_async_commit", guard=p),
        inst("cp_async_wait", pending=0),
        inst("cp_async_wait", pending=2, guard=p, guard_negated=True),
    ]
    return c


def tensor_cores(target: str) -> dict[str, list]:
    """ldmatrix, every mma form, the packed conversion and WMMA's load, mma and store."""

    def regs(name: str, type_: str, n: int) -> list[Reg]:
        return [r(f"{name}{k}", type_) for k in range(n)]

    s, g = r("s", "u32"), BUF
    a, b, h = regs("a", "b32", 4), regs("b", "b32", 2), regs("h", "b32", 2)
    f, i = regs("c", "f32", 4), regs("i", "s32", 4)
    c: dict[str, list] = {}
    c["ldmatrix"] = [
        inst("ldmatrix", a, (s,), space="shared", type="b16"),
        inst("ldmatrix", b, (s,), space="shared", type="b16", trans=1),
        inst("ldmatrix", a[:1], (s,), space="shared", type="b16", trans=0),
    ]
    c["mma"] = [
        inst("mma", f, (*a, *b, *f), shape="m16n8k16", type="f32", from_type="f16"),
        inst("mma", f, (*a, *b, *f), shape="m16n8k16", type="f32", from_type="bf16"),
        inst("mma", h, (*a, *b, *h), shape="m16n8k16", type="f16", from_type="f16"),
        inst("mma", i, (*a, *b, *i), shape="m16n8k32", type="s32", from_type="s8"),
        inst("mma", i[:2], (a[0], b[0], *i[:2]), shape="m8n8k16", type="s32", from_type="s8"),
    ]
    c["cvt_x2"] = [
        inst("cvt_x2", (a[0],), (f[0], f[1]), type="f16", from_type="f32"),
        inst("cvt_x2", (a[1],), (f[2], f[3]), type="bf16", from_type="f32", rounding="rz"),
    ]
    wa, wb, wc = regs("wa", "b32", 8), regs("wb", "b32", 8), regs("wc", "f32", 8)
    wmma = {"shape": "m16n16k16"}
    c["wmma"] = [
        inst("wmma_load", wa, (s,), space="shared", type="f16", matrix="a", layout="row", **wmma),
        inst("wmma_load", wb, (s, Imm(32, "u32")), space="shared", type="f16", matrix="b",
             layout="col", **wmma),
        inst("wmma_load", wc, (g, r("n", "s32")), space="global", type="f32", matrix="c",
             layout="row", **wmma),
        inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="f16", alayout="row",
             blayout="col", **wmma),
        inst("wmma_mma", wc, (*wa, *wb, *wc), type="f32", from_type="f16", alayout="col",
             blayout="row", **wmma),
        inst("wmma_store", (), (s, *wc, Imm(16, "u32")), space="shared", type="f32",
             layout="row", **wmma),
        inst("wmma_store", (), (g, *wc), space="global", type="f32", layout="col", **wmma),
    ]  # fmt: skip
    return c


def hopper_ops(target: str) -> dict[str, list]:
    """mbarriers, the bulk copy and elect.sync (sm_90; setmaxnreg, sm_90a, is assembled in
    tests/ptx/test_emit_hopper.py)."""
    if target == "sm_80":
        return {}
    s, bar, n, p, tok = r("s", "u32"), r("bar", "u32"), r("n", "u32"), r("p", "pred"), r("t", "b64")
    return {
        "mbarrier": [
            inst("mbarrier_init", (), (bar, n)),
            inst("fence_mbarrier_init"),
            inst("mbarrier_arrive", (tok,), (bar,)),
            inst("mbarrier_arrive_expect_tx", (), (bar, Imm(64, "u32"))),
            inst("mbarrier_try_wait_parity", (p,), (bar, n)),
            inst("cp_async_bulk", (), (s, BUF, Imm(64, "u32"), bar), guard=p),
            inst("elect_sync", (p, n)),
        ]
    }


FAMILIES = {
    "arith": arith,
    "async": async_copies,
    "bits": bits_ops,
    "compare": compare,
    "convert": convert,
    "hopper": hopper_ops,
    "math": math,
    "memory": memory,
    "special_sync_warp": special_sync_warp,
    "tensor": tensor_cores,
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_assembles(family, target, assemble):
    assemble(module(FAMILIES[family](target), target), target)


def test_every_lir_op_is_claimed():
    seen = set()
    for build in FAMILIES.values():
        for items in build("sm_90").values():
            seen.update(i.op for i in items)
    # the sm_90a ops, and the TMA ops (which need a kernel with a tensor map), are built
    # and assembled in tests/ptx/test_emit_hopper.py, the stores in test_emit_stores.py,
    # the cluster's (which need a kernel of clusters) in test_emit_cluster.py
    sm_90a = {"setmaxnreg", "wgmma_mma", "wgmma_fence", "wgmma_commit", "wgmma_wait", "wgmma_desc",
              "tmap_addr", "tma_load", "cluster_arrive", "cluster_wait",
              *lir.HOPPER_STORES}  # fmt: skip
    assert seen | sm_90a == set(lir.OPS)


# ---------------------------------------------------------------------------
# What needs sm_90 raises TargetError on sm_80, with the instruction's span


SM90_ONLY = [
    one("cvt", r("d", "bf16"), (r("a", "s32"),), type="bf16", from_type="s32"),
    one("cvt", r("d", "bf16"), (r("a", "f64"),), type="bf16", from_type="f64"),
    one("atom", r("d", "bf16"), (BUF, r("a", "bf16")), space="global", atom="add", type="bf16"),
    one("fence", None, (), proxy="async"),
]


@pytest.mark.parametrize("items", SM90_ONLY, ids=lambda items: lir.print_item(items[0]))
def test_sm90_features_refused_on_sm80(items, assemble):
    k = kernel("k", items)
    with pytest.raises(TargetError, match="sm_80 does not have .*sm_90 or newer"):
        emit_kernel(k, "sm_80")
    assemble(emit_module([k], "sm_90"), "sm_90")


def test_target_error_carries_span_and_code():
    span = object()  # stands for the user's line
    i = inst("fence", (), (), proxy="async", span=span)
    with pytest.raises(TargetError) as info:
        emit_kernel(kernel("k", [i]), "sm_80")
    assert info.value.span == span and info.value.code == "E0590"


# ---------------------------------------------------------------------------
# No template: an error naming the op, never PTX

NO_TEMPLATE = [
    (one("add", r("d", "u8"), (r("a", "u8"), r("b", "u8")), type="u8"), "`add`.*type u8"),
    (one("rem", r("d", "f32"), (r("a", "f32"), r("b", "f32")), type="f32"), "`rem`.*integer only"),
    (
        one("atom", r("d", "f32"), (BUF, r("a", "f32")), space="global", atom="min", type="f32"),
        "min on f32",
    ),
    (
        one("red", None, (BUF, r("a", "u32")), space="global", atom="exch", type="u32"),
        "no reduction form",
    ),
    (
        one(
            "selp",
            Reg("q", "pred"),
            (Reg("p", "pred"), Reg("p", "pred"), Reg("p", "pred")),
            type="pred",
        ),
        "`selp`",
    ),
    (one("shfl", r("d", "f64"), (r("a", "f64"), Imm(1, "u32")), mode="bfly", type="f64"), "32-bit"),
    (
        one("cvt", r("d", "s32"), (r("a", "u32"),), type="s32", from_type="u32", rounding="rn"),
        "rounding `rn`",
    ),
    (
        one("cvt", r("d", "f32"), (r("a", "f64"),), type="f32", from_type="f64", rounding="rni"),
        "rounding `rni`",
    ),
    (one("ex2", r("d", "f64"), (r("a", "f64"),), type="f64"), "`ex2`.*type f64"),
    (one("sqrt", r("d", "f32"), (r("a", "f32"),), type="f32", rounding="rzi"), "rounding `rzi`"),
    (one("tanh", r("d", "f32"), (r("a", "f32"),), type="f32", ftz=True), "ftz"),
    (
        one("div", r("d", "f32"), (r("a", "f32"), r("b", "f32")), type="f32", rounding="rni"),
        "rounding `rni`",
    ),
    (
        one(
            "add",
            r("d", "s32"),
            (r("a", "s32"), r("b", "s32")),
            type="s32",
            rounding="rn",
            sat=True,
            ftz=True,
        ),
        None,
    ),
    (one("mul", r("d", "s32"), (r("a", "s32"), r("b", "s32")), type="s32", sat=True), "sat on mul"),
    (one("min", r("d", "f64"), (r("a", "f64"), r("b", "f64")), type="f64", nan=True), "NaN on f64"),
    (
        one("ld", r("d", "f32"), (BUF,), space="global", type="f32", sem="release"),
        "memory order `release`",
    ),
    (
        one("ld", r("d", "f32"), (BUF,), space="global", type="f32", cache="wt"),
        "cache operator `wt`",
    ),
    (one("fence", None, (), sem="acquire"), "order `acquire`"),
    (
        one("shfl", r("d", "u32"), (r("a", "u32"), Imm(1, "u32")), mode="sideways", type="b32"),
        "mode `sideways`",
    ),
    (one("vote", r("d", "u32"), (Reg("p", "pred"),), mode="any"), "writes a pred"),
    (one("mov", r("d", "u32"), (r("a", "u64"),), type="u32"), "moves a u64"),
    (one("bitcast", r("d", "u32"), (r("a", "f64"),), type="u32"), "another width"),
    (one("popc", r("d", "u32"), (r("a", "u16"),), type="u16"), "32- or 64-bit"),
    (
        one("add", r("d", "f32"), (r("a", "f32"), r("b", "f32")), type="f32", rouding="rz"),
        "`rouding`",
    ),
    (one("min", r("d", "s32"), (r("a", "s32"), r("b", "s32")), type="s32", sat=True), "`sat`"),
]


@pytest.mark.parametrize(
    ("items", "message"),
    NO_TEMPLATE,
    ids=lambda x: lir.print_item(x[0]) if isinstance(x, list) else None,
)
def test_no_template_names_the_op(items, message):
    k = Kernel("k", (Param("buf", "u64"),), Block((*defs(items), *items)), smem=16)
    op = items[0].op
    with pytest.raises(NoTemplate, match=f"no PTX template for `{op}`") as info:
        for target in TARGETS:
            emit_kernel(k, target)
    if message is not None:
        assert __import__("re").search(message, str(info.value)), str(info.value)


def test_shared_access_without_shared_memory_is_refused():
    items = one("ld", r("d", "f32"), (Reg("s", "u32"),), space="shared", type="f32")
    k = Kernel("k", (Param("buf", "u64"),), Block((*defs(items), *items)))
    with pytest.raises(NoTemplate, match="shared memory in a kernel with none"):
        emit_kernel(k)


def test_templates_spell_what_ptx_requires():
    """Spot checks of the modifiers PTX insists on, read off the emitted text."""
    text = module(arith("sm_90") | convert("sm_90") | math("sm_90") | bits_ops("sm_90"), "sm_90")
    for needle in (
        "add.f32 ", "mul.lo.s32 ", "mul.f64 ", "fma.rn.f32 ", "mad.lo.u64 ", "div.rn.f32 ",
        "div.approx.ftz.f32 ", "div.s64 ", "rem.u32 ", "cvt.rn.f16.f32 ", "cvt.rzi.s32.f32 ",
        "cvt.f32.f16 ", "cvt.rn.f32.s32 ", "cvt.f64.f32 ", "cvt.sat.s8.s32 ", "ex2.approx.f32 ",
        "sqrt.rn.f64 ", "rsqrt.approx.f32 ", "rcp.approx.ftz.f64 ", "tanh.approx.f32 ",
        "shr.s32 ", "shr.u32 ", "shr.b32 ", "shl.b64 ", "min.NaN.f32 ", "add.rn.bf16 ",
        "neg.bf16 ", "sub.u32 ", "dp4a.s32.s32 ", "popc.b64 ", "ex2.approx.ftz.bf16 ",
        "0f3FC00000", "0dBFB999999999999A", "18446744073709551615", "mov.b16 %h",
    ):  # fmt: skip
        assert needle in text, needle
    # add/sub/mul of f32 and f64 carry no rounding modifier, so ptxas may contract a
    # product feeding a sum into an fma, as SPEC.md's -fmad rule allows.
    assert "add.rn.f32 " not in text and "mul.rn.f64 " not in text
    sm80 = module(arith("sm_80"), "sm_80")
    assert "add.rn.bf16" not in sm80 and "cvt.f32.bf16" in sm80  # bf16 add through f32 there
