"""The tuner's records against files someone else made (phobos.tune.records): each
ends, within a second, in one warning naming the file and the problem and the kernel
tuned again (`RecordStore.load`), or in a line saying so (`python -m phobos.tune list`
and `show`); never a hang or a traceback.

Each read runs in a forked child that is killed after a second, so a read that
blocks or never ends fails its test instead of the suite."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import warnings

import pytest

from phobos.runtime.cache import KernelCache
from phobos.tune.__main__ import main
from phobos.tune.records import (
    MAX_RECORD_BYTES,
    MAX_VARIANTS,
    Record,
    RecordError,
    RecordStore,
    RecordWarning,
    VariantResult,
)

SOURCE = "0123456789abcdef" * 4
SECOND = 1.0
STRANGER = 12345  # a uid that is not the test's

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="makes files of another user")


def make_record(**changes) -> Record:
    fields = dict(
        kernel="softmax_rows",
        source=SOURCE,
        chip="sm_90",
        card="NVIDIA H200",
        key={"N": 4096},
        space={"BLOCK": [1024, 2048]},
        flush_l2=True,
        tuned="2026-11-30T15:40:00+00:00",
        variants=[
            VariantResult.timed({"BLOCK": 1024}, [0.5, 0.25]),
            VariantResult.left_out({"BLOCK": 2048}, "race", "a race at k.py:12"),
        ],
    )
    fields.update(changes)
    return Record(**fields)


def in_a_second(fn, *args):
    """`fn(*args)` in a forked child, killed unless done within a second: its result
    and the text of every warning it gave; an exception it raised fails the test."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
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


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    return RecordStore(KernelCache(tmp_path / "cache"))


def planted(store, text: str):
    """The record file of `make_record()`, its text replaced by `text`."""
    path = store.save(make_record())
    path.write_text(text, encoding="utf-8")
    return path


def edited(change) -> str:
    data = json.loads(make_record().to_json())
    change(data)
    return json.dumps(data, indent=1)


def load(store):
    record = make_record()
    return store.load(record.chip, record.kernel, record.source, record.card, record.key)


def list_command(store):
    """`python -m phobos.tune list`: its exit status and what it printed."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["list", "--cache-dir", str(store.cache.root)])
    return status, out.getvalue()


def show_command(store):
    with contextlib.redirect_stderr(io.StringIO()) as err:
        status = main(["show", "softmax_rows", "--cache-dir", str(store.cache.root)])
    return status, err.getvalue()


def tuned_again(store, path, problem):
    """`load` gives None (the kernel is tuned again) with one warning naming `path`
    and `problem`, and `list` shows the record as not valid, both within a second."""
    found, messages = in_a_second(load, store)
    assert found is None
    assert len(messages) == 1, messages
    assert str(path) in messages[0] and problem in messages[0], messages[0]
    assert "tuned again" in messages[0]
    (status, out), _ = in_a_second(list_command, store)
    assert status == 1 and "not valid: " in out and problem in out and str(path) in out, out


# ---------------------------------------------------------------------------
# Numbers and nesting


def _huge_sample(data):
    data["variants"][0]["samples_ms"][0] = 10**400


def _huge_best(data):
    data["variants"][0]["best_ms"] = 10**400


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (_huge_sample, "`samples_ms`[0] is 1000"),
        (_huge_best, "`best_ms` is 1000"),
    ],
)
def test_an_integer_past_a_float_is_a_record_not_valid(store, change, problem):
    path = planted(store, edited(change))
    tuned_again(store, path, problem)
    with pytest.raises(RecordError, match="not a finite positive time|but the samples give"):
        Record.from_json(edited(change), path)


def test_deep_nesting_is_a_record_not_valid(store):
    path = planted(store, "[" * 100_000 + "]" * 100_000)
    tuned_again(store, path, "it is nested too deeply to be a record")


def test_a_nested_value_is_shown_short(store):
    deep = "[" * 500 + "]" * 500
    planted(store, edited(lambda data: None).replace('"timed"', deep, 1))
    found, messages = in_a_second(load, store)
    assert found is None and "`status` is [[[" in messages[0] and len(messages[0]) < 400


# ---------------------------------------------------------------------------
# A space too large to enumerate


@pytest.mark.parametrize(("dims", "choices"), [(6, 10), (4, 100)])
def test_a_huge_space_is_refused_before_it_is_enumerated(store, dims, choices):
    space = {f"D{i}": list(range(1, choices + 1)) for i in range(dims)}
    path = planted(store, make_record(space=space, variants=[]).to_json())
    tuned_again(store, path, f"`space` names more than {MAX_VARIANTS} variants")


def test_a_record_of_a_huge_space_is_not_saved(store):
    space = {f"D{i}": list(range(1, 11)) for i in range(6)}
    with pytest.warns(RecordWarning, match=f"more than {MAX_VARIANTS} variants") as caught:
        assert store.save(make_record(space=space, variants=[])) is None
    assert "kept in memory" in str(caught[0].message)


def test_a_space_at_the_bound_reads_within_a_second(store):
    space = {name: list(range(1, n + 1)) for name, n in zip("ABCD", (8, 8, 16, 16), strict=True)}
    assert 8 * 8 * 16 * 16 == MAX_VARIANTS
    first = dict.fromkeys(space, 1)
    record = make_record(space=space, variants=[VariantResult.timed(first, [0.5])])
    store.save(record)
    assert in_a_second(load, store) == (record, [])


# ---------------------------------------------------------------------------
# Files that are not what the store writes


def test_a_fifo_never_blocks(store):
    path = store.save(make_record())
    path.unlink()
    os.mkfifo(path, 0o600)
    tuned_again(store, path, "it is a FIFO, not a regular file")
    (status, err), _ = in_a_second(show_command, store)
    assert status == 1 and f"{path} is not valid: it is a FIFO" in err, err


def test_a_symbolic_link_is_refused(store, tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(make_record().to_json(), encoding="utf-8")
    elsewhere.chmod(0o666)
    path = store.save(make_record())
    path.unlink()
    path.symlink_to(elsewhere)
    tuned_again(store, path, "it is a symbolic link")


def test_a_record_others_can_write_is_refused(store):
    path = store.save(make_record())
    path.chmod(0o666)
    tuned_again(store, path, "it is writable by group or others")


@needs_root
def test_a_record_of_another_user_is_refused(store):
    path = store.save(make_record())
    os.chown(path, STRANGER, -1)
    tuned_again(store, path, f"it is owned by another user (uid {STRANGER})")


def test_a_record_past_its_bound_is_not_read(store):
    path = store.save(make_record())
    os.truncate(path, MAX_RECORD_BYTES + 1)  # sparse: no disk is used
    tuned_again(store, path, f"it holds {MAX_RECORD_BYTES + 1} bytes, over the bound of")
