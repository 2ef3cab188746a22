"""PTX to a cubin, compiled as one whole program.

A kernel's PTX is assembled by the CUDA toolkit's `ptxas` when one is installed whose
release lies between the PTX's (12.0: Phobos writes PTX ISA 8.0) and the driver's (a
cubin from a newer toolkit might not load). Without one the driver compiles the PTX
itself as the module is loaded (`cuModuleLoadDataEx`), and the kernel cache keeps the PTX
alone; the driver keeps what it compiled in its own cache. A cubin the driver refuses
(say, from a cache another machine filled) is compiled again from its PTX by the driver.

Phobos does not use the driver's linker (`cuLinkCreate` ...): it compiles PTX as
relocatable code, and that costs an entry function registers and time. A layer norm
row of 8192 f16 over 256 threads took 80 registers a thread relocatable against 64
whole (`ptxas -c` against `ptxas`), and ran at 41 µs against 39 on an H200.

`PHOBOS_PTXAS` picks the assembler: a path to a `ptxas` (still used only if its release
suits, as above), or `none` to leave the PTX to the driver. Unset, `ptxas` is looked for
on `PATH`, then under `$CUDA_HOME`, `$CUDA_PATH` and `/usr/local/cuda`, then in NVIDIA's
`nvidia-cuda-nvcc` wheel (`pip install "phobos[ptxas]"`), and the first whose release
suits is used: a toolkit too old or too new for the driver does not hide the wheel's.

    >>> release("Cuda compilation tools, release 13.0, V13.0.88")
    (13, 0)
    >>> arch_for(b".version 8.0\\n.target sm_90a\\n", "sm_90"), arch_for(b".target sm_80", "sm_90")
    ('sm_90a', 'sm_90')
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from phobos.log import logger
from phobos.runtime.cuda import CudaError

ENV = "PHOBOS_PTXAS"
OFF = ("none", "off", "0")
TIMEOUT_S = 300  # one kernel's assembly; the largest autotune variants take seconds
OLDEST = (12, 0)  # the first release that reads PTX ISA 8.0, which phobos.ptx writes
# The pip distributions that ship NVIDIA's ptxas: release 13's (the `ptxas` extra), which
# installs it as nvidia/cu13/bin/ptxas, and release 12's, as nvidia/cuda_nvcc/bin/ptxas.
WHEELS = ("nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12")
TOOLKIT = "/usr/local/cuda"  # where the toolkit installs itself


class AssembleError(CudaError):
    """`ptxas` refused a kernel's PTX, or could not be run: `log` holds what it printed."""

    def __init__(self, code: int, text: str, log: str = ""):
        super().__init__("ptxas", code, "PTXAS_FAILED", text, log)


class PtxasNotFound(AssembleError):
    """`PHOBOS_PTXAS` names no program that can be run: a setting to mend, not a kernel."""

    def __str__(self) -> str:
        return self.text


def find_ptxas(env: Mapping[str, str] = os.environ) -> str | None:
    """The `ptxas` to assemble with: `PHOBOS_PTXAS`, else the first one found; None for
    none (or `PHOBOS_PTXAS=none`). A `PHOBOS_PTXAS` that names no program is an error."""
    return next(ptxas_candidates(env), None)


def ptxas_candidates(env: Mapping[str, str] = os.environ) -> Iterator[str]:
    """Every `ptxas` there is to try, in order: `PHOBOS_PTXAS` alone when it is set
    (nothing for `none`), else the one on `PATH`, those under `$CUDA_HOME`, `$CUDA_PATH`
    and `/usr/local/cuda`, and the one of an installed `nvidia-cuda-nvcc` wheel."""
    chosen = env.get(ENV, "").strip()
    if chosen.lower() in OFF:
        return
    search = env.get("PATH", os.defpath)
    if chosen:
        found = shutil.which(chosen, path=search)
        if found is None:
            raise PtxasNotFound(
                -1,
                f"{ENV}={chosen!r} is not a program that can be run "
                f"(set it to a ptxas, or to `none` for the driver to compile kernels)",
            )
        yield found
        return
    seen = set()
    found = shutil.which("ptxas", path=search)
    roots = (env.get("CUDA_HOME"), env.get("CUDA_PATH"), TOOLKIT)
    for candidate in (found, *(Path(r) / "bin" / "ptxas" for r in roots if r), wheel_ptxas()):
        if candidate is None or not _runnable(candidate):
            continue
        key = os.path.realpath(candidate)
        if key not in seen:
            seen.add(key)
            yield str(candidate)


def wheel_ptxas() -> str | None:
    """The `ptxas` of an installed `nvidia-cuda-nvcc` wheel (any of `WHEELS`), or None;
    looked for once for each `sys.path`."""
    return _wheel_ptxas(tuple(sys.path))


@functools.lru_cache(maxsize=4)
def _wheel_ptxas(path: tuple[str, ...]) -> str | None:
    from importlib import metadata

    for name in WHEELS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        # The wheel's record lists its files wherever pip put them: no layout is assumed.
        for file in dist.files or ():
            if file.name == "ptxas" and file.parent.name == "bin":
                candidate = Path(dist.locate_file(file))
                if _runnable(candidate):
                    return str(candidate)
    return None


def _runnable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def release(version_text: str) -> tuple[int, int] | None:
    """The CUDA release `ptxas --version` printed, as (13, 0); None if it names none."""
    m = re.search(r"release (\d+)\.(\d+)", version_text)
    return (int(m.group(1)), int(m.group(2))) if m else None


@functools.lru_cache(maxsize=8)
def ptxas_release(path: str) -> tuple[int, int] | None:
    """The release of the `ptxas` at `path`, asked once per process."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, errors="replace", timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return release(done.stdout) if done.returncode == 0 else None


def usable_ptxas(driver_version: int, env: Mapping[str, str] = os.environ) -> str | None:
    """The first `ptxas` (of `ptxas_candidates`) that reads Phobos's PTX and whose cubins
    this driver loads (`driver_version` as 13000 for 13.0), or None: the driver then
    compiles the PTX. Says why at `PHOBOS_LOG=debug`."""
    driver = (driver_version // 1000, driver_version % 1000 // 10)
    tried = False
    for path in ptxas_candidates(env):
        tried = True
        found = ptxas_release(path)
        if found is not None and OLDEST <= found <= driver:
            logger.debug("kernels are assembled by %s (release %d.%d)", path, *found)
            return path
        logger.debug(
            "ptxas %s (release %s) is unreadable, older than %d.%d or newer than the driver "
            "(CUDA %d.%d): passed over",
            path, found, *OLDEST, *driver,
        )  # fmt: skip
    if tried:
        logger.debug("no ptxas suits: the driver compiles each kernel's PTX as it loads")
    else:
        logger.debug("no ptxas found: the driver compiles each kernel's PTX as it loads")
    return None


def arch_for(ptx: bytes, chip: str) -> str:
    """The `-arch` to assemble `ptx` for a device of `chip`: the chip itself, or its
    architecture-specific form (`sm_90a`) when the PTX was written for that."""
    m = re.search(rb"^\s*\.target\s+(sm_\d+a)\b", ptx, re.M)
    if m and m.group(1).decode() == chip + "a":
        return chip + "a"
    return chip


def assemble(ptx: bytes, chip: str, ptxas: str) -> bytes:
    """`ptx` assembled by `ptxas` for `chip`, as a whole program: the cubin's bytes.
    `AssembleError` carries ptxas's messages when it refuses the PTX."""
    try:
        with tempfile.TemporaryDirectory(prefix="phobos-ptxas-") as tmp:
            source, cubin = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
            source.write_bytes(ptx.rstrip(b"\0"))
            command = [ptxas, f"-arch={arch_for(ptx, chip)}", str(source), "-o", str(cubin)]
            done = subprocess.run(
                command, capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S
            )
            if done.returncode != 0:
                raise AssembleError(
                    done.returncode, "ptxas refused the kernel's PTX", done.stderr + done.stdout
                )
            if not cubin.is_file():
                raise AssembleError(0, f"{ptxas} wrote no cubin", done.stderr + done.stdout)
            return cubin.read_bytes()
    except subprocess.TimeoutExpired:
        raise AssembleError(-1, f"ptxas took more than {TIMEOUT_S} s") from None
    except OSError as exc:  # the temporary directory, or running ptxas at all
        raise AssembleError(-1, f"cannot assemble with {ptxas}: {exc}") from None
