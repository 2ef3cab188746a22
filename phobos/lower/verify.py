"""The lir verifier, run after every pass in the tests.

Invariants checked:

1. Every instruction's op is in `lir.OPS`; guards and conditions are `pred` registers.
2. A register has one type for the whole kernel; every register read is a parameter
   or written somewhere in the kernel.
3. Operand counts and types per family: arithmetic, bits and math results have the
   instruction's `type` (`mul_wide` twice its width); `setp` writes a `pred`; `selp`
   takes two values and a `pred`; `cvt` reads `from_type` and writes `type`.
   `mov`/`bitcast` move one value, except for exactly two packing forms, of type
   `b32` (halves of 16 bits) or `b64` (halves of 32 bits): unpack, one register of
   the type's width into two registers of half its width (low half first,
   `%lo, %hi = mov.b32 %w`), and pack, the reverse (`%w = mov.b32 %lo, %hi`); every
   operand of either form is a register, never an immediate. `cvt_x2` rounds two `f32`
   registers (`from_type`) to `f16` or `bf16` (`type`) by `rn` (the default) or `rz`,
   writing one `b32` register. `dp4a` (`s32` or `u32`) reads two words of four bytes and
   a sum, and writes the sum plus the four byte products.
4. Memory: `space` is one of `lir.SPACES`; a global or param address is a `u64`
   register, a shared address a `u32` or `u64`; `vec` is 1, 2 or 4 and a vector
   access is at most 16 bytes; `ld` writes `vec` registers and `st` stores `vec`.
5. `Break` and `Continue` appear only inside a `For` or `Loop`; a `For`'s bounds and
   step have its variable's type.
6. Shared buffers lie inside the kernel's shared memory and do not overlap unless
   their names say they alias (the allocator's business: it writes `smem`).
7. Asynchronous copies write no register. `cp_async` copies `size` 4, 8 or 16 bytes
   from a `u64` global address register to a `u32` or `u64` shared one, optionally
   reading only a 32-bit integer source size (an immediate one at most `size`) and
   zero-filling the rest; its `cache` is `ca`, or `cg` for 16 bytes only.
   `cp_async_commit` takes nothing; `cp_async_wait` takes nothing but a `pending`
   count of groups, an integer from 0.
8. Tensor-core ops are warp-collective and carry no guard: a guard is per lane and could
   run the op on part of a warp, which PTX leaves undefined. (Under an `If` or a loop
   the condition must be the same on every lane of a warp; the verifier cannot see
   that, the threads interpreter stops where it is not.) `ldmatrix.shared.b16` reads
   one `u32` shared address register and writes 1, 2 or 4 `b32` registers, `trans` 0
   or 1. `mma` has a (`shape`, `from_type`, `type`) of `fragments.MMA` and reads A's,
   B's and C's registers in that order, as many as the fragments have, writing D's:
   A's and B's are `b32`, C's and D's `f32` or `s32` as `type` (`b32` for `f16`). Every
   operand is a register. `wmma_load` of `matrix` a or b (`f16`, eight `b32`
   registers) or c (`f32`, eight `f32`), `wmma_mma.f32.f16` (eight `f32` from eight
   `b32`, eight `b32` and eight `f32`) and `wmma_store.f32` (an address, eight `f32`)
   have `shape` m16n16k16 and each `layout`, `alayout`, `blayout` row or col; their
   address is a shared (`u32`) or global (`u64`) one as `space` says, and an optional
   last operand is a 32-bit integer stride in elements.
9. Hopper's asynchronous ops (mbarriers, bulk copies, `elect_sync`, `setmaxnreg`) and its
   stores (`stmatrix`, `tma_store` and its bulk groups) follow the rules listed in
   `phobos.lower.verify_hopper`.
10. A wgmma group in flight is left alone: within a block, from the `wgmma_commit` that
   closes a group to the `wgmma_wait` that retires it, no instruction but a wgmma reads or
   writes the group's accumulators or writes a register it reads (a register A, a
   descriptor). (Where a wait leaves groups in flight, and across a block's edges, the
   verifier cannot tell which groups remain, and checks nothing; what it checks is what
   `phobos.lower.overlap` may move.)

    >>> from phobos.lower.lir import Block, Kernel, Reg, inst
    >>> bad = Kernel("k", (), Block((inst("add", (Reg("a", "f32"),), (Reg("b", "f32"),), type="f32"),)))
    >>> try:
    ...     verify(bad)
    ... except LirError as exc:
    ...     print(exc)
    `k`: register `%b` is read but never written
"""

from __future__ import annotations

from phobos.lower import fragments, lir, verify_hopper


class LirError(Exception):
    """A broken lir invariant: a bug in the pass that produced it."""


def verify(kernel: lir.Kernel) -> None:
    """Raise `LirError` naming the first broken invariant; return None if all hold."""
    _Verifier(kernel).run()


class _Verifier:
    def __init__(self, kernel: lir.Kernel):
        self.kernel = kernel
        self.types: dict[str, str] = {p.name: p.type for p in kernel.params}
        self.written: set[str] = {p.name for p in kernel.params}
        self.read: list[lir.Reg] = []

    def fail(self, message: str, item=None) -> None:
        where = f" in `{lir.print_item(item).strip()}`" if isinstance(item, lir.Inst) else ""
        raise LirError(f"`{self.kernel.name}`: {message}{where}")

    def run(self) -> None:
        self.block(self.kernel.body, loops=0)
        for reg in self.read:
            if reg.name not in self.written:
                self.fail(f"register `{reg}` is read but never written")
        end = 0
        for buf in sorted(self.kernel.shared, key=lambda b: b.offset):
            if buf.offset % buf.align:
                self.fail(f"shared buffer `{buf.name}` at {buf.offset} is not {buf.align}-aligned")
            end = max(end, buf.offset + buf.size)
        if end > self.kernel.smem and not self.kernel.dynamic_smem:
            self.fail(f"shared buffers end at {end} bytes, past smem={self.kernel.smem}")
        walk, params = self.kernel.walk, {p.name: p.type for p in self.kernel.params}
        if walk and (len(walk) != 3 or any(params.get(n) != "u32" for n in walk)):
            self.fail(f"a grid walk takes three u32 params, not {list(walk)}")

    # -- registers -----------------------------------------------------------

    def reg(self, value, *, write: bool = False, item=None) -> None:
        if not isinstance(value, lir.Reg):
            if not isinstance(value, lir.Imm) or value.type not in lir.TYPES:
                self.fail(f"`{value}` is not an operand", item)
            return
        if value.type not in lir.TYPES:
            self.fail(f"register `{value}` has no type `{value.type}`", item)
        seen = self.types.setdefault(value.name, value.type)
        if seen != value.type:
            self.fail(f"register `{value}` is both {seen} and {value.type}", item)
        if write:
            self.written.add(value.name)
        else:
            self.read.append(value)

    def pred(self, value, item=None) -> None:
        if not isinstance(value, lir.Reg) or value.type != "pred":
            self.fail(f"`{value}` is used as a condition but is not a pred register", item)
        self.reg(value, item=item)

    # -- structure -----------------------------------------------------------

    def block(self, block: lir.Block, loops: int) -> None:
        flight = _Flight()
        for item in block.items:
            if isinstance(item, lir.Inst):
                self.inst(item)
                why = flight.step(item)
                if why is not None:
                    self.fail(why, item)
            elif isinstance(item, lir.If):
                self.pred(item.cond)
                self.block(item.then, loops)
                if item.orelse is not None:
                    self.block(item.orelse, loops)
            elif isinstance(item, lir.For):
                self.reg(item.var, write=True)
                if not lir.is_int(item.var.type):
                    self.fail(f"loop variable `{item.var}` is not an integer")
                for bound in (item.lo, item.hi, item.step):
                    self.reg(bound)
                    if bound.type != item.var.type:
                        self.fail(f"loop bound `{bound}` is not {item.var.type}")
                self.block(item.body, loops + 1)
            elif isinstance(item, lir.Loop):
                self.block(item.body, loops + 1)
            elif isinstance(item, (lir.Break, lir.Continue)):
                if loops == 0:
                    self.fail(f"`{type(item).__name__.lower()}` outside a loop")
                if item.cond is not None:
                    self.pred(item.cond)
            elif isinstance(item, lir.Return):
                if item.cond is not None:
                    self.pred(item.cond)
            else:
                self.fail(f"not a lir item: {item!r}")

    # -- instructions --------------------------------------------------------

    def inst(self, i: lir.Inst) -> None:
        family = lir.OPS.get(i.op)
        if family is None:
            self.fail(f"unknown op `{i.op}`", i)
        if i.guard is not None:
            self.pred(i.guard, i)
        for src in i.srcs:
            self.reg(src, item=i)
        for dest in i.dests:
            self.reg(dest, write=True, item=i)
        type_ = i.attr("type")
        if type_ is not None and type_ not in lir.TYPES:
            self.fail(f"unknown type `{type_}`", i)
        check = getattr(self, f"check_{family}", None)
        if check is not None:
            check(i, type_)

    def one_dest(self, i: lir.Inst, type_: str | None) -> None:
        if len(i.dests) != 1:
            self.fail(f"`{i.op}` writes one register, not {len(i.dests)}", i)
        if type_ is not None and lir.WIDTH[i.dests[0].type] != lir.WIDTH[type_]:
            self.fail(f"`{i.op}.{type_}` writes `{i.dests[0]}` of type {i.dests[0].type}", i)

    def check_arith(self, i: lir.Inst, type_: str | None) -> None:
        if type_ is None:
            self.fail(f"`{i.op}` needs a type", i)
        if i.op == "mul_wide":
            if len(i.dests) != 1 or lir.WIDTH[i.dests[0].type] != 2 * lir.WIDTH[type_]:
                self.fail("`mul_wide` writes a register twice its operands' width", i)
            return
        self.one_dest(i, type_)

    def check_bits(self, i: lir.Inst, type_: str | None) -> None:
        if i.op in ("and", "or", "xor", "not") and type_ == "pred":
            return self.one_dest(i, type_)
        if i.op in ("popc",):
            return self.one_dest(i, None)
        if i.op == "dp4a" and (type_ not in ("s32", "u32") or len(i.srcs) != 3):
            self.fail("`dp4a` is s32 or u32 and takes three operands: two words of four bytes "
                      "and the sum", i)  # fmt: skip
        self.one_dest(i, type_)

    def check_compare(self, i: lir.Inst, type_: str | None) -> None:
        if i.op == "setp":
            if len(i.dests) != 1 or i.dests[0].type != "pred":
                self.fail("`setp` writes one pred register", i)
            if i.attr("cmp") is None:
                self.fail("`setp` needs a comparison", i)
        else:
            if len(i.srcs) != 3:
                self.fail("`selp` takes two values and a pred", i)
            self.pred(i.srcs[2], i)
            self.one_dest(i, type_)

    def check_convert(self, i: lir.Inst, type_: str | None) -> None:
        if i.op == "cvt_x2":
            return self.check_cvt_x2(i, type_)
        if i.op != "cvt" and (len(i.dests) > 1 or len(i.srcs) > 1):
            return self.check_pack(i, type_)
        self.one_dest(i, type_)
        if i.op == "cvt" and i.attr("from_type") not in lir.TYPES:
            self.fail("`cvt` needs the type it converts from", i)

    def check_pack(self, i: lir.Inst, type_: str | None) -> None:
        """The packing forms of `mov`/`bitcast`: b32 <-> two 16-bit registers, b64 <->
        two 32-bit registers."""
        wide, halves = (i.srcs, i.dests) if len(i.dests) > 1 else (i.dests, i.srcs)
        width = {"b32": 4, "b64": 8}.get(type_)
        ok = (
            width is not None
            and len(wide) == 1
            and len(halves) == 2
            and all(isinstance(v, lir.Reg) for v in (*wide, *halves))
            and lir.WIDTH[wide[0].type] == width
            and all(lir.WIDTH[h.type] == width // 2 and h.type != "pred" for h in halves)
        )
        if not ok:
            self.fail(f"`{i.op}` with several operands packs two registers into a b32 or b64 "
                      "register of twice their width, or unpacks one; nothing else", i)  # fmt: skip

    def check_cvt_x2(self, i: lir.Inst, type_: str | None) -> None:
        if type_ not in ("f16", "bf16") or i.attr("from_type") != "f32":
            self.fail("`cvt_x2` rounds f32 (`from_type`) to f16 or bf16 (`type`)", i)
        if i.attr("rounding", "rn") not in ("rn", "rz"):
            self.fail(f"`cvt_x2` rounds by `rn` or `rz`, not `{i.attr('rounding')}`", i)
        if len(i.srcs) != 2 or not all(isinstance(v, lir.Reg) and v.type == "f32" for v in i.srcs):
            self.fail("`cvt_x2` takes two f32 registers, the low half's first", i)
        if len(i.dests) != 1 or i.dests[0].type != "b32":
            self.fail("`cvt_x2` writes one b32 register", i)

    def check_math(self, i: lir.Inst, type_: str | None) -> None:
        self.one_dest(i, type_)

    def check_memory(self, i: lir.Inst, type_: str | None) -> None:
        space = i.attr("space")
        if space not in lir.SPACES:
            self.fail(f"`{i.op}` needs a memory space, one of {', '.join(lir.SPACES)}", i)
        vec = i.attr("vec", 1)
        if vec not in (1, 2, 4):
            self.fail(f"vector width {vec} is not 1, 2 or 4", i)
        if type_ is None:
            self.fail(f"`{i.op}` needs a type", i)
        if vec * lir.WIDTH[type_] > 16:
            self.fail(f"a {vec} x {type_} access is wider than 16 bytes", i)
        if not i.srcs or not isinstance(i.srcs[0], lir.Reg):
            self.fail(f"`{i.op}` takes an address register first", i)
        addr = i.srcs[0].type
        wanted = ("u32", "u64") if space in ("shared", "local") else ("u64",)
        if addr not in wanted:
            self.fail(f"a {space} address is {' or '.join(wanted)}, not {addr}", i)
        if i.op == "ld" and len(i.dests) != vec:
            self.fail(f"a {vec}-wide load writes {vec} registers", i)
        if i.op == "st" and len(i.srcs) != 1 + vec:
            self.fail(f"a {vec}-wide store stores {vec} values", i)

    check_hopper = verify_hopper.check
    check_hopper_stores = verify_hopper.check

    def check_special(self, i: lir.Inst, type_: str | None) -> None:
        if i.attr("name") not in lir.SPECIAL_REGS:
            self.fail(f"unknown special register `{i.attr('name')}`", i)
        self.one_dest(i, None)

    def check_async(self, i: lir.Inst, type_: str | None) -> None:
        if i.dests:
            self.fail(f"`{i.op}` writes no register", i)
        if i.op == "cp_async_commit" and i.srcs:
            self.fail("`cp_async_commit` takes no operand", i)
        if i.op == "cp_async_wait":
            pending = i.attr("pending")
            if i.srcs or not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
                self.fail("`cp_async_wait` takes no operand and a `pending` count from 0", i)
        if i.op != "cp_async":
            return
        size = i.attr("size")
        if size not in (4, 8, 16):
            self.fail(f"`cp_async` copies 4, 8 or 16 bytes, not {size}", i)
        cache = i.attr("cache", "cg" if size == 16 else "ca")
        if cache not in ("ca", "cg") or (cache == "cg" and size != 16):
            self.fail(f"`cp_async` of {size} bytes has cache `{cache}`: `cg` copies 16 only", i)
        if len(i.srcs) not in (2, 3) or not all(isinstance(v, lir.Reg) for v in i.srcs[:2]):
            self.fail("`cp_async` takes a shared and a global address register, then "
                      "optionally a source size", i)  # fmt: skip
        dst, src = i.srcs[:2]
        if dst.type not in ("u32", "u64"):
            self.fail(f"a shared address is u32 or u64, not {dst.type}", i)
        if src.type != "u64":
            self.fail(f"a global address is u64, not {src.type}", i)
        if len(i.srcs) == 3:
            n = i.srcs[2]
            if n.type not in ("u32", "s32", "b32"):
                self.fail(f"a source size is a 32-bit integer, not {n.type}", i)
            if isinstance(n, lir.Imm) and not 0 <= n.value <= size:
                self.fail(f"a source size of {n.value} is not 0 to {size} bytes", i)

    # -- tensor cores --------------------------------------------------------

    def check_tensor(self, i: lir.Inst, type_: str | None) -> None:
        if i.guard is not None:
            self.fail(f"`{i.op}` runs on the whole warp and takes no guard: branch around "
                      "it on a condition the same on every lane of the warp", i)  # fmt: skip
        # Only a WMMA stride, the operand after the address and the values, may be an immediate.
        fixed = {"wmma_load": 1, "wmma_store": 9}.get(i.op, len(i.srcs))
        if not all(isinstance(v, lir.Reg) for v in i.srcs[:fixed]):
            self.fail(f"`{i.op}` takes registers, not immediates", i)
        getattr(self, f"check_{i.op}")(i, type_)

    def regs_of(self, i: lir.Inst, regs, count: int, types: tuple[str, ...], what: str) -> None:
        if len(regs) != count or any(r.type not in types for r in regs):
            verb = "writes" if what == "D" else "takes"
            self.fail(f"`{i.op}` {verb} {count} {' or '.join(types)} registers for {what}", i)

    def check_ldmatrix(self, i: lir.Inst, type_: str | None) -> None:
        if i.attr("space") != "shared" or type_ != "b16":
            self.fail("`ldmatrix` loads b16 matrices from shared memory: `ldmatrix.shared.b16`", i)
        if i.attr("trans", 0) not in (0, 1) or isinstance(i.attr("trans"), bool):
            self.fail(f"`ldmatrix` has `trans` 0 or 1, not {i.attr('trans')!r}", i)
        if len(i.srcs) != 1 or i.srcs[0].type != "u32":
            self.fail("`ldmatrix` takes one u32 shared address register", i)
        if len(i.dests) not in (1, 2, 4) or any(d.type != "b32" for d in i.dests):
            self.fail("`ldmatrix` writes 1, 2 or 4 b32 registers, one a matrix", i)

    def check_mma(self, i: lir.Inst, type_: str | None) -> None:
        key = (i.attr("shape"), i.attr("from_type"), type_)
        form = fragments.MMA.get(key)
        if form is None:
            known = ", ".join(f"{s} {ab} -> {acc}" for s, ab, acc in fragments.MMA)
            self.fail(f"`mma` has no form {key[0]} {key[1]} -> {key[2]}; it has {known}", i)
        acc = ("b32",) if type_ == "f16" else (type_,)
        na, nb, nc = form.a.regs, form.b.regs, form.c.regs
        if len(i.srcs) != na + nb + nc:
            self.fail(f"`mma` {key[0]} {key[1]} -> {key[2]} reads {na + nb + nc} registers "
                      f"(A {na}, B {nb}, C {nc}), not {len(i.srcs)}", i)  # fmt: skip
        self.regs_of(i, i.srcs[:na], na, ("b32",), "A")
        self.regs_of(i, i.srcs[na : na + nb], nb, ("b32",), "B")
        self.regs_of(i, i.srcs[na + nb :], nc, acc, "C")
        self.regs_of(i, i.dests, nc, acc, "D")

    def wmma_common(self, i: lir.Inst, layouts: tuple[str, ...]) -> None:
        if i.attr("shape") != "m16n16k16":
            self.fail(f"`{i.op}` has shape m16n16k16, not {i.attr('shape')}", i)
        for key in layouts:
            if i.attr(key) not in ("row", "col"):
                self.fail(f"`{i.op}` has `{key}` row or col, not {i.attr(key)}", i)

    def wmma_address(self, i: lir.Inst, values: int) -> None:
        """The address first, `values` registers, then optionally a stride."""
        space = i.attr("space")
        if space not in ("shared", "global"):
            self.fail(f"`{i.op}` accesses shared or global memory, not {space}", i)
        if len(i.srcs) not in (1 + values, 2 + values):
            self.fail(f"`{i.op}` takes an address, {values or 'no'} registers and an "
                      "optional stride", i)  # fmt: skip
        want = "u32" if space == "shared" else "u64"
        if i.srcs[0].type != want:
            self.fail(f"a {space} address is a {want} register, not {i.srcs[0].type}", i)
        if len(i.srcs) == 2 + values and i.srcs[-1].type not in ("u32", "s32", "b32"):
            self.fail(f"a stride is a 32-bit integer, not {i.srcs[-1].type}", i)

    def check_wmma_load(self, i: lir.Inst, type_: str | None) -> None:
        self.wmma_common(i, ("layout",))
        matrix = i.attr("matrix")
        want = {"a": "f16", "b": "f16", "c": "f32"}.get(matrix)
        if want is None or type_ != want:
            self.fail("`wmma_load` loads `matrix` a or b of f16 or c of f32", i)
        self.wmma_address(i, 0)
        self.regs_of(i, i.dests, 8, ("f32",) if matrix == "c" else ("b32",), matrix.upper())

    def check_wmma_mma(self, i: lir.Inst, type_: str | None) -> None:
        self.wmma_common(i, ("alayout", "blayout"))
        if (type_, i.attr("from_type")) != ("f32", "f16"):
            self.fail("`wmma_mma` multiplies f16 into f32: `wmma_mma.f32.f16`", i)
        if len(i.srcs) != 24:
            self.fail(f"`wmma_mma` reads 24 registers (A 8, B 8, C 8), not {len(i.srcs)}", i)
        self.regs_of(i, i.srcs[:8], 8, ("b32",), "A")
        self.regs_of(i, i.srcs[8:16], 8, ("b32",), "B")
        self.regs_of(i, i.srcs[16:], 8, ("f32",), "C")
        self.regs_of(i, i.dests, 8, ("f32",), "D")

    def check_wmma_store(self, i: lir.Inst, type_: str | None) -> None:
        self.wmma_common(i, ("layout",))
        if type_ != "f32" or i.dests:
            self.fail("`wmma_store.f32` stores D's eight f32 registers and writes none", i)
        self.wmma_address(i, 8)
        self.regs_of(i, i.srcs[1:9], 8, ("f32",), "D")


class _Flight:
    """The registers of the wgmma groups in flight in one block (invariant 10)."""

    def __init__(self):
        self.open_acc: set[str] = set()
        self.open_src: set[str] = set()
        self.acc: set[str] = set()
        self.src: set[str] = set()

    def step(self, i: lir.Inst) -> str | None:
        """Account for `i`; why it breaks invariant 10, or None."""
        if i.op == "wgmma_mma":
            self.open_acc.update(r.name for r in i.dests)
            self.open_src.update(r.name for r in i.srcs if isinstance(r, lir.Reg))
            return None
        if i.op == "wgmma_commit":
            self.acc |= self.open_acc
            self.src |= self.open_src - self.open_acc
            self.open_acc, self.open_src = set(), set()
            return None
        if i.op == "wgmma_wait":
            self.acc, self.src = set(), set()  # retired, or not known which remain
            return None
        if i.op.startswith("wgmma_"):
            return None
        for r in i.dests:
            if r.name in self.acc or r.name in self.src:
                return f"register `{r}` is written while a wgmma group in flight uses it"
        for r in (*i.srcs, *((i.guard,) if i.guard is not None else ())):
            if isinstance(r, lir.Reg) and r.name in self.acc:
                return f"register `{r}` is read while a wgmma group in flight writes it"
        return None
