"""`python examples/saxpy.py` runs on a machine with no GPU and checks its own result."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_saxpy_example_runs_on_the_cpu():
    ran = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "saxpy.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "kernel saxpy(" in ran.stdout
    assert "saxpy on 1000 elements: max error" in ran.stdout
