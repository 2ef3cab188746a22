"""Register names: a hint and the register's count make its name, and no two registers
may share one, whatever the user's names."""

from __future__ import annotations

from phobos.lower.builder import Builder


def test_a_hint_ending_in_a_digit_never_names_another_hints_register():
    # `o1` at its 17th register and `o` at its 117th both were `%o117`: a var named `o1`
    # beside an offset register took one name for two types (an internal error, found in
    # examples/decode.py's per-thread merge with vars o0 .. o3, which
    # tests/test_examples_compile.py compiles).
    b = Builder()
    names = [b.reg("f32", hint).name for _ in range(300) for hint in ("o", "o1", "o11", "x2_")]
    assert len(set(names)) == len(names)
