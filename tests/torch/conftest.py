"""What the torch tests share: outputs poisoned as torch allocates them."""

from __future__ import annotations

import pytest


@pytest.fixture
def poisoned():
    """torch fills every tensor it allocates uninitialised with NaN (floats) or the
    type's largest value (integers), so an element the kernel never writes shows."""
    torch = pytest.importorskip("torch")
    was = torch.are_deterministic_algorithms_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    yield
    torch.use_deterministic_algorithms(was)
    torch.utils.deterministic.fill_uninitialized_memory = fill
