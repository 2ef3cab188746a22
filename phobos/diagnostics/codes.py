"""The error-code registry: every `EXXXX` with its long explanation.

Each code has a Markdown file `explain/EXXXX.md` beside this module; its first line
is `# EXXXX: short title`, then prose and an example. `phobos-compile --explain E0012`
prints that text.

    >>> "E0901" in known_codes()
    True
    >>> title("E0901")
    'an input file cannot be read'
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

EXPLAIN_DIR = Path(__file__).with_name("explain")
_CODE = re.compile(r"E\d{4}")


class UnknownCode(LookupError):
    """Raised by `explain` for a code that has no explanation."""

    def __init__(self, code: str):
        self.code = code
        super().__init__(f"`{code}` is not a known error code")


def normalize(code: str) -> str:
    """`e0012`, `0012` and `E0012` all name `E0012`.

    >>> normalize("e12")
    'E0012'
    """
    text = code.strip().upper()
    if text.startswith("E"):
        text = text[1:]
    if text.isdigit() and len(text) <= 4:
        return f"E{int(text):04d}"
    return code.strip()


@cache
def _registry() -> dict[str, str]:
    table = {}
    if EXPLAIN_DIR.is_dir():
        for path in sorted(EXPLAIN_DIR.glob("E*.md")):
            if _CODE.fullmatch(path.stem):
                table[path.stem] = path.read_text(encoding="utf-8")
    return table


def known_codes() -> list[str]:
    """Every code with an explanation, sorted."""
    return sorted(_registry())


def explain(code: str) -> str:
    """The long explanation of `code` (Markdown), or `UnknownCode`.

    >>> explain("E0901").splitlines()[0]
    '# E0901: an input file cannot be read'
    """
    key = normalize(code)
    try:
        return _registry()[key]
    except KeyError:
        raise UnknownCode(code.strip()) from None


def title(code: str) -> str:
    """The short title from the first line of `code`'s explanation."""
    first = explain(code).splitlines()[0] if explain(code) else ""
    _, _, rest = first.partition(":")
    return rest.strip()
