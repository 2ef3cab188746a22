"""The synchronise rule's model of asynchronous copies: a read or write of bytes a
cp.async may still be writing gets the wait for that copy's group (leaving the younger
groups in flight) and a barrier; a ring's stages are apart, and turn one on at the end
of a turn."""

from phobos.lower.barriers import Slot, Tracker
from phobos.lower.builder import Builder
from phobos.lower.lir import SharedBuffer

SWEEP = ("sweep", (16, 16), 4)
RING = SharedBuffer("ring", 0, 4096)
OTHER = SharedBuffer("other", 4096, 1024)


class _Lowering:
    def __init__(self):
        self.b = Builder()


def _tracker():
    return Tracker(_Lowering())


def _ops(t) -> list[str]:
    return [
        (i.op, i.attr("pending")) if i.op == "cp_async_wait" else i.op for i in t.lw.b.stack[-1]
    ]


def test_reading_bytes_in_flight_waits_for_their_group_and_meets():
    t = _tracker()
    t.copy_async(RING)
    t.commit()
    t.access(RING, "read", SWEEP)
    assert _ops(t) == ["cp_async_commit", ("cp_async_wait", 0), "bar"]
    t.access(RING, "read", SWEEP)  # landed now: nothing more
    assert len(_ops(t)) == 3


def test_the_wait_leaves_the_younger_groups_in_flight():
    t = _tracker()
    for turn in range(3):
        t.copy_async(Slot(RING, turn))
        t.commit()
    t.access(Slot(RING, 1), "read", SWEEP)  # the second group: one younger stays
    assert _ops(t)[-2:] == [("cp_async_wait", 1), "bar"]
    assert len(t.flight) == 1
    t.access(Slot(RING, 0), "read", SWEEP)  # retired with the older group already
    assert _ops(t).count("bar") == 1


def test_bytes_no_copy_writes_need_no_wait():
    t = _tracker()
    t.copy_async(RING)
    t.commit()
    t.access(OTHER, "write", SWEEP)
    assert "cp_async_wait" not in str(_ops(t))


def test_a_copy_not_yet_committed_is_committed_before_its_wait():
    t = _tracker()
    t.copy_async(RING)
    t.access(RING, "read", SWEEP)
    assert _ops(t) == ["cp_async_commit", ("cp_async_wait", 0), "bar"]


def test_a_copy_waits_for_the_readers_of_its_bytes():
    t = _tracker()
    t.access(RING, "read", SWEEP)
    t.copy_async(RING)  # other threads may still read what the copy overwrites
    assert _ops(t) == ["bar"]


def test_a_ring_turns_its_stages_and_bytes_left_in_flight_are_waited_for_later():
    t = _tracker()
    t.rings["ring"] = 2
    t.copy_async(Slot(RING, 0))
    t.commit()
    t.access(RING, "read", SWEEP)  # this turn's stage: waits for the prologue's group
    t.copy_async(Slot(RING, 1))  # the next turn's, in the other stage: no wait, no barrier
    t.commit()
    t.access(RING, "read", SWEEP)
    assert _ops(t).count("bar") == 1
    t.rotate(RING, 2)
    assert t.flight == [[Slot(RING, 0)]]  # next turn's stage is this turn's now
    del t.rings["ring"]  # the loop is over; a tile sharing the bytes waits for them
    reuse = SharedBuffer("later", 1024, 512)
    t.access(reuse, "write", SWEEP)
    assert _ops(t)[-2:] == [("cp_async_wait", 0), "bar"]
