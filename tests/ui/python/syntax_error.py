# Python's own parser stops at the first syntax error; it is reported like any other.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(x: ph.f32):
    y: ph.let = ph.min(x 1.0)  #~ ERROR invalid syntax
