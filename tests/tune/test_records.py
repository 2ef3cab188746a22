"""The tuner's records (phobos.tune.records): the file's exact layout, validation of
every field, the store in a cache directory, merging when a dim gains a value, and
the source key that leaves the @autotune choices out."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
import warnings

import pytest

from phobos.runtime import cache as cache_module
from phobos.runtime.cache import KernelCache
from phobos.tune import records
from phobos.tune.records import (
    STAGES,
    Record,
    RecordError,
    RecordStore,
    RecordWarning,
    VariantResult,
    read_record,
    record_path,
    source_key,
)

SOURCE = "0123456789abcdef" * 4


def make_record(**changes) -> Record:
    fields = dict(
        kernel="softmax_rows",
        source=SOURCE,
        chip="sm_90",
        card="NVIDIA H200",
        key={"M": 4096, "N": 1024},
        space={"BLOCK": [1024, 2048], "T": [256, 128]},
        flush_l2=True,
        tuned="2026-11-30T15:40:00+00:00",
        variants=[
            VariantResult.timed({"BLOCK": 1024, "T": 256}, [0.5, 0.25, 0.75]),
            VariantResult.timed({"BLOCK": 1024, "T": 128}, [0.125, 0.25]),
            VariantResult.left_out({"BLOCK": 2048, "T": 256}, "race", "a race at k.py:12"),
        ],
    )
    fields.update(changes)
    return Record(**fields)


# ---------------------------------------------------------------------------
# Results and the winner


def test_variant_result_numbers():
    r = VariantResult.timed({"B": 1}, [0.5, 0.25, 1.0, 0.5])
    assert (r.best_ms, r.median_ms, r.spread) == (0.25, 0.5, 3.0)
    assert r.status == "timed" and r.stage is None and r.reason is None
    gone = VariantResult.left_out({"B": 2}, "compile", "error[E0301]: bad\n  --> k.py:3")
    assert gone.best_ms is None and gone.spread is None
    assert gone.reason == "error[E0301]: bad --> k.py:3"  # one line


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: VariantResult.timed({}, []), "at least one sample"),
        (lambda: VariantResult.timed({}, [0.1, float("nan")]), "not a finite positive"),
        (lambda: VariantResult.timed({}, [-0.1]), "not a finite positive"),
        (lambda: VariantResult.timed({}, [float("inf")]), "not a finite positive"),
        (lambda: VariantResult.left_out({}, "oom", "x"), "not a stage"),
    ],
)
def test_variant_result_refuses(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_every_stage_is_accepted():
    assert len(STAGES) == 8 and "fault" in STAGES
    for stage in STAGES:
        assert VariantResult.left_out({}, stage, "why").stage == stage


def test_winner_is_the_fastest_timed_variant():
    assert make_record().winner == {"BLOCK": 1024, "T": 128}


def test_winner_ties_go_to_the_first_listed():
    a = VariantResult.timed({"BLOCK": 2048, "T": 128}, [0.2, 0.3])
    b = VariantResult.timed({"BLOCK": 1024, "T": 256}, [0.2])
    assert make_record(variants=[a, b]).winner == {"BLOCK": 2048, "T": 128}
    assert make_record(variants=[b, a]).winner == {"BLOCK": 1024, "T": 256}


def test_no_winner_when_nothing_was_timed():
    gone = VariantResult.left_out({"BLOCK": 1024, "T": 256}, "launch", "out of resources")
    assert make_record(variants=[gone]).winner is None
    assert make_record(variants=[]).winner is None


def test_result_for_reads_names_in_any_order():
    record = make_record()
    assert record.result_for({"T": 128, "BLOCK": 1024}).best_ms == 0.125
    assert record.result_for({"BLOCK": 2048, "T": 256}).stage == "race"
    assert record.result_for({"BLOCK": 2048, "T": 128}) is None


# ---------------------------------------------------------------------------
# The file's text

EXPECTED = """\
{
 "format": "phobos-autotune/1",
 "kernel": "k",
 "source": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
 "chip": "sm_80",
 "card": "NVIDIA A100-SXM4-80GB",
 "key": {"N": 64, "M": 8},
 "space": {"BLOCK": [256, 128]},
 "flush_l2": false,
 "tuned": "2026-01-02T03:04:05+00:00",
 "winner": {"BLOCK": 128},
 "variants": [
  {"variant": {"BLOCK": 256}, "status": "left out", "stage": "shared memory",
   "reason": "needs 300 KiB of shared memory, the chip has 164"},
  {"variant": {"BLOCK": 128}, "status": "timed",
   "best_ms": 0.25, "median_ms": 0.375, "spread": 1.0, "samples_ms": [0.5, 0.25]}
 ]
}
"""


def small_record() -> Record:
    return Record(
        "k",
        SOURCE,
        "sm_80",
        "NVIDIA A100-SXM4-80GB",
        {"N": 64, "M": 8},
        {"BLOCK": [256, 128]},
        False,
        "2026-01-02T03:04:05+00:00",
        [
            VariantResult.left_out(
                {"BLOCK": 256}, "shared memory", "needs 300 KiB of shared memory, the chip has 164"
            ),
            VariantResult.timed({"BLOCK": 128}, [0.5, 0.25]),
        ],
    )


def test_exact_layout():
    assert small_record().to_json() == EXPECTED


def test_layout_of_a_record_without_variants():
    text = make_record(variants=[]).to_json()
    assert text.endswith(' "winner": null,\n "variants": []\n}\n')


def test_round_trip():
    for record in (make_record(), small_record(), make_record(key={}, space={}, variants=[])):
        again = Record.from_json(record.to_json())
        assert again == record
        assert list(again.key) == list(record.key)  # the key's order is kept
        assert again.to_json() == record.to_json()


def test_round_trip_keeps_every_sample_exactly():
    samples = [0.012320000119507313, 0.1 + 0.2, 1e-5, 123.456]
    record = make_record(variants=[VariantResult.timed({"BLOCK": 1024, "T": 256}, samples)])
    assert Record.from_json(record.to_json()).variants[0].samples_ms == samples


def test_non_ascii_card_is_kept_readable():
    record = make_record(card="Carte graphique é")
    assert '"card": "Carte graphique é"' in record.to_json()
    assert Record.from_json(record.to_json()).card == "Carte graphique é"


# ---------------------------------------------------------------------------
# Validation: each problem a RecordError naming the file


def _set(path, value):
    def change(data):
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def _delete(path):
    def change(data):
        target = data
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return change


MUTATIONS = {
    "wrong format": (_set(["format"], "phobos-autotune/2"), "`format` is 'phobos-autotune/2'"),
    "missing winner": (_delete(["winner"]), "the field `winner` is missing"),
    "missing variants": (_delete(["variants"]), "the field `variants` is missing"),
    "missing card": (_delete(["card"]), "the field `card` is missing"),
    "missing samples": (_delete(["variants", 0, "samples_ms"]), "variants[0]: the field"),
    "missing reason": (_delete(["variants", 2, "reason"]), "the field `reason` is missing"),
    "unknown field": (_set(["flush_L2"], True), "the field `flush_L2` is not one"),
    "bad stage": (_set(["variants", 2, "stage"], "oom"), "`stage` is 'oom', not one of"),
    "bad status": (_set(["variants", 0, "status"], "fast"), "`status` is 'fast'"),
    "negative time": (_set(["variants", 0, "samples_ms", 1], -0.25), "is -0.25, not a finite"),
    "zero time": (_set(["variants", 0, "samples_ms", 0], 0), "is 0, not a finite"),
    "nan time": (_set(["variants", 0, "samples_ms", 1], float("nan")), "NaN"),
    "infinite time": (_set(["variants", 0, "samples_ms", 1], float("inf")), "Infinity"),
    "empty samples": (_set(["variants", 1, "samples_ms"], []), "`samples_ms` is empty"),
    "string time": (_set(["variants", 0, "samples_ms", 0], "0.5"), "is '0.5', not a finite"),
    "best disagrees": (_set(["variants", 0, "best_ms"], 0.1), "`best_ms` is 0.1, but"),
    "spread disagrees": (_set(["variants", 0, "spread"], 0.0), "`spread` is 0.0, but"),
    "kernel a number": (_set(["kernel"], 7), "`kernel` is the number 7, not a string"),
    "kernel a path": (_set(["kernel"], "../k"), "not a kernel's name"),
    "source not hex": (_set(["source"], "xyz"), "`source` is not a sha256"),
    "chip a path": (_set(["chip"], "../sm_90"), "not a chip name"),
    "card null": (_set(["card"], None), "`card` is null, not a string"),
    "key a list": (_set(["key"], [4096, 1024]), "`key` is a list, not an object"),
    "key value text": (_set(["key", "M"], "4096"), "`key`['M'] is the string '4096'"),
    "key value bool": (_set(["key", "M"], True), "`key`['M'] is true or false"),
    "space choice float": (_set(["space", "T", 0], 256.0), "`space`['T'][0] is the number"),
    "space dim empty": (_set(["space", "T"], []), "`space`['T'] has no choices"),
    "flush not bool": (_set(["flush_l2"], "yes"), "`flush_l2` is the string 'yes'"),
    "tuned not a time": (_set(["tuned"], "yesterday"), "not an ISO 8601 time"),
    "variants an object": (_set(["variants"], {}), "`variants` is an object, not a list"),
    "variant a list": (_set(["variants", 0], [1]), "variants[0]: is a list"),
    "variant not in space": (
        _set(["variants", 0, "variant"], {"BLOCK": 512, "T": 256}),
        "is not a variant of `space`",
    ),
    "variant twice": (_set(["variants", 1, "variant"], {"BLOCK": 1024, "T": 256}), "twice"),
    "winner wrong": (_set(["winner"], {"BLOCK": 1024, "T": 256}), "the fastest timed variant"),
    "winner null": (_set(["winner"], None), "`winner` is None, but"),
    "top level a list": (lambda data: data.clear(), "the field `format` is missing"),
}


@pytest.mark.parametrize(("change", "fragment"), MUTATIONS.values(), ids=MUTATIONS.keys())
def test_every_problem_names_the_file(change, fragment):
    data = json.loads(make_record().to_json())
    change(data)
    text = json.dumps(data, indent=1)
    path = "/somewhere/sm_90/autotune/softmax_rows.json"
    with pytest.raises(RecordError) as caught:
        Record.from_json(text, path)
    message = str(caught.value)
    assert message.startswith(f"the autotune record {path} is not valid: ")
    assert fragment in message, message
    assert str(caught.value.path) == path


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", "null", '"record"', "{} trailing"])
def test_text_that_is_no_record(text):
    with pytest.raises(RecordError, match="rec.json is not valid"):
        Record.from_json(text, "rec.json")


def test_a_record_error_without_a_file():
    with pytest.raises(RecordError, match=r"^the autotune record is not valid: it is not JSON"):
        Record.from_json("nope")


def test_read_record_of_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "k.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(RecordError, match="not UTF-8"):
        read_record(path)
    with pytest.raises(RecordError, match="cannot be read"):
        read_record(tmp_path / "absent.json")


# ---------------------------------------------------------------------------
# The file's name


def test_record_path_slugs(tmp_path):
    path = record_path(tmp_path, "mm", SOURCE, "NVIDIA H100 80GB HBM3", {"N": 1, "M": 2})
    assert path == tmp_path / "mm-0123456789abcdef-NVIDIA_H100_80GB_HBM3-N1_M2.json"
    path = record_path(tmp_path, "mm", SOURCE, "NVIDIA  A100-SXM4 (80GB)", {})
    assert path.name == "mm-0123456789abcdef-NVIDIA_A100_SXM4_80GB_-nokey.json"


# ---------------------------------------------------------------------------
# The store


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(root))
    monkeypatch.delenv("PHOBOS_CACHE", raising=False)
    return root


def _load(store, record):
    return store.load(record.chip, record.kernel, record.source, record.card, record.key)


def test_save_and_load(cache_dir):
    store = RecordStore()  # the cache of $PHOBOS_CACHE_DIR
    record = make_record()
    assert _load(store, record) is None
    path = store.save(record)
    assert path == (
        cache_dir
        / "sm_90"
        / "autotune"
        / "softmax_rows-0123456789abcdef-NVIDIA_H200-M4096_N1024.json"
    )
    assert path.read_text(encoding="utf-8") == record.to_json()
    assert _load(store, record) == record
    # only the record: no temporary file left beside it
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    # another card, key or source is another record
    assert store.load("sm_90", "softmax_rows", SOURCE, "NVIDIA H100", record.key) is None
    assert store.load("sm_90", "softmax_rows", SOURCE, record.card, {"M": 1, "N": 1}) is None
    assert store.load("sm_90", "softmax_rows", "f" * 64, record.card, record.key) is None


def test_save_replaces_the_old_record(cache_dir):
    store = RecordStore()
    store.save(make_record())
    newer = make_record(tuned="2027-01-01T00:00:00+00:00")
    store.save(newer)
    assert _load(store, newer).tuned == "2027-01-01T00:00:00+00:00"


def test_a_corrupt_record_warns_once_and_is_tuned_again(cache_dir):
    store = RecordStore()
    record = make_record()
    path = store.save(record)
    path.write_text(record.to_json()[:-20], encoding="utf-8")  # torn by hand
    with pytest.warns(RecordWarning) as caught:
        assert _load(store, record) is None
    message = str(caught[0].message)
    assert str(path) in message and "tuned again" in message and "not JSON" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _load(store, record) is None  # the second time: quiet
    assert store.save(record) == path
    assert _load(store, record) == record


def test_a_record_of_another_kernel_under_this_name_is_not_taken(cache_dir):
    store = RecordStore()
    record = make_record()
    path = store.save(record)
    path.write_text(make_record(card="NVIDIA H100").to_json(), encoding="utf-8")
    with pytest.warns(RecordWarning, match="another kernel, source, chip, card or key"):
        assert _load(store, record) is None


def test_cache_turned_off(cache_dir, monkeypatch):
    RecordStore().save(make_record())
    monkeypatch.setenv("PHOBOS_CACHE", "0")
    store = RecordStore()
    assert store.save(make_record(tuned="2027-01-01T00:00:00+00:00")) is None
    assert _load(store, make_record()) is None


def test_a_refused_cache_directory(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o777)
    store = RecordStore(KernelCache(root))
    with pytest.warns(cache_module.CacheWarning, match="writable by group or others"):
        assert store.save(make_record()) is None
    assert not (root / "sm_90").exists()


def test_a_failed_write_warns_and_keeps_nothing(cache_dir, monkeypatch):
    def full(path, data, stage):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module, "_write", full)
    with pytest.warns(RecordWarning, match="No space left on device"):
        assert RecordStore().save(make_record()) is None


def test_list_reads_every_chip(cache_dir):
    store = RecordStore()
    a = store.save(make_record())
    b = store.save(make_record(chip="sm_80"))
    c = store.save(make_record(kernel="other"))
    bad = a.with_name("softmax_rows-ffffffffffffffff-NVIDIA_H200-nokey.json")
    bad.write_text("{}", encoding="utf-8")
    (a.parent / "notes.txt").write_text("not a record", encoding="utf-8")
    everything = store.list()
    assert [p for p, _ in everything] == sorted([a, b, c, bad])
    found = dict(store.list("softmax_rows"))
    assert set(found) == {a, b, bad}
    assert isinstance(found[bad], RecordError) and "`format` is missing" in found[bad].what
    assert found[a] == make_record()
    assert [p for p, _ in store.list("softmax_rows", "sm_80")] == [b]
    assert store.list("nothing") == []


def test_list_of_a_cache_never_made(tmp_path):
    assert RecordStore(KernelCache(tmp_path / "absent")).list() == []


# ---------------------------------------------------------------------------
# Merging when a dim gains a value


def test_merge_keeps_old_timed_results_and_reruns_the_left_out():
    space = {"BLOCK": [1024, 2048], "T": [256]}
    old = make_record(
        space=space,
        variants=[
            VariantResult.timed({"BLOCK": 1024, "T": 256}, [0.5]),
            VariantResult.left_out({"BLOCK": 2048, "T": 256}, "launch", "out of resources"),
        ],
    )
    # T gains 128: the tuner runs what `old` lacks or left out
    grown = {"BLOCK": [1024, 2048], "T": [256, 128]}
    to_run = [
        v
        for v in records._variants_of(grown)
        if old.result_for(v) is None or old.result_for(v).status != "timed"
    ]
    assert to_run == [
        {"BLOCK": 1024, "T": 128},
        {"BLOCK": 2048, "T": 256},
        {"BLOCK": 2048, "T": 128},
    ]
    new = make_record(
        space=grown,
        tuned="2027-01-01T00:00:00+00:00",
        variants=[
            VariantResult.timed({"BLOCK": 2048, "T": 128}, [0.25]),
            VariantResult.timed({"BLOCK": 2048, "T": 256}, [0.75]),
            VariantResult.left_out({"BLOCK": 1024, "T": 128}, "race", "a race"),
        ],
    )
    merged = new.merge(old)
    assert merged.tuned == "2027-01-01T00:00:00+00:00" and merged.space == grown
    assert [(r.variant, r.status, r.best_ms) for r in merged.variants] == [
        ({"BLOCK": 1024, "T": 256}, "timed", 0.5),  # kept from `old`
        ({"BLOCK": 1024, "T": 128}, "left out", None),
        ({"BLOCK": 2048, "T": 256}, "timed", 0.75),  # run again: was left out
        ({"BLOCK": 2048, "T": 128}, "timed", 0.25),
    ]
    assert merged.winner == {"BLOCK": 2048, "T": 128}
    assert Record.from_json(merged.to_json()) == merged
    # neither input changed
    assert len(old.variants) == 2 and len(new.variants) == 3


def test_merge_prefers_a_new_result_and_drops_variants_left_the_space():
    old = make_record()
    shrunk = {"BLOCK": [1024], "T": [256, 128]}
    new = make_record(
        space=shrunk, variants=[VariantResult.timed({"BLOCK": 1024, "T": 256}, [9.0])]
    )
    merged = new.merge(old)
    assert [(r.variant, r.best_ms) for r in merged.variants] == [
        ({"BLOCK": 1024, "T": 256}, 9.0),
        ({"BLOCK": 1024, "T": 128}, 0.125),
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"source": "f" * 64},
        {"kernel": "other"},
        {"chip": "sm_80"},
        {"card": "NVIDIA H100"},
        {"key": {"M": 1, "N": 1}},
        {"flush_l2": False},
    ],
)
def test_merge_refuses_records_that_do_not_compare(change):
    with pytest.raises(ValueError, match="cannot merge"):
        make_record().merge(make_record(**change))


# ---------------------------------------------------------------------------
# The source key

KERNEL = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel(key=("N",))
@ph.autotune(BLOCK={blocks}, T=[128, 256])
@ph.launch("T")
def scale(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    y[base:+BLOCK] = x[base:+BLOCK] * {factor}
"""


def _kernel(tmp_path, blocks="[256, 1024]", factor="2.0"):
    name = f"phobos_test_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL.format(blocks=blocks, factor=factor), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module.scale


def test_source_key_leaves_the_choices_out(tmp_path):
    base = source_key(_kernel(tmp_path))
    assert len(base) == 64 and int(base, 16) >= 0
    assert source_key(_kernel(tmp_path, blocks="[256, 1024, 4096]")) == base
    assert source_key(_kernel(tmp_path, blocks="[64]")) == base


def test_source_key_follows_the_kernel_and_the_compiler(tmp_path, monkeypatch):
    kernel = _kernel(tmp_path)
    base = source_key(kernel)
    assert source_key(_kernel(tmp_path, factor="3.0")) != base
    assert source_key(kernel.program) == base
    monkeypatch.setattr(records, "compiler_fingerprint", lambda: "phobos-9.9.9-other")
    assert source_key(kernel) != base


def test_source_key_keeps_the_dims_names():
    from phobos.source import SourceFile
    from phobos.syntax.parser import parse

    body = "kernel k(x: tensor<f32>[N]) {\n  x[0] = f32(B)\n}\n"

    def key(attrs):
        program, diags = parse(SourceFile("k.ph", attrs + body))
        assert diags == []
        return source_key(program)

    one = key("@autotune(B in [1, 2])\n")
    assert key("@autotune(B in [2, 1, 8])\n") == one
    assert key("@autotune(B in [1, 2], C in [1])\n") != one
    assert key("@autotune(B in [1, 2])\n@launch(64)\n") != one
