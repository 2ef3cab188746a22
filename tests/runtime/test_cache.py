"""The kernel cache on disk (phobos.runtime.cache): entries, keys, corruption, other
processes writing at once or dying mid-write, directories others could write."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import warnings

import pytest

from phobos.runtime import cache as cache_module
from phobos.runtime.cache import (
    CacheWarning,
    KernelCache,
    Key,
    cache_root,
    compiler_fingerprint,
    entry_key,
)

PTX = ".version 8.0\n.target sm_90\n.address_size 64\n"
CUBIN = b"\x7fELF" + bytes(range(256)) * 8
CONTRACT = json.dumps({"format": "phobos-launch-contract", "version": 1, "kernels": []})


def key(n=0, chip="sm_90") -> Key:
    return entry_key(f"source-{n}", "phobos-test", chip, {"BLOCK": 128})


# ---------------------------------------------------------------------------
# Keys


def test_keys_are_content_addresses():
    a = entry_key("src", "fp", "sm_90", {"A": 1, "B": 2})
    assert a == entry_key("src", "fp", "sm_90", {"B": 2, "A": 1})
    others = [
        entry_key("src2", "fp", "sm_90", {"A": 1, "B": 2}),
        entry_key("src", "fp2", "sm_90", {"A": 1, "B": 2}),
        entry_key("src", "fp", "sm_80", {"A": 1, "B": 2}),
        entry_key("src", "fp", "sm_90", {"A": 1, "B": 4}),
    ]
    assert len({a, *others}) == 5
    assert len(a.digest) == 64 and Key.parse(str(a)) == a
    with pytest.raises(ValueError, match="not a cache key"):
        Key.parse("sm_90/../../etc")
    with pytest.raises(ValueError, match="not a chip"):
        entry_key("src", "fp", "../x", {})


def test_fingerprint_is_computed_once_and_names_the_version():
    import phobos

    assert compiler_fingerprint() is compiler_fingerprint()
    assert compiler_fingerprint().startswith(f"phobos-{phobos.__version__}-")


def test_cache_root_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "here"))
    assert cache_root() == tmp_path / "here"
    monkeypatch.delenv("PHOBOS_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "phobos"


# ---------------------------------------------------------------------------
# Entries


def test_round_trip(tmp_path):
    cache = KernelCache(tmp_path)
    k = key()
    assert cache.get(k) is None
    written = cache.put(k, PTX, CUBIN, CONTRACT)
    assert written.path == cache.path_for(k) == tmp_path / "sm_90" / f"{k.digest}.json"
    read = cache.get(k)
    assert (read.ptx, read.cubin, json.loads(read.contract_json)) == (
        PTX,
        CUBIN,
        json.loads(CONTRACT),
    )
    names = sorted(p.name for p in (tmp_path / "sm_90").iterdir() if p.suffix != ".lock")
    assert names == [f"{k.digest}{s}" for s in (".cubin", ".json", ".ptx")]
    assert oct((tmp_path / "sm_90").stat().st_mode & 0o777) == "0o700"


def test_an_entry_without_cubin_then_with_one(tmp_path):
    cache = KernelCache(tmp_path)
    k = key()
    cache.put(k, PTX, None, CONTRACT)  # compiled only, for a chip with no GPU here
    assert cache.get(k).cubin is None
    assert cache.put(k, PTX, CUBIN, CONTRACT).cubin == CUBIN
    assert cache.get(k).cubin == CUBIN
    assert cache.put(k, PTX, None, CONTRACT).cubin == CUBIN  # the richer entry stays


def test_put_refuses_what_is_not_json(tmp_path):
    with pytest.raises(ValueError):
        KernelCache(tmp_path).put(key(), PTX, CUBIN, "not json")


def _corrupt_json(path):
    path.write_text("{ torn")


def _foreign_json(path):
    path.write_text(json.dumps({"format": "someone-else"}))


def _truncate_cubin(path):
    cubin = path.with_suffix(".cubin")
    cubin.write_bytes(cubin.read_bytes()[:100])


def _flip_ptx(path):
    ptx = path.with_suffix(".ptx")
    ptx.write_text(ptx.read_text().replace("sm_90", "sm_80"))


def _missing_cubin(path):
    path.with_suffix(".cubin").unlink()


def _other_key(path):
    record = json.loads(path.read_text())
    record["key"] = str(key(99))
    path.write_text(json.dumps(record))


@pytest.mark.parametrize(
    "damage",
    [_corrupt_json, _foreign_json, _truncate_cubin, _flip_ptx, _missing_cubin, _other_key],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    cache = KernelCache(tmp_path)
    k = key()
    cache.put(k, PTX, CUBIN, CONTRACT)
    damage(cache.path_for(k))
    assert cache.get(k) is None
    cache.put(k, PTX, CUBIN, CONTRACT)
    assert cache.get(k).cubin == CUBIN


def test_clear(tmp_path):
    cache = KernelCache(tmp_path)
    cache.put(key(1), PTX, CUBIN, CONTRACT)
    cache.put(key(2, "sm_80"), PTX, CUBIN, CONTRACT)
    (tmp_path / "sm_90" / ".x.json.123.tmp").write_text("left by a killed writer")
    tuned = cache.autotune_dir("sm_90") / "result.json"
    tuned.write_text("{}")
    assert cache.clear("sm_90") == 1
    assert cache.get(key(1)) is None and cache.get(key(2, "sm_80")) is not None
    assert not list((tmp_path / "sm_90").glob("*.tmp")) and tuned.exists()
    assert cache.clear() == 1 and cache.get(key(2, "sm_80")) is None


# ---------------------------------------------------------------------------
# Turned off, or refused


def test_phobos_cache_0_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_CACHE", "0")
    cache = KernelCache(tmp_path / "c")
    entry = cache.put(key(), PTX, CUBIN, CONTRACT)
    assert entry.cubin == CUBIN and entry.path is None
    assert cache.get(key()) is None and not (tmp_path / "c").exists()


def test_a_group_writable_directory_is_refused_with_one_warning(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    with pytest.warns(CacheWarning) as record:
        cache = KernelCache(root)
        entry = cache.put(key(), PTX, CUBIN, CONTRACT)
    assert entry.path is None and entry.cubin == CUBIN
    message = str(record[0].message)
    assert str(root) in message and "writable by group or others" in message
    assert f"chmod go-w {root}" in message and "PHOBOS_CACHE_DIR" in message
    assert list(root.iterdir()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning in this process
        assert KernelCache(root).get(key()) is None
        KernelCache(root).put(key(), PTX, CUBIN, CONTRACT)


def test_a_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(root).st_uid + 1)
    with pytest.warns(CacheWarning, match="owned by another user"):
        assert KernelCache(root).put(key(), PTX, CUBIN, CONTRACT).path is None


# ---------------------------------------------------------------------------
# Other processes


def _writer(root: str, n: int, rounds: int) -> None:
    cache = KernelCache(root)
    for r in range(rounds):
        shared = key(0)  # every process writes this one
        cache.put(shared, PTX, CUBIN, CONTRACT)
        own = key(100 + n * rounds + r)
        cache.put(own, PTX + f"// {n} {r}\n", CUBIN + bytes([n, r]), CONTRACT)
        assert cache.get(shared) is not None


def test_eight_processes_writing_at_once_leave_only_valid_entries(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    rounds = 3
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), n, rounds)) for n in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    cache = KernelCache(tmp_path)
    assert cache.get(key(0)).cubin == CUBIN
    for n in range(8):
        for r in range(rounds):
            entry = cache.get(key(100 + n * rounds + r))
            assert entry is not None and entry.cubin == CUBIN + bytes([n, r])
    entries = list((tmp_path / "sm_90").glob("*.json"))
    assert len(entries) == 1 + 8 * rounds
    assert not list((tmp_path / "sm_90").glob("*.tmp"))


def _slow_writer(root: str, stage: str, reached) -> None:
    def hook(at, path):
        if at == stage:
            reached.set()
            time.sleep(120)  # killed here

    cache_module._BEFORE_RENAME = hook
    KernelCache(root).put(key(), PTX, CUBIN, CONTRACT)


@pytest.mark.parametrize("stage", ["ptx", "cubin", "json"])
@pytest.mark.parametrize("before", ["empty", "corrupt"])
def test_a_writer_killed_mid_entry_leaves_no_corrupt_entry(tmp_path, stage, before):
    cache = KernelCache(tmp_path)
    if before == "corrupt":  # an old entry being rewritten: its json stays until the end
        cache.put(key(), PTX.replace("8.0", "7.8"), b"old", CONTRACT)
        cache.path_for(key()).with_suffix(".cubin").write_bytes(b"torn")
    ctx = multiprocessing.get_context("spawn")
    reached = ctx.Event()
    writer = ctx.Process(target=_slow_writer, args=(str(tmp_path), stage, reached))
    writer.start()
    reached_rename = reached.wait(60)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    assert reached_rename, "the writer never reached the rename"
    assert writer.exitcode == -signal.SIGKILL
    assert cache.get(key()) is None  # nothing half-written is ever read
    assert cache.put(key(), PTX, CUBIN, CONTRACT).cubin == CUBIN  # the lock was released
    assert cache.get(key()).cubin == CUBIN


def test_clear_takes_only_a_chip_name(tmp_path):
    from phobos.runtime.cache import KernelCache

    with pytest.raises(ValueError, match="not a chip name"):
        KernelCache(tmp_path / "cache").clear("..")


def test_a_cache_that_cannot_be_written_falls_back_to_memory(tmp_path, monkeypatch):
    from phobos.runtime.cache import KernelCache, entry_key

    store = KernelCache(tmp_path / "cache")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_put_locked", full_disk)
    monkeypatch.setattr(cache_module, "_WARNED", set())
    key = entry_key("src", "fp", "sm_90", {})
    with pytest.warns(Warning, match="cannot be written"):
        entry = store.put(key, "ptx", b"cubin", "{}")
    assert entry.cubin == b"cubin"


def test_a_lowering_switch_is_part_of_the_key(monkeypatch):
    for name in cache_module.LOWERING_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    plain = cache_module.entry_key("src", "fp", "sm_90", {"B": 1})
    monkeypatch.setenv("PHOBOS_STAGES", "2")
    two = cache_module.entry_key("src", "fp", "sm_90", {"B": 1})
    monkeypatch.setenv("PHOBOS_STAGES", "3")
    assert len({plain, two, cache_module.entry_key("src", "fp", "sm_90", {"B": 1})}) == 3


def test_every_switch_the_lowering_reads_is_a_lowering_switch():
    """A `PHOBOS_*` variable read by the lowering changes the code it emits (or, for
    `PHOBOS_VERIFY`, only checks it): each of the first kind must be in the key."""
    import re
    from pathlib import Path

    lower = Path(cache_module.__file__).resolve().parents[1] / "lower"
    read = set()
    for path in lower.glob("*.py"):
        text = path.read_text()  # read directly, or through `options.switch_count`
        read |= set(re.findall(r"(?:environ\.get|switch_count)\(\"(PHOBOS_\w+)\"", text))
    assert read - {"PHOBOS_VERIFY"} <= set(cache_module.LOWERING_SWITCHES), sorted(read)
    assert {"PHOBOS_STAGES", "PHOBOS_RING"} <= read  # the scan sees them
