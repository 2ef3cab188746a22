"""Reading lir's text form back: `parse_kernel(print_kernel(k)) == k`.

A lir dump from `phobos-compile --emit lir` or `PHOBOS_DUMP` can be pasted into a
test and run by `phobos.interp.threads` or emitted again.

    >>> from phobos.lower.lir import print_kernel
    >>> text = '''kernel k(%out: u64) threads=32 smem=0 {
    ...   reg %t: u32
    ...   %t = sreg.tid.x
    ... }'''
    >>> print(print_kernel(parse_kernel(text)) == text)
    True
"""

from __future__ import annotations

import re

from phobos.lower import lir

_PRMT_MODES = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}

# The words a dotted suffix may hold, by the attribute they set.
_SUFFIX_WORDS: dict[str, set[str]] = {
    # shfl and vote modes, and prmt's byte-permute modes
    "mode": {"bfly", "up", "down", "idx", "any", "all", "uni", "ballot"} | _PRMT_MODES,
    "cmp": {
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "lo",
        "ls",
        "hi",
        "hs",
        "equ",
        "neu",
        "ltu",
        "leu",
        "gtu",
        "geu",
        "nan",
        "num",
    },  # fmt: skip
    "space": set(lir.SPACES),
    "scope": {"cta", "gpu", "sys"},
    "sem": {"acquire", "release", "relaxed", "acq_rel", "sc"},
    "rounding": {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "approx", "full"},
    "atom": {"add", "cas", "exch", "min", "max", "inc", "dec", "and", "or", "xor"},
}
_WORD_KEY = {word: key for key, words in _SUFFIX_WORDS.items() for word in words}


class LirSyntaxError(ValueError):
    """The text is not lir; the message names the line."""


def _value(text: str, types: dict[str, str], line_no: int) -> lir.Value:
    text = text.strip()
    if text.startswith("%"):
        name = text[1:]
        if name not in types:
            raise LirSyntaxError(f"line {line_no}: register `{text}` is not declared")
        return lir.Reg(name, types[name])
    raw, _, type_ = text.rpartition(":")
    if type_ not in lir.TYPES:
        raise LirSyntaxError(f"line {line_no}: `{text}` is not an operand (`%reg` or `value:type`)")
    try:
        return lir.Imm(int(raw), type_)
    except ValueError:
        pass
    try:
        return lir.Imm(float(raw), type_)
    except ValueError:
        raise LirSyntaxError(f"line {line_no}: `{text}` is not an operand") from None


def _parse_extra(text: str) -> dict:
    extra = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, raw = part.partition("=")
        try:
            value: object = int(raw)
        except ValueError:
            value = raw
        extra[key] = value
    return extra


def _inst(text: str, types: dict[str, str], line_no: int) -> lir.Inst:
    guard = None
    negated = False
    m = re.match(r"@(!?)(%\w+)\s+(.*)", text)
    if m:
        negated = m.group(1) == "!"
        guard = _value(m.group(2), types, line_no)
        text = m.group(3)
    dests: list[lir.Reg] = []
    if " = " in text.split("[")[0]:
        lhs, text = text.split(" = ", 1)
        dests = [_value(d, types, line_no) for d in lhs.split(",")]
    extra: dict = {}
    if "  [" in text:
        text, _, tail = text.partition("  [")
        extra = _parse_extra(tail.rstrip("]"))
    head, _, srcs_text = text.strip().partition(" ")
    words = head.split(".")
    op, suffix = words[0], words[1:]
    if op not in lir.OPS:
        raise LirSyntaxError(f"line {line_no}: unknown op `{op}`")
    attrs: dict = {}
    types_seen: list[str] = []
    i = 0
    while i < len(suffix):
        word = suffix[i]
        if op == "sreg" and i + 1 < len(suffix) and f"{word}.{suffix[i + 1]}" in lir.SPECIAL_REGS:
            attrs["name"] = f"{word}.{suffix[i + 1]}"
            i += 2
            continue
        if op == "sreg" and word in lir.SPECIAL_REGS:
            attrs["name"] = word
        elif word in lir.TYPES:
            types_seen.append(word)
        elif word == "sat":
            attrs["sat"] = True
        elif re.fullmatch(r"v[24]", word):
            attrs["vec"] = int(word[1:])
        elif word in _WORD_KEY and _WORD_KEY[word] not in attrs:
            attrs[_WORD_KEY[word]] = word
        else:
            raise LirSyntaxError(f"line {line_no}: `.{word}` means nothing on `{op}`")
        i += 1
    if types_seen:
        attrs["type"] = types_seen[0]
    if len(types_seen) > 1:
        attrs["from_type"] = types_seen[1]
    attrs.update(extra)
    srcs = [_value(s, types, line_no) for s in srcs_text.split(",")] if srcs_text else []
    return lir.inst(op, dests, srcs, guard=guard, guard_negated=negated, **attrs)


def parse_kernel(text: str) -> lir.Kernel:
    """A kernel from its text form; `LirSyntaxError` names the first bad line."""
    lines = [(n + 1, line.strip()) for n, line in enumerate(text.splitlines())]
    lines = [(n, line) for n, line in lines if line and not line.startswith("//")]
    if not lines:
        raise LirSyntaxError("empty lir text")
    n, head = lines[0]
    m = re.fullmatch(r"kernel (\w+)\((.*)\)((?: \S+)*) \{", head)
    if not m:
        raise LirSyntaxError(f"line {n}: expected `kernel NAME(PARAMS) ... {{`")
    params = []
    types: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in m.group(2).split(","))):
        pm = re.fullmatch(r"%(\w+): (\w+)", part)
        if not pm or pm.group(2) not in lir.TYPES:
            raise LirSyntaxError(f"line {n}: bad parameter `{part}`")
        params.append(lir.Param(pm.group(1), pm.group(2)))
        types[pm.group(1)] = pm.group(2)
    opts: dict = {}
    for word in m.group(3).split():
        key, _, value = word.partition("=")
        if key == "walk":
            opts[key] = tuple(v.lstrip("%") for v in value.split(","))
            continue
        opts[key] = int(value) if value else True
    shared = []
    maps: list[lir.TensorMap] = []
    pos = 1
    while pos < len(lines):
        n, line = lines[pos]
        sm = re.fullmatch(r"shared (\w+) @(\d+) size=(\d+) align=(\d+)", line)
        rm = re.fullmatch(r"reg %(\w+): (\w+)", line)
        tm = re.fullmatch(r"tmap (\w+) = (\w+) (\w+) \[(\w+), (\w+)\] "
                          r"box=\[(\d+), (\d+)\] swizzle=(\w+)", line)  # fmt: skip
        if tm:
            dims = tuple(int(d) if d.isdigit() else d for d in tm.group(4, 5))
            box = (int(tm.group(6)), int(tm.group(7)))
            maps.append(lir.TensorMap(tm.group(1), tm.group(2), tm.group(3), dims, box,
                                      tm.group(8)))  # fmt: skip
        elif sm:
            shared.append(lir.SharedBuffer(sm.group(1), *map(int, sm.group(2, 3, 4))))
        elif rm:
            types[rm.group(1)] = rm.group(2)
        else:
            break
        pos += 1

    def block(pos: int) -> tuple[lir.Block, int]:
        items: list[lir.Item] = []
        while pos < len(lines):
            n, line = lines[pos]
            if line.startswith("}"):
                return lir.Block(tuple(items)), pos
            if line.startswith("if "):
                cond = _value(line[3:].rstrip(" {"), types, n)
                then, pos = block(pos + 1)
                orelse = None
                if lines[pos][1] == "} else {":
                    orelse, pos = block(pos + 1)
                items.append(lir.If(cond, then, orelse))
            elif line.startswith("for "):
                fm = re.fullmatch(r"for (%\w+) = (\S+) to (\S+) step (\S+) \{", line)
                if not fm:
                    raise LirSyntaxError(f"line {n}: bad `for`")
                var = _value(fm.group(1), types, n)
                lo, hi, step = (_value(g, types, n) for g in fm.group(2, 3, 4))
                body, pos = block(pos + 1)
                items.append(lir.For(var, lo, hi, step, body))
            elif line == "loop {":
                body, pos = block(pos + 1)
                items.append(lir.Loop(body))
            elif line.split()[0] in ("break", "continue", "return"):
                word, *rest = line.split(" if ")
                cls = {"break": lir.Break, "continue": lir.Continue, "return": lir.Return}[word]
                if rest:
                    negated = rest[0].startswith("!")
                    items.append(cls(_value(rest[0].lstrip("!"), types, n), negated))
                else:
                    items.append(cls())
            else:
                items.append(_inst(line, types, n))
            pos += 1
        raise LirSyntaxError("unexpected end of text: a `}` is missing")

    body, pos = block(pos)
    if pos != len(lines) - 1:
        raise LirSyntaxError(f"line {lines[pos][0]}: text after the kernel's closing `}}`")
    return lir.Kernel(
        m.group(1),
        tuple(params),
        body,
        threads=opts.get("threads", 256),
        smem=opts.get("smem", 0),
        shared=tuple(shared),
        dynamic_smem=bool(opts.get("dynshared", False)),
        min_blocks=opts.get("min_blocks"),
        max_regs=opts.get("max_regs"),
        index_width=opts.get("index", 32),
        maps=tuple(maps),
        walk=opts.get("walk", ()),
        cluster=opts.get("cluster", 1),
    )
