"""Hand-written lir kernels of the tensor-core ops, their inputs and their numpy
references: run by the threads interpreter (tests/interp/test_threads_tensor.py) and, the
same text, on the card (tests/gpu/test_fragments_gpu.py).

Each `Case` is one kernel: 2 CTAs of 2 warps, every warp computing its own tile (tile
`2 ctaid + warp`) from operands it stages into shared memory with cp.async, then
ldmatrix (plain or `.trans`) or direct loads, mma, and stores to global memory. Each
kernel spells its lanes' addresses from the PTX ISA's fragment pictures itself; the
references are numpy matmuls in float64 of the inputs as the card sees them (f16 and
bf16 values rounded first), so a wrong fragment table shows as a wrong product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

TILES = 4  # 2 CTAs x 2 warps
GRID = 2

# ---------------------------------------------------------------------------
# Inputs: random, never zero


def nonzero(rng, shape, low=0.25, high=2.0):
    """Floats of magnitude in [low, high) of either sign: no element is zero."""
    sign = rng.choice([-1.0, 1.0], size=shape)
    return sign * rng.uniform(low, high, size=shape)


def f16(rng, shape):
    """(bits as uint16, values as float64) of f16 inputs."""
    h = nonzero(rng, shape).astype(np.float16)
    return h.view(np.uint16), h.astype(np.float64)


def bf16_bits(x):
    """f32 values rounded to bf16, to nearest even, as the upper halves' bits."""
    word = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((word + 0x7FFF + ((word >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_round(x):
    """f32 values rounded to bf16, as float64."""
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bf16(rng, shape):
    """(bits as uint16, values as float64) of bf16 inputs."""
    x = nonzero(rng, shape).astype(np.float32)
    return bf16_bits(x), bf16_round(x)


def s8(rng, shape):
    """(int8, values as int64) of s8 inputs, -128 to 127 but 0."""
    values = rng.choice(np.r_[-128:0, 1:128], size=shape).astype(np.int8)
    return values, values.astype(np.int64)


ELEMENTS = {"f16": f16, "bf16": bf16, "s8": s8}


def wrap(x):
    """int64 values wrapped into s32, as an integer mma's sum without `.satfinite`."""
    return (np.asarray(x, np.int64) + 2**31) % 2**32 - 2**31


@dataclass
class Case:
    """A kernel and what it computes: `inputs(rng)` gives the arrays placed in global
    memory, by parameter name, and the float64 (or int64) references of the outputs;
    `outputs` are the parameters the kernel writes; `tolerance(name, card)` the
    (rtol, atol) an output is compared at (None: exactly)."""

    name: str
    text: str
    inputs: Callable
    outputs: tuple[str, ...]
    tolerance: Callable = lambda name, card: None
    threads: int = 64
    grid: int = GRID

    def kernel(self):
        k = parse_kernel(self.text)
        verify(k)
        return k


def f32_tolerance(scale: float):
    """The card sums in at least single precision, in an unspecified order; the
    interpreter rounds the exact sum once."""

    def tolerance(name, card):
        return (2e-6, (5e-6 if card else 2e-7) * scale)

    return tolerance


# ---------------------------------------------------------------------------
# mma.m16n8k16 and m16n8k32: A and B staged into shared memory by cp.async (A's 512
# bytes at the warp's 768, 16 a lane; B's 256 after them, 8 a lane), ldmatrix'd,
# C loaded straight into its fragment, D stored from it.

MMA = """kernel {name}(%A: u64, %B: u64, %C: u64, %D: u64) threads=64 smem=1536 {{
  shared tiles @0 size=1536 align=16
  reg %t: u32
  reg %lane: u32
  reg %w: u32
  reg %tile: u32
  reg %g: u32
  reg %q: u32
  reg %s: u32
  reg %o: u32
  reg %x: u32
  reg %go: u64
  reg %ga: u64
  reg %a0: b32
  reg %a1: b32
  reg %a2: b32
  reg %a3: b32
  reg %b0: b32
  reg %b1: b32
  reg %c0: {acc}
  reg %c1: {acc}
  reg %c2: {acc}
  reg %c3: {acc}
  %t = sreg.tid.x
  %lane = and.b32 %t, 31:u32
  %w = shr.u32 %t, 5:u32
  %x = sreg.ctaid.x
  %tile = mad.u32 %x, 2:u32, %w
  %g = shr.u32 %lane, 2:u32
  %q = and.b32 %lane, 3:u32
  %s = mul.u32 %w, 768:u32
  // stage A: the lane's 16 bytes of the tile's 512
  %o = mul.u32 %lane, 16:u32
  %x = add.u32 %s, %o
  %go = mul_wide.u32 %tile, 512:u32
  %ga = add.u64 %A, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=16]
  // stage B: the lane's 8 bytes of the tile's 256
  %o = mul.u32 %lane, 8:u32
  %x = add.u32 %s, %o
  %x = add.u32 %x, 512:u32
  %go = mul_wide.u32 %tile, 256:u32
  %ga = add.u64 %B, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=8]
  cp_async_commit
  cp_async_wait  [pending=0]
  bar 0:u32
{a_fragment}{b_fragment}  // C and D: c0, c1 at row g, columns 2q and 2q + 1 (byte 32g + 8q); c2, c3 eight rows on
  %x = mul.u32 %q, 8:u32
  %x = mad.u32 %g, 32:u32, %x
  %go = mul_wide.u32 %tile, 512:u32
  %ga = cvt.u64.u32 %x
  %go = add.u64 %go, %ga
  %ga = add.u64 %C, %go
  %c0, %c1 = ld.global.v2.{acc} %ga
  %c2, %c3 = ld.global.v2.{acc} %ga  [offset=256]
  %c0, %c1, %c2, %c3 = mma.{acc}.{ab} %a0, %a1, %a2, %a3, %b0, %b1, %c0, %c1, %c2, %c3  [shape={shape}]
  %ga = add.u64 %D, %go
  st.global.v2.{acc} %ga, %c0, %c1
  st.global.v2.{acc} %ga, %c2, %c3  [offset=256]
}}"""

# A, 16 rows of 32 bytes (16 x 16 f16, or 16 x 32 s8), row-major: ldmatrix.x4, lane l
# pointing at row l % 16, byte 16 (l / 16) -- matrices 0-3 are the top-left, bottom-left,
# top-right and bottom-right 8 x 16-byte blocks, a0-a3's registers.
A_ROWS = """  // A, row-major: lane l points at row l % 16, byte 16 (l / 16)
  %x = and.b32 %lane, 15:u32
  %x = mul.u32 %x, 32:u32
  %o = shr.u32 %lane, 4:u32
  %o = mad.u32 %o, 16:u32, %x
  %x = add.u32 %s, %o
  %a0, %a1, %a2, %a3 = ldmatrix.shared.b16 %x
"""

# A stored transposed (16 x 16 f16, column-major: row k holds A[:, k]): ldmatrix.x4.trans,
# lane l pointing at k = l % 8 + 8 (l / 16), m = 8 ((l / 8) % 2).
A_TRANS = """  // A, column-major: lane l points at row k = l % 8 + 8 (l / 16), byte 16 ((l / 8) % 2)
  %x = and.b32 %lane, 7:u32
  %x = mul.u32 %x, 32:u32
  %o = shr.u32 %lane, 4:u32
  %o = mad.u32 %o, 256:u32, %x
  %x = shr.u32 %lane, 3:u32
  %x = and.b32 %x, 1:u32
  %o = mad.u32 %x, 16:u32, %o
  %x = add.u32 %s, %o
  %a0, %a1, %a2, %a3 = ldmatrix.shared.b16 %x  [trans=1]
"""

# B (16 x 8 f16) row-major, k by n: ldmatrix.x2.trans, lane l (0-15) pointing at row k = l.
B_TRANS = """  // B, row-major (k x n): lane l points at row k = l % 16
  %x = and.b32 %lane, 15:u32
  %x = mad.u32 %x, 16:u32, %s
  %x = add.u32 %x, 512:u32
  %b0, %b1 = ldmatrix.shared.b16 %x  [trans=1]
"""

# B stored transposed, n by k (8 rows of 32 bytes: 8 x 16 f16 or 8 x 32 s8):
# ldmatrix.x2, lane l (0-15) pointing at row n = l % 8, byte 16 (l / 8).
B_ROWS = """  // B, column-major (n x k): lane l points at row n = l % 8, byte 16 ((l / 8) % 2)
  %x = and.b32 %lane, 7:u32
  %x = mul.u32 %x, 32:u32
  %o = shr.u32 %lane, 3:u32
  %o = and.b32 %o, 1:u32
  %o = mad.u32 %o, 16:u32, %x
  %x = add.u32 %s, %o
  %x = add.u32 %x, 512:u32
  %b0, %b1 = ldmatrix.shared.b16 %x
"""


def mma_text(name, a_fragment, b_fragment, ab, acc="f32", shape="m16n8k16") -> str:
    return MMA.format(
        name=name, a_fragment=a_fragment, b_fragment=b_fragment, ab=ab, acc=acc, shape=shape
    )


def float_mma(ab: str, a_trans: bool) -> Case:
    """m16n8k16 of f16 or bf16 into f32: A row-major and B k x n (ldmatrix, ldmatrix.trans),
    or A column-major and B n x k (ldmatrix.trans, ldmatrix)."""
    name = f"mma_{ab}_{'col' if a_trans else 'row'}"
    text = mma_text(name, A_TRANS if a_trans else A_ROWS, B_ROWS if a_trans else B_TRANS, ab)

    def inputs(rng):
        a_bits, a = ELEMENTS[ab](rng, (TILES, 16, 16))
        b_bits, b = ELEMENTS[ab](rng, (TILES, 16, 8))
        c = nonzero(rng, (TILES, 16, 8)).astype(np.float32)
        if a_trans:  # stored column-major: A's transpose, row-major
            a_bits, b_bits = a_bits.transpose(0, 2, 1), b_bits.transpose(0, 2, 1)
        arrays = {
            "A": np.ascontiguousarray(a_bits),
            "B": np.ascontiguousarray(b_bits),
            "C": c,
            "D": np.full((TILES, 16, 8), np.nan, np.float32),
        }
        return arrays, {"D": a @ b + c}

    return Case(name, text, inputs, ("D",), f32_tolerance(16 * 4.0 + 2))


def s8_mma() -> Case:
    """m16n8k32 of s8 into s32: A row-major (ldmatrix of bytes), B n x k (ldmatrix)."""
    text = mma_text("mma_s8", A_ROWS, B_ROWS, "s8", "s32", "m16n8k32")

    def inputs(rng):
        a8, a = s8(rng, (TILES, 16, 32))
        b8, b = s8(rng, (TILES, 32, 8))
        c = rng.integers(-(2**20), 2**20, (TILES, 16, 8)).astype(np.int32)
        arrays = {
            "A": a8,
            "B": np.ascontiguousarray(b8.transpose(0, 2, 1)),
            "C": c,
            "D": np.full((TILES, 16, 8), -7, np.int32),
        }
        return arrays, {"D": a @ b + c}

    return Case("mma_s8", text, inputs, ("D",))


# ---------------------------------------------------------------------------
# mma.m16n8k16 with f16 accumulators, A built in registers: each lane loads its own
# elements of A as f32 (a0, a1 at row g, columns 2q, 2q + 1; a2, a3 eight rows on;
# a4-a7 eight columns on) and rounds each pair into one word with cvt_x2. B is
# ldmatrix.trans'd; C's f16 pairs are loaded as words, D's unpacked and stored one by one.

F16_ACC = """kernel mma_f16_acc(%A: u64, %B: u64, %C: u64, %D: u64) threads=64 smem=512 {
  shared tiles @0 size=512 align=16
  reg %t: u32
  reg %lane: u32
  reg %w: u32
  reg %tile: u32
  reg %g: u32
  reg %q: u32
  reg %s: u32
  reg %o: u32
  reg %x: u32
  reg %go: u64
  reg %ga: u64
  reg %f0: f32
  reg %f1: f32
  reg %a0: b32
  reg %a1: b32
  reg %a2: b32
  reg %a3: b32
  reg %b0: b32
  reg %b1: b32
  reg %h0: b32
  reg %h1: b32
  reg %lo: f16
  reg %hi: f16
  %t = sreg.tid.x
  %lane = and.b32 %t, 31:u32
  %w = shr.u32 %t, 5:u32
  %x = sreg.ctaid.x
  %tile = mad.u32 %x, 2:u32, %w
  %g = shr.u32 %lane, 2:u32
  %q = and.b32 %lane, 3:u32
  %s = mul.u32 %w, 256:u32
  // stage B (16 x 8 f16, k x n): the lane's 8 bytes
  %o = mul.u32 %lane, 8:u32
  %x = add.u32 %s, %o
  %go = mul_wide.u32 %tile, 256:u32
  %ga = add.u64 %B, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=8]
  cp_async_commit
  // A (16 x 16 f32 in memory): the pair at row g, column 2q is at byte 64g + 8q
  %x = mul.u32 %q, 8:u32
  %x = mad.u32 %g, 64:u32, %x
  %go = mul_wide.u32 %tile, 1024:u32
  %ga = cvt.u64.u32 %x
  %ga = add.u64 %ga, %go
  %ga = add.u64 %A, %ga
  %f0, %f1 = ld.global.v2.f32 %ga
  %a0 = cvt_x2.rn.f16.f32 %f0, %f1
  %f0, %f1 = ld.global.v2.f32 %ga  [offset=512]
  %a1 = cvt_x2.rn.f16.f32 %f0, %f1
  %f0, %f1 = ld.global.v2.f32 %ga  [offset=32]
  %a2 = cvt_x2.rn.f16.f32 %f0, %f1
  %f0, %f1 = ld.global.v2.f32 %ga  [offset=544]
  %a3 = cvt_x2.rn.f16.f32 %f0, %f1
  cp_async_wait  [pending=0]
  bar 0:u32
  // B, row-major (k x n): lane l points at row k = l % 16
  %x = and.b32 %lane, 15:u32
  %x = mad.u32 %x, 16:u32, %s
  %b0, %b1 = ldmatrix.shared.b16 %x  [trans=1]
  // C and D (16 x 8 f16): c0 and c1 are the word at byte 16g + 4q, c2 and c3 128 on
  %x = mul.u32 %q, 4:u32
  %x = mad.u32 %g, 16:u32, %x
  %go = mul_wide.u32 %tile, 256:u32
  %ga = cvt.u64.u32 %x
  %go = add.u64 %go, %ga
  %ga = add.u64 %C, %go
  %h0 = ld.global.b32 %ga
  %h1 = ld.global.b32 %ga  [offset=128]
  %h0, %h1 = mma.f16.f16 %a0, %a1, %a2, %a3, %b0, %b1, %h0, %h1  [shape=m16n8k16]
  %ga = add.u64 %D, %go
  %lo, %hi = mov.b32 %h0
  st.global.f16 %ga, %lo
  st.global.f16 %ga, %hi  [offset=2]
  %lo, %hi = mov.b32 %h1
  st.global.f16 %ga, %lo  [offset=128]
  st.global.f16 %ga, %hi  [offset=130]
}"""


def f16_accumulator() -> Case:
    def inputs(rng):
        a32 = nonzero(rng, (TILES, 16, 16), 0.25, 1.0).astype(np.float32)
        b_bits, b = f16(rng, (TILES, 16, 8))
        c_bits, c = f16(rng, (TILES, 16, 8))
        a = a32.astype(np.float16).astype(np.float64)  # as cvt_x2 rounds it, to nearest
        arrays = {"A": a32, "B": b_bits, "C": c_bits, "D": np.zeros((TILES, 16, 8), np.uint16)}
        return arrays, {"D": a @ b + c}

    def tolerance(name, card):
        # f16 results; the card may accumulate in half precision (PTX: "at least").
        return (1e-2, 0.25) if card else (2e-3, 2e-3 * 34)

    return Case("mma_f16_acc", F16_ACC, inputs, ("D",), tolerance)


# ---------------------------------------------------------------------------
# mma.m8n8k16, s8: A loaded byte by byte (row g, columns 4q to 4q + 3) and packed with
# prmt; B (n x k, 8 rows of 16 bytes) staged with cp.async and ldmatrix.x1'd (lanes 0-7
# give the addresses).

S8_SMALL = """kernel mma_s8_small(%A: u64, %B: u64, %C: u64, %D: u64) threads=64 smem=256 {
  shared tiles @0 size=256 align=16
  reg %t: u32
  reg %lane: u32
  reg %w: u32
  reg %tile: u32
  reg %g: u32
  reg %q: u32
  reg %s: u32
  reg %o: u32
  reg %x: u32
  reg %go: u64
  reg %ga: u64
  reg %e0: s8
  reg %e1: s8
  reg %e2: s8
  reg %e3: s8
  reg %u0: b32
  reg %u1: b32
  reg %u2: b32
  reg %u3: b32
  reg %a: b32
  reg %b: b32
  reg %c0: s32
  reg %c1: s32
  %t = sreg.tid.x
  %lane = and.b32 %t, 31:u32
  %w = shr.u32 %t, 5:u32
  %x = sreg.ctaid.x
  %tile = mad.u32 %x, 2:u32, %w
  %g = shr.u32 %lane, 2:u32
  %q = and.b32 %lane, 3:u32
  %s = mul.u32 %w, 128:u32
  // stage B: the lane's 4 bytes of the tile's 128
  %o = mul.u32 %lane, 4:u32
  %x = add.u32 %s, %o
  %go = mul_wide.u32 %tile, 128:u32
  %ga = add.u64 %B, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=4]
  cp_async_commit
  // A (8 x 16 s8): the lane's four bytes at row g, column 4q, one at a time
  %x = mul.u32 %q, 4:u32
  %x = mad.u32 %g, 16:u32, %x
  %go = mul_wide.u32 %tile, 128:u32
  %ga = cvt.u64.u32 %x
  %ga = add.u64 %ga, %go
  %ga = add.u64 %A, %ga
  %e0 = ld.global.s8 %ga
  %e1 = ld.global.s8 %ga  [offset=1]
  %e2 = ld.global.s8 %ga  [offset=2]
  %e3 = ld.global.s8 %ga  [offset=3]
  %u0 = cvt.b32.s8 %e0
  %u1 = cvt.b32.s8 %e1
  %u2 = cvt.b32.s8 %e2
  %u3 = cvt.b32.s8 %e3
  // bytes 0 of u0 and u1 (selector 0x40), of u2 and u3, then both pairs (0x5410): a0 lowest
  %u0 = prmt.b32 %u0, %u1, 64:b32
  %u2 = prmt.b32 %u2, %u3, 64:b32
  %a = prmt.b32 %u0, %u2, 21520:b32
  cp_async_wait  [pending=0]
  bar 0:u32
  // B (n x k): lane l points at row n = l % 8
  %x = and.b32 %lane, 7:u32
  %x = mad.u32 %x, 16:u32, %s
  %b = ldmatrix.shared.b16 %x
  // C and D (8 x 8 s32): c0, c1 at row g, columns 2q and 2q + 1 (byte 32g + 8q)
  %x = mul.u32 %q, 8:u32
  %x = mad.u32 %g, 32:u32, %x
  %go = mul_wide.u32 %tile, 256:u32
  %ga = cvt.u64.u32 %x
  %go = add.u64 %go, %ga
  %ga = add.u64 %C, %go
  %c0, %c1 = ld.global.v2.s32 %ga
  %c0, %c1 = mma.s32.s8 %a, %b, %c0, %c1  [shape=m8n8k16]
  %ga = add.u64 %D, %go
  st.global.v2.s32 %ga, %c0, %c1
}"""


def s8_small() -> Case:
    def inputs(rng):
        a8, a = s8(rng, (TILES, 8, 16))
        b8, b = s8(rng, (TILES, 16, 8))
        # C over all of s32, its first rows at the ends, so that sums wrap (mma without
        # .satfinite wraps)
        c = rng.integers(-(2**31), 2**31, (TILES, 8, 8)).astype(np.int32)
        c[:, 0], c[:, 1] = 2**31 - 1, -(2**31)
        arrays = {
            "A": a8,
            "B": np.ascontiguousarray(b8.transpose(0, 2, 1)),
            "C": c,
            "D": np.zeros((TILES, 8, 8), np.int32),
        }
        return arrays, {"D": wrap(a @ b + c)}

    return Case("mma_s8_small", S8_SMALL, inputs, ("D",))


# ---------------------------------------------------------------------------
# WMMA m16n16k16, f16 into f32: A and B staged (16 bytes a lane each) and wmma_load'ed
# from shared memory, C from global memory with an explicit stride; D stored twice: into
# shared memory, row-major, then copied out by the lanes (32 bytes each), and straight to
# global memory column-major with a stride of 24 (`E`, 16 columns of 24 floats).

WMMA = """kernel wmma_{alayout}_{blayout}(%A: u64, %B: u64, %C: u64, %D: u64, %E: u64) threads=64 smem=4096 {{
  shared tiles @0 size=4096 align=32
  reg %t: u32
  reg %lane: u32
  reg %w: u32
  reg %tile: u32
  reg %s: u32
  reg %o: u32
  reg %x: u32
  reg %ld: u32
  reg %go: u64
  reg %ga: u64
  reg %v0: u32
  reg %v1: u32
  reg %v2: u32
  reg %v3: u32
{regs}  %t = sreg.tid.x
  %lane = and.b32 %t, 31:u32
  %w = shr.u32 %t, 5:u32
  %x = sreg.ctaid.x
  %tile = mad.u32 %x, 2:u32, %w
  %s = mul.u32 %w, 2048:u32
  // stage A and B: the lane's 16 bytes of each tile's 512
  %o = mul.u32 %lane, 16:u32
  %x = add.u32 %s, %o
  %go = mul_wide.u32 %tile, 512:u32
  %ga = add.u64 %A, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=16]
  %x = add.u32 %x, 512:u32
  %go = mul_wide.u32 %tile, 512:u32
  %ga = add.u64 %B, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  cp_async %x, %ga  [size=16]
  cp_async_commit
  cp_async_wait  [pending=0]
  bar 0:u32
  {a} = wmma_load.shared.f16 %s  [layout={alayout}, matrix=a, shape=m16n16k16]
  %x = add.u32 %s, 512:u32
  {b} = wmma_load.shared.f16 %x  [layout={blayout}, matrix=b, shape=m16n16k16]
  %go = mul_wide.u32 %tile, 1024:u32
  %ga = add.u64 %C, %go
  {c} = wmma_load.global.f32 %ga, 16:u32  [layout=row, matrix=c, shape=m16n16k16]
  {c} = wmma_mma.f32.f16 {a}, {b}, {c}  [alayout={alayout}, blayout={blayout}, shape=m16n16k16]
  // D into shared memory, row-major, then each lane's 32 bytes of it out
  %x = add.u32 %s, 1024:u32
  wmma_store.shared.f32 %x, {c}  [layout=row, shape=m16n16k16]
  bar 0:u32
  %o = mul.u32 %lane, 32:u32
  %x = add.u32 %x, %o
  %v0, %v1, %v2, %v3 = ld.shared.v4.u32 %x
  %ga = add.u64 %D, %go
  %go = cvt.u64.u32 %o
  %ga = add.u64 %ga, %go
  st.global.v4.u32 %ga, %v0, %v1, %v2, %v3
  %v0, %v1, %v2, %v3 = ld.shared.v4.u32 %x  [offset=16]
  st.global.v4.u32 %ga, %v0, %v1, %v2, %v3  [offset=16]
  // D to global memory, column-major, 24 floats a column
  %go = mul_wide.u32 %tile, 1536:u32
  %ga = add.u64 %E, %go
  %ld = mov.u32 24:u32
  wmma_store.global.f32 %ga, {c}, %ld  [layout=col, shape=m16n16k16]
}}"""


def _regs(name: str, type_: str) -> tuple[str, str]:
    names = [f"%{name}{k}" for k in range(8)]
    return "".join(f"  reg {n}: {type_}\n" for n in names), ", ".join(names)


def wmma(alayout: str, blayout: str) -> Case:
    """A row- or column-major, B likewise; C row-major; D row-major and column-major."""
    (ra, a), (rb, b), (rc, c) = _regs("a", "b32"), _regs("b", "b32"), _regs("c", "f32")
    text = WMMA.format(alayout=alayout, blayout=blayout, regs=ra + rb + rc, a=a, b=b, c=c)

    def inputs(rng):
        a_bits, av = f16(rng, (TILES, 16, 16))
        b_bits, bv = f16(rng, (TILES, 16, 16))
        c = nonzero(rng, (TILES, 16, 16)).astype(np.float32)
        if alayout == "col":
            a_bits = a_bits.transpose(0, 2, 1)
        if blayout == "col":
            b_bits = b_bits.transpose(0, 2, 1)
        arrays = {
            "A": np.ascontiguousarray(a_bits),
            "B": np.ascontiguousarray(b_bits),
            "C": c,
            "D": np.full((TILES, 16, 16), np.nan, np.float32),
            "E": np.full((TILES, 16, 24), np.nan, np.float32),
        }
        d = av @ bv + c
        e = np.full((TILES, 16, 24), np.nan)
        e[:, :, :16] = d.transpose(0, 2, 1)  # column-major: column j is row j of E
        return arrays, {"D": d, "E": e}

    return Case(f"wmma_{alayout}_{blayout}", text, inputs, ("D", "E"), f32_tolerance(34 * 4.0))


CASES = [
    float_mma("f16", a_trans=False),
    float_mma("bf16", a_trans=False),
    float_mma("f16", a_trans=True),
    float_mma("bf16", a_trans=True),
    s8_mma(),
    f16_accumulator(),
    s8_small(),
    wmma("row", "col"),
    wmma("col", "row"),
]


# ---------------------------------------------------------------------------
# ldmatrix alone: one warp stages 512 bytes (32 rows of eight 16-bit elements), lane l
# gives the address `rows[l]` (any order: a matrix's rows need not be contiguous), and
# every lane stores its registers to out[l].

LDMATRIX = """kernel ldmatrix_x{n}{suffix}(%X: u64, %rows: u64, %out: u64) threads=32 smem=512 {{
  shared tile @0 size=512 align=16
  reg %t: u32
  reg %o: u32
  reg %x: u32
  reg %go: u64
  reg %ga: u64
  reg %r0: b32
  reg %r1: b32
  reg %r2: b32
  reg %r3: b32
  %t = sreg.tid.x
  %o = mul.u32 %t, 16:u32
  %go = cvt.u64.u32 %o
  %ga = add.u64 %X, %go
  cp_async %o, %ga  [size=16]
  cp_async_commit
  cp_async_wait  [pending=0]
  bar 0:u32
{zeros}  %go = mul_wide.u32 %t, 4:u32
  %ga = add.u64 %rows, %go
  %x = ld.global.u32 %ga
  {dests} = ldmatrix.shared.b16 %x  [trans={trans}]
  %go = mul_wide.u32 %t, 16:u32
  %ga = add.u64 %out, %go
  st.global.v4.u32 %ga, %r0, %r1, %r2, %r3
}}"""


def ldmatrix_by_hand(halves, rows, n: int, trans: bool):
    """What the PTX ISA says lane l receives: in register i, elements (l / 4, 2 (l % 4))
    and (l / 4, 2 (l % 4) + 1) of matrix i, whose row r starts at byte rows[8 i + r]
    (with .trans, elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4)), low first."""
    out = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        for i in range(n):
            r, c = lane // 4, 2 * (lane % 4)
            pairs = [(c, r), (c + 1, r)] if trans else [(r, c), (r, c + 1)]
            lo, hi = (halves[rows[8 * i + row] // 2 + col] for row, col in pairs)
            out[lane, i] = int(lo) | int(hi) << 16
    return out


def ldmatrix_case(n: int, trans: int) -> Case:
    """ldmatrix.x`n` (with `.trans`): registers past the n-th stay 0."""
    text = LDMATRIX.format(
        n=n,
        suffix="_trans" if trans else "",
        trans=trans,
        dests=", ".join(f"%r{k}" for k in range(n)),
        zeros="".join(f"  %r{k} = mov.b32 0:b32\n" for k in range(n, 4)),
    )

    def inputs(rng):
        halves = rng.integers(1, 1 << 16, 256).astype(np.uint16)
        rows = (rng.permutation(32) * 16).astype(np.uint32)
        # Only lanes 0 to 8n - 1 give addresses; the rest repeat theirs, as the ISA suggests.
        rows[8 * n :] = np.resize(rows[: 8 * n], 32 - 8 * n)
        arrays = {"X": halves, "rows": rows, "out": np.zeros((32, 4), np.uint32)}
        return arrays, {"out": ldmatrix_by_hand(halves, rows, n, bool(trans))}

    return Case(text.split("(")[0].split()[1], text, inputs, ("out",), threads=32, grid=1)


LDMATRIX_CASES = [ldmatrix_case(n, trans) for n in (1, 2, 4) for trans in (0, 1)]


def case(name: str) -> Case:
    """The case called `name`."""
    return next(c for c in CASES + LDMATRIX_CASES if c.name == name)


def agree(case: Case, got: dict, want: dict, card: bool = False) -> None:
    """Every output of `case` as its reference says (NaN where it was never written)."""
    for name in case.outputs:
        value = got[name]
        if value.dtype == np.uint16:  # f16 bits
            value = value.view(np.float16)
        tol = case.tolerance(name, card)
        if tol is None:
            np.testing.assert_array_equal(value, want[name], err_msg=f"{case.name}: {name}")
        else:
            rtol, atol = tol
            np.testing.assert_allclose(
                value.astype(np.float64), want[name], rtol=rtol, atol=atol,
                err_msg=f"{case.name}: {name}",
            )  # fmt: skip
