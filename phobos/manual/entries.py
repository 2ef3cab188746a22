"""What the reference manual says about each name that `phobos/names.py` lists.

`names.py` gives a built-in its Python signature and a one-line summary; this module adds,
for each name, the rules a user must know and an example kernel in the Python spelling.
The manual's pages (`python -m phobos.manual`) are rendered from both tables, and
tests/test_reference_docs.py checks every example with the compiler's own checker.

A family spelled once in `names.py` (the math functions, the raw-format projections) is
given its notes once here and its examples built from one template.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos import names


@dataclass(frozen=True)
class Entry:
    """One name's page section: rules (Markdown), an optional shape line, an example."""

    rules: str
    example: str
    shape: str = ""


def _elementwise(call: str) -> str:
    """A kernel sweeping `call` (in terms of `x`, and `y` for two operands) over 64 elements."""
    return f"""\
@ph.kernel
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 64
    x: ph.let = X[base:+64]
    y: ph.let = Y[base:+64]
    Z[base:+64] = {call}
"""


MATH_RULES = {
    "exp": "Approximate (`ex2.approx` after a change of base).",
    "log": "Approximate (`lg2.approx`).",
    "pow": "Computed as `exp(b * log(a))`, so approximate and meant for `a > 0`.",
    "sqrt": "Approximate (`sqrt.approx.f32`).",
    "tanh": "Approximate (`tanh.approx.f32`).",
    "round": "Exact (`cvt.rni`).",
    "floor": "Exact (`cvt.rmi`).",
    "ceil": "Exact (`cvt.rpi`).",
    "abs": "Exact. Takes an integer too, as `max(x, -x)`.",
    "rsqrt": "Approximate (`rsqrt.approx.f32`).",
    "sin": "Approximate (`sin.approx.f32`), least accurate far from zero.",
    "cos": "Approximate (`cos.approx.f32`), least accurate far from zero.",
}
MATH_COMMON = "Takes a tile or a scalar; a scalar computes in `f32`. "

_ENTRIES: dict[str, Entry] = {}

for _name, _rule in MATH_RULES.items():
    _call = "ph.pow(x, y)" if _name == "pow" else f"ph.{_name}(x)"
    _ENTRIES[_name] = Entry(MATH_COMMON + _rule, _elementwise(_call), "elementwise")

_ENTRIES.update(
    {
        "barrier": Entry(
            "Every thread of the CTA waits for every other, and their earlier stores are "
            "visible to all of them. Only under uniform control. The compiler inserts the "
            "barriers tile operations need; write one after per-thread stores that a CTA-wide "
            "operation reads.",
            """\
@ph.kernel
@ph.launch(64)
def k(X: ph.tensor[ph.f32][64], Y: ph.tensor[ph.f32][64]):
    t: ph.var[ph.tile[ph.f32][64]] = 0.0
    t[ph.ctx.thread] = X[ph.ctx.thread] * 2.0
    ph.barrier()
    Y[0:+64] = t
""",
        ),
        "grid_barrier": Entry(
            "Every block of the grid waits for every other, and every block's global writes "
            "before it are visible after it. `bar` is a named `i32` tensor of at least two "
            "elements, zeroed once before the launch and not shared by concurrent kernels. "
            "The grid is one-dimensional and co-resident: the kernel is `@ph.persistent`.",
            """\
@ph.kernel
@ph.persistent
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], bar: ph.tensor[ph.i32][2]):
    base: ph.let = ph.ctx.block.x * 64
    X[base:+64] = X[base:+64] + 1.0
    ph.grid_barrier(bar)
    Y[base:+64] = X[base:+64]
""",
        ),
        "atomic_add": Entry(
            "`old = t[i]; t[i] += v` atomically across the device, once per block, between two "
            "CTA barriers; every thread gets the same `old`. `t` is a named `i32` or `f32` "
            "tensor parameter; the result has its element type. Ours beyond SPEC: the atomic "
            "is acquire-release at device scope, so the block's writes before it are visible "
            "to a block whose `atomic_add` or `atomic_cas` reads the value it left (the last "
            "block of a group to count itself in may read what the others wrote).",
            """\
@ph.kernel
def k(counter: ph.tensor[ph.i32][4], first: ph.tensor[ph.i32][N]):
    old: ph.let = ph.atomic_add(counter, 0, 1)
    first[ph.ctx.block.x] = old
""",
        ),
        "atomic_cas": Entry(
            "`old = t[i]; if old == e { t[i] = v }` atomically, once per block, every thread "
            "getting `old`. `t` is a named `i32` tensor parameter; `e` and `v` are integers. "
            "Ordered as `atomic_add` is (acquire-release at device scope; ours).",
            """\
@ph.kernel
def k(lock: ph.tensor[ph.i32][4], owner: ph.tensor[ph.i32][N]):
    old: ph.let = ph.atomic_cas(lock, 0, 0, ph.ctx.block.x + 1)
    owner[ph.ctx.block.x] = old
""",
        ),
        "load_acquire": Entry(
            "`t[i]` read at system scope with acquire ordering, once per block, every thread "
            "getting it: what the writer stored before raising `t[i]` is visible afterwards. "
            "`t` is a named `i32` tensor parameter; compiles at 64-bit indices.",
            """\
@ph.kernel
def k(flag: ph.tensor[ph.i32][4], X: ph.tensor[ph.f32][64], Y: ph.tensor[ph.f32][64]):
    while ph.load_acquire(flag, 0) == 0:
        pass
    Y[0:+64] = X[0:+64]
""",
        ),
        "store_release": Entry(
            "`t[i] = v` at system scope with release ordering, once per block, after every "
            "thread's earlier writes. The same operands as `load_acquire`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][64], flag: ph.tensor[ph.i32][4]):
    X[0:+64] = X[0:+64] * 2.0
    ph.store_release(flag, 0, 1)
""",
        ),
        "where": Entry(
            "The condition compares values, joined by `and` and `or`; there is no bool tile. "
            "On tiles it must be the value of a tile assignment (`t = ph.where(..)`, "
            "`t += ph.where(..)`, or a `var` whose `a` or `b` reads a tile); on scalars it is "
            "a select.",
            _elementwise("ph.where(x > y, x, 0.0)"),
            "elementwise, broadcasting",
        ),
        "iota": Entry(
            "The `i32` index of the element along axis `d` of the tile being assigned. Only "
            "inside a tile assignment's value; `d` is a literal below the tile's rank. Masks a "
            "ragged tile: `ph.where(ph.iota(1) < n, s, -1.0e30)`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][M, N], Y: ph.tensor[ph.f32][M, N]):
    row: ph.let = ph.ctx.block.x
    x: ph.var[ph.tile[ph.f32][1, 128]] = X[row, 0:+128]
    x = ph.where(ph.iota(1) < N, x, -1.0e30)
    Y[row, 0:+128] = x
""",
        ),
        "tmax": Entry(
            "The larger of `a` and `b` per element, broadcasting; both of one element type.",
            _elementwise("ph.tmax(x, y)"),
            "elementwise, broadcasting",
        ),
        "argsel": Entry(
            "`va >= vb ? ia : ib` per element, broadcasting; `va`, `vb` share a float type and "
            "`ia`, `ib` the result's. For folding (value, index) pairs by hand; `rowargmax` is "
            "the row reduction.",
            """\
@ph.kernel
def k(A: ph.tensor[ph.f32][64], B: ph.tensor[ph.f32][64], I: ph.tensor[ph.i32][64]):
    ia: ph.var[ph.tile[ph.i32][64]] = 0
    ib: ph.var[ph.tile[ph.i32][64]] = 1
    I[0:+64] = ph.argsel(A[0:+64], B[0:+64], ia, ib)
""",
            "elementwise, broadcasting",
        ),
        "min": Entry(
            "An operator spelled as a call: scalars, tiles, or one of each; a float `min` "
            "returns the other operand when one is NaN. With `over=` it is a collective: the "
            "minimum across the warp's lanes (`over=ph.ctx.lane`, optionally `width=`) or the "
            "CTA's threads (`over=ph.ctx.thread`).",
            _elementwise("ph.min(x, y)"),
            "elementwise, broadcasting",
        ),
        "max": Entry(
            "As `min`, for the maximum: elementwise, or a collective with `over=`.",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.f32][32]):
    v: ph.let = X[ph.ctx.lane]
    Y[ph.ctx.lane] = ph.max(v, over=ph.ctx.lane)
""",
            "elementwise, or one scalar per thread folded",
        ),
        "f16bits": Entry(
            "The `f16` whose bits are the low 16 of the integer `x`: a half packed in raw "
            "block bytes.",
            """\
@ph.kernel
def k(B: ph.tensor[ph.u8][N], H: ph.tensor[ph.f32][N]):
    lo: ph.let = ph.i32(B[0])
    hi: ph.let = ph.i32(B[1])
    H[0] = ph.f32(ph.f16bits(lo | (hi << 8)))
""",
        ),
        "elem": Entry(
            "Element `i` (a constant) of a thread's run `X[.., k:+n]`, widened as a scalar "
            "load is. The elements of one run share its load.",
            """\
@ph.kernel
@ph.launch(64)
def k(W: ph.tensor[ph.f32][64, 16], Y: ph.tensor[ph.f32][64]):
    row: ph.let = ph.ctx.thread
    Y[row] = ph.elem(W[row, 0:+16], 0) + ph.elem(W[row, 0:+16], 15)
""",
        ),
        "store": Entry(
            "Writes `n` values into a thread's run `Y[.., k:+n]`, each one vector access when "
            "the address allows it. A per-thread store.",
            """\
@ph.kernel
@ph.launch(64)
def k(Y: ph.tensor[ph.f32][64, 4]):
    row: ph.let = ph.ctx.thread
    ph.store(Y[row, 0:+4], 1.0, 2.0, 3.0, 4.0)
""",
        ),
        "word": Entry(
            "Bytes `4t .. 4t + 3` of a thread's run of `i8` (a whole number of words; `t` a "
            "constant, 0 if left out) as the little-endian word they pack, unsigned. The words "
            "of one run share its load.",
            """\
@ph.kernel
@ph.launch(64)
def k(W: ph.tensor[ph.i8][64, 8], Y: ph.tensor[ph.i32][64]):
    row: ph.let = ph.ctx.thread
    Y[row] = ph.word(W[row, 0:+8], 1)
""",
        ),
        "dp4a": Entry(
            "`acc` plus the sum of the products of the four signed bytes of `x` and of `y`; with "
            "`word` it builds packed dot products by hand.",
            """\
@ph.kernel
@ph.launch(64)
def k(A: ph.tensor[ph.i8][64, 4], B: ph.tensor[ph.i8][64, 4], Y: ph.tensor[ph.i32][64]):
    row: ph.let = ph.ctx.thread
    Y[row] = ph.dp4a(ph.word(A[row, 0:+4]), ph.word(B[row, 0:+4]), 0)
""",
        ),
        "byteperm": Entry(
            "A word whose byte `i` is byte `n` of the eight bytes of `x` (0..3) then `y` "
            "(4..7), `n` the nibble `i` of `sel`; unsigned. `prmt` on NVIDIA.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.i32][4], Y: ph.tensor[ph.i32][4]):
    Y[0] = ph.byteperm(X[0], X[1], 0x3210)
""",
        ),
        "popcount": Entry(
            "The number of set bits in the low 32 bits of the integer `x`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.i32][4], Y: ph.tensor[ph.i32][4]):
    Y[0] = ph.popcount(X[0])
""",
        ),
        "rowmax": Entry(
            "The maximum of each row, float or integer. The argument may be an elementwise "
            "expression over tiles and statically shaped slices (`ph.rowmax(ph.abs(x))`), "
            "evaluated inside the reduction. A slice past the end reads 0: mask a ragged row "
            "with `where` first.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][M, 256], Y: ph.tensor[ph.f32][M, 1]):
    row: ph.let = ph.ctx.block.x * 4
    Y[row:+4, :] = ph.rowmax(X[row:+4, :])
""",
            "`[R, C] -> [R, 1]`",
        ),
        "rowsum": Entry(
            "The sum of each row, float or integer (an integer sums in its own type). The "
            "argument may be an elementwise expression, `ph.rowsum(x * x)`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][M, 256], Y: ph.tensor[ph.f32][M, 1]):
    row: ph.let = ph.ctx.block.x * 4
    x: ph.let = X[row:+4, :]
    Y[row:+4, :] = ph.rowsum(x * x)
""",
            "`[R, C] -> [R, 1]`",
        ),
        "rowargmax": Entry(
            "The `i32` column of each row's maximum, the smallest on a tie. Top-k is k rounds "
            "of it, each masking its pick with `where(iota(1) == idx, -1.0e30, t)`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][M, 256], I: ph.tensor[ph.i32][M, 1]):
    row: ph.let = ph.ctx.block.x * 4
    I[row:+4, :] = ph.rowargmax(X[row:+4, :])
""",
            "`[R, C] -> [R, 1]` of `i32`",
        ),
        "cumsum": Entry(
            "`out[i, j]` is the sum of `t[r, j]` for `r <= i`: down the rows. Float only.",
            """\
@ph.kernel
def k(G: ph.tensor[ph.f32][N, 1], B: ph.tensor[ph.f32][N, 1]):
    c: ph.let = ph.ctx.block.x * 32
    g: ph.var[ph.tile[ph.f32][32, 1]] = G[c:+32, :]
    B[c:+32, :] = ph.cumsum(g)
""",
            "`[R, C] -> [R, C]`",
        ),
        "tril": Entry(
            "Keeps `t[i, j]` for `j <= i` and zeros the rest: a causal mask. Float only.",
            """\
@ph.kernel
def k(P: ph.tensor[ph.f32][32, 32], Y: ph.tensor[ph.f32][32, 32]):
    p: ph.var[ph.tile[ph.f32][32, 32]] = P[:, :]
    Y[:, :] = ph.tril(p)
""",
            "`[R, C] -> [R, C]`",
        ),
        "transpose": Entry(
            "`out[i, j] = t[j, i]`.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][32, 64], Y: ph.tensor[ph.f32][64, 32]):
    x: ph.var[ph.tile[ph.f32][32, 64]] = X[:, :]
    Y[:, :] = ph.transpose(x)
""",
            "`[R, C] -> [C, R]`",
        ),
        "flat": Entry(
            "A row-major view of the same bytes; writing through it writes `t`. `t` must be a "
            "declared tile, not a slice.",
            """\
@ph.kernel
def k(X: ph.tensor[ph.f32][4, 16], Y: ph.tensor[ph.f32][1, 64]):
    x: ph.var[ph.tile[ph.f32][4, 16]] = X[:, :]
    Y[:, :] = ph.flat(x)
""",
            "`[R, C] -> [1, R * C]`",
        ),
        "gather": Entry(
            "`out[i] = table[idx[i]]`; `table` is `[n]` or `[1, n]`, the result has its element "
            "type and `idx`'s shape. An index outside the table stops the interpreter.",
            """\
@ph.kernel
def k(T: ph.tensor[ph.f32][1, 256], I: ph.tensor[ph.i32][1, 64], Y: ph.tensor[ph.f32][1, 64]):
    t: ph.var[ph.tile[ph.f32][1, 256]] = T[:, :]
    i: ph.var[ph.tile[ph.i32][1, 64]] = I[:, :]
    Y[:, :] = ph.gather(t, i)
""",
            "`idx.shape`",
        ),
        "dot": Entry(
            "The matrix product `a @ b`. f32 operands run on FMA, or on tensor cores under "
            "`@ph.tensorcore`; f16 and bf16 into f32 on tensor cores; `acc += ph.dot(a, b)` adds "
            "in place. A product feeding only the elementwise statement after it is fused "
            "into it (docs/contractions.md).",
            """\
@ph.kernel
def k(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], C: ph.tensor[ph.f32][M, N]):
    pm: ph.let = ph.ctx.block.x * 32
    pn: ph.let = ph.ctx.block.y * 32
    acc: ph.var[ph.tile[ph.f32][32, 32]] = 0.0
    for kt in range(0, K, 8):
        a: ph.var = A[pm:+32, kt:+8]
        b: ph.var = B[kt:+8, pn:+32]
        acc += ph.dot(a, b)
    C[pm:+32, pn:+32] = acc
""",
            "`[M, K] x [K, N] -> [M, N]`",
        ),
        "dot_t": Entry(
            "`a @ b^T`, the second operand's rows its columns: attention's `q @ k^T`. An `i8` "
            "`dot_t` sums into `i32`, on integer mma, dp4a or scalar code.",
            """\
@ph.kernel
def k(Q: ph.tensor[ph.f32][M, 64], Kt: ph.tensor[ph.f32][N, 64], S: ph.tensor[ph.f32][M, N]):
    pm: ph.let = ph.ctx.block.x * 32
    pn: ph.let = ph.ctx.block.y * 32
    q: ph.var = Q[pm:+32, :]
    k: ph.var = Kt[pn:+32, :]
    S[pm:+32, pn:+32] = ph.dot_t(q, k)
""",
            "`[M, K] x [N, K] -> [M, N]`",
        ),
        "attend": Entry(
            "Each warp's softmax partials of the query rows `q` against its share of the keys "
            "`[start, stop)`: row maxima into `WM`, row sums into `WL`, unnormalised outputs "
            "into `WACC`. Merging the `W` partials is the caller's. `q` a named `[QG, D]` "
            "tile; `K`, `V` named f16 tensor parameters; `WM`, `WL` named `[QG, W]` tiles and "
            "`WACC` a named `[QG * W, D]` tile, with `D % 32 == 0` and `W` the CTA's warps "
            "(docs/attention.md).",
            """\
@ph.kernel
@ph.launch(128)
def k(Q: ph.tensor[ph.f16][H, 128], K: ph.tensor[ph.f16][NK, 128],
      V: ph.tensor[ph.f16][NK, 128], O: ph.tensor[ph.f32][H, 128], n: ph.i32):
    h: ph.let = ph.ctx.block.x * 4
    q: ph.var[ph.tile[ph.f32][4, 128]] = ph.f32(Q[h:+4, :]) * 0.088
    wm: ph.var[ph.tile[ph.f32][4, 4]]
    wl: ph.var[ph.tile[ph.f32][4, 4]]
    wacc: ph.var[ph.tile[ph.f32][16, 128]]
    ph.attend(q, K, V, 0, n, wm, wl, wacc)
    O[h:+4, :] = wacc[0:+4, :]
""",
        ),
        "sum": Entry(
            "With `over=ph.ctx.lane` (and optionally `width=w`, a power of two dividing the "
            "warp) the sum across each w-lane piece of the warp; with `over=ph.ctx.thread` "
            "across the CTA. With no group, `ph.sum(e)` sums within the thread over a run: `e` "
            "an elementwise expression over slices with one `:+` span of a constant length "
            "(docs/collectives.md).",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.f32][32]):
    v: ph.let = X[ph.ctx.lane]
    Y[ph.ctx.lane] = ph.sum(v, over=ph.ctx.lane, width=8)
""",
            "one scalar per thread folded",
        ),
        "any": Entry(
            "Whether the condition holds in any thread of the group (`over=`, `width=` as for "
            "`sum`).",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.i32][32]):
    v: ph.let = X[ph.ctx.lane]
    if ph.any(v < 0.0, over=ph.ctx.lane):
        Y[ph.ctx.lane] = 1
""",
            "one condition per thread folded",
        ),
        "all": Entry(
            "Whether the condition holds in every thread of the group.",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.i32][32]):
    v: ph.let = X[ph.ctx.lane]
    if ph.all(v > 0.0, over=ph.ctx.lane, width=16):
        Y[ph.ctx.lane] = 1
""",
            "one condition per thread folded",
        ),
        "argmax": Entry(
            "The lane (over `ph.ctx.lane`) or thread (over `ph.ctx.thread`) holding the largest "
            "`x`, the smallest index on a tie, as an index.",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.i32][32]):
    v: ph.let = X[ph.ctx.lane]
    Y[ph.ctx.lane] = ph.argmax(v, over=ph.ctx.lane)
""",
            "one scalar per thread folded",
        ),
        "reduce": Entry(
            "The fold of `x` by `f`, a `@ph.fn` of one expression `f(a, b)`, which must be "
            "associative and commutative.",
            """\
@ph.fn
def larger(a, b):
    return ph.max(a, b)


@ph.kernel
@ph.launch(64)
def k(X: ph.tensor[ph.f32][64], Y: ph.tensor[ph.f32][64]):
    v: ph.let = X[ph.ctx.thread]
    Y[ph.ctx.thread] = ph.reduce(v, larger, over=ph.ctx.thread)
""",
            "one scalar per thread folded",
        ),
        "shfl": Entry(
            "`v` from another lane of the warp (or of the `width`-lane piece): lane `from_`, "
            "lane `lane ^ xor`, `lane + down` or `lane - up`; a source past the piece reads "
            "the lane's own `v`. Exactly one of `xor`, `from_`, `down`, `up`. Needs every "
            "lane of the warp.",
            """\
@ph.kernel
@ph.launch(32)
def k(X: ph.tensor[ph.f32][32], Y: ph.tensor[ph.f32][32]):
    v: ph.let = X[ph.ctx.lane]
    Y[ph.ctx.lane] = ph.shfl(v, xor=16)
""",
            "one scalar per thread",
        ),
        "generate": Entry(
            "The value of a statement `@ph.fn`'s last bare expression: the fn's statements are "
            "spliced in where it is called and its last expression is the value.",
            """\
@ph.fn
def three():
    a: ph.let = 1 + 2
    a


@ph.kernel
def k(Y: ph.tensor[ph.i32][4]):
    Y[0] = ph.generate(three)
""",
        ),
        "qdot_t": Entry(
            "Q8_0 by Q8_0: `out[i, j]` is the sum over blocks `b` of 32 of "
            "`a_scales[i, b] * w_scales[j, b] * sum(a[i, k] * w[j, k])`. Scales are "
            "`[M, K/32]` and `[N, K/32]`; K may be dynamic.",
            "",
            "`[M, K] i8 x [N, K] i8 -> [M, N] f32`",
        ),
        "qmma_t": Entry(
            "The same sum as `qdot_t` on integer tensor cores; M and N multiples of 8, and "
            "`w_scales` is `[K/32, N]`, transposed relative to `qdot_t`.",
            "",
            "`[M, K] i8 x [N, K] i8 -> [M, N] f32`",
        ),
        "q50_qdot_t": Entry(
            "`qdot_t` against a Q5_0 weight held as its blocks without their f16 scale: per 32 "
            "elements the `qh` word, then 16 bytes of two nibbles; each element is `q - 16`.",
            "",
            "`[M, K] i8 x [N, K/32 * 20] i8 -> [M, N] f32`",
        ),
        "q50_qmma_t": Entry(
            "`qmma_t` against a Q5_0 weight, laid out as for `q50_qdot_t`.",
            "",
            "`[M, K] i8 x [N, K/32 * 20] i8 -> [M, N] f32`",
        ),
        "iq1s_qmma_t": Entry(
            "The iq1s batched projection decoded per warp instead of staged once per CTA.",
            "",
            "`[M, K] i8 x qb -> [M, N] f32`",
        ),
    }
)

for _fmt in names.QGEMM_FORMATS:
    _ENTRIES[f"{_fmt}_qgemm_t"] = Entry(
        f"The prompt projection of {_fmt} weights on integer tensor cores: a fixed 128 x 64 "
        "tile, under `@ph.launch(256)`; `a_scales` is `[128, K/32]`, `qb` the raw block bytes "
        f'in the grouped layout and `d` the `[64, K/256]` f16 scale plane (SPEC.md "Formats").',
        "",
        "`[128, K] i8 x [64, ..] -> [128, 64] f32`",
    )
for _fmt in names.QMMA_STAGED_FORMATS:
    _ENTRIES[f"{_fmt}_qmma_staged_t"] = Entry(
        f"The batched projection of {_fmt} weights on integer tensor cores (sm_75+): M and N "
        "multiples of 8, one patch of 8x8 tiles a warp, the tables staged once per CTA.",
        "",
        "`[M, K] i8 x qb -> [M, N] f32`",
    )
del _fmt, _name, _rule, _call


def _quantized_example(name: str) -> str:
    """A kernel calling the quantized built-in `name` on tensors of the shapes its row asks,
    at K = 256: built from the checker's own table (`phobos.sema.quantized`)."""
    from phobos.sema.quantized import family

    row = family(name)
    k = 256
    m, n = (128, 64) if isinstance(row.result[0], int) else (16, 16)
    env = {"M": m, "N": n, "K": k}

    def extent(symbol) -> int:
        if isinstance(symbol, int):
            return symbol
        if symbol in env:
            return env[symbol]
        head, _, times = symbol.partition("*")
        value = k // int(head.split("/")[1])
        return value * int(times) if times else value

    params = []
    for role, elems, shape in row.operands:
        dims = ", ".join(str(extent(s)) for s in shape)
        params.append((role, f"ph.tensor[ph.{elems[0]}][{dims}]"))
    params += [(t, "ph.tensor[ph.i8][1, 512]") for t in row.tables]
    params.append(("out", f"ph.tensor[ph.f32][{m}, {n}]"))
    launch = f"@ph.launch({row.threads})\n" if row.threads else ""
    signature = ",\n      ".join(f"{p}: {t}" for p, t in params)
    args = ", ".join(p for p, _ in params[:-1])
    return f"@ph.kernel\n{launch}def k({signature}):\n    out[:, :] = ph.{name}({args})\n"


def entry(name: str) -> Entry:
    """The notes and example of the built-in `name`; KeyError for a name without them."""
    found = _ENTRIES[name]
    if not found.example:
        return Entry(found.rules, _quantized_example(name), found.shape)
    return found


def missing() -> list[str]:
    """The built-ins of `names.BUILTINS` this module says nothing about."""
    return sorted(set(names.BUILTINS) - set(_ENTRIES))


# SPEC.md "Attributes": what each does beyond its summary, and a kernel using it.
ATTRIBUTES: dict[str, Entry] = {
    "autotune": Entry(
        "Each keyword is a tile constant. Two values are inclusive bounds searched in doubling "
        "steps (`[16, 256]` is 16, 32, 64, 128, 256); three or more are the list itself. The "
        "first choice is what a launch takes until the kernel is tuned (docs/tuning.md).",
        """\
@ph.kernel
@ph.autotune(BLOCK=[256, 1024])
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    Y[base:+BLOCK] = X[base:+BLOCK] * 2.0
""",
    ),
    "cluster": Entry(
        "Lists super-tile dimensions and their search space for cluster tuning, in the "
        "`@ph.autotune` form.",
        """\
@ph.kernel
@ph.cluster(BR=[1024, 4096])
@ph.autotune(BR=[32, 64])
def k(X: ph.tensor[ph.f32][N, 64], Y: ph.tensor[ph.f32][N, 64]):
    row: ph.let = ph.ctx.block.x * BR
    Y[row:+BR, :] = X[row:+BR, :]
""",
    ),
    "aligned": Entry(
        "Promises that the dimension is a whole number of tiles (a literal or an "
        "`@ph.autotune` name): its masking goes and its rows take 16-byte vectors. A launch "
        "that breaks the promise traps at entry instead of writing past the tensor.",
        """\
@ph.kernel
@ph.autotune(BLOCK=[256])
@ph.aligned(N="BLOCK")
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    Y[base:+BLOCK] = X[base:+BLOCK]
""",
    ),
    "launch": Entry(
        "`@ph.launch(threads, min_blocks, max_regs)`: the CTA size (default 256; `.maxntid`), "
        "the CTAs an SM asked of ptxas (1..32, `.minnctapersm`) and a register cap (16..255, "
        "`.maxnreg`). Any of them may name an `@ph.autotune` constant, as a string: "
        '`@ph.launch("T")` tunes the CTA size.',
        """\
@ph.kernel
@ph.autotune(T=[128, 256, 512])
@ph.launch("T")
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 1024
    Y[base:+1024] = X[base:+1024]
""",
    ),
    "tensorcore": Entry(
        "`dot` and `dot_t` run on tensor cores (mma.sync with ldmatrix, or wgmma on sm_90a), "
        "f32 operands rounded to f16; a product whose tiles are not multiples of 16 stays on "
        'FMA, and `PHOBOS_LOG=debug` says why. `@ph.tensorcore("wmma")` forces WMMA.',
        """\
@ph.kernel
@ph.tensorcore
@ph.launch(128)
def k(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f32][M, N]):
    pm: ph.let = ph.ctx.block.x * 64
    pn: ph.let = ph.ctx.block.y * 64
    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0
    for kt in range(0, K, 32):
        a: ph.var = A[pm:+64, kt:+32]
        b: ph.var = B[kt:+32, pn:+64]
        acc += ph.dot(a, b)
    C[pm:+64, pn:+64] = acc
""",
    ),
    "registers": Entry(
        "Keeps each named `var` tile in registers, every thread holding the elements "
        "`tid, tid + threads, ..` (at most 64). An update reading the tile only at the "
        "element it writes stays there; anything else reads it through a shared tile.",
        """\
@ph.kernel
@ph.registers("acc")
def k(X: ph.tensor[ph.f32][N, 256], Y: ph.tensor[ph.f32][1, 256]):
    acc: ph.var[ph.tile[ph.f32][1, 256]] = 0.0
    for r in range(0, N):
        acc += X[r, :]
    Y[:, :] = acc
""",
    ),
    "pipeline": Entry(
        "Staging through a ring of stages is on by default for every loop that can take it; "
        "the attribute asserts it, so compilation fails if nothing is pipelined. "
        '`@ph.pipeline(stages="S")` sets the ring\'s depth from a constant.',
        """\
@ph.kernel
@ph.pipeline
def k(A: ph.tensor[ph.f32][M, K], B: ph.tensor[ph.f32][K, N], C: ph.tensor[ph.f32][M, N]):
    pm: ph.let = ph.ctx.block.x * 64
    pn: ph.let = ph.ctx.block.y * 64
    acc: ph.var[ph.tile[ph.f32][64, 64]] = 0.0
    for kt in range(0, K, 16):
        a: ph.var = A[pm:+64, kt:+16]
        b: ph.var = B[kt:+16, pn:+64]
        acc += ph.dot(a, b)
    C[pm:+64, pn:+64] = acc
""",
    ),
    "padstage": Entry(
        "Pads `var t = <tensor slice>` staging tiles whose row pitch is a multiple of 128 "
        "bytes, against bank conflicts; other tiles are unchanged.",
        """\
@ph.kernel
@ph.padstage
def k(X: ph.tensor[ph.f32][64, 32], Y: ph.tensor[ph.f32][32, 64]):
    x: ph.var = X[:, :]
    Y[:, :] = ph.transpose(x)
""",
    ),
    "dynshared": Entry(
        "The kernel's tiles live in dynamic shared memory, past the static 48 KB up to the "
        "chip's per-block limit; the launcher supplies the size.",
        """\
@ph.kernel
@ph.dynshared
def k(X: ph.tensor[ph.f32][128, 128], Y: ph.tensor[ph.f32][128, 128]):
    x: ph.var = X[:, :]
    Y[:, :] = ph.transpose(x)
""",
    ),
    "persistent": Entry(
        "The grid must be co-resident, as `grid_barrier` needs: the launcher sizes it from "
        "the occupancy query, and the kernel is launched as `k[()]`.",
        """\
@ph.kernel
@ph.persistent
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    for b in range(ph.ctx.block.x, N // 256, ph.ctx.blocks.x):
        Y[b * 256:+256] = X[b * 256:+256]
""",
    ),
}

# SPEC.md "Types": what each scalar type is.
SCALARS: dict[str, str] = {
    "f16": "IEEE binary16. Float literals are `f32`, rounded to `f16` on store.",
    "bf16": "8-bit exponent, 7-bit mantissa; native conversion from sm_80, emulated below.",
    "f32": "IEEE binary32; the type of a float literal.",
    "f64": "IEEE binary64.",
    "i8": "Signed byte; loads sign-extend.",
    "i32": "Signed 32-bit integer.",
    "i64": "Signed 64-bit integer.",
    "u8": "Unsigned storage; every read zero-extends. Convert before arithmetic.",
    "u16": "Unsigned storage; every read zero-extends. Convert before arithmetic.",
    "u32": "Unsigned storage; every read zero-extends (above 2^31 needs 64-bit indices).",
    "bool": "A comparison's result; no conversion to or from it.",
}

# The structure names: spelled only in Python, each a construct of the `.ph` grammar.
STRUCTURE: dict[str, tuple[str, str, str]] = {
    # name: (Python, Phobos, what it means)
    "kernel": ("@ph.kernel / @ph.kernel(key=(..))", "kernel k(..) { .. }",
               "A kernel; `key` names the extents the autotuner keeps a winner for (kernel.md)."),
    "fn": ("@ph.fn / @ph.fn(uses=(..))", "fn f(a, b) = e, fn f(a, b) { .. }",
           "A function inlined where it is called; `uses` lists the names it reads from its caller."),
    "let": ("x: ph.let = e, x: ph.let[T] = e", "let x = e, let x: T = e",
            "An immutable binding; a tensor slice bound with `let` is a view."),
    "var": ("x: ph.var = e, t: ph.var[T] = e, t: ph.var[T]", "var x = e, var t: T = e, var t: T",
            "A mutable binding; `var t = A[..]` copies the slice into a tile."),
    "tensor": ("ph.tensor[T][dims]", "tensor<T>[dims]",
               "Global memory; kernel parameters only. Dims are literals or names bound at launch."),
    "tile": ("ph.tile[T][dims]", "tile<T>[dims]",
             "A block of shared memory (or registers) owned by the CTA."),
    "unroll": ("for i in ph.unroll(n, range(lo, hi)):", "for<unroll n> i in range(lo, hi) { }",
               "The loop's body built n times a turn; n a constant or an `@ph.autotune` name."),
    "ctx": ("ph.ctx.block.x, ph.ctx.lane, ..", "ctx.block.x, ctx.lane, ..",
            "The launch's coordinates; read only through its fields."),
}  # fmt: skip

STRUCTURE_EXAMPLE = """\
@ph.fn
def axpy(a, x, y):
    return a * x + y


@ph.kernel
@ph.autotune(U=[1, 2, 4])
def k(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 1024
    t: ph.var[ph.tile[ph.f32][256]] = 0.0
    for i in ph.unroll(U, range(0, 1024, 256)):
        t = axpy(2.0, X[base + i:+256], Y[base + i:+256])
        Y[base + i:+256] = t
"""

# SPEC.md "Indexing and synchronization": what each ctx field is.
CTX: dict[str, str] = {
    "block": "The CTA's index along a grid axis (uniform).",
    "blocks": "The grid's extent along an axis (uniform).",
    "threads": "The CTA's thread count, from `@ph.launch`; a compile-time constant.",
    "warps": "`ctx.threads / ctx.lanes`; a compile-time constant.",
    "lanes": "Lanes in a warp, 32 on NVIDIA; a compile-time constant.",
    "thread": "The thread's index in the CTA; differs between lanes.",
    "warp": "`ctx.thread / ctx.lanes`; the same in a warp, differs between warps.",
    "lane": "The thread's index in its warp; differs between lanes.",
}

CONVERSION_EXAMPLE = """\
@ph.kernel
def k(X: ph.tensor[ph.f16][N], Y: ph.tensor[ph.i32][N]):
    base: ph.let = ph.ctx.block.x * 256
    Y[base:+256] = ph.i32(ph.f32(X[base:+256]) * 4.0)
"""
