"""The debugging aids the environment switches on: `PHOBOS_LOG` and `PHOBOS_DUMP`.

`PHOBOS_LOG=debug` (or `info`, `warning`) makes the `phobos` logger print to standard
error at that level. `configure()` runs once, when `phobos.build` or `phobos.driver` is
first imported; without the variable nothing is printed. The lowering logs why it
decided what it did (placement, vector width, masks kept, barriers inserted) under
`phobos.lower`; every line names the kernel being lowered (with its variant) and the
line of the statement being lowered, as `lowering(kernel)` and the lowering's builder
say:

    phobos.lower: saxpy[BLOCK=16] k.ph:4: sweep over [16] at vector width 4

`PHOBOS_DUMP=DIR` writes the text of each stage's artifact: `dump(stem, artifact, text)`
writes `DIR/<stem>.<artifact>` when the variable is set, and does nothing otherwise.

    >>> kernel_stem("saxpy", "BLOCK=16"), kernel_stem("launch4", "")
    ('saxpy.BLOCK=16', 'launch4')
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
from collections.abc import Iterator

from phobos.source import Span

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}

logger = logging.getLogger("phobos")

# The kernel being lowered (its name and variant), for the lines the lowering logs.
_KERNEL: contextvars.ContextVar[str | None] = contextvars.ContextVar("phobos_kernel", default=None)
_configured = False


class _Where(logging.Filter):
    """Adds `record.where`: the kernel being lowered and the statement's `file:line`."""

    def filter(self, record: logging.LogRecord) -> bool:
        where = ""
        kernel = getattr(record, "kernel", None) or _KERNEL.get()
        if kernel:
            where = f"{kernel} "
        span = getattr(record, "span", None)
        if not isinstance(span, Span):
            span = _statement_span()
        if span is not None:
            line, _ = span.source.line_col(span.start)
            where += f"{span.source.name}:{line}: "
        record.where = where
        return True


def _statement_span() -> Span | None:
    """The statement the innermost lowering on the stack is at: its builder's span.

    The lowering keeps the statement it lowers in `Lowering.b.span`; the functions that
    log hold the lowering as `lw` or `self` (or `self.lw`). Only runs for a record that
    is printed, so it costs nothing when logging is off.
    """
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("lw", "self"):
            owner = frame.f_locals.get(name)
            for obj in (owner, getattr(owner, "lw", None)):
                span = getattr(getattr(obj, "b", None), "span", None)
                if isinstance(span, Span):
                    return span
        frame = frame.f_back
    return None


def configure(environ=None) -> bool:
    """Print the `phobos` logger to stderr at `PHOBOS_LOG`'s level; once per process.

    Returns whether a handler was installed by this call. An unknown level is
    reported once on stderr and ignored.
    """
    global _configured
    if _configured:
        return False
    _configured = True
    value = (environ if environ is not None else os.environ).get("PHOBOS_LOG", "").strip().lower()
    if not value:
        return False
    level = LEVELS.get(value)
    if level is None:
        known = ", ".join(LEVELS)
        print(f"warning: PHOBOS_LOG={value!r} is not a level ({known}); ignored", file=sys.stderr)
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Where())
    handler.setFormatter(logging.Formatter("%(name)s: %(where)s%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    return True


@contextlib.contextmanager
def lowering(label: str) -> Iterator[None]:
    """Within the block, log lines name `label` (`kernel[VARIANT]`) as the kernel."""
    token = _KERNEL.set(label)
    try:
        yield
    finally:
        _KERNEL.reset(token)


def kernel_stem(name: str, key: str) -> str:
    """The file stem of one kernel variant's dumps: `name` or `name.KEY`."""
    return f"{name}.{key}" if key else name


def dump(stem: str, artifact: str, text: str) -> None:
    """Write `text` to `$PHOBOS_DUMP/<stem>.<artifact>` when PHOBOS_DUMP is set.

    A folder that cannot be written gives one warning on stderr, never an error: a
    debugging aid must not stop the compile.
    """
    folder = os.environ.get("PHOBOS_DUMP")
    if not folder:
        return
    path = os.path.join(folder, f"{stem}.{artifact}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        print(
            f"warning: PHOBOS_DUMP: cannot write `{path}`: {exc.strerror or exc}", file=sys.stderr
        )
