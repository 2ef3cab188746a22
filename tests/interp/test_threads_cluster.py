"""interp.threads runs thread-block clusters: the cluster's special registers; multicast
TMA loads writing the box into every CTA its mask names, each CTA's mbarrier counting
the bytes it receives; the cluster barrier ordering one CTA's multicast after its peer
has read the buffer, and a race where it is missing; the errors (a grid of part
clusters, a mask past the cluster, a barrier arrived twice or waited unarrived, a
barrier one CTA never reaches, a warp in part); walking kernels on two clusters."""

import re
import time

import numpy as np
import pytest
import tmakit

from phobos.interp import GlobalMemory, InterpError, run_lir
from phobos.lower.lirparse import parse_kernel
from phobos.lower.verify import verify

# The kernels below are lir text less their `reg` lines, which `source` writes from this
# table, and less the fragments they share, each named by a line of its own (`WAIT`).
TYPES = {
    **dict.fromkeys("t c r k n b d a j v i w blk v0 v1 v2 v3".split(), "u32"),
    **dict.fromkeys("o g m".split(), "u64"),
    **dict.fromkeys("p ok first second lead".split(), "pred"),
    "y": "s32",
}

# `%p`: thread 0 of the CTA
PROLOGUE = """%t = sreg.tid.x
%c = sreg.ctaid.x
%r = sreg.cluster_ctarank
%p = setp.eq.u32 %t, 0:u32"""
# Thread 0 inits the mbarrier for one arrival; the fence and the cluster barrier make the
# init visible to the peers before a multicast of theirs lands on it.
INIT = """%b = mov.u32 4096:u32
@%p mbarrier_init %b, 1:u32
@%p fence_mbarrier_init
cluster_arrive
cluster_wait"""
# every thread spins until phase 0 of the mbarrier completes
WAIT = """loop {
  %ok = mbarrier_try_wait_parity %b, 0:u32
  break if %ok
}"""
# the 16 bytes at shared `%a` to the same offset of block `%c`'s 4096 bytes of `out`
COPY_OUT = """%v0, %v1, %v2, %v3 = ld.shared.v4.u32 %a
%o = mul_wide.u32 %c, 4096:u32
%g = add.u64 %out, %o
%o = cvt.u64.u32 %a
%g = add.u64 %g, %o
st.global.v4.u32 %g, %v0, %v1, %v2, %v3"""
FRAGMENTS = {"PROLOGUE": PROLOGUE, "INIT": INIT, "WAIT": WAIT, "COPY_OUT": COPY_OUT}


def expand(text: str, parts: dict[str, str]) -> list[str]:
    lines = []
    for line in text.splitlines():
        name = line.lstrip()
        indent = line[: len(line) - len(name)]
        lines += [indent + sub for sub in expand(parts[name], parts)] if name in parts else [line]
    return lines


def source(text: str, types: dict[str, str] | None = None, **parts: str) -> str:
    """`text` with its fragments expanded (`parts` adding to FRAGMENTS or replacing them)
    and, after its `shared` and `tmap` lines, a `reg` line for each `%name` it uses that is
    not a parameter, of its type in `types` or else in TYPES."""
    lines = expand(text, FRAGMENTS | parts)
    at = 1
    while lines[at].lstrip().startswith(("shared ", "tmap ")):
        at += 1
    params = re.findall(r"%(\w+):", lines[0])
    types = TYPES | (types or {})
    names = dict.fromkeys(re.findall(r"%(\w+)", "\n".join(lines[at:])))
    regs = [f"  reg %{name}: {types[name]}" for name in names if name not in params]
    return "\n".join(lines[:at] + regs + lines[at:])


def kernel(text: str, check: bool = True, types: dict[str, str] | None = None, **parts: str):
    k = parse_kernel(source(text, types, **parts))
    if check:
        verify(k)
    return k


# -- special registers ---------------------------------------------------------------

IDS = """kernel ids(%out: u64) threads=32 smem=0 cluster=CLUSTER {
  %t = sreg.tid.x
  %c = sreg.ctaid.x
  %r = sreg.cluster_ctarank
  %k = sreg.clusterid.x
  %n = sreg.nclusterid.x
  %p = setp.eq.u32 %t, 0:u32
  %o = mul_wide.u32 %c, 16:u32
  %g = add.u64 %out, %o
  @%p st.global.v4.u32 %g, %c, %r, %k, %n
}"""


def ids(cluster: int):
    text = IDS.replace(" cluster=CLUSTER", f" cluster={cluster}" if cluster > 1 else "")
    return kernel(text)


@pytest.mark.parametrize("cluster", [1, 2, 4])
def test_the_cluster_registers_read_rank_cluster_and_count(cluster):
    mem = GlobalMemory()
    out = mem.place(np.full((8, 4), 99, np.uint32))
    report = run_lir(ids(cluster), 8, {"out": out}, mem)
    c = np.arange(8)
    want = np.stack([c, c % cluster, c // cluster, np.full(8, 8 // cluster)], axis=1)
    assert report.ctas == 8
    assert (mem.read(out).reshape(8, 4) == want).all(), mem.read(out).reshape(8, 4)


def test_a_grid_of_part_clusters_is_an_error():
    mem = GlobalMemory()
    out = mem.place(np.zeros((3, 4), np.uint32))
    with pytest.raises(InterpError, match=r"x extent of 3 blocks is not a multiple of the "
                       r"kernel's clusters of 2 CTAs"):  # fmt: skip
        run_lir(ids(2), 3, {"out": out}, mem)


# -- multicast TMA loads -------------------------------------------------------------

# Each CTA of a cluster of two loads its rank's half (16 rows) of a 32 x 64 f16 tile with
# mask 0b11, to its half of the same buffer in both CTAs; each CTA's mbarrier expects the
# whole tile (`PRODUCER`), so a CTA's wait completes only with its peer's half. Then each
# CTA copies the tile (16 bytes a thread) to `out` at its block's 4096 bytes.
HALVES = """kernel halves(%A: u64, %out: u64, %Y: s32) threads=128 smem=4112 cluster=2 {
  shared tile @0 size=4096 align=1024
  shared bars @4096 size=16 align=8
  tmap A_tmap = A f16 [64, 64] box=[16, 64] swizzle=128B
  PROLOGUE
  INIT
  %m = tmap_addr  [map=A_tmap]
  %d = mul.u32 %r, 2048:u32
  %y = mad.s32 %r, 16:s32, %Y
  PRODUCER
  for %j = 0:u32 to 4096:u32 step 2048:u32 {
    %a = mad.u32 %t, 16:u32, %j
    COPY_OUT
  }
}"""
PRODUCER = """if %p {
  mbarrier_arrive_expect_tx %b, 4096:u32
  tma_load %d, %m, 0:s32, %y, %b, 3:u16
}
WAIT"""


def halves(producer: str = PRODUCER):
    return kernel(HALVES, PRODUCER=producer)


def run_tiles(k, a, y, *, ctas=2, check_races=False, extra=None):
    mem = GlobalMemory()
    pa = mem.place(a, "A")
    out = mem.place(np.full((ctas, 4096), 0xEE, np.uint8), "out")  # poisoned: a hole shows
    params = {"A": pa, "out": out, "Y": y, **(extra or {})}
    report = run_lir(k, ctas, params, mem, check_races=check_races)
    return mem.read(out).reshape(ctas, 4096), report


def run_race_free(k, seed, y, rows=32):
    """`run_tiles` on the tensor of `seed`, checked for races: what the CTAs wrote, the tile
    of `rows` rows from row `y` that they load, and the report."""
    a = tmakit.tensor("f16", 64, 64, seed=seed)
    got, report = run_tiles(k, a, y, check_races=True)
    assert report.race_free, report.format_races()
    return got, tmakit.reference(a, (rows, 64), 0, y, "128B"), report


def test_two_ctas_multicast_their_halves_of_a_tile_into_both():
    got, want, report = run_race_free(halves(), seed=11, y=8)
    assert report.ctas == 2
    for cta in range(2):
        assert (got[cta] == want).all(), (cta, np.nonzero(got[cta] != want)[0][:8])


def test_the_half_a_cta_loads_alone_is_not_the_tile():
    # unicast (the five-operand form), each CTA receives only its own half: the check above
    # would fail on an interpreter that ignored the mask
    unicast = PRODUCER.replace(", %b, 3:u16", ", %b")
    unicast = unicast.replace("expect_tx %b, 4096", "expect_tx %b, 2048")
    a = tmakit.tensor("f16", 64, 64, seed=11)
    got, _ = run_tiles(halves(unicast), a, 8)
    want = tmakit.reference(a, (32, 64), 0, 8, "128B")
    assert (got[0, :2048] == want[:2048]).all() and (got[1, 2048:] == want[2048:]).all()
    assert (got[0, 2048:] == 0xFF).all() and (got[1, :2048] == 0xFF).all()  # never written


# warps 1 to 3 wait first (the `If`'s arms run as strands, `then` first), so the peer's
# half lands on this CTA's mbarrier before its own `expect_tx`: PTX lets the transaction
# count go below 0 so, while the pending arrival keeps the phase from completing
WAITERS_FIRST = """%ok = setp.ge.u32 %t, 32:u32
if %ok {
  WAIT
} else {
  @%p mbarrier_arrive_expect_tx %b, 4096:u32
  @%p tma_load %d, %m, 0:s32, %y, %b, 3:u16
  WAIT
}"""


def test_a_peers_bytes_may_land_before_the_local_expect_tx():
    got, want, _ = run_race_free(halves(WAITERS_FIRST), seed=17, y=16)
    assert (got == want[None, :]).all()


# Rank 0 alone multicasts a 16-row box with mask 0b10: rank 1 receives it (its mbarrier
# expects the bytes), rank 0 does not (its shared memory keeps the fill). A last cluster
# barrier keeps rank 0 from exiting before rank 1 is done.
ONE_WAY = """kernel one_way(%A: u64, %out: u64, %Y: s32) threads=128 smem=4112 cluster=2 {
  shared tile @0 size=4096 align=1024
  shared bars @4096 size=16 align=8
  tmap A_tmap = A f16 [64, 64] box=[16, 64] swizzle=128B
  PROLOGUE
  %first = setp.eq.u32 %r, 0:u32
  %second = setp.eq.u32 %r, 1:u32
  INIT
  %m = tmap_addr  [map=A_tmap]
  %d = mov.u32 0:u32
  if %p {
    if %first {
      tma_load %d, %m, 0:s32, %Y, %b, 2:u16
    } else {
      mbarrier_arrive_expect_tx %b, 2048:u32
    }
  }
  if %second {
    WAIT
  }
  %a = mul.u32 %t, 16:u32
  COPY_OUT
  cluster_arrive
  cluster_wait
}"""


def test_a_multicast_writes_only_the_ctas_its_mask_names():
    got, want, _ = run_race_free(kernel(ONE_WAY), seed=12, y=24, rows=16)
    assert (got[1, :2048] == want).all(), np.nonzero(got[1, :2048] != want)[0][:8]
    assert (got[0, :2048] == 0xFF).all()  # rank 0 issued it but is not in the mask


@pytest.mark.parametrize(
    "bits, message",
    [
        (5, r"thread 0: a multicast's CTA mask 0x5 names rank 2, past the cluster's 2 CTAs "
            r"in `tma_load"),
        (0, r"thread 0: a multicast's CTA mask of 0 names no CTA in `tma_load"),
    ],
)  # fmt: skip
def test_a_multicast_mask_past_the_cluster_or_of_no_cta_is_an_error(bits, message):
    # a register mask: the verifier refuses such an immediate
    text = ONE_WAY.replace("%d = mov.u32 0:u32", f"%d = mov.u32 0:u32\n  %k = mov.b16 {bits}:b16")
    k = kernel(text.replace("%b, 2:u16", "%b, %k"), types={"k": "b16"})
    with pytest.raises(InterpError, match=message):
        run_tiles(k, tmakit.tensor("f16", 64, 64, seed=13), 0)


def test_a_multicast_into_a_peer_before_its_mbarrier_init_is_an_error():
    # without the first cluster barrier rank 0 runs ahead of rank 1's `mbarrier_init`
    k = kernel(ONE_WAY, INIT=INIT.removesuffix("\ncluster_arrive\ncluster_wait"))
    with pytest.raises(InterpError, match=r"thread 0: the mbarrier at shared offset 4096 of "
                       r"block \(1, 0, 0\) is used before `mbarrier_init`"):  # fmt: skip
        run_tiles(k, tmakit.tensor("f16", 64, 64, seed=14), 0)


# -- the cluster barrier orders a multicast after the peer's reads --------------------

# Rank 1 multicasts two 32-row tiles, one after the other, into the same buffer of both
# CTAs (mbarrier phases 0 and 1); each CTA copies each tile to `out` (rows `Y` to `Y+32`,
# then the next 32). Rank 1 may overwrite the buffer only after rank 0 has read the first
# tile: the cluster barrier between the rounds (`// DONE`) says so.
ROUNDS = """kernel rounds(%A: u64, %out: u64, %Y: s32, %Z: s32) threads=128 smem=4112 cluster=2 {
  shared tile @0 size=4096 align=1024
  shared bars @4096 size=16 align=8
  tmap A_tmap = A f16 [64, 64] box=[32, 64] swizzle=128B
  PROLOGUE
  %lead = setp.eq.u32 %r, 1:u32
  %lead = and.pred %lead, %p
  INIT
  %m = tmap_addr  [map=A_tmap]
  %d = mov.u32 0:u32
  @%p mbarrier_arrive_expect_tx %b, 4096:u32
  @%lead tma_load %d, %m, 0:s32, %Y, %b, 3:u16
  WAIT
  %o = mul_wide.u32 %c, 8192:u32
  %g = add.u64 %out, %o
  ROUND
  // DONE
  @%p mbarrier_arrive_expect_tx %b, 4096:u32
  @%lead tma_load %d, %m, 0:s32, %Z, %b, 3:u16
  loop {
    %ok = mbarrier_try_wait_parity %b, 1:u32
    break if %ok
  }
  %g = add.u64 %g, 4096:u64
  ROUND
}"""

ROUND = """for %j = 0:u32 to 4096:u32 step 2048:u32 {
  %a = mad.u32 %t, 16:u32, %j
  %v0, %v1, %v2, %v3 = ld.shared.v4.u32 %a
  %o = cvt.u64.u32 %a
  %o = add.u64 %g, %o
  st.global.v4.u32 %o, %v0, %v1, %v2, %v3
}"""

DONE = "  cluster_arrive\n  cluster_wait"


def rounds(done: bool, relaxed: bool = False):
    sync = DONE.replace("cluster_arrive", "cluster_arrive  [relaxed=1]") if relaxed else DONE
    return kernel(ROUNDS.replace("  // DONE", sync if done else ""), ROUND=ROUND)


def run_rounds(k, a, *, check_races=True):
    mem = GlobalMemory()
    pa = mem.place(a, "A")
    out = mem.place(np.full((2, 2, 4096), 0xEE, np.uint8), "out")
    params = {"A": pa, "out": out, "Y": 0, "Z": 32}
    report = run_lir(k, 2, params, mem, check_races=check_races)
    return mem.read(out).reshape(2, 2, 4096), report


@pytest.mark.parametrize("relaxed", [False, True])
def test_a_cluster_barrier_orders_the_next_multicast_after_the_peers_reads(relaxed):
    # A relaxed arrive too: the multicast in flight is ordered by the threads' progress.
    a = tmakit.tensor("f16", 64, 64, seed=15)
    got, report = run_rounds(rounds(done=True, relaxed=relaxed), a)
    assert report.race_free, report.format_races()
    for k, y in enumerate((0, 32)):
        want = tmakit.reference(a, (32, 64), 0, y, "128B")
        for cta in range(2):
            assert (got[cta, k] == want).all(), (cta, k, np.nonzero(got[cta, k] != want)[0][:8])


def test_without_the_cluster_barrier_the_multicast_races_with_the_peers_reads():
    _, report = run_rounds(rounds(done=False), tmakit.tensor("f16", 64, 64, seed=15))
    assert not report.race_free and report.races_found >= 4096
    race = report.races[0]
    assert race.kind == "async/read" and race.cta == (0, 0, 0) and race.buffer == "tile"
    assert race.inst_a.op == "tma_load" and race.inst_a.srcs[3].name == "Z"
    assert race.inst_b.op == "ld"
    assert "TMA load into it" in race.message() and "mbarrier" in race.message()


def test_a_ctas_own_bar_does_not_order_its_peers_multicast():
    # a `bar` in each CTA, where the cluster barrier belongs, does not wait for the peer
    k = kernel(ROUNDS.replace("  // DONE", "  bar 0:u32"), ROUND=ROUND)
    _, report = run_rounds(k, tmakit.tensor("f16", 64, 64, seed=15))
    assert report.races and report.races[0].kind == "async/read"


# Each thread writes its id to shared word `t`, then, after the cluster barrier (`// SYNC`),
# reads its neighbour's word `t + 1 mod 64` into `out`: the barrier orders the write before
# the read in each CTA of the cluster, as a `bar` would.
NEIGHBOURS = """kernel neighbours(%out: u64) threads=64 smem=256 cluster=2 {
  shared words @0 size=256 align=16
  %t = sreg.tid.x
  %c = sreg.ctaid.x
  %a = mul.u32 %t, 4:u32
  %v = mad.u32 %c, 1000:u32, %t
  st.shared.u32 %a, %v
  // SYNC
  %n = add.u32 %t, 1:u32
  %n = and.b32 %n, 63:u32
  %a = mul.u32 %n, 4:u32
  %v = ld.shared.u32 %a
  %i = mad.u32 %c, 64:u32, %t
  %o = mul_wide.u32 %i, 4:u32
  %g = add.u64 %out, %o
  st.global.u32 %g, %v
}"""


@pytest.mark.parametrize(
    "sync",
    ["", "  cluster_arrive\n  cluster_wait", "  cluster_arrive  [relaxed=1]\n  cluster_wait"],
)
def test_completing_the_cluster_barrier_closes_the_epoch_in_every_cta(sync):
    # A relaxed arrive orders no memory access: its phase closes no epoch.
    k = kernel(NEIGHBOURS.replace("  // SYNC", sync))
    mem = GlobalMemory()
    out = mem.place(np.zeros((2, 64), np.uint32))
    report = run_lir(k, 2, {"out": out}, mem, check_races=True)
    want = 1000 * np.arange(2)[:, None] + (np.arange(64) + 1) % 64
    assert (mem.read(out).reshape(2, 64) == want).all()
    if sync and "relaxed" not in sync:
        assert report.race_free, report.format_races()
    else:  # the same race in both CTAs: reported once, its bytes counted in each
        assert [(r.kind, r.cta) for r in report.races] == [("read/write", (0, 0, 0))]
        assert report.races_found == 2 * 64 * 4


# Rank 0's threads write their words, multicast a box to rank 1 and wait for one from it,
# then read their neighbour's word with no `bar` between: a race in block 0, which the
# `bar` that rank 1 passes meanwhile (after its box came, before it sends its own) does
# not hide.
OWN_BAR = """kernel own_bar(%A: u64) threads=64 smem=4096 cluster=2 {
  shared words @0 size=256 align=16
  shared bars @256 size=16 align=8
  shared box @2048 size=2048 align=1024
  tmap A_tmap = A f16 [64, 64] box=[16, 64] swizzle=128B
  %t = sreg.tid.x
  %r = sreg.cluster_ctarank
  %p = setp.eq.u32 %t, 0:u32
  %first = setp.eq.u32 %r, 0:u32
  %b = mov.u32 256:u32
  %d = mov.u32 2048:u32
  %m = tmap_addr  [map=A_tmap]
  @%p mbarrier_init %b, 1:u32
  cluster_arrive
  cluster_wait
  @%p mbarrier_arrive_expect_tx %b, 2048:u32
  if %first {
    %a = mul.u32 %t, 4:u32
    st.shared.u32 %a, %t
    @%p tma_load %d, %m, 0:s32, 0:s32, %b, 2:u16
    WAIT
    %a = add.u32 %a, 4:u32
    %a = and.b32 %a, 255:u32
    %v = ld.shared.u32 %a
  } else {
    WAIT
    bar 0:u32
    @%p tma_load %d, %m, 0:s32, 16:s32, %b, 1:u16
  }
}"""


def test_a_ctas_own_bar_closes_only_its_own_epoch():
    mem = GlobalMemory()
    pa = mem.place(tmakit.tensor("f16", 64, 64, seed=16))
    report = run_lir(kernel(OWN_BAR), 2, {"A": pa}, mem, check_races=True)
    assert [(r.kind, r.cta, r.buffer) for r in report.races] == [("read/write", (0, 0, 0), "words")]


# -- errors at the cluster barrier ---------------------------------------------------

BARRIER = """kernel clubar(%out: u64) threads=64 smem=16 cluster=2 {
  shared bars @0 size=16 align=8
  %t = sreg.tid.x
  %r = sreg.cluster_ctarank
  %p = setp.lt.u32 %t, 16:u32
  %first = setp.eq.u32 %r, 0:u32
  %b = mov.u32 0:u32
BODY
}"""


def barrier(body: str, check: bool = True):
    return kernel(BARRIER.replace("BODY", body), check)


def run_barrier(k, grid=2):
    mem = GlobalMemory()
    out = mem.place(np.zeros(4, np.uint32))
    return run_lir(k, grid, {"out": out}, mem)


def test_a_split_cluster_barrier_runs_its_phases():
    body = "  cluster_arrive\n  cluster_wait\n  cluster_arrive\n  cluster_wait"
    report = run_barrier(barrier(body), grid=4)
    assert report.ctas == 4 and report.barriers == 8  # 2 phases, each passed by 2 CTAs, twice


@pytest.mark.parametrize(
    "body, message",
    [
        ("  cluster_arrive\n  cluster_arrive",
         r"thread 0 of block \(0, 0, 0\) arrives at the cluster barrier again without waiting"),
        ("  cluster_wait",
         r"thread 0 of block \(0, 0, 0\) waits at the cluster barrier without having arrived"),
        ("  cluster_arrive\n  cluster_wait\n  cluster_wait",
         r"waits at the cluster barrier without having arrived \(`cluster_arrive`\) in "
         r"`cluster_wait`"),
    ],
    ids=["arrive twice", "wait unarrived", "wait twice"],
)  # fmt: skip
def test_the_cluster_barrier_alternates_arrive_and_wait(body, message):
    with pytest.raises(InterpError, match=message):
        run_barrier(barrier(body))


ONLY_RANK_0 = "  if %first {\n    cluster_arrive\n    cluster_wait\n  }"
SPINS = """ else {
    mbarrier_init %b, 1:u32
    WAIT
  }"""


@pytest.mark.parametrize(
    "body, message",
    [
        (ONLY_RANK_0,  # rank 1 exits: its threads do not count as arrived
         r"^`cluster_wait` hangs: block \(0, 0, 0\) waits at the cluster barrier for the 128 "
         r"threads of its cluster's 2 CTAs, 64 arrived, and no other thread can reach it$"),
        (ONLY_RANK_0 + SPINS,  # rank 1 waits for an mbarrier phase that never completes
         r"^`%ok = mbarrier_try_wait_parity %b, 0:u32` hangs: thread 0 of block \(1, 0, 0\) .*"
         r"; also stuck: 64 threads of block \(0, 0, 0\) at `cluster_wait` \(64 of 128 "
         r"arrived\)$"),
    ],
    ids=["the peer exits", "the peer waits on an mbarrier for good"],
)  # fmt: skip
def test_a_cluster_barrier_one_cta_never_reaches_hangs(body, message):
    start = time.monotonic()
    with pytest.raises(InterpError, match=message):
        run_barrier(barrier(body))
    assert time.monotonic() - start < 10  # found, not timed out


def test_a_partial_warp_at_the_cluster_barrier_is_an_error():
    k = barrier("  @%p cluster_arrive\n  cluster_wait", check=False)  # the verifier refuses it
    with pytest.raises(InterpError, match=r"`cluster_arrive` is run by part of warp 0"):
        run_barrier(k)


# -- walking kernels -----------------------------------------------------------------

# Each walking CTA writes its `ctaid.x + 1` and cluster rank into the blocks it walks.
WALK = """kernel walker(%out: u64, %gx: u32, %gy: u32, %gz: u32) threads=32 smem=0 walk=%gx,%gy,%gz cluster=2 {
  %t = sreg.tid.x
  %c = sreg.ctaid.x
  %n = sreg.nctaid.x
  %r = sreg.cluster_ctarank
  %w = add.u32 %c, 1:u32
  %p = setp.eq.u32 %t, 0:u32
  for %blk = %c to %gx step %n {
    %o = mul_wide.u32 %blk, 8:u32
    %g = add.u64 %out, %o
    @%p st.global.v2.u32 %g, %w, %r
  }
  cluster_arrive
  cluster_wait
}"""


@pytest.mark.parametrize("blocks, ctas", [(10, 4), (3, 4), (1, 2)])
def test_a_walking_kernel_of_clusters_runs_on_two_clusters(blocks, ctas):
    mem = GlobalMemory()
    out = mem.place(np.zeros((blocks, 2), np.uint32))
    report = run_lir(kernel(WALK), blocks, {"out": out}, mem)
    walker = np.arange(blocks) % ctas
    assert report.ctas == ctas
    assert (mem.read(out).reshape(blocks, 2) == np.stack([walker + 1, walker % 2], 1)).all()


def test_walkers_come_in_whole_clusters():
    mem = GlobalMemory()
    out = mem.place(np.zeros((10, 2), np.uint32))
    assert run_lir(kernel(WALK), 10, {"out": out}, mem, walkers=6).ctas == 6
    with pytest.raises(InterpError, match=r"3 walking CTAs are not a whole number of the "
                       r"kernel's clusters of 2 CTAs"):  # fmt: skip
        run_lir(kernel(WALK), 10, {"out": out}, mem, walkers=3)
