"""Random valid kernels: `.ph` text the checker accepts by construction, for comparing
the tile interpreter with the threads interpreter (and either with the card).

`kernel(seed)` gives one kernel's source, of one of three shapes:

- *elementwise*: `out[base :+ B] = e` over a block's slice of 1 to 3 input tensors and a
  scalar, `e` a random expression of `+ - *`, `min`, `max`, `abs`, `where` and constants;
- *rows*: a row of a `[M, N]` tensor a block, reduced (`rowsum`, `rowmax`)
  into a `[1, 1]` tile and combined back with the row elementwise;
- *loop*: a block's slice accumulated over a loop of `K` turns, each a random
  expression of the turn's slice.

The block size B, the thread count, the extents and the expression are drawn from the
seed alone, so a failing seed is its own reproducer:

    >>> print(kernel(3).splitlines()[0])  # doctest: +ELLIPSIS
    @launch(...)
"""

from __future__ import annotations

import random

BLOCKS = (32, 64, 128, 256, 512)
THREADS = (32, 64, 128, 256)
CONSTANTS = ("0.5", "2.0", "-1.25", "3.0", "0.0", "1.0e-3")


def kernel(seed: int) -> str:
    """The source of random kernel number `seed` (named `k`)."""
    rng = random.Random(seed)
    shape = rng.choice((_elementwise, _rows, _loop))
    return shape(rng)


def _expr(rng: random.Random, leaves: list[str], depth: int) -> str:
    """A random f32 expression over `leaves` (tiles of one shape, or scalars)."""
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(leaves + [rng.choice(CONSTANTS)] if rng.random() < 0.2 else leaves)
    kind = rng.random()
    a = _expr(rng, leaves, depth - 1)
    b = _expr(rng, leaves, depth - 1)
    if kind < 0.5:
        return f"({a} {rng.choice('+-*')} {b})"
    if kind < 0.7:
        return f"{rng.choice(('min', 'max'))}({a}, {b})"
    if kind < 0.8:
        return f"abs({a})"
    c = _expr(rng, leaves, depth - 1)
    return f"where({a} > {b}, {c}, {a})"


def _launch(rng: random.Random, block: int) -> str:
    threads = rng.choice([t for t in THREADS if t <= max(block, 32)])
    return f"@launch({threads})"


def _elementwise(rng: random.Random) -> str:
    block = rng.choice(BLOCKS)
    n = rng.randint(1, 3)
    params = ", ".join(f"x{i}: tensor<f32>[N]" for i in range(n))
    leaves = [f"x{i}[base :+ {block}]" for i in range(n)] + ["a"]
    body = _expr(rng, leaves, rng.randint(1, 4))
    return (
        f"{_launch(rng, block)}\n"
        f"kernel k({params}, out: tensor<f32>[N], a: f32) {{\n"
        f"  let base = ctx.block.x * {block}\n"
        f"  out[base :+ {block}] = {body}\n"
        "}\n"
    )


def _rows(rng: random.Random) -> str:
    block = rng.choice(BLOCKS)
    reduce = rng.choice(("rowsum", "rowmax"))
    inner = _expr(rng, ["x", "a"], rng.randint(1, 3))
    # Past N a row's slice reads 0: kept out of a max by a value no element has.
    fill = {"rowsum": "0.0", "rowmax": "-1.0e30"}[reduce]
    outer = _expr(rng, ["x", "r", "a"], rng.randint(1, 3))
    return (
        f"{_launch(rng, block)}\n"
        "kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], R: tensor<f32>[M, 1], a: f32) {\n"
        "  let row = ctx.block.x\n"
        f"  var x: tile<f32>[1, {block}] = X[row, 0 :+ {block}]\n"
        f"  var v: tile<f32>[1, {block}] = where(iota(1) < N, {inner}, {fill})\n"
        f"  var r: tile<f32>[1, 1] = {reduce}(v)\n"
        "  R[row, 0 :+ 1] = r\n"
        f"  Y[row, 0 :+ {block}] = {outer}\n"
        "}\n"
    )


def _loop(rng: random.Random) -> str:
    block = rng.choice(BLOCKS[:4])
    step = rng.choice((1, 2))
    turn = _expr(rng, [f"X[j, base :+ {block}]", "acc", "a"], rng.randint(1, 3))
    return (
        f"{_launch(rng, block)}\n"
        "kernel k(X: tensor<f32>[K, N], out: tensor<f32>[1, N], a: f32) {\n"
        f"  let base = ctx.block.x * {block}\n"
        f"  var acc: tile<f32>[1, {block}] = X[0, base :+ {block}]\n"
        f"  for j in range(1, K, {step}) {{\n"
        f"    acc = {turn}\n"
        "  }\n"
        f"  out[0, base :+ {block}] = acc\n"
        "}\n"
    )
