"""Settings for the whole suite.

Every lowering in the tests runs the lir verifier after each pass that makes lir
(`PHOBOS_VERIFY`, `phobos.lower.passes`), in this process and in the worker processes
it starts; `PHOBOS_VERIFY=0` in the environment turns that off.
"""

import os

os.environ.setdefault("PHOBOS_VERIFY", "1")
