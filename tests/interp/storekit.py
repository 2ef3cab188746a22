"""Hand-written lir kernels of Hopper's stores, their inputs and numpy references: run by
the threads interpreter (tests/interp/test_threads_stores.py) and, the same text, on the
card (tests/gpu/test_stores_gpu.py).

`stmatrix_kernel(n, trans)`: one warp; each lane loads four b32 words and a row address
from global memory, poisons its 16 bytes of the 512 of shared memory, and after a barrier
the warp stores n matrices with `stmatrix`; every lane then copies its 16 shared bytes
out. `stmatrix_reference` places each register half where the PTX ISA's picture of the
m8n8 fragment says (lane l holds row l // 4, columns 2 (l % 4) and 2 (l % 4) + 1 of every
matrix; `.trans` the transpose) and each row at the address of lane 8j + r, written here
from the ISA and not from the interpreter's tables. `roundtrip_kernel` stores with
stmatrix and loads back with ldmatrix at the same addresses: the registers come back.

`store_kernel(elem, box, mode)`: 128 threads copy a shared image (the box in the map's
swizzle, built by `swizzle_image` from the ISA's XOR table) into shared memory, fence it
for the async proxy, and thread 0 issues `tma_store` of the box at column X, row Y of the
[R, C] tensor T, commits and waits. `store_reference` is the tensor with the box written
where it lies inside the tensor and nothing else touched.
"""

from __future__ import annotations

import numpy as np

from phobos.lower import lir
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

# -- stmatrix ------------------------------------------------------------------

STMATRIX = """kernel stm(%W: u64, %A: u64, %out: u64) threads=32 smem=512 {
  reg %t: u32
  reg %o: u64
  reg %g: u64
  reg %a: u32
  reg %s: u32
  reg %r0: b32
  reg %r1: b32
  reg %r2: b32
  reg %r3: b32
  reg %v0: u32
  reg %v1: u32
  reg %v2: u32
  reg %v3: u32
  %t = sreg.tid.x
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %A, %o
  %a = ld.global.u32 %g
  %o = mul_wide.u32 %t, 16:u32
  %g = add.u64 %W, %o
  %r0, %r1, %r2, %r3 = ld.global.v4.b32 %g
  %s = mul.u32 %t, 16:u32
  %v0 = mov.u32 POISON:u32
  st.shared.v4.u32 %s, %v0, %v0, %v0, %v0
  bar 0:u32
  STORE
  bar 0:u32
  %v0, %v1, %v2, %v3 = ld.shared.v4.u32 %s
  %g = add.u64 %out, %o
  st.global.v4.u32 %g, %v0, %v1, %v2, %v3
}"""
POISON = 0xEEEEEEEE


def _stmatrix_inst(n: int, trans: bool) -> str:
    regs = ", ".join(f"%r{j}" for j in range(n))
    return f"stmatrix %a, {regs}" + ("  [trans=1]" if trans else "")


def stmatrix_kernel(n: int, trans: bool, text: str = STMATRIX) -> lir.Kernel:
    """The stmatrix kernel storing `n` matrices (`text` a variant of `STMATRIX`)."""
    text = text.replace("STORE", _stmatrix_inst(n, trans)).replace("POISON", str(POISON))
    k = parse_kernel(text)
    verify(k)
    return k


def stmatrix_inputs(n: int, seed: int) -> dict[str, np.ndarray]:
    """Words `W` (32 lanes x 4) and row addresses `A`: the 8n rows land at distinct 16-byte
    slots in a shuffled order; lanes past 8n give an address nobody reads."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
    slots = rng.permutation(32)[: 8 * n]
    addr = np.full(32, 0xFFFF_FFF0, np.uint32)
    addr[: 8 * n] = 16 * slots
    return {"W": words, "A": addr, "out": np.zeros(128, np.uint32)}


def stmatrix_reference(words, addr, n: int, trans: bool) -> np.ndarray:
    """The 512 shared bytes after the kernel's stmatrix (poison where no row went)."""
    image = np.full(256, POISON & 0xFFFF, np.uint16)
    for j in range(n):
        matrix = np.zeros((8, 8), np.uint16)
        for lane in range(32):
            for half in (0, 1):
                row, col = lane // 4, 2 * (lane % 4) + half
                if trans:
                    row, col = col, row
                matrix[row, col] = (int(words[lane, j]) >> (16 * half)) & 0xFFFF
        for r in range(8):
            at = int(addr[8 * j + r]) // 2
            image[at : at + 8] = matrix[r]
    return image.view(np.uint8)


ROUNDTRIP = """kernel stld(%W: u64, %A: u64, %out: u64) threads=32 smem=512 {
  reg %t: u32
  reg %o: u64
  reg %g: u64
  reg %a: u32
  reg %r0: b32
  reg %r1: b32
  reg %r2: b32
  reg %r3: b32
  reg %l0: b32
  reg %l1: b32
  reg %l2: b32
  reg %l3: b32
  %t = sreg.tid.x
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %A, %o
  %a = ld.global.u32 %g
  %o = mul_wide.u32 %t, 16:u32
  %g = add.u64 %W, %o
  %r0, %r1, %r2, %r3 = ld.global.v4.b32 %g
  stmatrix %a, %r0, %r1, %r2, %r3TRANS
  bar 0:u32
  %l0, %l1, %l2, %l3 = ldmatrix.shared.b16 %aTRANS
  %g = add.u64 %out, %o
  st.global.v4.b32 %g, %l0, %l1, %l2, %l3
}"""


def roundtrip_kernel(trans: bool) -> lir.Kernel:
    k = parse_kernel(ROUNDTRIP.replace("TRANS", "  [trans=1]" if trans else ""))
    verify(k)
    return k


# -- TMA store -----------------------------------------------------------------

THREADS = 128
STORE = """kernel tstore(%S: u64, %T: u64, %X: s32, %Y: s32, %R: s32, %C: s32) threads=128 smem=BYTES {
  shared box @0 size=BYTES align=1024
  tmap T_tmap = T ELEM [R, C] box=[BR, BC] swizzle=MODE
  reg %t: u32
  reg %p: pred
  reg %q: pred
  reg %a: u32
  reg %j: u32
  reg %d: u32
  reg %m: u64
  reg %o: u64
  reg %g: u64
  reg %v0: u32
  reg %v1: u32
  reg %v2: u32
  reg %v3: u32
  %t = sreg.tid.x
  %p = setp.eq.u32 %t, 0:u32
  for %j = 0:u32 to BYTES:u32 step 2048:u32 {
    %a = mad.u32 %t, 16:u32, %j
    %q = setp.lt.u32 %a, BYTES:u32
    %o = cvt.u64.u32 %a
    %g = add.u64 %S, %o
    @%q %v0, %v1, %v2, %v3 = ld.global.v4.u32 %g
    @%q st.shared.v4.u32 %a, %v0, %v1, %v2, %v3
  }
  fence.shared  [proxy=async]
  bar 0:u32
  %m = tmap_addr  [map=T_tmap]
  %d = mov.u32 0:u32
  if %p {
    tma_store %m, %X, %Y, %d
    bulk_commit
    bulk_wait  [pending=0, read=1]
  }
}"""

SPAN = {"128B": 128, "64B": 64, "32B": 32, "none": 0}
NP = {"f16": np.float16, "f32": np.float32, "bf16": np.uint16, "u8": np.uint8}
TENSOR_POISON = 0xA5


def store_kernel(elem: str, box: tuple[int, int], mode: str, text: str = STORE) -> lir.Kernel:
    """The store kernel for a box of [rows, cols] `elem` in swizzle `mode` (`text` a
    variant of `STORE`)."""
    nbytes = box[0] * box[1] * np.dtype(NP[elem]).itemsize
    text = (text.replace("BYTES", str(nbytes)).replace("ELEM", elem)
            .replace("BR", str(box[0])).replace("BC", str(box[1])).replace("MODE", mode))  # fmt: skip
    k = parse_kernel(text)
    verify(k)
    return k


def box_values(elem: str, box: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem in ("f16", "f32"):
        return rng.standard_normal(box).astype(NP[elem])
    return rng.integers(1, 250, box).astype(NP[elem])


def swizzle_image(tile: np.ndarray, mode: str) -> np.ndarray:
    """The shared bytes holding `tile` (row-major) in swizzle `mode`, at a 1024-byte
    aligned offset: the ISA's table, chunk bits [4, 4+n) ^= bits [7, 7+n)."""
    flat = np.ascontiguousarray(tile).reshape(-1).view(np.uint8)
    image = np.zeros_like(flat)
    chunks = SPAN[mode] // 16
    for at in range(0, flat.size, 16):
        moved = at ^ (((at // 128) % chunks) * 16) if chunks else at
        image[moved : moved + 16] = flat[at : at + 16]
    return image


def poisoned_tensor(elem: str, rows: int, cols: int) -> np.ndarray:
    size = np.dtype(NP[elem]).itemsize
    return np.full(rows * cols * size, TENSOR_POISON, np.uint8).view(NP[elem]).reshape(rows, cols)


def store_reference(tensor: np.ndarray, tile: np.ndarray, x: int, y: int) -> np.ndarray:
    """`tensor` after a TMA store of `tile` at column `x`, row `y`: only its elements
    inside the tensor are written."""
    out = tensor.copy()
    for r in range(tile.shape[0]):
        for c in range(tile.shape[1]):
            if 0 <= y + r < out.shape[0] and 0 <= x + c < out.shape[1]:
                out[y + r, x + c] = tile[r, c]
    return out
