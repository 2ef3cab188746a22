"""Types and shapes: operators, joins, conversions, literals, slices, built-ins."""

from __future__ import annotations

import pytest
from sema_check_helpers import assert_clean, assert_refused, check, dump

from phobos.sema import hir

PARAMS_PH = "A: tensor<f32>[M, 64], B: tensor<u8>[M, 64], x: f32, n: i32, b: bool"
PARAMS_PY = (
    "A: ph.tensor[ph.f32][M, 64], B: ph.tensor[ph.u8][M, 64], x: ph.f32, n: ph.i32, b: ph.bool"
)


def ph(*lines: str) -> str:
    return f"kernel k({PARAMS_PH}) {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"


def py(*lines: str) -> str:
    return f"@ph.kernel\ndef k({PARAMS_PY}):\n" + "".join(f"    {line}\n" for line in lines)


# (id, .ph statement lines, Python statement lines, code, fragment); the last line is refused
REFUSED = [
    (
        "bitwise_float",
        ["let a = x & 3 // <-"],
        ["a: ph.let = x & 3  # <-"],
        "E0301",
        "no bitwise `&` on `f32`",
    ),
    (
        "logical_int",
        ["let a = b && n // <-"],
        ["a: ph.let = b and n  # <-"],
        "E0300",
        "mismatched types `bool` and `i32`",
    ),
    ("not_int", ["let a = !n // <-"], ["a: ph.let = not n  # <-"], "E0301", "`!` takes a `bool`"),
    (
        "unsigned_arith",
        ["var a = B[0 :+ 4, :] + 1 // <-"],
        ["a: ph.var = B[0:+4, :] + 1  # <-"],
        "E0301",
        "no arithmetic on `u8`",
    ),
    (
        "bool_conversion",
        ["let a = f32(b) // <-"],
        ["a: ph.let = ph.f32(b)  # <-"],
        "E0317",
        "no conversion from `bool`",
    ),
    (
        "no_u8_conversion",
        ["let a = u8(x) // <-"],
        ["a: ph.let = ph.u8(x)  # <-"],
        "E0317",
        "no conversion to `u8`",
    ),
    (
        "shape_mismatch",
        ["var t: tile<f32>[4, 64] = 0.0", "var u: tile<f32>[8, 64] = t // <-"],
        ["t: ph.var[ph.tile[ph.f32][4, 64]] = 0.0", "u: ph.var[ph.tile[ph.f32][8, 64]] = t  # <-"],
        "E0304",
        "does not fit [8, 64]",
    ),
    (
        "broadcast",
        ["var t: tile<f32>[4, 64] = 0.0", "var u: tile<f32>[4, 32] = 0.0", "var w = t + u // <-"],
        [
            "t: ph.var[ph.tile[ph.f32][4, 64]] = 0.0",
            "u: ph.var[ph.tile[ph.f32][4, 32]] = 0.0",
            "w: ph.var = t + u  # <-",
        ],
        "E0304",
        "shapes [4, 64] and [4, 32] do not broadcast",
    ),
    (
        "slice_extent",
        ["let a = A[0:n, 0] // <-"],
        ["a: ph.let = A[0:n, 0]  # <-"],
        "E0306",
        "must be a constant",
    ),
    (
        "slice_len",
        ["let a = A[0 :+ n, 0] // <-"],
        ["a: ph.let = A[0:+n, 0]  # <-"],
        "E0306",
        "the length after `:+` must be a constant",
    ),
    (
        "float_offset",
        ["let a = A[x, 0] // <-"],
        ["a: ph.let = A[x, 0]  # <-"],
        "E0307",
        "a subscript must be an index",
    ),
    (
        "rank",
        ["let a = A[0] // <-"],
        ["a: ph.let = A[0]  # <-"],
        "E0305",
        "has 2 dimensions but 1 subscript",
    ),
    (
        "index_scalar",
        ["let a = x[0] // <-"],
        ["a: ph.let = x[0]  # <-"],
        "E0315",
        "cannot index a scalar",
    ),
    (
        "tensor_local",
        ["let a: tensor<f32>[4] = x // <-"],
        ["a: ph.let[ph.tensor[ph.f32][4]] = x  # <-"],
        "E0308",
        "a tensor is a kernel parameter only",
    ),
    (
        "uninit_scalar",
        ["var s: f32 // <-"],
        ["s: ph.var[ph.f32]  # <-"],
        "E0318",
        "`var s` needs a value",
    ),
    (
        "iota_outside",
        ["let a = iota(0) // <-"],
        ["a: ph.let = ph.iota(0)  # <-"],
        "E0312",
        "`iota` is only allowed",
    ),
    (
        "where_tile_outside",
        ["let a = where(A[0 :+ 4, :] > 0.0, x, 0.0) // <-"],
        ["a: ph.let = ph.where(A[0:+4, :] > 0.0, x, 0.0)  # <-"],
        "E0312",
        "`where` of tiles",
    ),
    (
        "tile_compare",
        ["var t: tile<f32>[4, 64] = 0.0", "var u = t > 0.0 // <-"],
        ["t: ph.var[ph.tile[ph.f32][4, 64]] = 0.0", "u: ph.var = t > 0.0  # <-"],
        "E0312",
        "only allowed inside `where`",
    ),
    (
        "int_literal",
        ["let a = 4294967296 // <-"],
        ["a: ph.let = 4294967296  # <-"],
        "E0450",
        "too large for a 32-bit index",
    ),
    (
        "float_literal",
        ["let a = 1.0e39 // <-"],
        ["a: ph.let = 1.0e39  # <-"],
        "E0452",
        "out of range for `f32`",
    ),
    ("divide_by_zero", ["let a = 10 / 0 // <-"], ["a: ph.let = 10 // 0  # <-"], "E0451", "by zero"),
    (
        "dot_shapes",
        ["var t: tile<f32>[4, 64] = 0.0", "var d = dot(t, t) // <-"],
        ["t: ph.var[ph.tile[ph.f32][4, 64]] = 0.0", "d: ph.var = ph.dot(t, t)  # <-"],
        "E0316",
        "the contracted extents",
    ),
    (
        "quantized",
        ["var t: tile<i8>[4, 64] = 0", "var q = qdot_t(t, t, t, t) // <-"],
        ["t: ph.var[ph.tile[ph.i8][4, 64]] = 0", "q: ph.var = ph.qdot_t(t, t, t, t)  # <-"],
        "E0322",
        "`qdot_t` takes `a_scales` of `f32`",
    ),
    (
        "width",
        ["let s = sum<over ctx.lane, width 6>(x) // <-"],
        ["s: ph.let = ph.sum(x, over=ph.ctx.lane, width=6)  # <-"],
        "E0320",
        "a `width` is a constant power of two",
    ),
    (
        "over",
        ["let s = sum<over ctx.block.x>(x) // <-"],
        ["s: ph.let = ph.sum(x, over=ph.ctx.block.x)  # <-"],
        "E0320",
        "folds over `ctx.lane` or `ctx.thread`",
    ),
    (
        "builtin_count",
        ["let s = exp(x, x) // <-"],
        ["s: ph.let = ph.exp(x, x)  # <-"],
        "E0310",
        "`exp` takes 1 argument but 2 were given",
    ),
    (
        "cond_not_bool",
        ["if n { // <-", "}"],
        ["if n:  # <-", "    pass"],
        "E0319",
        "a condition must be a `bool`",
    ),
    (
        "declared_narrower",
        ["let a: i32 = x // <-"],
        ["a: ph.let[ph.i32] = x  # <-"],
        "E0309",
        "expected `i32`, found `f32`",
    ),
    (
        "reduction_rank",
        ["let r = rowsum(x) // <-"],
        ["r: ph.let = ph.rowsum(x)  # <-"],
        "E0311",
        "`rowsum` takes",
    ),
]


def _fix_py(lines):
    out = []
    for line in lines:
        if line == "    pass":
            out.append("    x2: ph.let = 1")
        else:
            out.append(line)
    return out


@pytest.mark.parametrize("spelling", ["ph", "py"])
@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(case, spelling):
    _, ph_lines, py_lines, code, fragment = case
    if spelling == "ph":
        assert_refused(ph(*ph_lines), code, fragment, "k.ph")
    else:
        assert_refused(py(*_fix_py(py_lines)), code, fragment, "k.py")


def test_python_integer_division_and_float_floor_division():
    assert_refused(py("a: ph.let = n / 2  # <-"), "E0302", "`/` of two integers", "k.py")
    assert_refused(py("a: ph.let = x // 2.0  # <-"), "E0303", "`//` of floats", "k.py")
    assert_refused(py("a: ph.var = n", "a /= 2  # <-"), "E0302", "`/` of two integers", "k.py")
    assert_refused(py("a: ph.var = x", "a //= 2.0  # <-"), "E0303", "`//` of floats", "k.py")
    _, diags = check(py("a: ph.let = n / 2"), "k.py")
    assert diags[0].help == ("write `//`, or convert an operand",)
    assert_clean(py("a: ph.let = n // 2", "c: ph.let = x / 2.0"), "k.py")


def test_joins_insert_conversions():
    (kernel,) = assert_clean(
        "kernel k(h: f16, g: bf16, x: f32, d: f64, n: i32, c: i8) {\n"
        "  let a = h * g\n  let b = n + x\n  let e = c + n\n  let f = d * 0.1\n  let z = x * 2\n}\n"
    )
    text = dump([kernel])
    assert "let a: f32 = (f32(h) * f32(g): f32)" in text
    assert "let b: f32 = (f32(n) + x: f32)" in text
    assert "let e: i32 = (i32(c) + n: i32)" in text
    # a float literal is an f32, widened where it meets an f64
    assert "let f: f64 = (d * 0.10000000149011612: f64)" in text
    assert "let z: f32 = (x * 2.0: f32)" in text


def test_unsigned_storage_converted_first():
    (kernel,) = assert_clean(ph("let a = (i32(B[0, 0]) >> 4) & 15"))
    assert "let a: i32 = ((i32(B[0, 0]) >> 4: i32) & 15: i32)" in dump([kernel])


def test_constants_fold():
    (kernel,) = assert_clean(
        ph("let a = (7 - 10) / 2", "let c = -7 % 3", "let d = 1 << 4", "let e = 2147483647 + 1")
    )
    text = dump([kernel])
    assert "let a: i32 = -1" in text and "let c: i32 = -1" in text and "let d: i32 = 16" in text
    # a constant becomes a run-time index of the kernel's width: it wraps there
    assert "let e: i32 = -2147483648" in text


def test_constants_wrap_at_the_index_width():
    (k32,) = assert_clean(ph("let m = -2147483648", "let e = 2147483647 + 1"))
    assert "let m: i32 = -2147483648" in dump([k32])
    (k64,) = assert_clean(ph("let e = 2147483647 + 1"), index_width=64)
    assert "let e: i64 = 2147483648" in dump([k64])


def test_slices_and_views():
    (kernel,) = assert_clean(
        ph(
            "let p = A[n, 0 :+ 16]",
            "var t = A[0 :+ 4, :]",
            "let r = A[n :, 0]",
            "let w = A[:, 0 : 8]",
            "let s = A[n : n + 8, 0]",
            "let v = A[0, 0]",
            "let tv = t[1, :]",
        )
    )
    text = dump([kernel])
    assert "let p: tensor<f32>[1, 16] = A[n, 0 :+ 16]" in text
    assert "var t: tile<f32>[4, 64] = A[0 :+ 4, 0 :+ 64]" in text
    assert "A[n:, 0]" in text
    assert "let w: tensor<f32>[M, 8] = A[0 :+ M, 0 :+ 8]" in text
    assert "let s: tensor<f32>[8, 1] = A[n :+ 8, 0]" in text
    assert "let v: f32 = A[0, 0]" in text
    assert "let tv: tile<f32>[1, 64] = t[1, 0 :+ 64]" in text


def test_broadcasting_and_builtin_shapes():
    (kernel,) = assert_clean(
        "@autotune(R in [8, 16], C in [32, 64])\n"
        "kernel k(A: tensor<f32>[M, C], I: tensor<i8>[M, C], n: i32) {\n"
        "  var t: tile<f32>[R, C] = A[0 :+ R, :]\n"
        "  var m = rowmax(t)\n"
        "  var s = rowsum(t * t)\n"
        "  var am = rowargmax(t)\n"
        "  var e = exp(t - m)\n"
        "  var tt = transpose(t)\n"
        "  var f = flat(t)\n"
        "  var d = dot(t, tt)\n"
        "  var dt = dot_t(t, t)\n"
        "  var i8t = I[0 :+ R, :]\n"
        "  var di = dot_t(i8t, i8t)\n"
        "  var cs = cumsum(t)\n"
        "  var tr = tril(d)\n"
        "  var g = gather(A[0, 0 :+ 8], am)\n"
        "  t = where(iota(1) < n, t, -1.0e30)\n"
        "  var tm = tmax(m, t)\n"
        "  var sel = argsel(t, tm, 1, 0)\n"
        "}\n"
    )
    text = dump([kernel])
    for want in (
        "var m: tile<f32>[8, 1] = rowmax(t)",
        "var s: tile<f32>[8, 1] = rowsum((t * t: tile<f32>[8, 32]))",
        "var am: tile<i32>[8, 1]",
        "var e: tile<f32>[8, 32] = exp((t - m: tile<f32>[8, 32]))",
        "var tt: tile<f32>[32, 8]",
        "var f: tile<f32>[1, 256]",
        "var d: tile<f32>[8, 8] = dot(t, tt)",
        "var dt: tile<f32>[8, 8] = dot_t(t, t)",
        "var di: tile<i32>[8, 8]",
        "var g: tile<f32>[8, 1]",
        "iota(1): tile<i32>[8, 32]",
        "var tm: tile<f32>[8, 32]",
        "var sel: tile<i32>[8, 32]",
    ):
        assert want in text, want


def test_collectives_shuffles_and_thread_builtins():
    (kernel,) = assert_clean(
        "fn add(a, b) = a + b\n"
        "kernel k(A: tensor<f32>[N], F: tensor<i32>[4], x: f32) {\n"
        "  let v = A[ctx.thread]\n"
        "  let s = sum<over ctx.lane>(v)\n"
        "  let s8 = sum<over ctx.lane, width 8>(v)\n"
        "  let c = sum<over ctx.thread>(v)\n"
        "  let r = reduce<over ctx.lane>(v, add)\n"
        "  let big = any<over ctx.lane>(v > 0.0)\n"
        "  let who = argmax<over ctx.thread>(v)\n"
        "  let sh = shfl<xor 16>(v)\n"
        "  let run = sum(A[ctx.thread * 4 :+ 4] * 2.0)\n"
        "  let e = elem(A[ctx.thread * 4 :+ 4], 1)\n"
        "  let old = atomic_add(F, 0, 1)\n"
        "  let flag = load_acquire(F, 1)\n"
        "  barrier()\n"
        "  let p = popcount(7)\n"
        "  let h = f16bits(15360)\n"
        "}\n"
    )
    text = dump([kernel])
    assert "sum<over lane>(v): f32" in text
    assert "sum<over lane, width 8>(v): f32" in text
    assert "reduce<over lane>(v): f32" in text
    assert "shfl<xor 16>(v): f32" in text
    values = {s.name: s for s in _lets(kernel)}
    assert values["s"].uni == hir.WARP and values["s8"].uni == hir.VARYING
    assert values["c"].uni == hir.UNIFORM and values["old"].uni == hir.UNIFORM
    assert values["v"].uni == hir.VARYING
    assert str(values["old"].type) == "i32" and str(values["h"].type) == "f16"


def _lets(kernel):
    return [s.sym for s in kernel.body.stmts if isinstance(s, hir.Let)]


def test_generate_of_an_expression_fn_is_a_diagnostic():
    _, diags = check("fn f(a) = a\nkernel k(x: f32) {\n  let y = generate(f)\n}\n")
    assert diags[0].code == "E0326" and "`f` is an expression fn" in diags[0].message
