"""The `ptxas` of NVIDIA's `nvidia-cuda-nvcc` wheel (the `ptxas` extra): found through the
wheel's own record, tried after the toolkits, and used only when its release suits."""

from __future__ import annotations

from pathlib import Path

import pytest

from phobos.runtime import assemble
from phobos.runtime.assemble import find_ptxas, ptxas_candidates, usable_ptxas, wheel_ptxas


def tool(path: Path, release: str, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "Cuda compilation tools, release {release}, V{release}.1"\n')
    path.chmod(0o755 if executable else 0o644)
    return path


def install_wheel(site: Path, release: str = "13.0", where: str = "nvidia/cu13/bin/ptxas",
                  executable: bool = True) -> Path:  # fmt: skip
    """What pip leaves of the wheel in `site`: its dist-info, whose RECORD lists the file."""
    info = site / "nvidia_cuda_nvcc-13.0.88.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nvidia-cuda-nvcc\nVersion: 13.0.88\n"
    )
    (info / "RECORD").write_text(f"{where},,\n{info.name}/METADATA,,\n")
    return tool(site / where, release, executable)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A site-packages of this test's own, and no toolkit where one installs itself."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(assemble, "TOOLKIT", str(tmp_path / "no-toolkit"))
    return site


def test_the_wheels_ptxas_is_found_by_its_record(site, tmp_path):
    ptxas = install_wheel(site)
    assert wheel_ptxas() == str(ptxas)
    env = {"PATH": str(tmp_path / "empty")}
    assert list(ptxas_candidates(env)) == [str(ptxas)] and find_ptxas(env) == str(ptxas)
    toolkit = tool(tmp_path / "toolkit" / "bin" / "ptxas", "13.0")
    env["CUDA_HOME"] = str(tmp_path / "toolkit")
    assert list(ptxas_candidates(env)) == [str(toolkit), str(ptxas)]  # the wheel's comes last


def test_any_layout_the_record_names_is_found(site):
    ptxas = install_wheel(site, where="nvidia/cuda_nvcc/bin/ptxas")
    assert wheel_ptxas() == str(ptxas)


def test_a_wheel_ptxas_that_cannot_run_is_passed_over(site):
    install_wheel(site, executable=False)
    assert wheel_ptxas() is None


def test_without_the_wheel_there_is_none(site):
    assert wheel_ptxas() is None


def test_a_toolkit_of_the_wrong_release_does_not_hide_the_wheels(site, tmp_path):
    ptxas = install_wheel(site, release="12.4")
    old = tool(tmp_path / "toolkit" / "bin" / "ptxas", "11.8")  # reads no PTX ISA 8.0
    env = {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(tmp_path / "toolkit")}
    assert list(ptxas_candidates(env)) == [str(old), str(ptxas)]
    assert usable_ptxas(12040, env) == str(ptxas)
    assert usable_ptxas(12020, env) is None  # newer than the driver: the driver compiles
    assert usable_ptxas(12040, {**env, "PHOBOS_PTXAS": str(old)}) is None  # the setting alone
