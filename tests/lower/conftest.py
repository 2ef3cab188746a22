"""Settings for the lowering's tests.

The tensor-core tests draw their inputs from `mmakit.rng`. Reseeded before each test from
the test's own id, a test's data is the same whether it runs alone, in a `-k` slice or in
the whole suite, so a tolerance that holds once holds every time.
"""

import zlib

import mmakit
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def own_draws(request):
    mmakit.rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
