"""The driver here is a stand-in: no test of this folder runs whatever `ptxas` the
machine has, unless it says so (`PHOBOS_PTXAS` set by the test itself)."""

import pytest


@pytest.fixture(autouse=True)
def _driver_compiles(monkeypatch):
    monkeypatch.setenv("PHOBOS_PTXAS", "none")
