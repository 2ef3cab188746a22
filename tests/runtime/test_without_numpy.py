"""Phobos without numpy: the compiler works, and what needs numpy (the tile interpreter,
`--check-races`) says in one line which extra to install; no traceback, and never an
exception hook that fails in turn.

Each case runs in a fresh interpreter whose `sitecustomize` makes `import numpy` fail as
it does where numpy is not installed (and in the processes it starts, which read the same
`PYTHONPATH`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCK_NUMPY = """
import sys


class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoNumpy())
"""

KERNEL = """
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def scale(x: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 256
    x[base:+256] = 2.0 * x[base:+256]
"""

NO_NUMPY = 'needs numpy: pip install "phobos[numpy]"'


@pytest.fixture
def python(tmp_path):
    """Run a Python program (`-c` text, or arguments) where numpy cannot be imported."""
    blocker = tmp_path / "no-numpy"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_NUMPY)
    (tmp_path / "kernels.py").write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOBOS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), str(ROOT), str(tmp_path)])
    env["PHOBOS_CACHE_DIR"] = str(tmp_path / "cache")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120)  # fmt: skip

    return run


def test_numpy_cannot_be_imported_there(python):
    done = python("-c", "import numpy")
    assert done.returncode == 1 and "No module named 'numpy'" in done.stderr


def test_an_uncaught_exception_goes_to_the_previous_hook(python):
    done = python("-c", "import phobos.lang\nraise ValueError('boom')")
    assert done.returncode == 1
    assert "Error in sys.excepthook" not in done.stderr
    assert done.stderr.splitlines()[-1] == "ValueError: boom"


def test_an_uncaught_tune_error_is_its_message_alone(python):
    done = python("-c", "import phobos.lang\nfrom phobos.tune.errors import TuneError\n"
                        "raise TuneError('no variant passed')")  # fmt: skip
    assert (done.returncode, done.stderr) == (1, "error: no variant passed\n")


def test_the_compiler_needs_no_numpy(python):
    done = python("-m", "phobos.cli.compile", "kernels.py", "--emit", "ptx", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert ".entry scale" in done.stdout


def test_check_races_names_the_extra_in_one_line(python):
    done = python("-m", "phobos.cli.compile", "kernels.py", "--check-races")
    assert (done.returncode, done.stderr) == (2, f"error: `--check-races` {NO_NUMPY}\n")


CPU_LAUNCH = textwrap.dedent("""
    import ctypes
    from kernels import scale

    memory = (ctypes.c_float * 256)()


    class HostArray:  # a host array that is not numpy's
        __array_interface__ = {"shape": (256,), "typestr": "<f4", "version": 3,
                               "data": (ctypes.addressof(memory), False)}


    scale[(1,)](HostArray())
""")


def test_a_launch_on_the_cpu_names_the_extra_in_one_line(python):
    done = python("-c", CPU_LAUNCH)
    assert (done.returncode, done.stderr) == (1, f"error: the tile interpreter {NO_NUMPY}\n")


def test_phobos_traceback_still_shows_the_traceback(python, tmp_path):
    env_code = "import os\nos.environ['PHOBOS_TRACEBACK'] = '1'\n" + CPU_LAUNCH
    done = python("-c", env_code)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and done.stderr.splitlines()[-1].endswith(NO_NUMPY)
