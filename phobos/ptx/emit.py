"""PTX text from lir: one `.entry` per kernel, almost op for op.

    >>> from phobos.lower.lir import Block, Kernel, Param, Reg, inst
    >>> t = Reg("t", "u32")
    >>> k = Kernel("k", (Param("n", "s32"),), Block((inst("sreg", (t,), (), name="tid.x"),)),
    ...            threads=128)
    >>> print(emit_kernel(k, "sm_90"))  # doctest: +NORMALIZE_WHITESPACE
    .visible .entry k(
        .param .s32 n
    )
    .maxntid 128, 1, 1
    {
        .reg .b32 %r<2>;
        // %r0 = %n, %r1 = %t
        ld.param.s32 %r0, [n];
        mov.u32 %r1, %tid.x;
        ret;
    }

The choices the lowering can rely on:

- **Registers**: each lir register becomes one PTX register named by its class and a
  number: `%p` pred; `%rc` 8-bit (held in a .b16 register, its low byte meaningful;
  only ld/st/cvt/mov/selp and bitwise ops take it); `%rs` 16-bit integers; `%h` f16
  and `%hb` bf16 (both .b16: PTX moves 16-bit floats as bits); `%r` 32-bit integers;
  `%f` f32; `%rd` 64-bit integers; `%fd` f64. A comment under the declarations maps
  each back to its lir name.
- **Parameters** are `.param` slots in `kernel.params` order, named after the param
  (16-bit floats as .b16), loaded into their registers at entry with `ld.param`.
- **Shared memory**: lir's shared addresses are byte offsets into the CTA's shared
  window (a `SharedBuffer` at `offset` starts at address `offset`), so the threads
  interpreter and the allocator need know nothing of PTX. The window is
  `.shared .align A .b8 $smem[kernel.smem]`, or with `dynamic_smem` the
  `.extern .shared .align A .b8 $dsmem_<kernel>[]` before the entry (module scope), A
  the strictest alignment a buffer asks for (16 at least),
  sized at launch; the entry takes its address
  once (`mov.u32 %rb, $smem;`) and each shared access adds it to the lir offset.
- **Immediates**: integers in decimal (bit types in hex), f32 as `0fXXXXXXXX`, f64 as
  `0dXXXXXXXXXXXXXXXX`; f16/bf16 immediates, which PTX arithmetic does not take, are
  first moved into a register (`mov.b16 %h3, 0x3C00;`).
- **Control flow**: `If` branches around its arms, `For` tests at the top (`setp.ge`
  in the variable's type: signed for s and b types, unsigned for u) and increments at
  its continue label, `Loop` branches back, `Break`/`Continue` jump to the innermost
  loop's end/continue label, `Return` is `ret`. A condition is a guard: `@%p bra`.
- **Errors**: a lir instruction with no template raises `NoTemplate` naming it (a bug
  in the lowering); one that needs a newer chip than the target raises `TargetError`
  (code E0590) with the instruction's span.
"""

from __future__ import annotations

import re
import struct

from phobos.lower import lir
from phobos.ptx import fuse, ops
from phobos.ptx.ops import NoTemplate, PtxError, TargetError
from phobos.ptx.targets import FEATURES, Target
from phobos.ptx.targets import target as lookup_target

__all__ = ["emit_kernel", "emit_module", "NoTemplate", "PtxError", "TargetError"]

# lir type -> (register prefix, PTX register type)
REG_CLASS: dict[str, tuple[str, str]] = {
    "pred": ("p", "pred"),
    **{t: ("rc", "b16") for t in ("b8", "s8", "u8")},
    **{t: ("rs", "b16") for t in ("b16", "s16", "u16")},
    "f16": ("h", "b16"),
    "bf16": ("hb", "b16"),
    **{t: ("r", "b32") for t in ("b32", "s32", "u32")},
    "f32": ("f", "f32"),
    **{t: ("rd", "b64") for t in ("b64", "s64", "u64")},
    "f64": ("fd", "f64"),
}
CLASS_ORDER = ("p", "rc", "rs", "h", "hb", "r", "f", "rd", "fd", "rb")

# lir param type -> the .param slot's type
PARAM_TYPE = {t: ops.mem_type(t) for t in lir.TYPES if t != "pred"}

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+")


def emit_module(kernels, target: str = "sm_90") -> str:
    """A whole PTX module: the header, then one `.entry` per kernel.

    >>> from phobos.lower.lir import Block, Kernel
    >>> print(emit_module([Kernel("k", (), Block(()))], "sm_80").splitlines()[:3])
    ['.version 8.0', '.target sm_80', '.address_size 64']
    """
    tgt = lookup_target(target)
    head = f".version {tgt.ptx_version}\n.target {tgt.name}\n.address_size 64\n"
    return head + "".join("\n" + emit_kernel(k, tgt.name) + "\n" for k in kernels)


def emit_kernel(kernel: lir.Kernel, target: str = "sm_90") -> str:
    """One `.entry` for `kernel` (no module header: see `emit_module`)."""
    return Emitter(kernel, lookup_target(target)).run()


def _hex_float(value: float, type_: str) -> str:
    if type_ == "f64":
        return f"0d{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"
    if type_ == "f32":
        return f"0f{struct.unpack('<I', struct.pack('<f', value))[0]:08X}"
    if type_ == "f16":
        return f"0x{struct.unpack('<H', struct.pack('<e', value))[0]:04X}"
    # bf16: f32's top half, rounded to nearest even (NaN kept quiet)
    word = struct.unpack("<I", struct.pack("<f", value))[0]
    if value != value:
        return "0x7FC0"
    word += 0x7FFF + ((word >> 16) & 1)
    return f"0x{(word >> 16) & 0xFFFF:04X}"


class Emitter:
    """Emits one kernel. The rules in `phobos.ptx.ops` call the methods below."""

    def __init__(self, kernel: lir.Kernel, target: Target):
        self.kernel = kernel
        self.target = target
        self.names: dict[str, str] = {}  # lir register name -> PTX name
        self.counts: dict[str, int] = {}  # class prefix -> registers so far
        self.ptx_types: dict[str, str] = {}  # class prefix -> PTX register type
        self.lines: list[str] = []
        self.prologue: list[str] = []
        self.pending: list[str] = []  # helper lines of the instruction being emitted
        self.labels = 0
        self.loops: list[tuple[str, str]] = []  # (continue label, end label)
        self.smem_base: str | None = None
        # id(inst) -> None (dropped) or a paired cvt; measured to help ptxas on sm_90 only
        self.fused = fuse.pairs(kernel) if target.sm >= fuse.FROM_SM else {}

    # -- registers -----------------------------------------------------------

    def _new(self, type_: str) -> str:
        if type_ not in REG_CLASS:
            raise NoTemplate(f"`{self.kernel.name}`: no PTX register for type `{type_}`")
        prefix, ptx_type = REG_CLASS[type_]
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        self.ptx_types[prefix] = ptx_type
        return f"%{prefix}{n}"

    def name(self, reg: lir.Reg) -> str:
        found = self.names.get(reg.name)
        if found is None:
            found = self.names[reg.name] = self._new(reg.type)
        return found

    def temp(self, type_: str) -> str:
        """A fresh register of lir type `type_`, for one rule's helper lines."""
        return self._new(type_)

    # -- operands ------------------------------------------------------------

    def imm(self, value: lir.Imm) -> str:
        t, v = value.type, value.value
        if lir.is_float(t):
            return _hex_float(float(v), t)
        if isinstance(v, float):
            if not v.is_integer():
                raise NoTemplate(f"`{self.kernel.name}`: immediate `{value}` is not an integer")
            v = int(v)
        if t == "pred":
            return "1" if v else "0"
        bits = lir.WIDTH[t] * 8
        v &= (1 << bits) - 1
        if lir.is_signed(t) and v >= 1 << (bits - 1):
            v -= 1 << bits
        if t.startswith("b"):
            return hex(v)
        return str(v)

    def operand(self, value: lir.Value, imm_ok: bool = False) -> str:
        """A register's PTX name, or an immediate; f16/bf16/pred immediates go through
        a register unless the instruction takes them as bits (`imm_ok`)."""
        if isinstance(value, lir.Reg):
            return self.name(value)
        if value.type in ("f16", "bf16", "pred") and not imm_ok:
            tmp = self.temp(value.type)
            mov = "mov.pred" if value.type == "pred" else "mov.b16"
            self.pre(f"{mov} {tmp}, {self.imm(value)}")
            return tmp
        return self.imm(value)

    def dest(self, i: lir.Inst) -> str:
        if len(i.dests) != 1 and not (i.op == "shfl" and len(i.dests) == 2):
            self.fail(i, f"writes {len(i.dests)} registers, not one")
        return self.name(i.dests[0])

    def as_u32(self, value: lir.Value) -> str:
        """`value` as a u32 operand (a shift amount, ...), narrowed or widened."""
        if isinstance(value, lir.Imm):
            return str(int(value.value) & 0xFFFFFFFF)
        if lir.WIDTH[value.type] == 4 and lir.is_int(value.type):
            return self.name(value)
        if not lir.is_int(value.type):
            raise NoTemplate(f"`{self.kernel.name}`: `{value}` ({value.type}) is not an integer")
        tmp = self.temp("u32")
        src = ops.CVT_NAME.get(value.type, value.type)
        self.pre(f"cvt.u32.{src} {tmp}, {self.name(value)}")
        return tmp

    def address(self, i: lir.Inst) -> str:
        """`[%rd1+16]`: the first source plus the `offset` attr; shared offsets are
        rebased onto the shared window."""
        addr = i.srcs[0]
        if not isinstance(addr, lir.Reg):
            self.fail(i, "takes an address register first")
        text = self.name(addr)
        if i.attr("space") == "shared":
            base = self.shared_base(i)
            if addr.type != "u32":
                narrow = self.temp("u32")
                self.pre(f"cvt.u32.{addr.type} {narrow}, {text}")
                text = narrow
            tmp = self.temp("u32")
            self.pre(f"add.u32 {tmp}, {text}, {base}")
            text = tmp
        offset = int(i.attr("offset", 0))
        if offset:
            text += f"{offset:+d}"
        return f"[{text}]"

    def shared_base(self, i: lir.Inst) -> str:
        if self.smem_base is None:
            if not self.kernel.smem and not self.kernel.dynamic_smem:
                self.fail(i, "accesses shared memory in a kernel with none (smem=0)")
            self.smem_base = self._new_base()
            window = self.dsmem() if self.kernel.dynamic_smem else "$smem"
            self.prologue.append(f"mov.u32 {self.smem_base}, {window};")
        return self.smem_base

    def dsmem(self) -> str:
        return f"$dsmem_{self.kernel.name}"

    def _new_base(self) -> str:
        n = self.counts.get("rb", 0)
        self.counts["rb"] = n + 1
        self.ptx_types["rb"] = "b32"
        return f"%rb{n}"

    # -- errors --------------------------------------------------------------

    def fail(self, i: lir.Inst, message: str):
        text = lir.print_item(i).strip()
        raise NoTemplate(
            f"`{self.kernel.name}`: no PTX template for `{i.op}` in `{text}`: `{i.op}` {message}"
        )

    def needs(self, i: lir.Inst, feature: str) -> None:
        if not self.target.has(feature):
            what, first = FEATURES[feature]
            chip = f"sm_{first // 10}a" if first >= 900 else f"sm_{first}"
            raise TargetError(
                f"`{i.op}` needs {what}, which {self.target.name} does not have "
                f"(it needs {chip} or newer)",
                i.span,
            )

    # -- emission ------------------------------------------------------------

    def pre(self, line: str) -> None:
        """A helper line before the current instruction: unguarded, no side effects."""
        self.pending.append(line)

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def label(self, kind: str) -> str:
        self.labels += 1
        return f"$L_{kind}{self.labels}"

    def place(self, label: str) -> None:
        self.lines.append(label + ":")

    def branch(self, label: str, cond: lir.Reg | None = None, negated: bool = False) -> None:
        if cond is None:
            self.emit(f"bra.uni {label};")
        else:
            self.emit(f"@{'!' if negated else ''}{self.name(cond)} bra {label};")

    def inst(self, i: lir.Inst) -> None:
        if id(i) in self.fused:  # `phobos.ptx.fuse`: two conversions packed as one
            pair = self.fused[id(i)]
            if pair is not None:
                elem, word, hi, lo = pair
                x2 = fuse.X2[elem]
                self.emit(f"cvt.rn.{x2}.f32 {self.name(word)}, {self.name(hi)}, {self.name(lo)};")
            return
        rule = ops.RULES.get(i.op)
        if rule is None:
            raise NoTemplate(f"`{self.kernel.name}`: no PTX template for op `{i.op}`")
        self.pending = []
        ops.check_attrs(self, i)
        text = rule(self, i)
        guard = ""
        if i.guard is not None:
            guard = f"@{'!' if i.guard_negated else ''}{self.name(i.guard)} "
        for line in self.pending:
            self.emit(line + ";")
        self.emit(f"{guard}{text};")

    def block(self, block: lir.Block) -> None:
        for item in block.items:
            if isinstance(item, lir.Inst):
                self.inst(item)
            elif isinstance(item, lir.If):
                self.if_(item)
            elif isinstance(item, lir.For):
                self.for_(item)
            elif isinstance(item, lir.Loop):
                top, end = self.label("loop"), self.label("loop_end")
                self.place(top)
                self.loops.append((top, end))
                self.block(item.body)
                self.loops.pop()
                self.branch(top)
                self.place(end)
            elif isinstance(item, (lir.Break, lir.Continue)):
                if not self.loops:
                    word = type(item).__name__.lower()
                    raise NoTemplate(f"`{self.kernel.name}`: `{word}` outside a loop")
                cont, end = self.loops[-1]
                self.branch(end if isinstance(item, lir.Break) else cont, item.cond, item.negated)
            elif isinstance(item, lir.Return):
                if item.cond is None:
                    self.emit("ret;")
                else:
                    self.emit(f"@{'!' if item.negated else ''}{self.name(item.cond)} ret;")
            else:
                raise NoTemplate(f"`{self.kernel.name}`: not a lir item: {item!r}")

    def if_(self, item: lir.If) -> None:
        has_else = item.orelse is not None and item.orelse.items
        end = self.label("endif")
        if has_else and not item.then.items:  # only an else arm: skip it where cond holds
            self.branch(end, item.cond)
            self.block(item.orelse)
            self.place(end)
            return
        other = self.label("else") if has_else else end
        self.branch(other, item.cond, negated=True)
        self.block(item.then)
        if has_else:
            self.branch(end)
            self.place(other)
            self.block(item.orelse)
        self.place(end)

    def for_(self, item: lir.For) -> None:
        var, t = item.var, item.var.type
        if t in ops.EIGHT:
            raise NoTemplate(f"`{self.kernel.name}`: loop variable `{var}` is 8-bit")
        top, cont, end = self.label("for"), self.label("for_next"), self.label("for_end")
        cmp_type = ops.int_as(t, signed=True)
        ge = "hs" if cmp_type.startswith("u") else "ge"
        done = self.temp("pred")
        self.emit(f"mov.{ops.int_as(t)} {self.name(var)}, {self.operand(item.lo)};")
        self.place(top)
        self.emit(f"setp.{ge}.{cmp_type} {done}, {self.name(var)}, {self.operand(item.hi)};")
        self.emit(f"@{done} bra {end};")
        self.loops.append((cont, end))
        self.block(item.body)
        self.loops.pop()
        self.place(cont)
        step = self.operand(item.step)
        self.emit(f"add.{ops.int_as(t)} {self.name(var)}, {self.name(var)}, {step};")
        self.branch(top)
        self.place(end)

    # -- the entry -----------------------------------------------------------

    def run(self) -> str:
        k = self.kernel
        if not _IDENT.fullmatch(k.name):
            raise NoTemplate(f"kernel name `{k.name}` is not a PTX identifier")
        slots = []
        for n, p in enumerate(k.params):
            if p.type not in PARAM_TYPE:
                raise NoTemplate(f"`{k.name}`: parameter `{p.name}` has no slot type for {p.type}")
            slot = p.name if _IDENT.fullmatch(p.name) else f"_param{n}"
            slots.append(f"\t.param .{PARAM_TYPE[p.type]} {slot}")
            reg = self.name(lir.Reg(p.name, p.type))
            self.prologue.append(f"ld.param.{PARAM_TYPE[p.type]} {reg}, [{slot}];")
        for m in k.maps:  # after every other slot: the launcher encodes each (`Kernel.maps`)
            if not _IDENT.fullmatch(m.name):
                raise NoTemplate(f"`{k.name}`: tensor map `{m.name}` is not a PTX identifier")
            slots.append(f"\t.param .align 64 .b8 {m.name}[128]")
        for name, type_ in lir.registers(k).items():
            self.name(lir.Reg(name, type_))
        self.block(k.body)
        self.emit("ret;")

        out = []
        align = max([16, *(b.align for b in k.shared)])  # the strictest buffer's
        if k.dynamic_smem:  # an .extern array lives at module scope, one per kernel
            out.append(f".extern .shared .align {align} .b8 {self.dsmem()}[];")
        if slots:
            out += [f".visible .entry {k.name}(", ",\n".join(slots), ")"]
        else:
            out.append(f".visible .entry {k.name}()")
        out.append(f".maxntid {k.threads}, 1, 1")
        if k.cluster != 1:
            out.append(f".reqnctapercluster {k.cluster}, 1, 1")
        if k.min_blocks is not None:
            out.append(f".minnctapersm {k.min_blocks}")
        if k.max_regs is not None:
            out.append(f".maxnreg {k.max_regs}")
        out.append("{")
        if k.smem and not k.dynamic_smem:
            out.append(f"\t.shared .align {align} .b8 $smem[{k.smem}];")
        for prefix in CLASS_ORDER:
            if prefix in self.counts:
                out.append(f"\t.reg .{self.ptx_types[prefix]} %{prefix}<{self.counts[prefix]}>;")
        out.extend("\t" + line for line in self._name_map())
        out.extend("\t" + line for line in self.prologue)
        out.extend(self.lines)
        out.append("}")
        return "\n".join(out)

    def _name_map(self) -> list[str]:
        """`// %f0 = %acc, ...` comments, wrapped."""
        pairs = [f"{ptx} = %{name}" for name, ptx in self.names.items()]
        lines, line = [], ""
        for pair in pairs:
            if line and len(line) + len(pair) > 96:
                lines.append("// " + line)
                line = ""
            line += (", " if line else "") + pair
        if line:
            lines.append("// " + line)
        return lines
