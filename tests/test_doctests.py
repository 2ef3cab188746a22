"""The examples in the docstrings of `phobos` run and print what they say."""

import doctest
import importlib
import pkgutil

import pytest

import phobos


def _modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(phobos.__path__, prefix="phobos."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    # A module's examples may use what its package exports, as a user of the package would.
    package = importlib.import_module(name.rpartition(".")[0])
    shared = {n: getattr(package, n) for n in getattr(package, "__all__", ())}
    result = doctest.testmod(
        module, extraglobs=shared, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
