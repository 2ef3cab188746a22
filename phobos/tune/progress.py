"""The progress of a tuning run, on standard error, phase by phase: the variants
compiled, checked against the reference, timed.

On a terminal one line is redrawn in place (`\\r`): a bar over all the steps, the
count of each phase begun, the seconds since the start. Anywhere else (a log, a CI
job) each phase prints one plain line when it finishes, so a log holds no redraws.
`PHOBOS_PROGRESS=0` (or `false`, `off`, `no`) prints nothing.

    >>> import io
    >>> log = io.StringIO()
    >>> with Progress(12, "tuning saxpy", stream=log) as bar:
    ...     bar.stage("compiled", 2); bar.advance(2)
    ...     bar.stage("timed", 10); bar(10, 10)   # as measure's progress callback
    >>> print(log.getvalue(), end="")
    tuning saxpy: compiled 2/2 in 0.0 s
    tuning saxpy: timed 10/10 in 0.0 s
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

BAR = 24  # characters of the bar on a terminal
REDRAW_S = 0.1  # a terminal's line is redrawn at most this often, but at a phase's end


def enabled(environ=None) -> bool:
    """False when `PHOBOS_PROGRESS=0` (or `false`, `off`, `no`).

    >>> enabled({"PHOBOS_PROGRESS": "0"}), enabled({})
    (False, True)
    """
    value = (environ if environ is not None else os.environ).get("PHOBOS_PROGRESS", "1")
    return value.strip().lower() not in ("0", "false", "off", "no")


@dataclass
class _Phase:
    name: str
    total: int
    started: float
    done: int = 0
    reported: bool = False  # its plain line is printed

    @property
    def finished(self) -> bool:
        return self.done >= self.total


class Progress:
    """A progress bar over `total_steps` steps, in phases, written to `stream`
    (standard error when None). Each phase is begun by `stage(name, total)` and
    counted by `advance(n)`, or by calling the bar as `bar(done, total)`, which is the
    `progress` callback `timing.measure` takes. `close()` (or the `with` block's end)
    ends the line.

    On a terminal (`stream.isatty()`):

        tuning saxpy [##########--------------]  42% compiled 8/8, checked 8/8, timed 12/160  3.1 s
    """

    def __init__(
        self,
        total_steps: int,
        label: str,
        stream: TextIO | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total_steps = total_steps
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = clock()
        self.phases: list[_Phase] = []
        self.quiet = not enabled()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._drawn = 0  # length of the line last drawn on the terminal
        self._drawn_at: float | None = None
        self._closed = False

    # -- counting

    def stage(self, name: str, total: int) -> None:
        """Begin phase `name` of `total` steps; the phase before it is finished."""
        self._report()
        self.phases.append(_Phase(name, total, self.clock()))
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        """Count `n` more steps of the current phase."""
        phase = self._current()
        phase.done += n
        self._changed(phase)

    def __call__(self, done: int, total: int) -> None:
        """Set the current phase's count to `done` of `total`."""
        phase = self._current()
        phase.done, phase.total = done, total
        self._changed(phase)

    def close(self) -> None:
        """End the line on a terminal, or print the unfinished phase's line; once."""
        if self._closed:
            return
        self._closed = True
        if self.tty:
            if self.phases:
                self._draw(force=True)
                self._write("\n")
        else:
            self._report()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _current(self) -> _Phase:
        if not self.phases:
            raise ValueError("a progress bar counts steps of a phase: call stage() first")
        return self.phases[-1]

    def _changed(self, phase: _Phase) -> None:
        if self.tty:
            self._draw(force=phase.finished)
        elif phase.finished:
            self._report()

    # -- writing

    def line(self) -> str:
        """The terminal's line as it stands.

        >>> import io
        >>> ticks = iter([0.0, 0.0, 2.5])  # made, the phase begun, the line read
        >>> bar = Progress(10, "tuning k", stream=io.StringIO(), clock=lambda: next(ticks))
        >>> bar.stage("timed", 10); bar.advance(5)
        >>> bar.line()
        'tuning k [############------------]  50% timed 5/10  2.5 s'
        """
        done = sum(min(p.done, p.total) for p in self.phases)
        fraction = min(1.0, done / self.total_steps) if self.total_steps > 0 else 1.0
        filled = round(fraction * BAR)
        counts = ", ".join(f"{p.name} {p.done}/{p.total}" for p in self.phases)
        elapsed = self.clock() - self.started
        bar = "#" * filled + "-" * (BAR - filled)
        return f"{self.label} [{bar}] {fraction:4.0%} {counts}  {elapsed:.1f} s"

    def _draw(self, force: bool = False) -> None:
        if not self.tty or self.quiet or (self._closed and not force):
            return
        now = self.clock()
        if not force and self._drawn_at is not None and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now
        text = self.line()
        # a line wider than the terminal wraps, and `\r` would then redraw only its tail
        width = shutil.get_terminal_size((80, 24)).columns - 1
        text = text[:width]
        padding = " " * max(0, self._drawn - len(text))
        self._drawn = len(text)
        self._write("\r" + text + padding)

    def _report(self) -> None:
        """The current phase's plain line, when not on a terminal and not yet printed."""
        if self.tty or not self.phases:
            return
        phase = self.phases[-1]
        if phase.reported:
            return
        phase.reported = True
        seconds = self.clock() - phase.started
        self._write(f"{self.label}: {phase.name} {phase.done}/{phase.total} in {seconds:.1f} s\n")

    def _write(self, text: str) -> None:
        if self.quiet:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: tuning goes on, silent
            self.quiet = True
