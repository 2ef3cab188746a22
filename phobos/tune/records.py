"""The tuner's results: one readable JSON record per (kernel, key values).

A record holds every variant the tuner tried, each timed (with every sample) or
left out (with the stage that refused it and why), so it can be read, copied to
another machine and checked in. It lives in the kernel cache, under the chip's
`autotune/` directory, named by the kernel, its source key, the card and the key
values (`record_path`); `RecordStore` loads and saves it.

A record is read as the kernel cache reads its entries (a regular file of the user's,
closed to others, at most `MAX_RECORD_BYTES`), and checked field by field before
anything is built from it: a space of more than `MAX_VARIANTS` variants is refused
before one is enumerated. Any record that is not valid is a `RecordError` naming the
file and the problem, never another exception: the tuner then runs again.

    >>> result = VariantResult.timed({"BLOCK": 1024}, [0.5, 0.25, 1.0])
    >>> result.best_ms, result.median_ms, result.spread
    (0.25, 0.5, 3.0)
    >>> record = Record("k", "ab" * 32, "sm_90", "NVIDIA H200", {"N": 4096},
    ...     {"BLOCK": [1024, 2048]}, True, "2026-11-30T15:40:00+00:00",
    ...     [result, VariantResult.left_out({"BLOCK": 2048}, "race", "a race at k.py:3")])
    >>> record.winner
    {'BLOCK': 1024}
    >>> Record.from_json(record.to_json()) == record
    True
    >>> record_path(Path("/c/sm_90/autotune"), "k", record.source, "NVIDIA H200", {"N": 4096}).name
    'k-abababababababab-NVIDIA_H200-N4096.json'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import reprlib
import statistics
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from phobos.runtime import cache as cache_module
from phobos.runtime.cache import KernelCache, RefusedFile, compiler_fingerprint
from phobos.syntax import ast

FORMAT = "phobos-autotune/1"
TIMED = "timed"
LEFT_OUT = "left out"
# Why a variant was left out, in the order the tuner meets them.
# Where a variant is left out: its compilation, its resources, the race check's run (a
# race, or a "fault": an access outside a tensor), its launch on the card, its canaries,
# its result.
STAGES = (
    "compile",
    "shared memory",
    "registers",
    "race",
    "fault",
    "launch",
    "canary",
    "mismatch",
)

# The most variants a record's space may name. The tuner compiles every variant it
# tries, a tenth of a second to seconds each: 16384 variants is hours of compiling, a
# hundred times the largest space Phobos's own kernels tune (about 100), and a record
# timing every one (9 MiB) reads in half a second. A record is checked without
# enumerating its space, but the bound is checked first all the same: before it, a
# record of 6 dims of 10 choices took 5 s to read, and one of 4 dims of 100 over 20 s
# and 1 GB.
MAX_VARIANTS = 1 << 14
# The most bytes a record's file may hold: `MAX_VARIANTS` variants of 2 KiB each,
# where a timed one of 20 samples takes 0.6 KiB and a long reason a line more.
MAX_RECORD_BYTES = 32 << 20

_WARNED: set[str] = set()
_WARN_LOCK = threading.Lock()


class RecordError(ValueError):
    """An autotune record that cannot be read: `path` (None for text not from a
    file) and `what` is wrong with it."""

    def __init__(self, path: str | Path | None, what: str):
        self.path = None if path is None else Path(path)
        self.what = what
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" {self.path}" if self.path is not None else ""
        return f"the autotune record{where} is not valid: {self.what}"


class RecordWarning(UserWarning):
    """An autotune record could not be read or written; the kernel is tuned again."""


# ---------------------------------------------------------------------------
# One variant's result


@dataclass
class VariantResult:
    """What the tuner found for one variant: timed, with every sample in
    milliseconds, or left out at a stage of `STAGES`, with a one-line reason.

        >>> VariantResult.left_out({"T": 64}, "registers", "needs 300 registers,\\n 255 fit")
        VariantResult(variant={'T': 64}, status='left out', samples_ms=[], stage='registers', reason='needs 300 registers, 255 fit')
        >>> VariantResult.left_out({"T": 64}, "oom", "")
        Traceback (most recent call last):
        ...
        ValueError: `oom` is not a stage a variant is left out at: compile, shared memory, registers, race, fault, launch, canary, mismatch
    """

    variant: dict[str, int]
    status: str
    samples_ms: list[float] = field(default_factory=list)
    stage: str | None = None
    reason: str | None = None

    @classmethod
    def timed(cls, variant: Mapping[str, int], samples_ms) -> VariantResult:
        """A timed variant; `samples_ms` non-empty, each finite and positive."""
        samples = list(samples_ms)
        if not samples:
            raise ValueError("a timed variant needs at least one sample")
        bad = [s for s in samples if not _positive(s)]
        if bad:
            raise ValueError(f"a sample of {_shown(bad[0])} ms is not a finite positive time")
        return cls(dict(variant), TIMED, [float(s) for s in samples])

    @classmethod
    def left_out(cls, variant: Mapping[str, int], stage: str, reason: str) -> VariantResult:
        """A variant left out at `stage`; `reason` is made one line."""
        if stage not in STAGES:
            raise ValueError(
                f"`{stage}` is not a stage a variant is left out at: {', '.join(STAGES)}"
            )
        return cls(dict(variant), LEFT_OUT, [], stage, " ".join(str(reason).split()))

    @property
    def best_ms(self) -> float | None:
        """The fastest sample (None when left out)."""
        return min(self.samples_ms) if self.samples_ms else None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.samples_ms) if self.samples_ms else None

    @property
    def spread(self) -> float | None:
        """(slowest - fastest) / fastest: how far the samples disagree."""
        if not self.samples_ms:
            return None
        best = min(self.samples_ms)
        return (max(self.samples_ms) - best) / best

    def to_dict(self) -> dict:
        """The record's JSON object for this variant, in the documented order."""
        if self.status == TIMED:
            return {
                "variant": self.variant,
                "status": TIMED,
                "best_ms": self.best_ms,
                "median_ms": self.median_ms,
                "spread": float(f"{self.spread:.6g}"),  # derived: six digits read better
                "samples_ms": self.samples_ms,
            }
        return {
            "variant": self.variant,
            "status": LEFT_OUT,
            "stage": self.stage,
            "reason": self.reason,
        }


def _positive(x) -> bool:
    return _number(x) and x > 0


def _number(x) -> bool:
    """A finite int or float, and one a float holds: `10**400` is none."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int past a float's range
        return False


# Values as a problem's message shows them: a string, a number or a nesting from a
# hostile file is cut short, so the message stays a line and its repr cannot recurse.
_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxdict = _SHORT.maxlist = 8
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlong = 40


def _shown(value) -> str:
    return _SHORT.repr(value)


# ---------------------------------------------------------------------------
# A record


@dataclass
class Record:
    """Every variant's result for one kernel at one value of its key extents, on
    one chip and card. `key` and `space` keep their order (the key's, the
    `@autotune` attribute's); `tuned` is an ISO 8601 time (`tuned_now()`)."""

    kernel: str
    source: str
    chip: str
    card: str
    key: dict[str, int]
    space: dict[str, list[int]]
    flush_l2: bool
    tuned: str
    variants: list[VariantResult]

    @property
    def winner(self) -> dict[str, int] | None:
        """The timed variant with the fastest sample, the first listed on a tie;
        None when no variant was timed."""
        timed = [r for r in self.variants if r.status == TIMED]
        if not timed:
            return None
        return dict(min(timed, key=lambda r: r.best_ms).variant)

    def only(self, variants) -> Record:
        """This record with only the results of `variants` (its winner is then chosen
        among them: a view of a kernel fixed some constants)."""
        keep = [r for r in self.variants if r.variant in variants]
        return self if len(keep) == len(self.variants) else dataclasses.replace(self, variants=keep)

    def result_for(self, variant: Mapping[str, int]) -> VariantResult | None:
        """This record's result for `variant` (names in any order), or None."""
        wanted = dict(variant)
        for result in self.variants:
            if result.variant == wanted:
                return result
        return None

    def merge(self, old: Record) -> Record:
        """This record with `old`'s timed results for the variants it did not time.

        The tuner runs only the variants a stored record lacks or left out (a dim
        gained a value), then merges: the new results win, the old timed ones fill
        in, and a variant no longer in the space is dropped. Variants follow the
        space's order. `ValueError` when `old` is of another kernel, source, chip,
        card, key or L2 setting: its times do not compare.

            >>> space = {"B": [1, 2]}
            >>> old = Record("k", "0" * 64, "sm_90", "H200", {}, {"B": [1]}, True, "t",
            ...     [VariantResult.timed({"B": 1}, [2.0])])
            >>> new = Record("k", "0" * 64, "sm_90", "H200", {}, space, True, "u",
            ...     [VariantResult.timed({"B": 2}, [3.0])])
            >>> [(r.variant, r.best_ms) for r in new.merge(old).variants]
            [({'B': 1}, 2.0), ({'B': 2}, 3.0)]
        """
        for name in ("kernel", "source", "chip", "card", "key", "flush_l2"):
            if getattr(self, name) != getattr(old, name):
                raise ValueError(
                    f"cannot merge autotune records of different `{name}`: "
                    f"{getattr(old, name)!r} and {getattr(self, name)!r}"
                )
        chosen: dict[tuple, VariantResult] = {}
        for result in self.variants:
            chosen[_ident(result.variant)] = result
        for result in old.variants:
            ident = _ident(result.variant)
            mine = chosen.get(ident)
            if mine is None or (mine.status != TIMED and result.status == TIMED):
                chosen[ident] = result
        kept = [r for r in chosen.values() if _position(self.space, r.variant) is not None]
        kept.sort(key=lambda r: _position(self.space, r.variant))
        return dataclasses.replace(self, variants=[_copy(r) for r in kept])

    # -- text ----------------------------------------------------------------------

    def to_json(self) -> str:
        """The record's file text: one field a line, indented one space, the fields
        in the documented order, each variant on two lines."""

        def value(x) -> str:
            return json.dumps(x, ensure_ascii=False, allow_nan=False)

        head = {
            "format": FORMAT,
            "kernel": self.kernel,
            "source": self.source,
            "chip": self.chip,
            "card": self.card,
            "key": self.key,
            "space": self.space,
            "flush_l2": self.flush_l2,
            "tuned": self.tuned,
            "winner": self.winner,
        }
        lines = [f" {value(name)}: {value(x)}," for name, x in head.items()]
        rows = []
        for result in self.variants:
            fields = [f"{value(k)}: {value(v)}" for k, v in result.to_dict().items()]
            split = 3 if result.status == LEFT_OUT else 2  # variant, status (, stage)
            rows.append(
                "  {" + ", ".join(fields[:split]) + ",\n   " + ", ".join(fields[split:]) + "}"
            )
        body = ",\n".join(rows)
        variants = ' "variants": [\n' + body + "\n ]" if rows else ' "variants": []'
        return "{\n" + "\n".join(lines) + "\n" + variants + "\n}\n"

    @classmethod
    def from_json(cls, text: str, path: str | Path | None = None) -> Record:
        """Read a record's text; `RecordError` naming `path` and the problem for
        anything that is not a record of this format."""
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise RecordError(path, f"it is not JSON ({exc})") from None
        except RecursionError:
            raise RecordError(path, "it is nested too deeply to be a record") from None
        return _Reader(path).record(data)


def _refuse_constant(name: str):
    raise ValueError(f"`{name}` is not a number JSON allows")


def _ident(variant: Mapping[str, int]) -> tuple:
    return tuple(sorted(variant.items()))


def _variants_of(space: Mapping[str, list[int]]):
    from phobos.sema.space import Space

    return Space({name: tuple(choices) for name, choices in space.items()}).variants()


def _too_many(space: Mapping[str, list[int]]) -> bool:
    """Whether `space` has more than `MAX_VARIANTS` variants (counted, not enumerated)."""
    count = 1
    for choices in space.values():
        count *= len(choices)
        if count > MAX_VARIANTS:
            return True
    return False


def _position(space: Mapping[str, list[int]], variant: Mapping[str, int]) -> tuple | None:
    """Where `variant` comes in the enumeration of `space` (the first dim slowest),
    as each dim's index of its choice; None for a variant not in `space`. Found
    without enumerating the space, whose size is the product of its dims'.

        >>> _position({"A": [1, 2], "B": [3, 4]}, {"B": 3, "A": 2}), _position({"A": [1]}, {})
        ((1, 0), None)
    """
    if len(variant) != len(space):
        return None
    try:
        return tuple(choices.index(variant[name]) for name, choices in space.items())
    except (KeyError, ValueError):  # a dim not in the variant, a value not a choice
        return None


def _copy(result: VariantResult) -> VariantResult:
    return dataclasses.replace(
        result, variant=dict(result.variant), samples_ms=list(result.samples_ms)
    )


def tuned_now() -> str:
    """The time now, as a record's `tuned` holds it: `2026-11-30T15:40:00+00:00`."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------
# Validation


_FIELDS = ("format", "kernel", "source", "chip", "card", "key", "space", "flush_l2", "tuned")
_TAIL = ("winner", "variants")
_TIMED_FIELDS = ("variant", "status", "best_ms", "median_ms", "spread", "samples_ms")
_LEFT_OUT_FIELDS = ("variant", "status", "stage", "reason")


class _Reader:
    """Checks a record's JSON field by field; each problem a `RecordError`."""

    def __init__(self, path):
        self.path = path

    def fail(self, what: str):
        raise RecordError(self.path, what)

    def fields(self, data, names: tuple[str, ...], where: str) -> None:
        if not isinstance(data, dict):
            self.fail(f"{where}is {_kind(data)}, not an object")
        for name in names:
            if name not in data:
                self.fail(f"{where}the field `{name}` is missing")
        for name in data:
            if name not in names:
                self.fail(f"{where}the field `{name}` is not one a record has")

    def typed(self, value, kind, what: str):
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            self.fail(f"{what} is {_kind(value)}, not {_KINDS[kind]}")
        return value

    def record(self, data) -> Record:
        self.fields(data, _FIELDS + _TAIL, "")
        if data["format"] != FORMAT:
            self.fail(f"`format` is {_shown(data['format'])}, not {FORMAT!r}")
        kernel = self.typed(data["kernel"], str, "`kernel`")
        if not kernel.isidentifier():
            self.fail(f"`kernel` is {_shown(kernel)}, not a kernel's name")
        source = self.typed(data["source"], str, "`source`")
        if not re.fullmatch(r"[0-9a-f]{64}", source):
            self.fail("`source` is not a sha256 (64 lowercase hex digits)")
        chip = self.typed(data["chip"], str, "`chip`")
        if not cache_module._is_chip(chip):
            self.fail(f"`chip` is {_shown(chip)}, not a chip name such as 'sm_90'")
        card = self.typed(data["card"], str, "`card`")
        key = self.ints(data["key"], "`key`")
        space = self.space(data["space"])
        flush_l2 = self.typed(data["flush_l2"], bool, "`flush_l2`")
        tuned = self.typed(data["tuned"], str, "`tuned`")
        try:
            datetime.fromisoformat(tuned)
        except ValueError:
            self.fail(f"`tuned` is {_shown(tuned)}, not an ISO 8601 time")
        entries = self.typed(data["variants"], list, "`variants`")
        variants, seen = [], set()
        for i, entry in enumerate(entries):
            result = self.variant(entry, f"variants[{i}]: ")
            ident = _ident(result.variant)
            shown = _shown(result.variant)
            if _position(space, result.variant) is None:
                self.fail(f"variants[{i}]: {shown} is not a variant of `space`")
            if ident in seen:
                self.fail(f"variants[{i}]: {shown} is listed twice")
            seen.add(ident)
            variants.append(result)
        record = Record(kernel, source, chip, card, key, space, flush_l2, tuned, variants)
        if data["winner"] is not None:
            self.ints(data["winner"], "`winner`")
        if data["winner"] != record.winner:
            self.fail(
                f"`winner` is {_shown(data['winner'])}, but the fastest timed variant is "
                f"{_shown(record.winner)}"
            )
        return record

    def ints(self, value, what: str) -> dict[str, int]:
        self.typed(value, dict, what)
        for name, x in value.items():
            self.typed(x, int, f"{what}[{_shown(name)}]")
        return dict(value)

    def space(self, value) -> dict[str, list[int]]:
        self.typed(value, dict, "`space`")
        count = 1
        for name, choices in value.items():
            what = f"`space`[{_shown(name)}]"
            self.typed(choices, list, what)
            if not choices:
                self.fail(f"{what} has no choices")
            for i, x in enumerate(choices):
                self.typed(x, int, f"{what}[{i}]")
            count *= len(choices)
            if count > MAX_VARIANTS:  # stop here: the product of every dim may be vast
                self.fail(
                    f"`space` names more than {MAX_VARIANTS} variants, the most a record "
                    f"may hold (its dims up to {_shown(name)} make {count})"
                )
        return {name: list(choices) for name, choices in value.items()}

    def variant(self, data, where: str) -> VariantResult:
        if not isinstance(data, dict):
            self.fail(f"{where}is {_kind(data)}, not an object")
        status = data.get("status")
        if status == TIMED:
            self.fields(data, _TIMED_FIELDS, where)
        elif status == LEFT_OUT:
            self.fields(data, _LEFT_OUT_FIELDS, where)
        else:
            self.fail(f"{where}`status` is {_shown(status)}, not {TIMED!r} or {LEFT_OUT!r}")
        variant = self.ints(data["variant"], f"{where}`variant`")
        if status == LEFT_OUT:
            stage = self.typed(data["stage"], str, f"{where}`stage`")
            if stage not in STAGES:
                self.fail(f"{where}`stage` is {_shown(stage)}, not one of {', '.join(STAGES)}")
            reason = self.typed(data["reason"], str, f"{where}`reason`")
            return VariantResult(variant, LEFT_OUT, [], stage, reason)
        samples = self.typed(data["samples_ms"], list, f"{where}`samples_ms`")
        if not samples:
            self.fail(f"{where}`samples_ms` is empty: a timed variant has at least one")
        for i, x in enumerate(samples):
            if not _positive(x):
                self.fail(f"{where}`samples_ms`[{i}] is {_shown(x)}, not a finite positive time")
        result = VariantResult(variant, TIMED, [float(x) for x in samples])
        for name in ("best_ms", "median_ms", "spread"):
            stored, computed = data[name], getattr(result, name)
            if not _number(stored) or not math.isclose(
                stored, computed, rel_tol=1e-5, abs_tol=1e-9
            ):
                self.fail(f"{where}`{name}` is {_shown(stored)}, but the samples give {computed!r}")
        return result


_KINDS = {
    str: "a string",
    int: "an integer",
    bool: "true or false",
    dict: "an object",
    list: "a list",
}


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return f"the number {_shown(value)}"
    if isinstance(value, str):
        return f"the string {_shown(value)}"
    return "a list" if isinstance(value, list) else "an object"


# ---------------------------------------------------------------------------
# The source key and the file's name


def source_key(kernel) -> str:
    """The sha256 of a kernel's Phobos text with its `@autotune` choices left out,
    and of the compiler's fingerprint: a record stays the kernel's while a dim
    gains or loses a value, and goes with any other edit (or another compiler).

    `kernel` is a `phobos.lang.Kernel` (or its `Program`). The dims' names stay in
    the text: a new dim makes variants the old record cannot name.

        >>> from phobos.source import SourceFile
        >>> from phobos.syntax.parser import parse
        >>> def program(text):
        ...     return parse(SourceFile("k.ph", text))[0]
        >>> body = "kernel k(x: tensor<f32>[N]) { x[0] = f32(B) }"
        >>> a = source_key(program("@autotune(B in [1, 2])\\n" + body))
        >>> a == source_key(program("@autotune(B in [4])\\n" + body)), len(a)
        (True, 64)
    """
    from phobos.syntax.printer import print_program

    program = getattr(kernel, "program", kernel)
    items = tuple(
        _without_choices(item) if isinstance(item, ast.Kernel) else item for item in program.items
    )
    text = print_program(dataclasses.replace(program, items=items))
    digest = hashlib.sha256(text.encode())
    digest.update(b"\0" + compiler_fingerprint().encode())
    return digest.hexdigest()


def _without_choices(kernel: ast.Kernel) -> ast.Kernel:
    """`kernel` with every `@autotune(X in [..])` printed as `X in []`."""

    def strip(attr: ast.Attribute) -> ast.Attribute:
        if attr.name.id != "autotune" or attr.args is None:
            return attr
        args = tuple(
            dataclasses.replace(a, values=()) if isinstance(a, ast.SearchDim) else a
            for a in attr.args
        )
        return dataclasses.replace(attr, args=args)

    return dataclasses.replace(kernel, attrs=tuple(strip(a) for a in kernel.attrs))


def card_slug(card: str) -> str:
    """`NVIDIA H200` -> `NVIDIA_H200`: a card's name as a file name holds it.

    >>> card_slug("NVIDIA H100 80GB HBM3")
    'NVIDIA_H100_80GB_HBM3'
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", card)


def key_slug(key: Mapping[str, int]) -> str:
    """`{"M": 4096, "N": 1024}` -> `M4096_N1024`, in the key's order; `nokey` for `{}`.

    >>> key_slug({"M": 4096, "N": 1024}), key_slug({})
    ('M4096_N1024', 'nokey')
    """
    return "_".join(f"{name}{value}" for name, value in key.items()) or "nokey"


def record_path(
    directory: Path, kernel: str, source: str, card: str, key: Mapping[str, int]
) -> Path:
    """Where the record of `kernel` (its name) at `key` lives in `directory`."""
    return Path(directory) / f"{kernel}-{source[:16]}-{card_slug(card)}-{key_slug(key)}.json"


def read_record(path: str | Path, dir_fd: int | None = None) -> Record:
    """The record in the file `path` (its name read in the directory `dir_fd` when
    given); `RecordError` when it cannot be read, is not a file of the user's that is
    safe to read (`cache.read_file`), or is not a valid record."""
    name = path if dir_fd is None else Path(path).name
    try:
        text = cache_module.read_file(name, MAX_RECORD_BYTES, dir_fd).decode("utf-8")
    except RefusedFile as exc:
        raise RecordError(path, exc.problem) from None
    except OSError as exc:
        raise RecordError(path, f"it cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise RecordError(path, "it is not UTF-8 text") from None
    return Record.from_json(text, path)


# ---------------------------------------------------------------------------
# The store


class RecordStore:
    """The records of the kernel cache (`KernelCache()` when None).

    `load` gives None for a record absent, corrupt (with a warning: it is tuned
    again) or of a cache turned off; `save` writes atomically and gives None when
    the cache is off or its directory refused. `list` reads every chip's records
    even with the cache off, for a person to inspect.

        >>> import tempfile
        >>> store = RecordStore(KernelCache(tempfile.mkdtemp()))
        >>> record = Record("k", "0" * 64, "sm_90", "H200", {}, {}, True, tuned_now(),
        ...     [VariantResult.timed({}, [0.5])])
        >>> path = store.save(record)
        >>> store.load("sm_90", "k", "0" * 64, "H200", {}) == record, path.name
        (True, 'k-0000000000000000-H200-nokey.json')
    """

    def __init__(self, cache: KernelCache | None = None):
        self.cache = cache if cache is not None else KernelCache()

    def _directory(self, chip: str) -> Path | None:
        if not self.cache.enabled:
            return None
        return self.cache.autotune_dir(chip)

    def load(
        self, chip: str, kernel: str, source: str, card: str, key: Mapping[str, int]
    ) -> Record | None:
        """The stored record of `kernel` (its name) at `key`, or None."""
        if not self.cache.enabled:
            return None
        directory = self.cache.root / chip / cache_module.AUTOTUNE
        path = record_path(directory, kernel, source, card, key)
        # Read through the checked directory's descriptor: a directory swapped after the
        # check cannot serve a record from elsewhere.
        with self.cache._opened(directory) as fd:
            if fd is None:
                return None
            try:
                os.stat(path.name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            except OSError:
                pass  # reading it says why
            try:
                record = read_record(path, fd)
            except RecordError as exc:
                _warn_once(path, f"{exc.what}; the kernel is tuned again and the record replaced")
                return None
        asked = (kernel, source, chip, card, dict(key))
        found = (record.kernel, record.source, record.chip, record.card, record.key)
        if found != asked:
            _warn_once(
                path,
                "it holds the record of another kernel, source, chip, card or key; the "
                "kernel is tuned again and the record replaced",
            )
            return None
        return record

    def save(self, record: Record) -> Path | None:
        """Write `record` atomically; its path, or None when not written."""
        directory = self._directory(record.chip)
        if directory is None:
            return None
        path = record_path(directory, record.kernel, record.source, record.card, record.key)
        if _too_many(record.space):  # `load` would refuse it: keep it from the disk
            _warn_once(
                path,
                f"its space names more than {MAX_VARIANTS} variants, the most a record may "
                "hold; the result is kept in memory",
            )
            return None
        try:
            cache_module._write(path, record.to_json().encode("utf-8"), "autotune")
            cache_module._sync_dir(directory)
        except OSError as exc:
            _warn_once(
                path, f"it cannot be written ({exc.strerror or exc}); the result is kept in memory"
            )
            return None
        return path

    def list(
        self, kernel_name: str | None = None, chip: str | None = None
    ) -> list[tuple[Path, Record | RecordError]]:
        """Every record file of the cache, of `kernel_name` and `chip` when given,
        sorted by path: each read, or the `RecordError` it gives."""
        root = self.cache.root
        if not root.is_dir():
            return []
        chips = [root / chip] if chip else sorted(p for p in root.iterdir() if p.is_dir())
        found: list[tuple[Path, Record | RecordError]] = []
        for chip_dir in chips:
            directory = chip_dir / cache_module.AUTOTUNE
            if not directory.is_dir():
                continue
            with self.cache._opened(directory, create=False) as fd:
                if fd is None:
                    continue
                for name in sorted(os.listdir(fd)):
                    if name.startswith(".") or not name.endswith(".json"):
                        continue
                    if kernel_name is not None and name.split("-")[0] != kernel_name:
                        continue
                    path = directory / name
                    try:
                        found.append((path, read_record(path, fd)))
                    except RecordError as exc:  # a FIFO or a link among them says so
                        found.append((path, exc))
        return found


def _warn_once(path: Path, problem: str) -> None:
    with _WARN_LOCK:
        if str(path) in _WARNED:
            return
        _WARNED.add(str(path))
    warnings.warn(f"phobos: the autotune record {path}: {problem}", RecordWarning, stacklevel=3)
