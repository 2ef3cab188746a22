"""The `@autotune` search space: variants, their order, the first choice, and keys."""

from __future__ import annotations

import pytest

from phobos.pyfront.translate import translate_module
from phobos.sema.attributes import check_attributes
from phobos.sema.space import Space
from phobos.source import SourceFile
from phobos.syntax.parser import parse


def space_of(text: str) -> Space:
    program, diags = parse(SourceFile("k.ph", text))
    assert diags == []
    attrs, diags = check_attributes(program.items[0])
    assert diags == [], [d.message for d in diags]
    return attrs.space


def test_doubling_ranges_and_lists_from_source():
    space = space_of("@autotune(M in [16, 256], K in [4, 32], U in [1, 4, 2])\nkernel k() { }")
    assert space.names == ("M", "K", "U")
    assert space.choices("M") == (16, 32, 64, 128, 256)
    assert space.choices("K") == (4, 8, 16, 32)
    assert space.choices("U") == (1, 4, 2)
    assert len(space) == 5 * 4 * 3
    assert space.first_choice() == {"M": 16, "K": 4, "U": 1}


def test_python_spelling_gives_the_same_space():
    text = (
        "from __future__ import annotations\nimport phobos.lang as ph\n\n"
        "@ph.kernel\n@ph.autotune(M=[16, 256], K=[4, 32], U=[1, 4, 2])\n"
        "def k():\n    pass\n"
    )
    program, diags = translate_module(SourceFile("k.py", text))
    assert diags == []
    attrs, _ = check_attributes(program.items[0])
    assert attrs.space == space_of(
        "@autotune(M in [16, 256], K in [4, 32], U in [1, 4, 2])\nkernel k() { }"
    )


def test_cross_product_first_dimension_slowest():
    space = Space({"A": (1, 2), "B": (10, 20, 30)})
    assert list(space.variants()) == [
        {"A": 1, "B": 10},
        {"A": 1, "B": 20},
        {"A": 1, "B": 30},
        {"A": 2, "B": 10},
        {"A": 2, "B": 20},
        {"A": 2, "B": 30},
    ]
    assert list(space) == list(space.variants())
    assert len(space) == 6
    # Deterministic: the same space enumerates the same way every time.
    assert list(space.variants()) == list(Space({"A": (1, 2), "B": (10, 20, 30)}).variants())


def test_first_choice_is_the_first_variant():
    space = Space({"TILE_M": (256, 32), "TILE_K": (8, 4)})
    assert space.first_choice() == {"TILE_M": 256, "TILE_K": 8}
    assert next(space.variants()) == space.first_choice()


def test_order_of_dimensions_matters():
    a = Space({"A": (1, 2), "B": (3, 4)})
    b = Space({"B": (3, 4), "A": (1, 2)})
    assert a != b
    assert a.variant_key({"A": 1, "B": 3}) == "A=1,B=3"
    assert b.variant_key({"A": 1, "B": 3}) == "B=3,A=1"


def test_empty_space_has_one_variant():
    space = Space()
    assert len(space) == 1
    assert list(space.variants()) == [{}]
    assert space.first_choice() == {}
    assert space.variant_key({}) == ""
    assert space.parse_key("") == {}
    assert space == Space({})


def test_single_choice_dimensions():
    space = Space({"D": (64,), "C": (32, 64, 128)})
    assert len(space) == 3
    assert [v["D"] for v in space.variants()] == [64, 64, 64]


def test_keys_round_trip():
    space = Space({"TILE_M": (32, 64), "TILE_N": (64, 128), "U": (1, 2, 4)})
    keys = [space.variant_key(v) for v in space.variants()]
    assert keys[0] == "TILE_M=32,TILE_N=64,U=1"
    assert len(set(keys)) == len(space)
    for key, variant in zip(keys, space.variants(), strict=True):
        assert space.parse_key(key) == variant
        assert list(space.parse_key(key)) == list(space.names)


def test_key_is_in_space_order_whatever_the_dict_order():
    space = Space({"TILE_M": (64,), "TILE_N": (128,)})
    assert space.variant_key({"TILE_N": 128, "TILE_M": 64}) == "TILE_M=64,TILE_N=128"
    assert space.parse_key("TILE_N=128,TILE_M=64") == {"TILE_M": 64, "TILE_N": 128}


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"A": 1}, "gives no value to `B`"),
        ({"A": 1, "B": 3, "C": 1}, "`C` is not a dimension"),
        ({"A": 5, "B": 3}, "`A` is 5, not one of its choices 1, 2"),
        ({"A": True, "B": 3}, "`A` is True"),
    ],
)
def test_variant_outside_the_space(variant, message):
    space = Space({"A": (1, 2), "B": (3, 4)})
    with pytest.raises(ValueError, match=message):
        space.variant_key(variant)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("A=1", "gives no value to `B`"),
        ("A=1,B=3,A=2", "`A` is given twice"),
        ("A=1,B=x", "`B=x` is not `NAME=integer`"),
        ("A=1;B=3", "is not `NAME=integer`"),
        ("A=1,B=3,", "`` is not `NAME=integer`"),
        ("A=1,B=5", "`B` is 5"),
        ("A=1,B=3,C=1", "`C` is not a dimension"),
        ("A=１,B=3", "is not `NAME=integer`"),  # a full-width digit is no integer here
    ],
)
def test_bad_keys(key, message):
    space = Space({"A": (1, 2), "B": (3, 4)})
    with pytest.raises(ValueError, match=message):
        space.parse_key(key)


def test_a_dimension_without_choices_is_refused():
    with pytest.raises(ValueError, match="no choices"):
        Space({"A": ()})


def test_choices_of_an_unknown_name():
    with pytest.raises(KeyError):
        Space({"A": (1,)}).choices("B")
    assert "A" in Space({"A": (1,)}) and "B" not in Space({"A": (1,)})


def test_spaces_hash_and_print():
    assert hash(Space({"A": (1, 2)})) == hash(Space({"A": (1, 2)}))
    assert repr(Space({"A": (1, 2)})) == "Space({'A': (1, 2)})"
