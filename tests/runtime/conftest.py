"""The driver here is a stand-in: no test of this folder runs whatever `ptxas` the
machine has, unless it says so (`PHOBOS_PTXAS` set by the test itself)."""

import pytest


@pytest.fixture(autouse=True)
def _driver_compiles(monkeypatch):
    monkeypatch.setenv("PHOBOS_PTXAS", "none")


@pytest.fixture
def fake():
    """The stand-in driver (`test_cuda_fake.FakeDriver`) in use while the test runs."""
    from test_cuda_fake import FakeDriver

    from phobos.runtime import cuda

    driver = FakeDriver()
    previous = cuda.use_library(driver)
    yield driver
    cuda.use_library(previous)
