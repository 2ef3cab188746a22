"""`assemble(text, arch)`: runs ptxas on PTX text; skips without ptxas, fails under CI."""

import os
import shutil
import subprocess
import tempfile

import pytest


def _ptxas() -> str:
    path = shutil.which("ptxas")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ptxas is not on PATH, and CI=true: CI must assemble the emitted PTX")
        pytest.skip("ptxas is not on PATH: the emitted PTX is not assembled here")
    return path


@pytest.fixture
def assemble():
    path = _ptxas()

    def run(text: str, arch: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.ptx")
            with open(src, "w") as f:
                f.write(text)
            done = subprocess.run(
                [path, f"-arch={arch}", src, "-o", os.path.join(tmp, "k.cubin")],
                capture_output=True,
                text=True,
            )
        if done.returncode != 0:
            lines = text.splitlines()
            shown = []
            for err in done.stderr.splitlines():
                shown.append(err)
                if ", line " in err:
                    n = int(err.split(", line ")[1].split(";")[0])
                    shown.append(f"    line {n}: {lines[n - 1].strip()}")
            pytest.fail(f"ptxas -arch={arch} refused the PTX:\n" + "\n".join(shown))

    return run
