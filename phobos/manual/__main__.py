"""`python -m phobos.manual [--check]`: write (or compare) docs/reference's generated pages."""

from __future__ import annotations

import sys
from pathlib import Path

from phobos.manual.render import pages

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    stale = []
    for relative, text in pages().items():
        path = ROOT / "docs" / "reference" / relative
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for name in stale:
        print(f"{name} differs from what python -m phobos.manual writes", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
