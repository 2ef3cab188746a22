"""Strands: the threads interpreter's way of running warps side by side.

A CTA normally runs in lockstep: an `If` runs its `then` arm for the threads that take it,
then its `orelse` arm for the rest. A warp-specialised kernel (a producer warp filling a
ring, consumer warps draining it, each waiting on the other's mbarriers) cannot run so:
the producer would wait for good on a slot the consumers have not freed yet. When a
kernel uses Hopper's synchronisation (`lir.HOPPER`, a named barrier), the two arms of an
`If` that both have threads run as two *strands*, taking turns: a strand runs until it
waits (a `try_wait` that found its phase incomplete, a `bar` short of threads), then the
next ready one runs. The arms meet again after the `If`, as the warps reconverge.

Only one strand runs at a time (each is a Python thread handed a baton), so the CTA's
state needs no locks. `progress` counts every change another strand could be waiting
for; a strand that finds its phase incomplete twice with nothing changed in between,
while every other ready strand has too, can never go on: that is a hang, reported at
its instruction, as is a `bar` that every other strand is too stuck to reach.

    >>> s = Scheduler()
    >>> order = []
    >>> s.fork([lambda: order.append("then"), lambda: order.append("else")])
    >>> order
    ['then', 'else']
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from phobos.interp.errors import InterpError


class _Abort(BaseException):
    """Unwinds a strand's thread after the run stopped elsewhere."""


class Strand:
    """One line of execution: the root (the CTA's own thread) or an arm of an `If`."""

    def __init__(self, name: str, root: bool = False):
        self.name = name
        self.root = root
        self.fails = (-1, 0)  # (progress, incomplete waits seen at it)
        self.waits_for = ""  # what it is stuck on, for the hang report
        self.hang = None  # makes the InterpError of its hang from the others' stories


class Scheduler:
    """Strands taking turns, one running at a time; see the module docstring."""

    def __init__(self):
        self.cv = threading.Condition()
        self.current = Strand("the block", root=True)
        self.ready: deque[Strand] = deque()
        self.blocked: list[Strand] = []
        self.progress = 0
        self.error: BaseException | None = None
        self.count = 0

    # -- turns ---------------------------------------------------------------

    def _wait_turn(self, me: Strand) -> None:
        with self.cv:
            while self.current is not me and self.error is None:
                self.cv.wait()
            if self.error is not None:
                if me.root and not isinstance(self.error, _Abort):
                    raise self.error
                raise _Abort()

    def _pass(self, me: Strand | None, why: InterpError | None = None) -> None:
        """Hand the baton to the next ready strand; `me` (if any) waits for it back."""
        if not self.ready:
            if why is None and self.blocked:  # the first stuck strand tells its own story
                first = self.blocked[0]
                why = first.hang(self.stuck_besides(first))
            self._fail(why or InterpError("every strand of the block waits: " + self.stuck()))
            return
        nxt = self.ready.popleft()
        if nxt is me:
            return
        with self.cv:
            self.current = nxt
            self.cv.notify_all()
        if me is not None:
            self._wait_turn(me)

    def _fail(self, error: BaseException) -> None:
        with self.cv:
            if self.error is None:
                self.error = error
            self.cv.notify_all()
        raise error

    def close(self) -> None:
        """Stop every strand still waiting (the run ended or failed)."""
        with self.cv:
            if self.error is None:
                self.error = _Abort()
            self.cv.notify_all()

    def stuck(self) -> str:
        return "; ".join(s.waits_for for s in (*self.blocked, *self.ready) if s.waits_for)

    # -- what the interpreter calls ------------------------------------------

    def fork(self, arms) -> None:
        """Run the callables `arms` as strands side by side; return once all have ended."""
        parent = self.current
        kids = []
        left = [len(arms)]
        for arm in arms:
            self.count += 1
            kid = Strand(f"strand {self.count}")
            kids.append(kid)
            thread = threading.Thread(target=self._run, args=(kid, arm, parent, left))
            thread.daemon = True
            thread.start()
        self.ready.extendleft(reversed(kids))
        self._pass(parent)

    def _run(self, me: Strand, arm, parent: Strand, left: list[int]) -> None:
        with np.errstate(all="ignore"):
            try:
                self._wait_turn(me)
                arm()
                left[0] -= 1
                if left[0] == 0:
                    self.ready.appendleft(parent)  # the arms have met: the If is done
                self._pass(None)
            except _Abort:
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the root strand
                with self.cv:
                    if self.error is None:
                        self.error = exc
                    self.cv.notify_all()

    def moved(self) -> None:
        """Something another strand may wait for changed (an arrival, bytes landing)."""
        self.progress += 1

    def spin(self, what: str, error) -> None:
        """The running strand found a phase incomplete: let the others run. `error()`
        makes the hang's InterpError when no strand can ever go on."""
        me = self.current
        seen, times = me.fails
        times = times + 1 if seen == self.progress else 1
        me.fails = (self.progress, times)
        me.waits_for = what
        hung = times >= 2 and all(self._stale(s) for s in self.ready)
        if hung:
            self._fail(error(self.stuck_besides(me)))
        self.ready.append(me)
        self._pass(me)
        me.waits_for = ""

    def _stale(self, s: Strand) -> bool:
        """`s` has found its phase incomplete twice since anything last changed."""
        return s.fails[0] == self.progress and s.fails[1] >= 2

    def stuck_besides(self, me: Strand) -> str:
        return "; ".join(
            s.waits_for for s in (*self.blocked, *self.ready) if s is not me and s.waits_for
        )

    def block(self, what: str, error) -> Strand:
        """The running strand waits until `release` puts it back (a `bar`)."""
        me = self.current
        me.waits_for, me.hang = what, error
        self.blocked.append(me)
        hung = all(self._stale(s) for s in self.ready)
        if hung:
            self._fail(error(self.stuck_besides(me)))
        self._pass(me)
        me.waits_for = ""
        return me

    def release(self, strands) -> None:
        for s in strands:
            if s in self.blocked:
                self.blocked.remove(s)
                self.ready.append(s)
        self.moved()
