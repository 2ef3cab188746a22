"""The reference manual, docs/reference/, rendered from the compiler's own name table.

    python -m phobos.manual            # rewrites docs/reference/*.md (all but kernel.md)
    python -m phobos.manual --check    # exit status 1 when a committed page differs

`pages()` is the text of every generated page; `phobos.manual.entries` holds what the
manual adds to `phobos/names.py`: each name's rules and an example kernel.
"""

from phobos.manual.render import HEADER, check_example, pages

__all__ = ["HEADER", "check_example", "pages"]
