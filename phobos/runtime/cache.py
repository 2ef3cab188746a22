"""The kernel cache on disk: PTX, cubin and the launch contract of each compiled kernel.

Where: `$PHOBOS_CACHE_DIR`, else `~/.cache/phobos`; one directory per chip
(`sm_90/`), and in it `autotune/`, kept for the tuner's results. `PHOBOS_CACHE=0`
turns the cache off: every kernel is then compiled in memory.

An entry is three files named by its key, a sha256 of the source's cache key, the
compiler's fingerprint, the chip and the variant (`entry_key`): `<key>.ptx`,
`<key>.cubin` (absent for a kernel only compiled, or left to the driver to compile) and
`<key>.json`, which is written last and holds the sha256 of the other two and the
contract. Each file is written under a temporary name in the same directory, synced
and renamed over the final name, so a reader never sees half a file; a reader checks
the hashes, so an entry torn between files (a writer killed between two renames) or
corrupted later reads as a miss, and is written again. Writers take turns on a lock
file, one per chip directory. Nothing but bytes and JSON is stored: never pickle,
never code.

A cache directory must be owned by the user and not writable by group or others:
anyone who could write it could swap a cubin the process then runs. Any other is
refused, with one warning per process naming it and the fix, and kernels are
compiled in memory.

    >>> import tempfile
    >>> cache = KernelCache(tempfile.mkdtemp())
    >>> key = entry_key("source-key", "phobos-0.1.0-abc", "sm_90", {"BLOCK": 128})
    >>> str(key).startswith("sm_90/"), cache.get(key)
    (True, None)
    >>> entry = cache.put(key, ".version 8.0", b"cubin", '{"format": "..."}')
    >>> cache.get(key).cubin
    b'cubin'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import phobos
from phobos.lower import options

ENTRY_FORMAT = "phobos-cache-entry"
ENTRY_VERSION = 1
AUTOTUNE = "autotune"
LOCK = "entries.lock"  # one per chip directory: writers take turns

# Called as hook(stage, final_path) after a file's bytes are written and synced and
# before they are renamed into place; tests use it to kill a writer mid-entry.
_BEFORE_RENAME: Callable[[str, Path], None] | None = None

_WARNED: set[str] = set()
_WARN_LOCK = threading.Lock()


class CacheWarning(UserWarning):
    """The cache directory is refused; kernels are compiled in memory."""


# ---------------------------------------------------------------------------
# Keys


@cache
def compiler_fingerprint() -> str:
    """Phobos's version and a hash of every source file of the `phobos` package:
    any edit to the compiler changes it, and so every cache key.

    >>> compiler_fingerprint().startswith("phobos-" + phobos.__version__ + "-")
    True
    """
    root = Path(phobos.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".pyi", ".md") and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return f"phobos-{phobos.__version__}-{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class Key:
    """An entry's address: the chip directory and the sha256 naming the files.
    Its text is `chip/digest`, as the contract's `cache_key` holds it."""

    chip: str
    digest: str

    def __str__(self) -> str:
        return f"{self.chip}/{self.digest}"

    @classmethod
    def parse(cls, text: str) -> Key:
        """`Key.parse("sm_90/<64 hex digits>")`."""
        chip, _, digest = text.partition("/")
        if not _is_chip(chip) or len(digest) != 64 or not _is_hex(digest):
            raise ValueError(f"{text!r} is not a cache key (`sm_XX/` and 64 hex digits)")
        return cls(chip, digest)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _is_chip(chip: str) -> bool:
    return chip.startswith("sm_") and chip[3:].rstrip("a").isdigit()


# The environment switches that change the code the lowering emits (each turns an
# optimisation off or down, to measure what it gains). Their values are part of every
# key, so a kernel compiled with one set is never served where it is not.
LOWERING_SWITCHES = (
    "PHOBOS_ACC_ROWS",
    "PHOBOS_CLUSTER",
    "PHOBOS_PREFETCH",
    "PHOBOS_RASTER",
    "PHOBOS_REGISTER_A",
    "PHOBOS_RING",
    "PHOBOS_STAGES",
    "PHOBOS_SPECIALIZE",
    "PHOBOS_SWIZZLE",
    "PHOBOS_TMA",
    "PHOBOS_TMA_STORE",
    "PHOBOS_WALK",
    "PHOBOS_WGMMA",
    "PHOBOS_WGMMA_REGISTER_A",
)


def entry_key(
    source_key: str,
    fingerprint: str,
    chip: str,
    variant: Mapping[str, int] | tuple = (),
) -> Key:
    """The entry of a kernel variant compiled from `source_key` by the compiler of
    `fingerprint` for `chip`.

    >>> a = entry_key("src", "fp", "sm_90", {"B": 1, "A": 2})
    >>> a == entry_key("src", "fp", "sm_90", (("A", 2), ("B", 1))), a.chip
    (True, 'sm_90')
    """
    if not _is_chip(chip):
        raise ValueError(f"{chip!r} is not a chip name such as `sm_90`")
    items = sorted(dict(variant).items())
    entry = {"source": source_key, "compiler": fingerprint, "chip": chip, "variant": items}
    switches = {n: os.environ[n] for n in LOWERING_SWITCHES if n in os.environ}
    switches.update(options.key_switches())  # the variant without TMA, say
    if switches:  # absent when none is set: the keys of a plain run stay as they were
        entry["switches"] = switches
    text = json.dumps(entry, sort_keys=True)
    return Key(chip, hashlib.sha256(text.encode()).hexdigest())


# ---------------------------------------------------------------------------
# Entries


@dataclass(frozen=True)
class Entry:
    """A cached kernel: its PTX, its cubin (None if none was assembled), its contract's
    JSON text; `path` is the `.json` file, None for an entry kept in memory."""

    key: Key
    ptx: str
    cubin: bytes | None
    contract_json: str
    path: Path | None = None


def cache_root() -> Path:
    """`$PHOBOS_CACHE_DIR`, else `~/.cache/phobos`."""
    given = os.environ.get("PHOBOS_CACHE_DIR")
    if given:
        return Path(given).expanduser()
    return Path.home() / ".cache" / "phobos"


def cache_enabled() -> bool:
    """False when `PHOBOS_CACHE=0` (or `false`, `off`, `no`)."""
    return os.environ.get("PHOBOS_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


class KernelCache:
    """The kernel cache at `root` (None: `cache_root()`); `.get`, `.put`, `.clear`.

    A disabled or refused cache misses on every `get`, and `put` returns the entry
    without writing it.
    """

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else cache_root()
        self.enabled = cache_enabled()

    def path_for(self, key: Key) -> Path:
        """The entry's `.json` file (`.ptx` and `.cubin` sit beside it)."""
        return self.root / key.chip / f"{key.digest}.json"

    def autotune_dir(self, chip: str) -> Path | None:
        """The tuner's directory for `chip`, made if needed; None when refused."""
        directory = self.root / chip / AUTOTUNE
        return directory if self._usable(directory) else None

    # -- reading ---------------------------------------------------------------

    def get(self, key: Key) -> Entry | None:
        """The entry of `key`, or None: absent, torn, corrupt or off."""
        if not self.enabled or not self._usable(self.root / key.chip, create=False):
            return None
        return _read(key, self.path_for(key))

    # -- writing ---------------------------------------------------------------

    def put(self, key: Key, ptx: str, cubin: bytes | None, contract_json: str) -> Entry:
        """Store an entry (replacing a torn or corrupt one) and return it. A valid one
        already there is kept: another process wrote the same kernel first, though the
        new `cubin` is written when the old entry has none."""
        json.loads(contract_json)  # only JSON goes in; refuse anything else here
        entry = Entry(key, ptx, cubin, contract_json)
        directory = self.root / key.chip
        if not self.enabled or not self._usable(directory):
            return entry
        path = self.path_for(key)
        try:
            return self._put_locked(key, entry, path, directory, ptx, cubin, contract_json)
        except OSError as exc:  # a full disk, a read-only mount: compile in memory instead
            _warn_once(directory, f"it cannot be written ({exc.strerror or exc})", "")
            return entry

    def _put_locked(self, key, entry, path, directory, ptx, cubin, contract_json) -> Entry:
        with _locked(directory / LOCK):
            found = _read(key, path)
            if found is not None and (found.cubin is not None or cubin is None):
                return found
            ptx_bytes = ptx.encode()
            _write(path.with_suffix(".ptx"), ptx_bytes, "ptx")
            if cubin is not None:
                _write(path.with_suffix(".cubin"), cubin, "cubin")
            record = {
                "format": ENTRY_FORMAT,
                "version": ENTRY_VERSION,
                "key": str(key),
                "ptx_sha256": _sha(ptx_bytes),
                "cubin_sha256": None if cubin is None else _sha(cubin),
                "contract": json.loads(contract_json),
            }
            _write(path, (json.dumps(record, indent=1) + "\n").encode(), "json")
            _sync_dir(directory)
        return Entry(key, ptx, cubin, contract_json, path)

    def clear(self, chip: str | None = None) -> int:
        """Remove every entry (of `chip`, or of every chip) and the temporary files a
        killed writer left; the tuner's results stay. Returns how many entries went."""
        if chip is not None and not _is_chip(chip):
            raise ValueError(f"`{chip}` is not a chip name such as `sm_90`")
        if not self.root.is_dir() or not self._usable(self.root, create=False):
            return 0
        chips = [self.root / chip] if chip else [p for p in self.root.iterdir() if p.is_dir()]
        removed = 0
        for directory in chips:
            if not directory.is_dir():
                continue
            for path in directory.iterdir():
                if path.is_file() and path.suffix in (".json", ".ptx", ".cubin", ".tmp"):
                    removed += path.suffix == ".json"
                    path.unlink(missing_ok=True)
        return removed

    # -- the directory's owner and mode ------------------------------------------

    def _usable(self, directory: Path, create: bool = True) -> bool:
        """Whether the root and `directory` under it are the user's own and closed to
        others; each made (mode 0700) when missing and `create`, the root checked first."""
        for path in dict.fromkeys((self.root, directory)):
            try:
                st = path.stat()
            except FileNotFoundError:
                if not create:
                    return False
                try:
                    path.mkdir(mode=0o700, parents=True, exist_ok=True)
                    st = path.stat()
                except OSError as exc:
                    _warn_once(path, f"it cannot be created ({exc.strerror})", "")
                    return False
            except OSError:
                return False
            problem = _unsafe(st)
            if problem:
                fix = f"`chmod go-w {path}`" if "writable" in problem else ""
                _warn_once(path, problem, fix)
                return False
        return True


def _unsafe(st: os.stat_result) -> str:
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by group or others"
    return ""


def _warn_once(path: Path, problem: str, fix: str) -> None:
    with _WARN_LOCK:
        if str(path) in _WARNED:
            return
        _WARNED.add(str(path))
    fix = f"{fix}, or set" if fix else "set"
    warnings.warn(
        f"phobos: the kernel cache directory {path} is refused: {problem}; kernels are "
        f"compiled in memory instead\n  = help: {fix} PHOBOS_CACHE_DIR to a directory of your "
        "own (PHOBOS_CACHE=0 turns the cache off)",
        CacheWarning,
        stacklevel=4,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(key: Key, path: Path) -> Entry | None:
    """The entry at `path` if every file is there and matches its hash, else None."""
    try:
        record = json.loads(path.read_bytes())
        if not (
            isinstance(record, dict)
            and record.get("format") == ENTRY_FORMAT
            and record.get("version") == ENTRY_VERSION
            and record.get("key") == str(key)
            and isinstance(record.get("contract"), dict)
        ):
            return None
        ptx = path.with_suffix(".ptx").read_bytes()
        if _sha(ptx) != record.get("ptx_sha256"):
            return None
        cubin = None
        if record.get("cubin_sha256") is not None:
            cubin = path.with_suffix(".cubin").read_bytes()
            if _sha(cubin) != record["cubin_sha256"]:
                return None
        return Entry(key, ptx.decode(), cubin, json.dumps(record["contract"]), path)
    except (OSError, ValueError):
        return None


def _write(path: Path, data: bytes, stage: str) -> None:
    """Write `data` to `path` atomically: a temporary file beside it, synced, renamed."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if _BEFORE_RENAME is not None:
            _BEFORE_RENAME(stage, path)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _sync_dir(directory: Path) -> None:
    """Sync the directory, so the renames survive a crash of the machine."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on `path` for one writer at a time (released if it dies)."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: the hashes still catch a torn entry
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
