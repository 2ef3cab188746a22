"""The `@autotune` search space: ordered dimensions, each with its choices.

A variant is one choice of every dimension, a `dict` from name to value in the
space's order. Variants enumerate as a cross product with the first dimension
slowest, so the order is the one a reader gets by nesting loops in the order the
attribute lists the dimensions; the first variant is every dimension's first choice.

    >>> space = Space({"TILE_M": (32, 64), "TILE_K": (4, 8, 16)})
    >>> len(space)
    6
    >>> [space.variant_key(v) for v in space.variants()][:4]
    ['TILE_M=32,TILE_K=4', 'TILE_M=32,TILE_K=8', 'TILE_M=32,TILE_K=16', 'TILE_M=64,TILE_K=4']
    >>> space.first_choice()
    {'TILE_M': 32, 'TILE_K': 4}
    >>> space.parse_key("TILE_M=64,TILE_K=16")
    {'TILE_M': 64, 'TILE_K': 16}

A kernel without `@autotune` has the empty space: one variant, `{}`, keyed `""`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

Variant = dict[str, int]


class Space:
    """The choices of each `@autotune` dimension, in the order they are written.

    Built from `KernelAttributes.autotune` (or any mapping of names to non-empty
    tuples of ints). Immutable; two spaces are equal when they list the same
    dimensions, in the same order, with the same choices.

        >>> Space({"BLOCK": (16, 32)}) == Space({"BLOCK": (16, 32)})
        True
        >>> Space({"BLOCK": (16, 32)})
        Space({'BLOCK': (16, 32)})
    """

    def __init__(self, dims: Mapping[str, tuple[int, ...]] | None = None):
        self._dims: tuple[tuple[str, tuple[int, ...]], ...] = tuple(
            (name, tuple(choices)) for name, choices in (dims or {}).items()
        )
        for name, choices in self._dims:
            if not choices:
                raise ValueError(f"the dimension `{name}` has no choices")

    # -- the dimensions --------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The dimensions, in order.

        >>> Space({"A": (1, 2), "B": (3,)}).names
        ('A', 'B')
        """
        return tuple(name for name, _ in self._dims)

    def choices(self, name: str) -> tuple[int, ...]:
        """The choices of `name`, in order; `KeyError` for a name not searched.

        >>> Space({"A": (1, 2)}).choices("A")
        (1, 2)
        """
        for dim, choices in self._dims:
            if dim == name:
                return choices
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        """The number of variants: the product of the choice counts (1 when empty)."""
        count = 1
        for _, choices in self._dims:
            count *= len(choices)
        return count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Space) and self._dims == other._dims

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"Space({dict(self._dims)!r})"

    # -- variants --------------------------------------------------------------

    def variants(self) -> Iterator[Variant]:
        """Every variant, first dimension slowest.

        >>> list(Space({"A": (1, 2), "B": (3, 4)}).variants())
        [{'A': 1, 'B': 3}, {'A': 1, 'B': 4}, {'A': 2, 'B': 3}, {'A': 2, 'B': 4}]
        """
        names = self.names
        for values in itertools.product(*(choices for _, choices in self._dims)):
            yield dict(zip(names, values, strict=True))

    def __iter__(self) -> Iterator[Variant]:
        return self.variants()

    def first_choice(self) -> Variant:
        """Every dimension's first choice: the variant that seeds the shape
        environment, and the one a launch takes until the kernel is tuned.

        >>> Space({"TILE_M": (32, 64, 128, 256), "TILE_K": (4, 8)}).first_choice()
        {'TILE_M': 32, 'TILE_K': 4}
        """
        return {name: choices[0] for name, choices in self._dims}

    def check(self, variant: Mapping[str, int]) -> None:
        """`ValueError` unless `variant` gives every dimension one of its choices.

        >>> Space({"A": (1, 2)}).check({"A": 3})
        Traceback (most recent call last):
        ...
        ValueError: `A` is 3, not one of its choices 1, 2
        """
        missing = [name for name in self.names if name not in variant]
        if missing:
            raise ValueError(f"the variant gives no value to `{missing[0]}`")
        extra = [name for name in variant if name not in self]
        if extra:
            raise ValueError(f"`{extra[0]}` is not a dimension of the space")
        for name, choices in self._dims:
            value = variant[name]
            if type(value) is not int or value not in choices:
                listed = ", ".join(str(c) for c in choices)
                raise ValueError(f"`{name}` is {value!r}, not one of its choices {listed}")

    # -- keys --------------------------------------------------------------------

    def variant_key(self, variant: Mapping[str, int]) -> str:
        """The stable text of `variant`: `NAME=value` in the space's order, by commas.

        The tuner's cache and its reports name a variant by this key; `parse_key`
        reads it back. `ValueError` for a variant that is not in the space.

        >>> Space({"TILE_M": (64,), "TILE_N": (64, 128)}).variant_key({"TILE_N": 128, "TILE_M": 64})
        'TILE_M=64,TILE_N=128'
        >>> Space().variant_key({})
        ''
        """
        self.check(variant)
        return ",".join(f"{name}={variant[name]}" for name in self.names)

    def parse_key(self, key: str) -> Variant:
        """The variant `key` names, in the space's order; `ValueError` if it names none.

        >>> Space({"A": (1, 2), "B": (8,)}).parse_key("B=8,A=2")
        {'A': 2, 'B': 8}
        >>> Space({"A": (1, 2)}).parse_key("A=x")
        Traceback (most recent call last):
        ...
        ValueError: `A=x` is not `NAME=integer`
        """
        found: dict[str, int] = {}
        for part in key.split(",") if key else ():
            name, eq, text = part.partition("=")
            if not eq or not name.isidentifier() or not _is_int(text):
                raise ValueError(f"`{part}` is not `NAME=integer`")
            if name in found:
                raise ValueError(f"`{name}` is given twice in the key")
            found[name] = int(text)
        self.check(found)
        return {name: found[name] for name in self.names}


def _is_int(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return digits.isdigit() and digits.isascii()
