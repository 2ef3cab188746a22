"""Hand-written lir kernels of wgmma, their inputs and numpy references: run by the threads
interpreter (tests/interp/test_threads_wgmma.py) and, the same text, on the card
(tests/gpu/test_wgmma_gpu.py, for sm_90a).

Each kernel is one warpgroup (128 threads, one CTA). The host lays A and B out in a
shared-memory image as the PTX ISA's canonical layouts say (each written here from the
ISA's tables, not from `phobos.lower.warpgroup`), the kernel copies the image into shared
memory verbatim, fences the generic writes for the async proxy, builds the descriptors
with `wgmma_desc`, issues one wgmma a k step of 16 and stores the accumulator from the
places the ISA gives its registers. The reference is the float64 product of the inputs as
the card sees them, so a wrong layout, descriptor or register place shows as a wrong
product on the card or in the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tensorkit import bf16, f16

# ---------------------------------------------------------------------------
# Host layouts of a [rows, K] operand (rows along M or N), 16-bit elements, as bytes


def k_major(x16: np.ndarray, swizzle: str) -> tuple[np.ndarray, int, int, int]:
    """(image, lbo, sbo, step) of a K-major operand: for a swizzle of W bytes, rows of W
    bytes (K = W / 2), eight to an atom of 8 W bytes, each row's 16-byte chunk c at
    c ^ (the address's bits 7 on); with none, 8 x 16-byte core matrices, K-adjacent
    ones `lbo` apart, M-adjacent ones `sbo` apart. `step`: the bytes a k step of 16
    moves the start by."""
    rows, k = x16.shape
    if swizzle == "none":
        lbo, sbo = 128, 128 * (k // 8)
        image = np.zeros(rows * k * 2, np.uint8)
        for r in range(rows):
            for j in range(k // 8):
                at = (r // 8) * sbo + j * lbo + (r % 8) * 16
                image[at : at + 16] = x16[r, 8 * j : 8 * j + 8].view(np.uint8)
        return image, lbo, sbo, 2 * lbo
    w = {"32B": 32, "64B": 64, "128B": 128}[swizzle]
    assert k * 2 == w, "one row of the atom holds the operand's K"
    mask = w // 16 - 1
    image = np.zeros(rows * w, np.uint8)
    for r in range(rows):
        for c in range(w // 16):
            at = r * w + c * 16
            moved = at ^ (((at >> 7) & mask) << 4)
            image[moved : moved + 16] = x16[r, 8 * c : 8 * c + 8].view(np.uint8)
    return image, 16, 8 * w, 32


def mn_major_128(x16: np.ndarray) -> tuple[np.ndarray, int, int, int]:
    """(image, lbo, sbo, step) of an MN-major operand with the 128-byte swizzle, given as
    [rows, K] (rows along N): atoms of 8 k-rows of 128 bytes (64 n), the n chunk c of
    k-row r at c ^ (r % 8); n blocks of 64 `lbo` apart, k groups of 8 `sbo` apart."""
    rows, k = x16.shape
    sbo, lbo = 1024, 1024 * (k // 8)
    image = np.zeros(rows * k * 2, np.uint8)
    t = np.ascontiguousarray(x16.T)  # [K, rows]: n contiguous
    for kk in range(k):
        for nb in range(-(-rows // 64)):
            for c in range(8):
                n0 = 64 * nb + 8 * c
                if n0 >= rows:
                    continue
                at = nb * lbo + (kk // 8) * sbo + (kk % 8) * 128 + c * 16
                moved = at ^ (((at >> 7) & 7) << 4)
                image[moved : moved + 16] = t[kk, n0 : n0 + 8].view(np.uint8)
    return image, lbo, sbo, 2 * sbo


# ---------------------------------------------------------------------------
# The kernel


def _acc_store(n: int) -> str:
    """Store register pair (r, r + 1) of the m64nNk16 accumulator at row 16 w + g +
    8 ((r >> 1) & 1), column 8 (r >> 2) + 2 q (the ISA's picture)."""
    lines = [
        "  %g = shr.u32 %lane, 2:u32",
        "  %q = and.b32 %lane, 3:u32",
        "  %row = mad.u32 %w, 16:u32, %g",
        "  %col = mul.u32 %q, 2:u32",
    ]
    for r in range(0, n // 2, 2):
        dr, dc = 8 * ((r >> 1) & 1), 8 * (r >> 2)
        lines += [
            f"  %x = add.u32 %row, {dr}:u32",
            f"  %y = add.u32 %col, {dc}:u32",
            f"  %x = mad.u32 %x, {n}:u32, %y",
            "  %go = mul_wide.u32 %x, 4:u32",
            "  %ga = add.u64 %C, %go",
            f"  st.global.v2.f32 %ga, %d{r}, %d{r + 1}",
        ]
    return "\n".join(lines) + "\n"


def _register_a() -> str:
    """A's 64 x 16 from global memory (row-major) into the four b32 registers the ISA
    gives a thread: register r's halves at row 16 w + g + 8 (r & 1), columns 2 q + 8 (r >> 1)
    and the next."""
    lines = [
        "  %g = shr.u32 %lane, 2:u32",
        "  %q = and.b32 %lane, 3:u32",
        "  %row = mad.u32 %w, 16:u32, %g",
        "  %col = mul.u32 %q, 2:u32",
    ]
    for r in range(4):
        lines += [
            f"  %x = add.u32 %row, {8 * (r & 1)}:u32",
            f"  %y = add.u32 %col, {8 * (r >> 1)}:u32",
            "  %x = mad.u32 %x, 16:u32, %y",
            "  %go = mul_wide.u32 %x, 2:u32",
            "  %ga = add.u64 %A, %go",
            f"  %a{r} = ld.global.b32 %ga",
        ]
    return "\n".join(lines) + "\n"


@dataclass
class Case:
    name: str
    elem: str  # f16 or bf16
    n: int
    k: int
    a: str  # K-major swizzle ("none", "32B", "64B", "128B") or "regs"
    b: str  # the same, or "MN128" (MN-major, 128-byte swizzle)
    scale: bool = True  # False: the accumulator starts as garbage, scale-d false
    threads: int = 128
    grid: int = 1
    outputs: tuple = ("C",)

    def layout(self, x16, which: str):
        if which == "MN128":
            return mn_major_128(x16)
        return k_major(x16, which)

    def inputs(self, rng):
        make = {"f16": f16, "bf16": bf16}[self.elem]
        a_bits, a = make(rng, (64, self.k))
        b_bits, b = make(rng, (self.n, self.k))
        images = []
        if self.a != "regs":
            images.append(self.layout(a_bits, self.a))
        images.append(self.layout(b_bits, self.b))
        self._meta = [(lbo, sbo, step) for _, lbo, sbo, step in images]
        self._offsets, image, at = [], [], 0
        for img, *_ in images:
            self._offsets.append(at)
            pad = -(-img.size // 1024) * 1024  # each operand on its own 1024-byte atom
            image.append(np.pad(img, (0, pad - img.size)))
            at += pad
        self._smem = at
        arrays = {"img": np.concatenate(image), "C": np.full((64, self.n), np.nan, np.float32)}
        if self.a == "regs":
            arrays["A"] = a_bits
        return arrays, {"C": a @ b.T}

    def tolerance(self, name, card):
        return (2e-6, (5e-6 if card else 2e-7) * self.k)

    @property
    def text(self) -> str:
        rng = np.random.default_rng(0)
        self.inputs(rng)  # the image's offsets and descriptor fields
        smem = self._smem
        chunks = smem // 16
        nacc = self.n // 2
        regs = ["%t: u32", "%lane: u32", "%w: u32", "%x: u32", "%y: u32", "%s: u32",
                "%g: u32", "%q: u32", "%row: u32", "%col: u32", "%kk: u32", "%go: u64",
                "%ga: u64", "%v0: b32", "%v1: b32", "%v2: b32", "%v3: b32", "%da: u64",
                "%db: u64", "%p: pred", "%sa: u32", "%sb: u32"]  # fmt: skip
        regs += [f"%a{r}: b32" for r in range(4)] + [f"%d{r}: f32" for r in range(nacc)]
        params = "%img: u64, %C: u64" + (", %A: u64" if self.a == "regs" else "")
        head = [f"kernel {self.name}({params}) threads=128 smem={smem} {{",
                f"  shared img @0 size={smem} align=1024"]  # fmt: skip
        head += [f"  reg {r}" for r in regs]
        body = [
            "  %t = sreg.tid.x",
            "  %lane = and.b32 %t, 31:u32",
            "  %w = shr.u32 %t, 5:u32",
            f"  for %kk = 0:u32 to {-(-chunks // 128)}:u32 step 1:u32 {{",
            "    %x = mad.u32 %kk, 128:u32, %t",
            f"    %p = setp.lt.u32 %x, {chunks}:u32",
            "    %s = mul.u32 %x, 16:u32",
            "    %go = cvt.u64.u32 %s",
            "    %ga = add.u64 %img, %go",
            "    @%p %v0, %v1, %v2, %v3 = ld.global.v4.b32 %ga",
            "    @%p st.shared.v4.b32 %s, %v0, %v1, %v2, %v3",
            "  }",
            "  fence.shared  [proxy=async]",
            "  bar 0:u32",
        ]
        init = "0f00000000" if self.scale else "0f40E00000"  # 0.0, or 7.0 to be ignored
        body += [f"  %d{r} = mov.f32 {init}:f32".replace("0f00000000:f32", "0.0:f32")
                 .replace("0f40E00000:f32", "7.0:f32") for r in range(nacc)]  # fmt: skip
        body.append(f"  %p = setp.{'eq' if self.scale else 'ne'}.u32 %t, %t")
        if self.a == "regs":
            body.append(_register_a().rstrip("\n"))
        body.append("  wgmma_fence")
        acc = ", ".join(f"%d{r}" for r in range(nacc))
        b_at = self._offsets[-1]
        b_lbo, b_sbo, b_step = self._meta[-1]
        b_sw = "128B" if self.b == "MN128" else self.b
        major_b = "MN" if self.b == "MN128" else "K"
        for step in range(self.k // 16):
            body.append(f"  %sb = mov.u32 {b_at + step * b_step}:u32")
            body.append(f"  %db = wgmma_desc %sb  [lbo={b_lbo}, sbo={b_sbo}, swizzle={b_sw}]")
            shape = f"shape=m64n{self.n}k16, type=f32, from_type={self.elem}"
            if self.a == "regs":
                body.append(f"  {acc} = wgmma_mma %a0, %a1, %a2, %a3, %db, %p, {acc}  "
                            f"[{shape}, major_b={major_b}]")  # fmt: skip
            else:
                a_lbo, a_sbo, a_step = self._meta[0]
                body.append(f"  %sa = mov.u32 {self._offsets[0] + step * a_step}:u32")
                body.append(f"  %da = wgmma_desc %sa  [lbo={a_lbo}, sbo={a_sbo}, swizzle={self.a}]")
                body.append(f"  {acc} = wgmma_mma %da, %db, %p, {acc}  "
                            f"[{shape}, major_a=K, major_b={major_b}]")  # fmt: skip
            if step == 0 and not self.scale:
                body.append("  %p = setp.eq.u32 %t, %t")  # accumulate from the second step on
        body += ["  wgmma_commit", "  wgmma_wait  [pending=0]"]
        body.append(_acc_store(self.n).rstrip("\n"))
        return "\n".join(head + body) + "\n}"

    def kernel(self):
        from phobos.lower.lirparse import parse_kernel
        from phobos.lower.verify import verify

        k = parse_kernel(self.text)
        verify(k)
        return k


CASES = [
    Case("wg_k128_f16", "f16", 64, 64, "128B", "128B"),
    Case("wg_k128_bf16_n128", "bf16", 128, 64, "128B", "128B"),
    Case("wg_k64", "f16", 32, 32, "64B", "64B"),
    Case("wg_k32", "f16", 16, 16, "32B", "32B"),
    Case("wg_interleave", "f16", 32, 32, "none", "none"),
    Case("wg_mn128", "f16", 64, 64, "128B", "MN128"),
    Case("wg_mn128_n128", "bf16", 128, 64, "128B", "MN128"),
    Case("wg_regs_a", "f16", 32, 16, "regs", "32B", scale=False),
    Case("wg_scale_false", "bf16", 64, 64, "128B", "128B", scale=False),
]
