"""A `uses` name the module also binds is refused at its string: Python would read the global."""

from __future__ import annotations

import pytest
from pyfront_helpers import py, py_ok


def _line_col(diag):
    span = diag.primary.span
    return span.source.line_col(span.start)


@pytest.mark.parametrize(
    ("binding", "shown"),
    [
        ("W = 3", "W"),
        ("W: int = 3", "W"),
        ("import numpy as W", "import numpy as W"),
        ("from math import pi as W", "from math import pi as W"),
        ("def W():\n    pass", "W"),
        ("class W:\n    pass", "W"),
        ("for W in range(3):\n    pass", "W"),
        ("if True:\n    W, V = 1, 2", "W"),
    ],
)
def test_a_module_binding_is_refused_at_the_uses_string(binding, shown):
    text = f'{binding}\n\n\n@ph.fn(uses=("C", "W"))\ndef store(i):\n    W[i] = C\n'
    _, diags = py(text)
    assert [d.code for d in diags] == ["E0122"], [d.message for d in diags]
    (diag,) = diags
    assert diag.message == "`W` in `uses` of fn `store` is also bound by the module"
    assert diag.primary.span.text == '"W"'
    assert diag.secondary[0].span.text.startswith(shown)
    assert "rename one of them" in diag.help[0]


def test_names_the_module_does_not_bind_are_fine():
    py_ok('C = 1\n\n\n@ph.fn(uses=("W",))\ndef store(i):\n    W[i] = 0.0\n')


def test_a_name_bound_only_inside_a_function_is_fine():
    py_ok(
        'def helper():\n    W = 1\n    return W\n\n\n@ph.fn(uses=("W",))\ndef store(i):\n    W[i] = 0.0\n'
    )


def test_a_phobos_fn_is_left_to_the_checker():
    # E0261 (the checker) refuses a fn of the module in `uses`; the front end does not repeat it
    text = '@ph.fn\ndef g(a):\n    return a\n\n\n@ph.fn(uses=("g",))\ndef f(a):\n    return g(a)\n'
    py_ok(text)


def test_the_lang_module_name_is_a_module_binding():
    _, diags = py('@ph.fn(uses=("ph",))\ndef f(a):\n    return a\n')
    assert [d.code for d in diags] == ["E0122"]
