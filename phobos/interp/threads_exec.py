"""One lir instruction of the threads interpreter, for the threads where it runs.

`InstOps.inst` applies the guard, dispatches on the op's family (`lir.OPS`) and puts the
instruction's span on any fault. The value families (arithmetic, bits, comparisons,
conversions, math) read their operands in the instruction's type and write the result
under the mask; memory is `threads_access`, warp ops `threads_warp`, asynchronous copies
`threads_async`, the tensor-core ops `threads_tensor`.

    >>> sorted(set(lir.OPS) - set(HANDLERS))
    []
"""

from __future__ import annotations

import numpy as np

from phobos.interp.errors import InterpError
from phobos.interp.threads_ops import arith, bits, compare, math
from phobos.interp.threads_values import UINT, bits_of, cvt, from_bits
from phobos.lower import lir

# The handler method of each op.
HANDLERS: dict[str, str] = {op: "do_" + family for op, family in lir.OPS.items()}
HANDLERS.update({"ld": "do_ld", "st": "do_st", "atom": "do_atom", "red": "do_atom"})
HANDLERS.update({"shfl": "do_shfl", "vote": "do_vote", "bar": "do_bar", "fence": "do_fence"})
HANDLERS.update({op: "do_" + op for op in lir.ASYNC | lir.TENSOR | lir.HOPPER | lir.HOPPER_STORES})
HANDLERS["bar"] = "do_barrier"  # threads_hopper: do_bar, or a named barrier across strands


def _wide(t: str) -> str:
    return ("s" if lir.is_signed(t) else "u") + str(16 * lir.WIDTH[t])


class InstOps:
    """The instruction half of a CTA's run (mixed into the CTA)."""

    def inst(self, i: lir.Inst, eff) -> None:
        mask = eff
        if i.guard is not None:
            guard = self.value(i.guard, "pred")
            mask = eff & (~guard if i.guard_negated else guard)
        if not mask.any():
            return
        handler = HANDLERS.get(i.op)
        if handler is None:
            raise InterpError(f"unknown op `{i.op}`", i.span)
        try:
            getattr(self, handler)(i, mask)
        except InterpError as exc:
            if exc.span is not None:
                raise
            raise InterpError(f"{exc.message} in `{lir.print_item(i).strip()}`", i.span) from None

    def _type(self, i: lir.Inst, default=None) -> str:
        t = i.attr("type") or default
        if t is None:
            raise InterpError(f"`{i.op}` needs a type")
        return t

    def _read(self, i: lir.Inst, t: str):
        return [self.value(v, t) for v in i.srcs]

    # -- families -------------------------------------------------------------

    def do_arith(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        out = arith(
            i.op, t, self._read(i, t), mask, rounding=i.attr("rounding"), sat=i.attr("sat", False)
        )
        self.write(i.dests[0], out, _wide(t) if i.op == "mul_wide" else t, mask)

    def do_bits(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        if i.op in ("shl", "shr"):
            xs = [self.value(i.srcs[0], t), self.value(i.srcs[1], "u32")]
            out_t = t
        elif i.op == "popc":
            xs, out_t = [self.value(i.srcs[0], t)], "u32"
        elif i.op == "prmt":
            xs, out_t = self._read(i, "b32"), "b32"
        elif i.op == "dp4a":
            signed = lir.is_signed(t) or lir.is_signed(i.attr("from_type") or t)
            out_t = "s32" if signed else "u32"
            xs = [self.value(i.srcs[0], "u32"), self.value(i.srcs[1], "u32")]
            xs.append(self.value(i.srcs[2], out_t))
        else:
            xs, out_t = self._read(i, t), t
        out = bits(i.op, t, xs, mode=i.attr("mode"), from_type=i.attr("from_type"))
        self.write(i.dests[0], out, out_t, mask)

    def do_compare(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        if i.op == "setp":
            a, b = (self.value(v, t) for v in i.srcs[:2])
            p = compare(i.attr("cmp"), t, a, b)
            self.write(i.dests[0], p, "pred", mask)
            if len(i.dests) > 1:  # setp p|q: q is the negation
                self.write(i.dests[1], ~p, "pred", mask)
            return
        a, b = (self.value(v, t) for v in i.srcs[:2])
        c = self.value(i.srcs[2], "pred")
        self.write(i.dests[0], np.where(c, a, b), t, mask)

    def do_convert(self, i: lir.Inst, mask) -> None:
        if i.op == "cvt_x2":
            return self._cvt_x2(i, mask)
        if i.op == "cvt":
            src, dst = i.attr("from_type"), self._type(i)
            x = self.value(i.srcs[0], src)
            out = cvt(x, src, dst, i.attr("rounding"), bool(i.attr("sat", False)))
            self.write(i.dests[0], out, dst, mask)
            return
        if len(i.srcs) > 1 or len(i.dests) > 1:
            return self._pack(i, mask)
        if i.op == "bitcast":
            src = i.srcs[0]
            t = src.type
            self.write(i.dests[0], self.value(src, t), t, mask)
            return
        t = self._type(i, i.dests[0].type)
        self.write(i.dests[0], self.value(i.srcs[0], t), t, mask)

    def _cvt_x2(self, i: lir.Inst, mask) -> None:
        """Two f32 rounded to f16 or bf16, the first into the low half of the word."""
        t = self._type(i)
        lo, hi = (cvt(self.value(v, "f32"), "f32", t, i.attr("rounding", "rn")) for v in i.srcs)
        high = bits_of(hi, t).astype(np.uint32) << np.uint32(16)
        word = bits_of(lo, t).astype(np.uint32) | high
        self.write(i.dests[0], word, "b32", mask)

    def _pack(self, i: lir.Inst, mask) -> None:
        """`mov`/`bitcast` of several registers into one (low bits first) or back."""
        if len(i.dests) == 1:
            dest = i.dests[0]
            width = lir.WIDTH[dest.type]
            part = width // len(i.srcs)
            if part * len(i.srcs) != width or part not in UINT:
                raise InterpError(f"{len(i.srcs)} values do not pack into a {dest.type}")
            out = np.zeros(self.T, np.uint64)
            for k, v in enumerate(i.srcs):
                if lir.WIDTH[v.type] != part:
                    raise InterpError(f"`{v}` is not {8 * part} bits wide")
                word = bits_of(self.value(v, v.type), v.type).astype(np.uint64)
                out |= word << np.uint64(8 * part * k)
            bits_ = out.astype(UINT[width])
            self.write(dest, from_bits(bits_, dest.type), dest.type, mask)
            return
        (src,) = i.srcs
        width = lir.WIDTH[src.type]
        part = width // len(i.dests)
        if part * len(i.dests) != width or part not in UINT:
            raise InterpError(f"a {src.type} does not unpack into {len(i.dests)} registers")
        word = bits_of(self.value(src, src.type), src.type).astype(np.uint64)
        for k, d in enumerate(i.dests):
            piece = (word >> np.uint64(8 * part * k)) & np.uint64((1 << (8 * part)) - 1)
            t = d.type if lir.WIDTH[d.type] == part else None
            if t is None:
                raise InterpError(f"`{d}` is not {8 * part} bits wide")
            self.write(d, from_bits(piece.astype(UINT[part]), t), t, mask)

    def do_math(self, i: lir.Inst, mask) -> None:
        t = self._type(i)
        out = math(i.op, t, self.value(i.srcs[0], t), i.attr("rounding"), bool(i.attr("ftz")))
        self.write(i.dests[0], out, t, mask)

    def do_special(self, i: lir.Inst, mask) -> None:
        name = i.attr("name")
        grid, cta = self.launch.grid, self.ctaid
        axis = {"x": 0, "y": 1, "z": 2}
        if name == "tid.x":
            v = self.tid
        elif name in ("tid.y", "tid.z", "smid"):
            v = 0
        elif name == "ntid.x":
            v = self.T
        elif name.startswith("ctaid."):
            v = cta[axis[name[-1]]]
        elif name.startswith("nctaid."):
            v = grid[axis[name[-1]]]
        elif name == "cluster_ctarank":  # clusters run along x (`threads_cluster`)
            v = cta[0] % self.kernel.cluster
        elif name == "clusterid.x":
            v = cta[0] // self.kernel.cluster
        elif name == "nclusterid.x":
            v = grid[0] // self.kernel.cluster
        elif name == "laneid":
            v = self.tid % 32
        elif name == "warpid":
            v = self.tid // 32
        else:
            raise InterpError(f"unknown special register `{name}`")
        value = np.broadcast_to(np.asarray(v, np.int64), (self.T,)).astype(np.uint32)
        self.write(i.dests[0], value, "u32", mask)

    def do_bar(self, i: lir.Inst, mask) -> None:
        running = ~self.returned
        if (mask != running).any():
            raise InterpError(
                f"`bar` is reached by {int(mask.sum())} of the block's {int(running.sum())} "
                "running threads: the others would wait for good (a barrier needs uniform "
                "control)",
                i.span,
            )
        self.launch.barriers += 1
        if self.recorder is not None:
            self.recorder.barrier()

    def do_fence(self, i: lir.Inst, mask) -> None:
        """A fence orders memory; the interpreter's memory is already in order."""

    def do_trap(self, i: lir.Inst, mask) -> None:
        raise InterpError("the kernel trapped", i.span)
