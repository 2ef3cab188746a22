"""Phobos installed from its built wheel, not from this checkout: the wheel built from
the project's own files, installed into a fresh virtual environment with nothing else,
runs README's first kernel there — without numpy (the compiler alone: the kernel's
source, its PTX, `phobos-compile`; a launch on the CPU refused in one line naming the
`numpy` extra) and with numpy (`python examples/saxpy.py` runs it in the tile
interpreter and checks it).

The environment gets numpy alone, by a `.pth` line naming a folder that holds only a
link to this interpreter's numpy: no other package of the test environment is visible
there, Phobos least of all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What the wheel is built from: the files pyproject.toml and MANIFEST.in name.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "phobos")

# A launch with no numpy anywhere: host arrays by `__array_interface__` over ctypes
# buffers (binding reads the interface alone), which only the interpreter could run.
WITHOUT_NUMPY = """
import ctypes, sys
sys.path.insert(0, sys.argv[1])
from saxpy import saxpy

print(saxpy.source)
built = saxpy.compile(chip="sm_90")
assert ".entry saxpy" in built.ptx

class Host:
    def __init__(self, n):
        self.buffer = (ctypes.c_float * n)()
        self.__array_interface__ = {"shape": (n,), "typestr": "<f4", "version": 3,
                                    "data": (ctypes.addressof(self.buffer), False)}

x, y, out = Host(64), Host(64), Host(64)
saxpy[(4,)](x, y, out, 2.0)
"""


def _run(argv, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """A fresh environment with Phobos installed from its wheel: its python, its bin."""
    top = tmp_path_factory.mktemp("install")
    src = top / "src"
    src.mkdir()
    for name in SOURCES:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, src / name)
    wheels = top / "wheels"
    try:  # this environment's setuptools builds it; else pip's isolated build fetches one
        import setuptools  # noqa: F401

        isolation = ["--no-build-isolation", "--no-index"]
    except ImportError:
        isolation = []
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                  "-w", wheels, src])  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = wheels.glob("phobos-*.whl")
    venv = top / "venv"
    made = _run([sys.executable, "-m", "venv", venv])
    assert made.returncode == 0, made.stderr
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    done = _run([python, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel])
    assert done.returncode == 0, done.stdout + done.stderr
    work = top / "work"
    work.mkdir()
    shutil.copy2(ROOT / "examples" / "saxpy.py", work / "saxpy.py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PHOBOS_TRACEBACK")}
    env["PHOBOS_CACHE_DIR"] = str(top / "cache")
    return {"python": python, "bin": bindir, "work": work, "env": env, "venv": venv}


def test_the_wheel_holds_the_package_not_the_checkout(installed):
    ran = _run([installed["python"], "-c", "import phobos, sys; print(phobos.__file__)"],
               installed["env"], installed["work"])  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert str(installed["venv"]) in ran.stdout and str(ROOT) not in ran.stdout
    has = _run([installed["python"], "-c", "import numpy"], installed["env"], installed["work"])
    assert has.returncode != 0  # the environment really has no numpy


def test_without_numpy_the_compiler_runs_and_a_launch_names_the_extra(installed, tmp_path):
    ptx = _run([installed["bin"] / "phobos-compile", "saxpy.py", "--emit", "ptx"],
               installed["env"], installed["work"])  # fmt: skip
    assert ptx.returncode == 0, ptx.stderr
    assert ".entry saxpy" in ptx.stdout
    script = tmp_path / "launch.py"
    script.write_text(WITHOUT_NUMPY)
    ran = _run([installed["python"], script, installed["work"]], installed["env"])
    assert "kernel saxpy(" in ran.stdout  # the source and the PTX came before the launch
    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "numpy" in lines[0] and "phobos[numpy]" in lines[0], lines


def test_with_numpy_the_first_kernel_runs_on_the_cpu(installed):
    numpy = pytest.importorskip("numpy")
    ran = _run([installed["python"], "-c", "import site; print(site.getsitepackages()[0])"],
               installed["env"])  # fmt: skip
    site = Path(ran.stdout.strip())
    alone = installed["venv"].parent / "numpy-alone"
    alone.mkdir(exist_ok=True)
    package = Path(numpy.__file__).parent
    for path in (package, package.parent / "numpy.libs"):
        if path.exists() and not (alone / path.name).exists():
            (alone / path.name).symlink_to(path, target_is_directory=True)
    (site / "numpy-alone.pth").write_text(str(alone) + "\n")
    try:
        ran = _run([installed["python"], "saxpy.py"], installed["env"], installed["work"])
    finally:
        (site / "numpy-alone.pth").unlink()
    assert ran.returncode == 0, ran.stderr
    assert "saxpy on 1000 elements: max error" in ran.stdout
