"""interp.threads runs Hopper's asynchronous ops: a producer warp fills a two-slot ring by
bulk copies completing on `full` mbarriers while a consumer warp drains it, freeing slots
through `empty` ones (the arms of the `If` run side by side); a phase that can never
complete is a hang naming the op; reading bulk bytes in flight is a race; elect_sync
picks one lane; named barriers hold only the threads they count."""

import numpy as np
import pytest

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

CHUNKS = 6  # 64-byte chunks of 16 u32 through a ring of 2 slots

RING = """kernel ring(%x: u64, %out: u64) threads=64 smem=160 {
  shared slots @0 size=128 align=16
  shared bars @128 size=32 align=8
  reg %t: u32
  reg %w: u32
  reg %lane: u32
  reg %p: pred
  reg %b: u32
  reg %isp: pred
  reg %e: pred
  reg %k: u32
  reg %slot: u32
  reg %ph: u32
  reg %eb: u32
  reg %fb: u32
  reg %ok: pred
  reg %dst: u32
  reg %o: u64
  reg %g: u64
  reg %acc: u32
  reg %a: u32
  reg %v: u32
  reg %l0: pred
  %t = sreg.tid.x
  %w = shr.u32 %t, 5:u32
  %lane = and.b32 %t, 31:u32
  %p = setp.eq.u32 %t, 0:u32
  %b = mov.u32 128:u32
  @%p mbarrier_init %b, 1:u32
  %b = mov.u32 136:u32
  @%p mbarrier_init %b, 1:u32
  %b = mov.u32 144:u32
  @%p mbarrier_init %b, 1:u32
  %b = mov.u32 152:u32
  @%p mbarrier_init %b, 1:u32
  @%p fence_mbarrier_init
  bar 0:u32
  %isp = setp.eq.u32 %w, 0:u32
  if %isp {
    %e = elect_sync
    for %k = 0:u32 to PRODUCED:u32 step 1:u32 {
      %slot = and.b32 %k, 1:u32
      %ph = shr.u32 %k, 1:u32
      %ph = and.b32 %ph, 1:u32
      %ph = xor.b32 %ph, 1:u32
      %eb = mad.u32 %slot, 8:u32, 144:u32
      loop {
        %ok = mbarrier_try_wait_parity %eb, %ph
        break if %ok
      }
      %fb = mad.u32 %slot, 8:u32, 128:u32
      %dst = mul.u32 %slot, 64:u32
      %o = mul_wide.u32 %k, 64:u32
      %g = add.u64 %x, %o
      if %e {
        mbarrier_arrive_expect_tx %fb, 64:u32
        cp_async_bulk %dst, %g, 64:u32, %fb
      }
    }
  } else {
    %acc = mov.u32 0:u32
    %l0 = setp.eq.u32 %lane, 0:u32
    for %k = 0:u32 to CHUNKS:u32 step 1:u32 {
      %slot = and.b32 %k, 1:u32
      %ph = shr.u32 %k, 1:u32
      %ph = and.b32 %ph, 1:u32
      %fb = mad.u32 %slot, 8:u32, 128:u32
      // WAIT
      %a = and.b32 %lane, 15:u32
      %a = mul.u32 %a, 4:u32
      %a = mad.u32 %slot, 64:u32, %a
      %v = ld.shared.u32 %a
      %acc = add.u32 %acc, %v
      %eb = mad.u32 %slot, 8:u32, 144:u32
      @%l0 mbarrier_arrive %eb
    }
    %o = mul_wide.u32 %lane, 4:u32
    %g = add.u64 %out, %o
    st.global.u32 %g, %acc
  }
}"""

WAIT = """      loop {
        %ok = mbarrier_try_wait_parity %fb, %ph
        break if %ok
      }"""


def ring(produced=CHUNKS, wait=WAIT):
    text = RING.replace("PRODUCED", str(produced)).replace("CHUNKS", str(CHUNKS))
    k = parse_kernel(text.replace("      // WAIT", wait))
    verify(k)
    return k


def run(k, x, words=32, *, check_races=False):
    mem = GlobalMemory()
    px = mem.place(np.asarray(x, np.uint32), "x")
    po = mem.place(np.zeros(words, np.uint32), "out")
    report = run_lir(k, 1, {"x": px, "out": po}, mem, check_races=check_races)
    return mem.read(po), report


def test_producer_and_consumer_warps_through_a_two_slot_ring():
    x = np.random.default_rng(1).integers(0, 1000, CHUNKS * 16)
    got, report = run(ring(), x, check_races=True)
    want = x.reshape(CHUNKS, 16).sum(axis=0)
    assert got.tolist() == np.tile(want, 2).tolist()
    assert report.race_free


def test_a_phase_that_never_completes_is_a_hang_naming_the_op():
    with pytest.raises(InterpError, match=r"`%ok = mbarrier_try_wait_parity %fb, %ph` hangs") as e:
        run(ring(produced=CHUNKS - 1), np.arange(CHUNKS * 16))
    message = str(e.value)
    assert "1 arrivals and 0 transaction bytes pending" in message
    assert "no other thread can make progress" in message


def test_reading_bulk_bytes_in_flight_is_a_race():
    early = "      %a = mul.u32 %slot, 64:u32\n      %v = ld.shared.u32 %a\n" + WAIT
    _, report = run(ring(wait=early), np.arange(CHUNKS * 16), check_races=True)
    assert "async/read" in {r.kind for r in report.races}
    race = next(r for r in report.races if r.kind == "async/read")
    assert race.inst_a.op == "cp_async_bulk" and race.inst_b.op == "ld"
    assert race.buffer == "slots" and race.thread_a == 0 and race.thread_b >= 32
    assert "bulk copy into it" in race.message() and "mbarrier" in race.message()


def test_a_try_wait_on_an_uninitialised_mbarrier_is_an_error():
    k = ring(
        wait=WAIT.replace("%fb, %ph", "%a, %ph").replace("loop {", "%a = mov.u32 8:u32\n loop {")
    )
    with pytest.raises(InterpError, match=r"used before `mbarrier_init`"):
        run(k, np.arange(CHUNKS * 16))


ELECT = """kernel elect(%out: u64) threads=64 smem=0 {
  reg %t: u32
  reg %e: pred
  reg %l: u32
  reg %v: u32
  reg %o: u64
  reg %g: u64
  %t = sreg.tid.x
  %e, %l = elect_sync
  %v = selp.u32 1:u32, 0:u32, %e
  %v = mad.u32 %l, 2:u32, %v
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %out, %o
  st.global.u32 %g, %v
}"""


def test_elect_sync_picks_exactly_one_lane_of_each_warp():
    mem = GlobalMemory()
    po = mem.place(np.zeros(64, np.uint32), "out")
    run_lir(parse_kernel(ELECT), 1, {"out": po}, mem)
    got = mem.read(po)
    elected = got & 1
    assert elected.reshape(2, 32).sum(axis=1).tolist() == [1, 1]
    leaders = got >> 1
    assert set(leaders.tolist()) == {int(np.argmax(elected[:32]))}


def test_elect_sync_on_part_of_a_warp_is_an_error():
    text = ELECT.replace(
        "  %e, %l = elect_sync",
        "  %e = setp.lt.u32 %t, 8:u32\n  %l = mov.u32 0:u32\n  @%e %e, %l = elect_sync",
    )
    with pytest.raises(InterpError, match=r"`elect_sync` is run by part of warp 0"):
        k = parse_kernel(text)
        mem = GlobalMemory()
        run_lir(k, 1, {"out": mem.place(np.zeros(64, np.uint32))}, mem)


# Warp 1 waits at named barrier 1 for 64 threads; warp 0 writes a word and arrives there
# without waiting; warps 2 and 3 meet at barrier 2 on their own. Warp 1 then reads the word.
NAMED = """kernel named(%out: u64) threads=128 smem=16 {
  shared box @0 size=16 align=16
  reg %t: u32
  reg %w: u32
  reg %p: pred
  reg %q: pred
  reg %z: u32
  reg %v: u32
  reg %o: u64
  reg %g: u64
  %t = sreg.tid.x
  %w = shr.u32 %t, 5:u32
  %z = mov.u32 0:u32
  %v = mov.u32 7:u32
  %p = setp.eq.u32 %w, 1:u32
  if %p {
    bar 1:u32, COUNT:u32
    %v = ld.shared.u32 %z
  } else {
    %q = setp.eq.u32 %w, 0:u32
    if %q {
      st.shared.u32 %z, %t  [offset=4]
      %v = add.u32 %t, 100:u32
      st.shared.u32 %z, %v
      bar 1:u32, COUNT:u32  [arrive=1]
    } else {
      bar 2:u32, 64:u32
      %v = mov.u32 2:u32
    }
  }
  %o = mul_wide.u32 %t, 4:u32
  %g = add.u64 %out, %o
  st.global.u32 %g, %v
}"""


def test_named_barriers_hold_only_the_threads_they_count():
    mem = GlobalMemory()
    po = mem.place(np.zeros(128, np.uint32), "out")
    report = run_lir(parse_kernel(NAMED.replace("COUNT", "64")), 1, {"out": po}, mem)
    got = mem.read(po).reshape(4, 32)
    assert got[0].tolist() == list(range(100, 132))
    assert got[1].tolist() == [131] * 32  # the last of warp 0's writes to the word
    assert got[2:].tolist() == [[2] * 32] * 2
    assert report.barriers == 2


def test_a_named_barrier_short_of_threads_hangs():
    mem = GlobalMemory()
    po = mem.place(np.zeros(128, np.uint32), "out")
    with pytest.raises(InterpError, match=r"`bar 1:u32, 96:u32` hangs: barrier 1 .* waits for 96"):
        run_lir(parse_kernel(NAMED.replace("COUNT", "96")), 1, {"out": po}, mem)


SETMAXNREG = """kernel regs(%out: u64) threads=256 smem=0 {
  reg %t: u32
  reg %p: pred
  %t = sreg.tid.x
  %p = setp.lt.u32 %t, 128:u32
  if %p {
    setmaxnreg  [action=dec, regs=40]
  } else {
    setmaxnreg  [action=inc, regs=232]
  }
}"""


def test_setmaxnreg_runs_per_warpgroup():
    mem = GlobalMemory()
    run_lir(parse_kernel(SETMAXNREG), 1, {"out": mem.place(np.zeros(1, np.uint32))}, mem)


def test_setmaxnreg_on_part_of_a_warpgroup_is_an_error():
    text = SETMAXNREG.replace("128:u32", "64:u32")
    mem = GlobalMemory()
    with pytest.raises(InterpError, match=r"`setmaxnreg` is run by part of warpgroup 0"):
        run_lir(parse_kernel(text), 1, {"out": mem.place(np.zeros(1, np.uint32))}, mem)


REINIT = """kernel reinit() threads=64 smem=8 {
  shared bars @0 size=8 align=8
  reg %t: u32
  reg %p: pred
  reg %b: u32
  reg %tok: b64
  reg %ok: pred
  %t = sreg.tid.x
  %p = setp.eq.u32 %t, 0:u32
  %b = mov.u32 0:u32
  @%p mbarrier_init %b, 64:u32
  @%p fence_mbarrier_init
  bar 0:u32
  %tok = mbarrier_arrive %b
  loop {
    %ok = mbarrier_try_wait_parity %b, 0:u32
    break if %ok
  }
  // BETWEEN
  @%p mbarrier_init %b, 1:u32
}"""


@pytest.mark.parametrize("between, racing", [("", True), ("  bar 0:u32", False)])
def test_an_mbarrier_initialised_again_under_another_threads_wait_is_a_race(between, racing):
    # A second ring on the same mbarriers (causal attention's diagonal loop after its
    # full tiles): thread 0's init must wait for every thread's last wait on the word.
    k = parse_kernel(REINIT.replace("  // BETWEEN", between))
    verify(k)
    report = run_lir(k, 1, {}, GlobalMemory(), check_races=True)
    assert report.race_free is not racing
    if racing:
        assert "atomic/write" in report.format_races()
        assert "`bars` byte 0" in report.format_races()
