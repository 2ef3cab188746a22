"""Command-line tools: `phobos-compile` and `ph2py`."""
