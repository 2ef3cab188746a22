"""The kernel cache against files someone else made (phobos.runtime.cache): each ends
in one warning naming the file and the problem, and a miss, within a second; never a
hang, a traceback or another tree's entry.

Each read runs in a forked child that is killed after a second, its memory bounded,
so a read that blocks or never ends fails its test instead of the suite."""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import stat
import warnings

import pytest

from phobos.runtime import cache as cache_module
from phobos.runtime.cache import MAX_BYTES, KernelCache, entry_key

PTX = ".version 8.0\n.target sm_90\n.address_size 64\n"
CUBIN = b"\x7fELF" + bytes(range(256)) * 8
OTHER_CUBIN = b"\x7fELF" + b"someone else's code" * 64
CONTRACT = json.dumps({"format": "phobos-launch-contract", "version": 1, "kernels": []})
KEY = entry_key("source", "phobos-test", "sm_90", {"BLOCK": 128})
SECOND = 1.0
STRANGER = 12345  # a uid that is not the test's

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="makes files of another user")


def in_a_second(fn, *args):
    """`fn(*args)` in a forked child, killed unless done within a second: its result
    (or the exception it raised, as text) and the text of every warning it gave."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
        # A read without end dies of MemoryError here rather than filling the machine.
        with open("/proc/self/status") as f:
            size = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, ((size << 10) + (1 << 30), resource.RLIM_INFINITY))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = ("returned", fn(*args))
            except BaseException as exc:
                result = ("raised", f"{type(exc).__name__}: {exc}")
        send.send((result, [str(w.message) for w in caught]))

    process = ctx.Process(target=child)
    process.start()
    finished = receive.poll(SECOND)
    if not finished:
        process.kill()
    process.join(10)
    assert finished, f"{fn.__name__} did not end within a second"
    (how, value), messages = receive.recv()
    assert how == "returned", value
    return value, messages


def one_warning(messages, path, problem):
    assert len(messages) == 1, messages
    assert str(path) in messages[0] and problem in messages[0], messages[0]


def entry(root):
    cache = KernelCache(root)
    cache.put(KEY, PTX, CUBIN, CONTRACT)
    return cache, cache.path_for(KEY)


def get(cache):
    found = cache.get(KEY)
    return None if found is None else found.cubin


def get_put_get(cache):
    """The cubin of a first read, whether the entry could be written again, and the
    cubin a second read gives."""
    first = get(cache)
    written = cache.put(KEY, PTX, CUBIN, CONTRACT).path is not None
    return first, written, get(cache)


# ---------------------------------------------------------------------------
# Directories are made 0700, whatever the umask


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077, 0o277], ids=oct)
def test_directories_are_made_0700_whatever_the_umask(tmp_path, umask):
    root = tmp_path / "cache"
    old = os.umask(umask)
    try:
        cache = KernelCache(root)
        assert cache.autotune_dir("sm_90") == root / "sm_90" / "autotune"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the cache never refuses what it made
            assert cache.put(KEY, PTX, CUBIN, CONTRACT).path is not None
            assert cache.get(KEY).cubin == CUBIN
    finally:
        os.umask(old)
    for directory in (root, root / "sm_90", root / "sm_90" / "autotune"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for path in (root / "sm_90").glob(f"{KEY.digest}.*"):
        assert path.stat().st_mode & 0o077 == 0, path  # the files are the user's alone


# ---------------------------------------------------------------------------
# Files that are not what an entry writes


def test_a_deeply_nested_entry_is_a_warning_and_a_miss(tmp_path):
    cache, path = entry(tmp_path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    (first, written, second), messages = in_a_second(get_put_get, cache)
    assert (first, written, second) == (None, True, CUBIN)
    one_warning(messages, path, "nested too deeply")


def test_a_deeply_nested_contract_is_refused_by_put(tmp_path):
    with pytest.raises(ValueError, match="nested too deeply"):
        KernelCache(tmp_path).put(KEY, PTX, CUBIN, "[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("suffix", [".json", ".ptx", ".cubin"])
def test_a_fifo_never_blocks_a_read(tmp_path, suffix):
    cache, path = entry(tmp_path)
    fifo = path.with_suffix(suffix)
    fifo.unlink()
    os.mkfifo(fifo, 0o600)
    (first, written, second), messages = in_a_second(get_put_get, cache)
    assert (first, written, second) == (None, True, CUBIN)
    one_warning(messages, fifo, "it is a FIFO, not a regular file")


def test_a_cubin_linked_to_dev_zero_is_not_read(tmp_path):
    cache, path = entry(tmp_path)
    cubin = path.with_suffix(".cubin")
    cubin.unlink()
    cubin.symlink_to("/dev/zero")
    (first, written, second), messages = in_a_second(get_put_get, cache)
    assert (first, written, second) == (None, True, CUBIN)
    one_warning(messages, cubin, "it is a symbolic link")


@needs_root
def test_a_device_in_place_of_a_cubin_is_not_read(tmp_path):
    cache, path = entry(tmp_path)
    cubin = path.with_suffix(".cubin")
    cubin.unlink()
    os.mknod(cubin, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
    found, messages = in_a_second(get, cache)
    assert found is None
    one_warning(messages, cubin, "it is a character device, not a regular file")


def test_a_directory_in_place_of_an_entry_is_a_miss(tmp_path):
    cache, path = entry(tmp_path)
    path.unlink()
    path.mkdir()
    found, messages = in_a_second(get, cache)
    assert found is None
    one_warning(messages, path, "it is a directory, not a regular file")


@pytest.mark.parametrize("suffix", [".json", ".ptx", ".cubin"])
def test_a_file_past_its_bound_is_not_read(tmp_path, suffix):
    cache, path = entry(tmp_path)
    big = path.with_suffix(suffix)
    os.truncate(big, MAX_BYTES[suffix] + 1)  # sparse: no disk is used
    (first, written, second), messages = in_a_second(get_put_get, cache)
    assert (first, written, second) == (None, True, CUBIN)
    one_warning(messages, big, f"it holds {MAX_BYTES[suffix] + 1} bytes, over the bound of")


# ---------------------------------------------------------------------------
# Files of another user, or open to others


@needs_root
@pytest.mark.parametrize("suffix", [".json", ".ptx", ".cubin"])
def test_a_file_of_another_user_is_refused(tmp_path, suffix):
    cache, path = entry(tmp_path)
    theirs = path.with_suffix(suffix)
    os.chown(theirs, STRANGER, -1)
    (first, written, second), messages = in_a_second(get_put_get, cache)
    assert (first, written, second) == (None, True, CUBIN)
    one_warning(messages, theirs, f"it is owned by another user (uid {STRANGER})")


def test_a_file_others_can_write_is_refused(tmp_path):
    cache, path = entry(tmp_path)
    cubin = path.with_suffix(".cubin")
    cubin.chmod(0o666)
    found, messages = in_a_second(get, cache)
    assert found is None
    one_warning(messages, cubin, "it is writable by group or others")


def _world_writable_copy(tmp_path, data: bytes):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "cubin"
    target.write_bytes(data)
    target.chmod(0o666)  # anyone may change what the cache would run
    return target


def test_a_cubin_linked_to_a_file_others_can_write_is_refused(tmp_path):
    cache, path = entry(tmp_path / "cache")
    cubin = path.with_suffix(".cubin")
    target = _world_writable_copy(tmp_path, CUBIN)  # the right bytes: the hash matches
    cubin.unlink()
    cubin.symlink_to(target)
    found, messages = in_a_second(get, cache)
    assert found is None
    one_warning(messages, cubin, "it is a symbolic link")


def test_a_cubin_hard_linked_to_a_file_others_can_write_is_refused(tmp_path):
    cache, path = entry(tmp_path / "cache")
    cubin = path.with_suffix(".cubin")
    target = _world_writable_copy(tmp_path, CUBIN)
    cubin.unlink()
    os.link(target, cubin)
    found, messages = in_a_second(get, cache)
    assert found is None
    one_warning(messages, cubin, "it is writable by group or others")


# ---------------------------------------------------------------------------
# A directory swapped between the check and the read


def _tree(directory, cubin: bytes, mode: int):
    """A cache at `directory` holding the entry of KEY with `cubin`, its directories
    then given `mode`."""
    KernelCache(directory).put(KEY, PTX, cubin, CONTRACT)
    for path in (directory, directory / "sm_90"):
        path.chmod(mode)
    return directory


def _swap_after_check(monkeypatch, link, to, checks: int):
    """Point the symbolic link `link` at `to` right after the `checks`-th directory
    check: between the check of the directory and the read of its files."""
    check = cache_module._unsafe
    seen = []

    def checked_then_swapped(st):
        problem = check(st)
        seen.append(problem)
        if len(seen) == checks:
            temporary = link.with_name(link.name + ".new")
            temporary.symlink_to(to)
            os.replace(temporary, link)
        return problem

    monkeypatch.setattr(cache_module, "_unsafe", checked_then_swapped)
    return seen


def test_a_chip_directory_swapped_after_its_check_serves_nothing_of_the_other(
    tmp_path, monkeypatch
):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    ours = _tree(tmp_path / "ours", CUBIN, 0o700) / "sm_90"
    theirs = _tree(tmp_path / "theirs", OTHER_CUBIN, 0o777) / "sm_90"
    (root / "sm_90").symlink_to(ours)
    seen = _swap_after_check(monkeypatch, root / "sm_90", theirs, checks=2)  # root, chip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert KernelCache(root).get(KEY).cubin == CUBIN
    assert seen == ["", ""]
    assert os.readlink(root / "sm_90") == str(theirs)  # the swap did happen


def test_a_root_swapped_after_its_check_serves_nothing_of_the_other(tmp_path, monkeypatch):
    ours = _tree(tmp_path / "ours", CUBIN, 0o700)
    theirs = _tree(tmp_path / "theirs", OTHER_CUBIN, 0o777)
    root = tmp_path / "cache"
    root.symlink_to(ours)  # PHOBOS_CACHE_DIR may name a link: what it leads to is checked
    _swap_after_check(monkeypatch, root, theirs, checks=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert KernelCache(root).get(KEY).cubin == CUBIN
    assert os.readlink(root) == str(theirs)
