"""The code is ruff-clean: lint and format, with the project's own configuration."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    if shutil.which("ruff"):
        return ["ruff"]
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.fail("ruff is not installed: `pip install -e '.[test]'` installs it")
    return [sys.executable, "-m", "ruff"]


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_clean(args):
    result = subprocess.run(
        [*_ruff(), *args, "phobos", "tests", "tools", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
