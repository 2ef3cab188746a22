"""lir: the per-thread IR — what one thread of a CTA does, in typed virtual registers.

The lowering turns a hir kernel's tile statements into lir by deciding where each
tile lives and which thread owns which element (`phobos.lower.layout`); what is left
is per-thread code close to PTX, which `phobos.ptx` emits almost op for op and
`phobos.interp.threads` runs on numpy.

The shape of the IR:

- **Registers** (`Reg`) are typed and mutable, as PTX's are: a loop-carried value is
  simply a register assigned in the loop. `Imm` is an immediate operand, written with its type
  (`1.0:f32`).
- **Instructions** (`Inst`) are flat: an opcode from `OPS`, destinations, sources,
  a few attributes (`type`, `space`, `vec`, `cmp`, ...), an optional guard predicate
  (`@%p` in PTX: the instruction runs only where the predicate holds) and the span of
  the user's source line it came from (for `--check-races` and the debug log).
- **Control flow is structured**: `If`, `For`, `Loop` (left by `Break`), `Continue`,
  `Return`; PTX branches appear only at emission. Each region is a `Block`.
- **Memory spaces** are named on the instruction: `global`, `shared`, `param`,
  `local`. Addresses are 64-bit registers (`u64`) for global memory and 32-bit
  (`u32`) for shared memory, computed by ordinary integer instructions.

The text form (`print_kernel`) parses back (`parse_kernel`), so a failing case can
be pasted into a test:

    >>> k = Kernel("k", (Param("out", "u64"),), Block(()), threads=128)
    >>> print(print_kernel(k))
    kernel k(%out: u64) threads=128 smem=0 {
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phobos.source import Span

# ---------------------------------------------------------------------------
# Types: PTX's fundamental types. `pred` is a 1-bit predicate register.

INT_TYPES = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")
BIT_TYPES = ("b8", "b16", "b32", "b64")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
TYPES = ("pred", *BIT_TYPES, *INT_TYPES, *FLOAT_TYPES)

WIDTH = {"pred": 1}
for _t in (*BIT_TYPES, *INT_TYPES, *FLOAT_TYPES):
    WIDTH[_t] = 2 if _t == "bf16" else int(_t[1:]) // 8
del _t


def is_int(t: str) -> bool:
    return t in INT_TYPES or t in BIT_TYPES


def is_float(t: str) -> bool:
    return t in FLOAT_TYPES


def is_signed(t: str) -> bool:
    return t.startswith("s")


# ---------------------------------------------------------------------------
# Operands


@dataclass(frozen=True)
class Reg:
    """A virtual register: `%name` of one type for the whole kernel."""

    name: str
    type: str

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Imm:
    """An immediate: a Python int or float of `type`."""

    value: int | float
    type: str

    def __str__(self) -> str:
        # The type is written out: the text form must say exactly what it holds.
        value = repr(self.value) if isinstance(self.value, float) else str(self.value)
        return f"{value}:{self.type}"


Value = Reg | Imm


# ---------------------------------------------------------------------------
# The op table: opcode -> family. Each family's operands are checked by `verify`.

# Arithmetic: dst = op(srcs) in attrs["type"].
ARITH = {"add", "sub", "mul", "mul_hi", "mul_wide", "mad", "fma", "div", "rem", "neg", "abs",
         "min", "max"}  # fmt: skip
# Bits and integers: and/or/xor/not on integers or preds; shifts; population count;
# byte permute (prmt) and the four-way byte dot product.
BITS = {"and", "or", "xor", "not", "shl", "shr", "popc", "prmt", "dp4a"}
# Comparison to a predicate (`cmp` attr: eq ne lt le gt ge, and for floats nan/num),
# and select by predicate.
COMPARE = {"setp", "selp"}
# Conversions: attrs from_type, type, and rounding (rn rz rni rzi rmi rpi) or sat.
# `%w = cvt_x2.rn.f16.f32 %lo, %hi` rounds two f32 into the halves of a b32 word, the
# low half first as in `mov`'s packing form (PTX's cvt.rn.f16x2.f32 takes them high first).
CONVERT = {"cvt", "mov", "bitcast", "cvt_x2"}
# Approximate math (SPEC.md "Elementwise"): ex2.approx, lg2.approx, ...
MATH = {"ex2", "lg2", "sqrt", "rsqrt", "rcp", "tanh", "sin", "cos"}
# Memory: ld/st with space and vector width; atomics with an `op` attr.
MEMORY = {"ld", "st", "atom", "red"}
# Special registers: attrs name (tid.x, ctaid.x, nctaid.x, laneid, warpid, ...).
SPECIAL = {"sreg"}
# Synchronization and ordering: bar.sync; fence (attrs scope: cta gpu sys, sem).
# `bar %id[, %count]` is bar.sync on barrier `id` (0 to 15) for `count` threads (a
# multiple of 32; all the CTA's without it); `[arrive=1]` is bar.arrive, which does not
# wait and needs the count: a named barrier between a producer and its consumers.
SYNC = {"bar", "fence"}
# Warp-wide: shfl (mode bfly up down idx, c = clamp) and vote (mode any all ballot).
WARP = {"shfl", "vote"}
# Stops the kernel with an error (a broken @aligned promise).
TRAP = {"trap"}
# Asynchronous copies, global to shared (sm_80's cp.async): `cp_async %sdst, %gsrc[, %n]`
# starts a copy of `size` bytes (4, 8 or 16), of which only the first `n` are read and the
# rest are zeros; `cp_async_commit` closes the thread's open group of copies;
# `cp_async_wait` (attr `pending`) waits until at most `pending` of the thread's committed
# groups are unfinished. A copy's bytes are in shared memory only after such a wait.
ASYNC = {"cp_async", "cp_async_commit", "cp_async_wait"}
# Tensor cores (sm_80), warp-collective: the 32 lanes of a warp run each of these together
# (`phobos.lower.fragments` says which lane holds which element).
# `%r0[, %r1, %r2, %r3] = ldmatrix.shared.b16 %addr  [trans=1]` loads 1, 2 or 4 8 x 8
# matrices of b16, each lane giving one row's u32 shared address (lanes 0-7 matrix 0's
# rows, 8-15 matrix 1's, ...), each register two elements of its matrix (`.trans`: a
# column pair). `%d.. = mma.f32.f16 %a.., %b.., %c..  [shape=m16n8k16]` is mma.sync,
# D = A @ B + C: `type` is C's and D's element type, `from_type` A's and B's.
# `wmma_load` (attrs `matrix` a, b or c, `layout` row or col), `wmma_mma` (`alayout`,
# `blayout`) and `wmma_store` (`layout`) are m16n16k16 f16 -> f32 WMMA, with an optional
# stride operand in elements after the address (`wmma_store %addr, %d.., %stride`).
TENSOR = {"ldmatrix", "mma", "wmma_load", "wmma_mma", "wmma_store"}
# Hopper's asynchronous machinery (sm_90; `phobos.lower.verify_hopper` has the rules).
# An mbarrier is a u64 word of shared memory named by its u32 shared address:
# `mbarrier_init %bar, %count`; `%tok = mbarrier_arrive %bar` (no destination: the `_`
# sink) and `mbarrier_arrive_expect_tx %bar, %bytes` (one arrival and the bytes the phase
# waits for) return the phase's state token; `%p = mbarrier_try_wait_parity %bar, %parity`
# is true once the phase of that parity has completed (the lowering loops on it);
# `fence_mbarrier_init` makes the inits visible to the async proxy.
# `cp_async_bulk %sdst, %gsrc, %size, %bar` copies `size` bytes (a multiple of 16) from
# global to shared memory, completing that many transaction bytes on `%bar`.
# `%m = tmap_addr  [map=A_tmap]` is the generic address (u64) of the kernel's tensor map
# `A_tmap` (`Kernel.maps`); `tma_load %sdst, %m, %x, %y, %bar` copies the map's box whose
# first element is column `x`, row `y` (s32, elements; past the tensor reads 0) to shared
# offset `%sdst` in the map's swizzle, completing the box's bytes on `%bar`; with a sixth
# operand, a 16-bit CTA mask, the box is multicast: written at that offset into the shared
# memory of each CTA of the cluster whose rank's bit is set, completing on the mbarrier at
# `%bar` in each (`Kernel.cluster`).
# `cluster_arrive` and `cluster_wait` are the cluster's barrier, split (barrier.cluster,
# aligned: a warp's threads run each together): every thread of every CTA of the cluster
# arrives, then a thread's wait returns once all have; a thread waits once between two
# arrivals. Arrive releases, wait acquires: shared memory that a thread of the cluster
# wrote (or its wgmma read) before arriving is ordered before a peer's writes after waiting;
# `cluster_arrive  [relaxed=1]` orders no memory access, only the threads' progress (what
# a wgmma_wait or a bulk_wait completed before it stays completed).
# `%p[, %lane] = elect_sync` is true in one lane of the warp; `setmaxnreg  [action=inc,
# regs=240]` moves registers between warpgroups (sm_90a).
# Warpgroup matrix multiply-accumulate (sm_90a; `phobos.lower.warpgroup` has the layouts):
# `%d.. = wgmma_mma %adesc, %bdesc, %scale, %d..  [shape=m64n128k16, type=f32,
# from_type=f16, major_a=K, major_b=MN]` adds A (64 x 16, named by a u64 shared-memory
# descriptor, or four b32 registers in its place) times B (16 x N, a descriptor) to the
# accumulator `%d..` (N / 2 f32 registers, both the sources after `%scale` and the
# destinations: one register list in PTX; with `type=f16`, f16 products summed in f16,
# N / 4 b32 registers each holding two f16 elements of adjacent columns, the even low), or writes the product alone where the pred
# `%scale` is false; it runs asynchronously. `wgmma_fence` orders earlier register
# accesses before it, `wgmma_commit` closes the warpgroup's open wgmma into a group,
# `wgmma_wait  [pending=N]` waits until at most N groups are in flight.
# `%desc = wgmma_desc %s  [lbo=16, sbo=1024, swizzle=128B]` is the u64 descriptor of the
# operand starting at shared offset `%s` (the address rebased onto the CTA's window).
# (`fence.shared  [proxy=async]` orders generic shared-memory writes before the async
# proxy's reads: a wgmma's operands, a bulk copy's.)
HOPPER = {"mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx",
          "mbarrier_try_wait_parity", "fence_mbarrier_init", "cp_async_bulk", "tmap_addr",
          "tma_load", "elect_sync", "cluster_arrive", "cluster_wait",
          "setmaxnreg", "wgmma_mma", "wgmma_fence", "wgmma_commit", "wgmma_wait",
          "wgmma_desc"}  # fmt: skip
# Hopper's stores out of a CTA (sm_90; `phobos.lower.verify_hopper` has the rules).
# `stmatrix %addr, %r0[, %r1, %r2, %r3]  [trans=1]` is ldmatrix's inverse, warp-collective:
# it stores 1, 2 or 4 8 x 8 b16 matrices, register j of each lane holding two elements of
# matrix j (`phobos.lower.fragments.ldmatrix_m8n8`; `.trans`: a column pair), each lane
# giving one row's u32 shared address as for ldmatrix (16 bytes a row).
# `tma_store %m, %x, %y, %ssrc` copies the box at shared offset `%ssrc`, laid out in the
# map's swizzle, to the box of tensor map `%m` (`tmap_addr`) whose first element is column
# `x`, row `y` (s32 from 0, elements); elements past the tensor are not written. It runs
# asynchronously, in the issuing thread's bulk groups: `bulk_commit` closes the thread's
# open group of stores, `bulk_wait  [pending=N, read=1]` waits until at most N of its
# committed groups are unfinished (`read=1`: until they have read their shared source,
# so it may be overwritten; without, until their global writes are done).
# (Shared bytes written by st.shared or stmatrix and then read by a `tma_store` want a
# `fence.shared  [proxy=async]` between, as a wgmma's operands do.)
HOPPER_STORES = {"stmatrix", "tma_store", "bulk_commit", "bulk_wait"}

FAMILIES: dict[str, set[str]] = {
    "arith": ARITH, "bits": BITS, "compare": COMPARE, "convert": CONVERT, "math": MATH,
    "memory": MEMORY, "special": SPECIAL, "sync": SYNC, "warp": WARP, "trap": TRAP,
    "async": ASYNC, "tensor": TENSOR, "hopper": HOPPER, "hopper_stores": HOPPER_STORES,
}  # fmt: skip
OPS: dict[str, str] = {op: family for family, ops in FAMILIES.items() for op in ops}

SPACES = ("global", "shared", "param", "local")
SPECIAL_REGS = (
    "tid.x", "tid.y", "tid.z", "ntid.x", "ctaid.x", "ctaid.y", "ctaid.z",
    "nctaid.x", "nctaid.y", "nctaid.z", "laneid", "warpid", "smid",
    # a cluster's: the CTA's rank in it, the cluster's index and count along x
    "cluster_ctarank", "clusterid.x", "nclusterid.x",
)  # fmt: skip


@dataclass(frozen=True)
class Inst:
    """`dests = op.attrs srcs`, run only where `guard` holds (None: always).

    `attrs` is a tuple of (key, value) pairs, sorted, so an instruction is hashable
    and prints the same way every time. Use `attr(key)` to read one.
    """

    op: str
    dests: tuple[Reg, ...]
    srcs: tuple[Value, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    guard: Reg | None = None
    guard_negated: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default


def inst(op: str, dests=(), srcs=(), *, guard=None, guard_negated=False, span=None, **attrs):
    """Build an `Inst` with keyword attributes.

    >>> a = Reg("a", "f32")
    >>> print(print_item(inst("add", (a,), (a, Imm(1.0, "f32")), type="f32")))
    %a = add.f32 %a, 1.0:f32
    """
    return Inst(
        op,
        tuple(dests),
        tuple(srcs),
        tuple(sorted(attrs.items())),
        guard,
        guard_negated,
        span=span,
    )


# ---------------------------------------------------------------------------
# Structured control flow


@dataclass(frozen=True)
class Block:
    items: tuple[Item, ...]


@dataclass(frozen=True)
class If:
    """Runs `then` where `cond` (a pred register) holds, `orelse` elsewhere."""

    cond: Reg
    then: Block
    orelse: Block | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class For:
    """`for var = lo; var < hi; var += step` (signed compare in var's type)."""

    var: Reg
    lo: Value
    hi: Value
    step: Value
    body: Block
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Loop:
    """Runs `body` until a `Break` leaves it."""

    body: Block
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Break:
    """Leaves the innermost `For`/`Loop`, where `cond` holds (None: always)."""

    cond: Reg | None = None
    negated: bool = False


@dataclass(frozen=True)
class Continue:
    """Goes to the next iteration of the innermost loop, where `cond` holds."""

    cond: Reg | None = None
    negated: bool = False


@dataclass(frozen=True)
class Return:
    """Ends the thread, where `cond` holds."""

    cond: Reg | None = None
    negated: bool = False


Item = Inst | If | For | Loop | Break | Continue | Return


# ---------------------------------------------------------------------------
# The kernel


@dataclass(frozen=True)
class Param:
    """One `.entry` parameter slot: a name and a PTX type (pointers are `u64`)."""

    name: str
    type: str


@dataclass(frozen=True)
class TensorMap:
    """A TMA tensor map the kernel reads a 2-D tensor parameter through (sm_90).

    The launcher encodes it (`cuTensorMapEncodeTiled`) from the tensor's base and
    extents and passes its 128 bytes as the `.param .align 64 .b8 name[128]` slot after
    the extents; `tmap_addr [map=name]` is its generic address. `dims` are the tensor's
    [rows, cols] (an int, or the name of an extent parameter), row-major and contiguous,
    so a row's pitch is `cols` elements; `box` is the [rows, cols] a copy moves, `swizzle`
    its layout in shared memory (128B, 64B, 32B or none); elements past the tensor read 0.

        >>> TensorMap("A_tmap", "A", "f16", ("M", "K"), (128, 64), "128B").box
        (128, 64)
    """

    name: str
    tensor: str
    elem: str
    dims: tuple[int | str, int | str]
    box: tuple[int, int]
    swizzle: str = "128B"


@dataclass(frozen=True)
class SharedBuffer:
    """A named window of the kernel's shared memory: `size` bytes at `offset`."""

    name: str
    offset: int
    size: int
    align: int = 16


@dataclass(frozen=True)
class Kernel:
    """One kernel variant in per-thread form.

    `smem` is the static shared memory in bytes; `dynamic_smem` True when the kernel
    takes its shared memory at launch (`@dynshared`). `min_blocks`/`max_regs` come from
    `@launch`; `index_width` is 32 or 64.
    """

    name: str
    params: tuple[Param, ...]
    body: Block
    threads: int = 256
    smem: int = 0
    shared: tuple[SharedBuffer, ...] = ()
    dynamic_smem: bool = False
    min_blocks: int | None = None
    max_regs: int | None = None
    index_width: int = 32
    maps: tuple[TensorMap, ...] = ()  # TMA tensor maps, slots after the params
    # The u32 params holding the launch grid's block counts x, y and z where the CTAs walk
    # the grid's blocks themselves (`phobos.lower.walk`); () where each CTA is one block.
    walk: tuple[str, ...] = ()
    # CTAs a cluster, along x (`.reqnctapercluster`; the launch grid's x a multiple of it):
    # 1 where the kernel runs no cluster.
    cluster: int = 1
    span: Span | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------------------
# Text form


def _attr_suffix(i: Inst) -> str:
    """The PTX-like dotted suffix: `ld.global.v4.f32`, `setp.lt.s32`, `cvt.rn.f16.f32`."""
    parts = []
    for key in ("mode", "cmp", "space", "scope", "sem", "rounding", "atom"):
        value = i.attr(key)
        if value:
            parts.append(str(value))
    if i.attr("sat"):
        parts.append("sat")
    if i.attr("vec", 1) != 1:
        parts.append(f"v{i.attr('vec')}")
    if i.attr("name"):
        parts.append(str(i.attr("name")))
    if i.attr("type"):
        parts.append(i.attr("type"))
    if i.attr("from_type"):
        parts.append(i.attr("from_type"))
    return "".join("." + p for p in parts)


# Attributes printed in the dotted suffix; any other prints as `key=value` after it.
_SUFFIX_KEYS = {"mode", "cmp", "space", "scope", "sem", "rounding", "atom", "sat", "vec",
                "name", "type", "from_type"}  # fmt: skip


def print_item(item: Item, depth: int = 0) -> str:
    pad = "  " * depth
    if isinstance(item, Inst):
        guard = ""
        if item.guard is not None:
            guard = f"@{'!' if item.guard_negated else ''}{item.guard} "
        dests = ", ".join(str(d) for d in item.dests)
        lhs = f"{dests} = " if dests else ""
        extra = [f"{k}={v}" for k, v in item.attrs if k not in _SUFFIX_KEYS]
        srcs = ", ".join(str(s) for s in item.srcs)
        tail = (" " + srcs if srcs else "") + ("  [" + ", ".join(extra) + "]" if extra else "")
        return f"{pad}{guard}{lhs}{item.op}{_attr_suffix(item)}{tail}"
    if isinstance(item, If):
        text = f"{pad}if {item.cond} {{\n{_print_block(item.then, depth + 1)}{pad}}}"
        if item.orelse is not None:
            text += f" else {{\n{_print_block(item.orelse, depth + 1)}{pad}}}"
        return text
    if isinstance(item, For):
        head = f"{pad}for {item.var} = {item.lo} to {item.hi} step {item.step}"
        return f"{head} {{\n{_print_block(item.body, depth + 1)}{pad}}}"
    if isinstance(item, Loop):
        return f"{pad}loop {{\n{_print_block(item.body, depth + 1)}{pad}}}"
    if isinstance(item, (Break, Continue, Return)):
        word = type(item).__name__.lower()
        if item.cond is None:
            return pad + word
        return f"{pad}{word} if {'!' if item.negated else ''}{item.cond}"
    raise TypeError(f"not a lir item: {item!r}")


def _print_block(block: Block, depth: int) -> str:
    return "".join(print_item(item, depth) + "\n" for item in block.items)


def insts(block: Block):
    """Every instruction of `block` in order, those inside its `If`s and loops too."""
    for item in block.items:
        if isinstance(item, Inst):
            yield item
        for sub in ("then", "orelse", "body"):
            inner = getattr(item, sub, None)
            if isinstance(inner, Block):
                yield from insts(inner)


def registers(kernel: Kernel) -> dict[str, str]:
    """Every register the kernel names, with its type, in first-appearance order."""
    found: dict[str, str] = {}

    def note(value) -> None:
        if isinstance(value, Reg) and value.name not in found:
            found[value.name] = value.type

    def walk(block: Block) -> None:
        for item in block.items:
            if isinstance(item, Inst):
                for v in (*item.dests, *item.srcs, item.guard):
                    note(v)
            elif isinstance(item, If):
                note(item.cond)
                walk(item.then)
                if item.orelse is not None:
                    walk(item.orelse)
            elif isinstance(item, For):
                for v in (item.var, item.lo, item.hi, item.step):
                    note(v)
                walk(item.body)
            elif isinstance(item, Loop):
                walk(item.body)
            else:
                note(item.cond)

    walk(kernel.body)
    return found


def print_kernel(kernel: Kernel) -> str:
    """The text form: a header, the register declarations, the body."""
    params = ", ".join(f"%{p.name}: {p.type}" for p in kernel.params)
    head = f"kernel {kernel.name}({params}) threads={kernel.threads} smem={kernel.smem}"
    if kernel.dynamic_smem:
        head += " dynshared"
    if kernel.min_blocks is not None:
        head += f" min_blocks={kernel.min_blocks}"
    if kernel.max_regs is not None:
        head += f" max_regs={kernel.max_regs}"
    if kernel.index_width != 32:
        head += f" index={kernel.index_width}"
    if kernel.walk:
        head += " walk=" + ",".join(f"%{n}" for n in kernel.walk)
    if kernel.cluster != 1:
        head += f" cluster={kernel.cluster}"
    lines = [head + " {"]
    for buf in kernel.shared:
        lines.append(f"  shared {buf.name} @{buf.offset} size={buf.size} align={buf.align}")
    for m in kernel.maps:
        dims = ", ".join(str(d) for d in m.dims)
        lines.append(f"  tmap {m.name} = {m.tensor} {m.elem} [{dims}] "
                     f"box=[{m.box[0]}, {m.box[1]}] swizzle={m.swizzle}")  # fmt: skip
    param_names = {p.name for p in kernel.params}
    for name, type_ in registers(kernel).items():
        if name not in param_names:
            lines.append(f"  reg %{name}: {type_}")
    body = _print_block(kernel.body, 1)
    return "\n".join(lines) + "\n" + body + "}"
