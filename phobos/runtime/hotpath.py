"""A plan's launch written out for its own signature: the hottest path a launch takes.

`fastpath.read` builds a signature key for any arguments and looks its plan up; that
costs a loop, a tuple per tensor and a hash per launch. A kernel launched again and again
with arguments like its last launch's pays for none of it here: `specialise(plan, key,
slots)` generates, once per plan, a Python function that compares each argument straight
against the plan's own signature (the same attributes `read` takes, compared with `==`,
so it accepts exactly the launches the plan's key matches), then writes the slots and
calls the driver with everything else bound as constants.

    hot = specialise(plan, key, slots)
    hot(grid, args, stream)   # True: launched; False: take the ordinary path

False is never an error: the ordinary path then finds another plan, or binds and
refuses with the whole path's message. Only signatures of torch-like tensors and
scalars are written out (their attributes are method calls); a plan for other arrays,
a walking kernel, tensor maps or clusters keeps the read of `fastpath` and its own
`Plan.launch` behind the generated comparison.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

from phobos.runtime import cuda
from phobos.runtime.fastpath import _INT_RANGES, F32_MAX, _scalar, _stream, read


def specialise(plan, key: tuple, tensor_slots: tuple[bool, ...]):
    """The launch of `plan` for arguments of signature `key` (as `fastpath.read` gives
    it), as one generated function `hot(grid, args, stream) -> bool`."""
    names: dict[str, Any] = {"False": False}
    checks: list[str] = []
    tensors = 0
    torch_like = True
    for i, (entry, is_tensor) in enumerate(zip(key, tensor_slots, strict=True)):
        a = f"a{i}"
        if not is_tensor:
            names[f"K{i}"] = entry
            checks.append(f"if type({a}) is not K{i}:\n    return False")
            continue
        tensors += 1
        if not (isinstance(entry, tuple) and len(entry) == 6 and _torch_like_type(entry[0])):
            torch_like = False
            continue
        for n, value in zip("TDSRGQ", entry, strict=True):
            names[f"{n}{i}"] = value
        # Cheapest first; each is the attribute `read` keys the plan by.
        checks.append(
            f"if (type({a}) is not T{i} or {a}.dtype != D{i} or {a}.shape != S{i}\n"
            f"        or {a}.stride() != R{i} or {a}.get_device() != G{i}\n"
            f"        or {a}.requires_grad != Q{i}):\n"
            f"    return False\n"
            f"p{i} = {a}.data_ptr()"
        )
    if not torch_like:
        # Other arrays: their interface dict read as `read` reads it, compared whole.
        names.update(read=read, KEY=key, SLOTS=tensor_slots)
        checks = [
            "found = read(args, SLOTS)\nif found is None or found[0] != KEY:\n    return False"
        ]
        tail = "return plan.launch(grid, args, found[1], stream)"
        names["plan"] = plan
        return _compile(len(key), checks, tail, names)
    pointers = [f"p{i}" for i, t in enumerate(tensor_slots) if t]
    if plan.blocks or plan.maps or plan.config is not None or not plan.single:
        names["plan"] = plan
        tail = f"return plan.launch(grid, args, ({', '.join(pointers)},), stream)"
        return _compile(len(key), checks, tail, names)
    prelude, launch = _launch_body(plan, pointers, names)
    return _compile(len(key), [*checks, prelude], launch, names)


def _torch_like_type(t) -> bool:
    return isinstance(t, type) and hasattr(t, "data_ptr") and hasattr(t, "get_device")


def _launch_body(plan, pointers: list[str], names: dict[str, Any]) -> tuple[str, str]:
    """What `Plan.launch` does for a plain kernel, with the plan's values bound: what is
    checked before the launch (run where anything raising means False), and the launch."""
    names.update(
        plan=plan, lock=plan.lock, cuda=cuda, c_void_p=ctypes.c_void_p, _stream=_stream,
        _scalar=_scalar, HANDLE=plan.handle, PARAMS=plan.params, THREADS=plan.threads,
        SHARED=plan.shared, device=plan.device, CUR=cuda._CURRENT,
    )  # fmt: skip
    lines = []
    if pointers:
        # Binding for the GPU checked 16-byte alignment: every pointer still meets it.
        lines.append(f"if ({' | '.join(pointers)}) & 15:\n    return False")
    lines.append(
        "last = plan._last\n"
        "if grid is last[0]:\n"
        "    ctas = last[2]\n"
        "else:\n"
        "    ctas = plan._grid(grid)\n"
        "    if ctas is None:\n"
        "        return False\n"
        "    if type(grid) is tuple:\n"
        "        plan._last = (grid, ctas, ctas)"
    )
    writes = []
    by_tensor = {i: p for i, p in enumerate(pointers)}
    for k, (value, t) in enumerate(plan.pointers):
        names[f"V{k}"] = value
        writes.append(f"V{k}.value = {by_tensor[t]}")
    for k, (value, i, stype) in enumerate(plan.scalars):
        names[f"W{k}"] = value
        limits = _INT_RANGES.get(stype)
        if limits is not None and names[f"K{i}"] is int:  # its type checked: only its range
            names[f"LO{k}"], names[f"HI{k}"] = limits
            lines.append(f"s{k} = a{i}\nif not LO{k} <= s{k} <= HI{k}:\n    return False")
        elif stype == "f32" and names[f"K{i}"] is float:
            # A finite float past f32's range would round to infinity: the whole path
            # refuses it; infinities and NaN pass as they are.
            names.update(F32_MAX=F32_MAX, isfinite=math.isfinite)
            lines.append(
                f"s{k} = a{i}\n"
                f"if not -F32_MAX <= s{k} <= F32_MAX and isfinite(s{k}):\n    return False"
            )
        else:
            lines.append(f"s{k} = _scalar(a{i}, {stype!r})\nif s{k} is None:\n    return False")
        writes.append(f"W{k}.value = s{k}")
    lines.append("h = None if stream is None else _stream(stream)")
    launch = (
        "with lock:\n"
        + _indent("\n".join(writes), 1)
        + "\n    if getattr(CUR, 'ctx', None) != device._context:\n"
        "        device.activate()\n"
        "    status = (cuda._RAW_LAUNCH or cuda.raw_launch_kernel())(\n"
        "        HANDLE, ctas[0], ctas[1], ctas[2], THREADS, 1, 1, SHARED,\n"
        "        c_void_p(h) if h else None, PARAMS, None)\n"
        "if status:\n"
        "    cuda.check(status, 'cuLaunchKernel')\n"
        "return True"
    )
    return "\n".join(lines), launch


def _compile(arity: int, checks: list[str], tail: str, names: dict[str, Any]):
    unpack = "(" + ", ".join(f"a{i}" for i in range(arity)) + ("," if arity == 1 else "") + ")"
    body = tuple(_indent(c, 2) for c in checks) or ("        pass",)
    source = _source(tail, body, arity, unpack)
    namespace = dict(names)
    exec(compile(source, "<phobos hot launch>", "exec"), namespace)  # noqa: S102
    return namespace["hot"]


def _source(tail: str, body: tuple[str, ...], arity: int, unpack: str) -> str:
    return (
        "def hot(grid, args, stream):\n"
        f"    if len(args) != {arity}:\n"
        "        return False\n"
        + (f"    {unpack} = args\n" if arity else "")
        + "    try:\n"
        + "\n".join(body)
        + "\n    except Exception:\n"
        "        return False\n" + _indent(tail, 1)
    )


def _indent(text: str, levels: int) -> str:
    pad = "    " * levels
    return "\n".join(pad + line if line else line for line in text.split("\n"))
