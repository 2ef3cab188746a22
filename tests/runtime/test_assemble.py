"""PTX to cubin (phobos.runtime.assemble): which ptxas, when, and as a whole program."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from phobos.runtime import assemble
from phobos.runtime.assemble import (
    AssembleError,
    PtxasNotFound,
    arch_for,
    find_ptxas,
    ptxas_release,
    usable_ptxas,
)

EMPTY_KERNEL = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry nothing(.param .u64 p)
{
	ret;
}
"""
ET_REL, ET_EXEC = 1, 2  # an ELF file's e_type: relocatable object, executable


def real_ptxas() -> str:
    path = shutil.which("ptxas")
    why = None
    if path is None:
        why = "ptxas is not on PATH"
    elif (ptxas_release(path) or (0, 0)) < assemble.OLDEST:
        why = f"the ptxas on PATH is older than {assemble.OLDEST} and reads no PTX ISA 8.0"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}, and CI=true: CI must assemble the emitted PTX")
        pytest.skip(why)
    return path


def elf_type(image: bytes) -> int:
    assert image[:4] == b"\x7fELF"
    return int.from_bytes(image[16:18], "little")


def test_a_kernel_is_assembled_as_a_whole_program(tmp_path):
    ptxas = real_ptxas()
    cubin = assemble.assemble(EMPTY_KERNEL, "sm_90", ptxas)
    assert elf_type(cubin) == ET_EXEC
    # what the driver's linker would have compiled: a relocatable object, told apart
    (tmp_path / "k.ptx").write_bytes(EMPTY_KERNEL)
    subprocess.run([ptxas, "-arch=sm_90", "-c", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.o")],
                   check=True)  # fmt: skip
    assert elf_type((tmp_path / "k.o").read_bytes()) == ET_REL


def test_ptx_ptxas_refuses_names_ptxas_and_carries_its_messages():
    bad = EMPTY_KERNEL.replace(b"ret;", b"mov.u32 %r1, %nope;\n\tret;")
    with pytest.raises(AssembleError) as info:
        assemble.assemble(bad, "sm_90", real_ptxas())
    err = info.value
    assert err.call == "ptxas" and str(err).startswith("ptxas failed: PTXAS_FAILED")
    assert "nope" in err.log


def program(path, text="#!/bin/sh\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_phobos_ptxas_chooses_the_assembler(tmp_path):
    on_path = program(tmp_path / "path" / "ptxas")
    assert find_ptxas({"PHOBOS_PTXAS": "none", "PATH": str(tmp_path / "path")}) is None
    assert find_ptxas({"PHOBOS_PTXAS": "off", "PATH": str(tmp_path / "path")}) is None
    assert find_ptxas({"PATH": str(tmp_path / "path")}) == on_path
    mine = program(tmp_path / "my-ptxas")
    assert find_ptxas({"PHOBOS_PTXAS": mine, "PATH": str(tmp_path / "path")}) == mine
    with pytest.raises(PtxasNotFound, match="PHOBOS_PTXAS='/no/such/ptxas' is not a program"):
        find_ptxas({"PHOBOS_PTXAS": "/no/such/ptxas"})


def test_unset_it_is_found_on_path_then_under_cuda_home_then_cuda_path(tmp_path):
    empty = str(tmp_path / "empty")
    home, other = tmp_path / "home", tmp_path / "other"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "ptxas").write_text("not executable")  # passed over
    found = program(other / "bin" / "ptxas")
    env = {"PATH": empty, "CUDA_HOME": str(home), "CUDA_PATH": str(other)}
    assert find_ptxas(env) == found
    assert find_ptxas({**env, "PATH": str(other / "bin")}) == found  # PATH first


def fake_ptxas(tmp_path, version_line: str) -> str:
    tool = tmp_path / "ptxas"
    tool.write_text(f'#!/bin/sh\necho "{version_line}"\n')
    tool.chmod(0o755)
    return str(tool)


@pytest.mark.parametrize(
    "line, driver, used",
    [
        ("Cuda compilation tools, release 12.4, V12.4.131", 12040, True),
        ("Cuda compilation tools, release 12.4, V12.4.131", 13000, True),
        ("Cuda compilation tools, release 13.0, V13.0.88", 12080, False),  # newer than the driver
        ("Cuda compilation tools, release 11.8, V11.8.89", 12040, False),  # reads no PTX 8.0
        ("no release named here", 13000, False),
    ],
)
def test_a_ptxas_is_used_only_when_the_driver_loads_its_cubins(tmp_path, line, driver, used):
    tool = fake_ptxas(tmp_path, line)
    assert (usable_ptxas(driver, {"PHOBOS_PTXAS": tool}) == tool) is used


def test_the_arch_is_the_devices_chip_or_its_specific_form():
    assert arch_for(b".version 8.0\n.target sm_90a\n", "sm_90") == "sm_90a"
    assert arch_for(b".version 8.0\n.target sm_80\n", "sm_90") == "sm_90"
    assert arch_for(b".version 8.0\n.target sm_90a\n", "sm_80") == "sm_80"


def test_a_ptxas_that_writes_no_cubin_is_an_error(tmp_path):
    quiet = program(tmp_path / "ptxas", "#!/bin/sh\necho done\n")
    with pytest.raises(AssembleError, match="wrote no cubin"):
        assemble.assemble(EMPTY_KERNEL, "sm_90", quiet)


def test_a_ptxas_that_cannot_be_run_is_an_error(tmp_path):
    with pytest.raises(AssembleError, match="cannot assemble with"):
        assemble.assemble(EMPTY_KERNEL, "sm_90", str(tmp_path / "gone"))
