"""A hand-written lir kernel of one TMA load, its inputs and a numpy reference: run by the
threads interpreter (tests/interp/test_threads_tma.py) and, the same text, on the card
(tests/gpu/test_tma_gpu.py).

One CTA of 128 threads: thread 0 initialises an mbarrier, expects the box's bytes and
issues `tma_load` of the box at column `X`, row `Y` of a [R, C] tensor through a tensor
map; every thread waits on the mbarrier's first phase, then copies the shared bytes it
owns (16 a thread) to `out` verbatim. The reference builds the box as the PTX ISA says
a tile-mode copy does, from the tensor with zeros past its edges, and places its 16-byte
chunks by the swizzle mode's XOR of address bits, written here from the ISA's table and
not from the interpreter's code; so a wrong box, fill or swizzle shows as a wrong image.
"""

from __future__ import annotations

import numpy as np

from phobos.lower import lir
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

THREADS = 128
TEXT = """kernel tma(%A: u64, %out: u64, %X: s32, %Y: s32, %R: s32, %C: s32) threads=128 smem=SMEM {
  shared box @0 size=BYTES align=1024
  shared bars @BYTES size=16 align=8
  tmap A_tmap = A ELEM [R, C] box=[BR, BC] swizzle=MODE
  reg %t: u32
  reg %p: pred
  reg %b: u32
  reg %d: u32
  reg %m: u64
  reg %ok: pred
  reg %a: u32
  reg %j: u32
  reg %v0: u32
  reg %v1: u32
  reg %v2: u32
  reg %v3: u32
  reg %o: u64
  reg %g: u64
  reg %q: pred
  %t = sreg.tid.x
  %p = setp.eq.u32 %t, 0:u32
  %b = mov.u32 BYTES:u32
  @%p mbarrier_init %b, 1:u32
  @%p fence_mbarrier_init
  bar 0:u32
  %m = tmap_addr  [map=A_tmap]
  %d = mov.u32 0:u32
  if %p {
    mbarrier_arrive_expect_tx %b, BYTES:u32
    tma_load %d, %m, %X, %Y, %b
  }
  loop {
    %ok = mbarrier_try_wait_parity %b, 0:u32
    break if %ok
  }
  for %j = 0:u32 to BYTES:u32 step 2048:u32 {
    %a = mad.u32 %t, 16:u32, %j
    %q = setp.lt.u32 %a, BYTES:u32
    @%q %v0, %v1, %v2, %v3 = ld.shared.v4.u32 %a
    %o = cvt.u64.u32 %a
    %g = add.u64 %out, %o
    @%q st.global.v4.u32 %g, %v0, %v1, %v2, %v3
  }
}"""

SPAN = {"128B": 128, "64B": 64, "32B": 32, "none": 0}
NP = {"f16": np.float16, "f32": np.float32, "bf16": np.uint16, "u8": np.uint8}


def kernel(elem: str, box: tuple[int, int], mode: str, text: str = TEXT) -> lir.Kernel:
    """The kernel for a box of [rows, cols] `elem` elements in swizzle `mode` (`text` a
    variant of `TEXT`)."""
    size = np.dtype(NP[elem]).itemsize
    nbytes = box[0] * box[1] * size
    text = (text.replace("SMEM", str(nbytes + 16)).replace("BYTES", str(nbytes))
            .replace("ELEM", elem).replace("BR", str(box[0])).replace("BC", str(box[1]))
            .replace("MODE", mode))  # fmt: skip
    k = parse_kernel(text)
    verify(k)
    return k


def tensor(elem: str, rows: int, cols: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem in ("f16", "f32"):
        return rng.standard_normal((rows, cols)).astype(NP[elem])
    return rng.integers(1, 250, (rows, cols)).astype(NP[elem])


def reference(a: np.ndarray, box: tuple[int, int], x: int, y: int, mode: str) -> np.ndarray:
    """The shared image (bytes) a TMA load of `box` at column `x`, row `y` leaves."""
    rows, cols = box
    size = a.dtype.itemsize
    tile = np.zeros(box, a.dtype)
    for r in range(rows):
        for c in range(cols):
            if 0 <= y + r < a.shape[0] and 0 <= x + c < a.shape[1]:
                tile[r, c] = a[y + r, x + c]
    flat = tile.reshape(-1).view(np.uint8)
    image = np.zeros_like(flat)
    chunks = SPAN[mode] // 16  # the ISA's table: chunk bits [4, 4+n) ^= bits [7, 7+n)
    for at in range(0, flat.size, 16):
        moved = at
        if chunks:
            moved = at ^ (((at // 128) % chunks) * 16)
        image[moved : moved + 16] = flat[at : at + 16]
    assert rows * cols * size == image.size
    return image
