"""interp.threads runs cp_async with its groups: a copy lands in shared memory at the wait
that retires its group, never before; a source size zero-fills the rest; with
check_races an access to bytes in flight is a race, and the issuing thread's wait
followed by a barrier makes them safe for every thread."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.interp.threads import SHARED_FILL
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

FILL = int.from_bytes(bytes([SHARED_FILL]) * 4, "little")  # a u32 never written


def kernel(text: str):
    k = parse_kernel(text)
    verify(k)
    return k


def run(k, x, out_words: int, *, check_races=False):
    mem = GlobalMemory()
    px = mem.place(np.asarray(x, np.uint32), "x")
    po = mem.place(np.zeros(out_words, np.uint32), "out")
    report = run_lir(k, 1, {"x": px, "out": po}, mem, check_races=check_races)
    return mem.read(po), report


# Each thread t copies x[4t : 4t+4] into tile[16t : 16t+16] and reads its first word
# before and after the wait: out[2t] before, out[2t+1] after.
LAND = """kernel land(%x: u64, %out: u64) threads=4 smem=64 {
  shared tile @0 size=64 align=16
  reg %t: u32
  reg %s: u32
  reg %o: u64
  reg %g: u64
  reg %before: u32
  reg %after: u32
  %t = sreg.tid.x
  %s = mul.u32 %t, 16:u32
  %o = mul_wide.u32 %t, 16:u32
  %g = add.u64 %x, %o
  cp_async %s, %g  [size=16]
  cp_async_commit
  %before = ld.shared.u32 %s
  cp_async_wait  [pending=0]
  %after = ld.shared.u32 %s
  %o = mul_wide.u32 %t, 8:u32
  %g = add.u64 %out, %o
  st.global.u32 %g, %before
  st.global.u32 %g, %after  [offset=4]
}"""


def test_a_copy_lands_at_the_wait_not_before():
    got, _ = run(kernel(LAND), np.arange(100, 116), 8)
    assert got[0::2].tolist() == [FILL] * 4
    assert got[1::2].tolist() == [100, 104, 108, 112]


def test_the_issuing_thread_reading_before_its_wait_is_a_race():
    _, report = run(kernel(LAND), np.arange(16), 8, check_races=True)
    kinds = {r.kind for r in report.races}
    assert kinds == {"async/read"}
    race = report.races[0]
    assert race.thread_a == race.thread_b  # its own copy, still in flight
    assert race.inst_a.op == "cp_async" and race.inst_b.op == "ld"
    message = race.message()
    assert "shared `tile` byte" in message and "still in flight" in message
    assert "copies into" not in message and "reads it" in message


# Thread t copies min(max(40 - 16t, 0), 16) bytes from x + 16t: x holds 40 bytes, so
# thread 2 reads 8 of its 16 and thread 3, whose address is past the end, none.
ZERO_FILL = """kernel zfill(%x: u64, %out: u64) threads=4 smem=64 {
  shared tile @0 size=64 align=16
  reg %t: u32
  reg %s: u32
  reg %n: s32
  reg %o: u64
  reg %g: u64
  reg %a: u32
  reg %b: u32
  reg %c: u32
  reg %d: u32
  %t = sreg.tid.x
  %s = mul.u32 %t, 16:u32
  %n = sub.s32 40:s32, %s
  %n = max.s32 %n, 0:s32
  %n = min.s32 %n, 16:s32
  %o = cvt.u64.u32 %s
  %g = add.u64 %x, %o
  cp_async %s, %g, %n  [size=16]
  cp_async_commit
  cp_async_wait  [pending=0]
  %a, %b, %c, %d = ld.shared.v4.u32 %s
  %g = add.u64 %out, %o
  st.global.v4.u32 %g, %a, %b, %c, %d
}"""


def test_bytes_past_the_source_size_are_zeros_and_never_read():
    got, report = run(kernel(ZERO_FILL), np.arange(1, 11), 16, check_races=True)
    assert got.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 0, 0, 0]
    assert report.race_free


def test_a_full_copy_past_the_end_faults_at_the_copy():
    text = ZERO_FILL.replace("cp_async %s, %g, %n", "cp_async %s, %g")
    with pytest.raises(InterpError, match=r"thread 2 of block .* reads 16 bytes .* past the end"):
        run(kernel(text), np.arange(1, 11), 16)


def test_a_guarded_off_copy_is_not_issued():
    text = ZERO_FILL.replace("  reg %t: u32", "  reg %t: u32\n  reg %p: pred").replace(
        "  cp_async %s, %g, %n  [size=16]",
        "  %p = setp.ne.u32 %t, 1:u32\n  @%p cp_async %s, %g, %n  [size=16]",
    )
    got, _ = run(kernel(text), np.arange(1, 11), 16)
    assert got.tolist() == [1, 2, 3, 4, FILL, FILL, FILL, FILL, 9, 10, 0, 0, 0, 0, 0, 0]


# One thread, three committed groups (A, B, C) and a copy D never committed before the
# third wait. After each wait it stores the first word of A, B, C and D.
GROUPS = """kernel groups(%x: u64, %out: u64) threads=1 smem=64 {
  shared tile @0 size=64 align=16
  reg %g: u64
  reg %s: u32
  reg %o: u64
  reg %w: u32
  %o = mov.u64 %out
  %s = mov.u32 0:u32
  cp_async %s, %x  [size=4]
  cp_async_commit
  %s = mov.u32 16:u32
  %g = add.u64 %x, 4:u64
  cp_async %s, %g  [size=4]
  cp_async_commit
  %s = mov.u32 32:u32
  %g = add.u64 %x, 8:u64
  cp_async %s, %g  [size=4]
  cp_async_commit
  cp_async_wait  [pending=2]
  // STORE
  cp_async_wait  [pending=1]
  // STORE
  %s = mov.u32 48:u32
  %g = add.u64 %x, 12:u64
  cp_async %s, %g  [size=4]
  cp_async_wait  [pending=0]
  // STORE
  cp_async_commit
  cp_async_wait  [pending=0]
  // STORE
}"""

STORE = "\n".join(
    f"  %s = mov.u32 {16 * k}:u32\n  %w = ld.shared.u32 %s\n  st.global.u32 %o, %w\n"
    "  %o = add.u64 %o, 4:u64"
    for k in range(4)
)


def test_wait_group_n_leaves_the_n_newest_groups_in_flight():
    text = GROUPS.replace("  // STORE", STORE)
    got, _ = run(kernel(text), [11, 22, 33, 44], 16)
    rows = got.reshape(4, 4).tolist()
    assert rows[0] == [11, FILL, FILL, FILL]  # pending=2: A only
    assert rows[1] == [11, 22, FILL, FILL]  # pending=1: A and B
    assert rows[2] == [11, 22, 33, FILL]  # pending=0: every committed group, not D
    assert rows[3] == [11, 22, 33, 44]  # D committed, then waited for


# Thread t copies x[t] into slot t, then reads slot t+1 (mod 4), another thread's copy.
NEIGHBOUR = """kernel neighbour(%x: u64, %out: u64) threads=4 smem=16 {
  shared tile @0 size=16 align=16
  reg %t: u32
  reg %s: u32
  reg %o: u64
  reg %g: u64
  reg %u: u32
  reg %v: u32
  %t = sreg.tid.x
  %s = mul.u32 %t, 4:u32
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %x, %o
  cp_async %s, %g  [size=4]
  cp_async_commit
  // SYNC
  %u = add.u32 %t, 1:u32
  %u = and.b32 %u, 3:u32
  %u = mul.u32 %u, 4:u32
  %v = ld.shared.u32 %u
  %g = add.u64 %out, %o
  st.global.u32 %g, %v
}"""


def neighbour(sync: str):
    return kernel(NEIGHBOUR.replace("  // SYNC", sync))


def test_the_wait_then_a_barrier_makes_another_threads_copy_safe():
    sync = "  cp_async_wait  [pending=0]\n  bar 0:u32"
    got, report = run(neighbour(sync), [5, 6, 7, 8], 4, check_races=True)
    assert got.tolist() == [6, 7, 8, 5]
    assert report.race_free and report.races_found == 0


def test_a_barrier_without_the_wait_leaves_the_copy_in_flight():
    got, report = run(neighbour("  bar 0:u32"), [5, 6, 7, 8], 4, check_races=True)
    assert got.tolist() == [FILL] * 4
    assert [r.kind for r in report.races] == ["async/read"]
    race = report.races[0]
    assert race.thread_b == (race.thread_a + 3) % 4 and race.buffer == "tile"
    assert "still in flight" in race.message()
    diag = race.diagnostic()
    assert "an asynchronous copy into it is in flight" in diag.message
    assert "wait for the copy's group" in diag.help[0]


def test_the_wait_without_a_barrier_orders_only_the_issuing_thread():
    _, report = run(neighbour("  cp_async_wait  [pending=0]"), [5, 6, 7, 8], 4, check_races=True)
    assert [r.kind for r in report.races] == ["read/write"]
    message = report.races[0].message()
    assert "copies into it" in message and "with no barrier between" in message


def test_a_write_to_bytes_in_flight_is_a_race():
    sync = "  bar 0:u32\n  st.shared.u32 %s, %t\n  cp_async_wait  [pending=0]\n  bar 0:u32"
    _, report = run(neighbour(sync), [5, 6, 7, 8], 4, check_races=True)
    assert [r.kind for r in report.races] == ["async/write"]
    assert report.races[0].inst_b.op == "st"


def test_a_read_before_the_copy_in_the_same_epoch_races_with_it():
    # Thread t+1 may read its slot before thread t's copy is issued; the copy may land at once.
    text = NEIGHBOUR.replace(
        "  cp_async %s, %g  [size=4]",
        "  %v = ld.shared.u32 %s\n  bar 0:u32\n  %u = add.u32 %t, 1:u32\n  %u = and.b32 %u, 3:u32\n"
        "  %u = mul.u32 %u, 4:u32\n  %v = ld.shared.u32 %u\n  cp_async %s, %g  [size=4]",
    ).replace("  // SYNC", "  cp_async_wait  [pending=0]\n  bar 0:u32")
    _, report = run(kernel(text), [5, 6, 7, 8], 4, check_races=True)
    assert [r.kind for r in report.races] == ["read/write"]
    assert report.races[0].inst_b.op == "cp_async"


# A two-stage pipeline over four chunks: chunk k goes to stage k % 2, each stage's wait
# leaves the newest group in flight, and every thread reads its neighbour's word.
PIPELINE = """kernel pipeline(%x: u64, %out: u64) threads=4 smem=32 {
  shared stages @0 size=32 align=16
  reg %t: u32
  reg %k: s32
  reg %c: u32
  reg %s: u32
  reg %u: u32
  reg %o: u64
  reg %g: u64
  reg %v: u32
  reg %acc: u32
  reg %p: pred
  %t = sreg.tid.x
  %acc = mov.u32 0:u32
  %s = mul.u32 %t, 4:u32
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %x, %o
  cp_async %s, %g  [size=4]
  cp_async_commit
  %s = add.u32 %s, 16:u32
  %g = add.u64 %g, 16:u64
  cp_async %s, %g  [size=4]
  cp_async_commit
  for %k = 0:s32 to 4:s32 step 1:s32 {
    cp_async_wait  [pending=WAIT]
    bar 0:u32
    %c = and.b32 %k, 1:u32
    %c = mul.u32 %c, 16:u32
    %u = add.u32 %t, 1:u32
    %u = and.b32 %u, 3:u32
    %u = mad.u32 %u, 4:u32, %c
    %v = ld.shared.u32 %u
    %acc = add.u32 %acc, %v
    bar 0:u32
    %s = mad.u32 %t, 4:u32, %c
    %c = add.u32 %k, 2:u32
    %p = setp.lt.u32 %c, 4:u32
    %o = mul_wide.u32 %c, 16:u32
    %g = add.u64 %x, %o
    %o = mul_wide.u32 %t, 4:u32
    %g = add.u64 %g, %o
    @%p cp_async %s, %g  [size=4]
    cp_async_commit
  }
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %out, %o
  st.global.u32 %g, %acc
}"""


def test_a_two_stage_pipeline_is_right_and_race_free():
    x = np.arange(16) * 10
    got, report = run(kernel(PIPELINE.replace("WAIT", "1")), x, 4, check_races=True)
    want = [sum(x[4 * k + (t + 1) % 4] for k in range(4)) for t in range(4)]
    assert got.tolist() == want
    assert report.race_free


def test_a_pipeline_waiting_too_little_reads_a_stage_in_flight():
    _, report = run(kernel(PIPELINE.replace("WAIT", "2")), np.arange(16), 4, check_races=True)
    assert "async/read" in {r.kind for r in report.races}
