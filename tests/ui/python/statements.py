# Statements with no Phobos counterpart, refused at their keyword.
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def k(A: ph.tensor[ph.f32][N], x: ph.f32):
    with open("f"):  #~ ERROR `with` is not supported
        pass
    try:  #~ ERROR `try` is not supported
        pass
    except ValueError:
        pass
    raise ValueError("no")  #~ ERROR `raise` is not supported
    assert x > 0.0  #~ ERROR `assert` is not supported
    del x  #~ ERROR `del` is not supported
    global G  #~ ERROR `global` is not supported
    import math  #~ ERROR `import` inside a kernel is not supported

    def helper(a):  #~ ERROR a def inside a kernel is not supported
        return a

    class Box:  #~ ERROR a class inside a kernel is not supported
        pass
