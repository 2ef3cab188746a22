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
compiled in memory. Phobos makes each directory it needs with mode 0700, whatever
the umask. The check is made on the opened directory, one level at a time from the
root, and the files are read through that descriptor: a directory renamed or a
symbolic link swapped after the check cannot make a read land in another tree.

Each file of an entry is checked the same way before a byte is read: opened without
following a symbolic link (and without blocking, were it a FIFO), it must be a
regular file, the user's, not writable by group or others, and within its size bound
(`MAX_BYTES`). Any other file, or a `.json` nested too deeply to parse, is one
warning naming it and a miss; the entry is then written anew.

The hashes in the `.json` show that an entry was written whole, not who wrote it.
The key names what was compiled (the source's cache key, or the PTX's hash when there
is none), and the cubin is trusted to be the assembly of the PTX beside it: nothing
assembles it again to check, so a cubin swapped in with its hash recomputed is
served. That is sound because only the user can do it: anyone who could write these
files could as well write the code the process loads, and the checks above keep
everyone else out.

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
import dataclasses
import errno
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

# The most bytes each file of an entry may hold; a larger one is refused unread, so a
# file grown without end cannot be read until memory runs out. The largest Phobos has
# written are a contract of 90 KiB (a kernel of many tensor maps), 1.4 MiB of PTX and
# 60 KiB of cubin (attention kernels): the bounds leave a hundredfold room and more,
# and a file at its bound still reads and hashes in about a second.
MAX_BYTES = {".json": 16 << 20, ".ptx": 128 << 20, ".cubin": 128 << 20}

# The mode of each directory Phobos makes: the user's alone (`mkstemp` makes each
# file so too, 0600 or less).
DIR_MODE = 0o700

# Called as hook(stage, final_path) after a file's bytes are written and synced and
# before they are renamed into place; tests use it to kill a writer mid-entry.
_BEFORE_RENAME: Callable[[str, Path], None] | None = None

_WARNED: set[str] = set()
_WARN_LOCK = threading.Lock()


class CacheWarning(UserWarning):
    """A cache directory or file is refused; kernels are compiled in memory."""


class RefusedFile(Exception):
    """A file not read, for `problem`: not a regular file, another user's, writable by
    others, or past its size bound."""

    def __init__(self, problem: str):
        self.problem = problem
        super().__init__(problem)


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
    "PHOBOS_PINGPONG",
    "PHOBOS_OVERLAP",
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
        """The entry of `key`, or None: absent, torn, corrupt, refused or off."""
        if not self.enabled:
            return None
        with self._opened(self.root / key.chip, create=False) as fd:
            return None if fd is None else _read(key, self.path_for(key), fd)

    # -- writing ---------------------------------------------------------------

    def put(self, key: Key, ptx: str, cubin: bytes | None, contract_json: str) -> Entry:
        """Store an entry (replacing a torn, corrupt or refused one) and return it. A
        valid one already there is kept: another process wrote the same kernel first,
        though the new `cubin` is written when the old entry has none."""
        contract = _parse(contract_json)  # only JSON goes in; refuse anything else here
        entry = Entry(key, ptx, cubin, contract_json)
        directory = self.root / key.chip
        if not self.enabled:
            return entry
        with self._opened(directory) as fd:
            if fd is None:
                return entry
            path = self.path_for(key)
            try:
                return self._put_locked(key, entry, path, fd, ptx, cubin, contract)
            except OSError as exc:  # a full disk, a read-only mount: compile in memory instead
                _warn_once(directory, f"it cannot be written ({exc.strerror or exc})", "")
                return entry

    def _put_locked(self, key, entry, path, fd, ptx, cubin, contract) -> Entry:
        with _locked(fd):
            found = _read(key, path, fd)
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
                "contract": contract,
            }
            _write(path, (json.dumps(record, indent=1) + "\n").encode(), "json")
            _sync_dir(fd)
        return dataclasses.replace(entry, path=path)

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

    @contextlib.contextmanager
    def _opened(self, directory: Path, create: bool = True):
        """A descriptor of `directory` (the root or one under it), or None when it is
        missing (and not `create`) or refused, with one warning. Each level from the
        root down is opened from the one above, checked on the opened descriptor to be
        the user's and closed to others, and made (mode 0700) when missing and `create`:
        a path swapped after the check is never followed. Closed on leaving."""
        fd = self._open(directory, create)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    def _usable(self, directory: Path, create: bool = True) -> bool:
        """Whether the root and every level down to `directory` are the user's own and
        closed to others; each made (mode 0700) when missing and `create`."""
        with self._opened(directory, create) as fd:
            return fd is not None

    def _open(self, directory: Path, create: bool) -> int | None:
        # The root is followed if it is a symbolic link (the user named it); what it
        # leads to is checked like every level under it.
        fd = _open_dir(None, self.root, self.root, create, parents=True)
        path = self.root
        for part in Path(directory).relative_to(self.root).parts:
            if fd is None:
                return None
            path, above = path / part, fd
            try:
                fd = _open_dir(above, part, path, create)
            finally:
                os.close(above)
        return fd


def _open_dir(
    dir_fd: int | None, name: str | Path, path: Path, create: bool, parents: bool = False
) -> int | None:
    """`name` (in `dir_fd`) opened as a directory and checked; made when missing and
    `create`; None when refused (with a warning naming `path`) or missing."""
    flags = os.O_RDONLY | _O_DIRECTORY | _O_NONBLOCK
    made = False
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            return None
        try:
            if parents:  # the levels above the root are the user's affair, as `mkdir -p`
                os.makedirs(Path(name).parent, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
                made = True
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            _warn_once(path, f"it cannot be created ({exc.strerror or exc})", "")
            return None
    except NotADirectoryError:
        _warn_once(path, "it is not a directory", "")
        return None
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if made and st.st_uid == _uid() and stat.S_IMODE(st.st_mode) != DIR_MODE:
            os.fchmod(fd, DIR_MODE)  # mkdir's mode passes through the umask: set it whole
            st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    problem = _unsafe(st)
    if problem:
        os.close(fd)
        fix = f"`chmod go-w {path}`" if "writable" in problem else ""
        _warn_once(path, problem, fix)
        return None
    return fd


_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _unsafe(st: os.stat_result) -> str:
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    return _not_own(st)


def _not_own(st: os.stat_result) -> str:
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "it is writable by group or others"
    return ""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_file(name: str | os.PathLike, limit: int, dir_fd: int | None = None) -> bytes:
    """The bytes of the file `name` (in the directory `dir_fd`), read only if it is a
    regular file of the user's, not writable by group or others, of at most `limit`
    bytes; `RefusedFile` saying why not. `OSError` when it cannot be opened
    (`FileNotFoundError` when absent).

    It is opened without following a symbolic link and without blocking, and checked
    on the opened descriptor, so a FIFO, a device or a file swapped in after a check
    is never read.

        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "f"
        >>> _ = path.write_bytes(b"bytes")
        >>> read_file(path, 16)
        b'bytes'
        >>> read_file(path, 4)
        Traceback (most recent call last):
        ...
        phobos.runtime.cache.RefusedFile: it holds 5 bytes, over the bound of 4
    """
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RefusedFile("it is a symbolic link") from None
        if exc.errno == errno.ENXIO:  # a socket: open() refuses it
            raise RefusedFile("it is not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
            raise RefusedFile(f"it is {kind}, not a regular file")
        problem = _not_own(st)
        if problem:
            raise RefusedFile(problem)
        if st.st_size > limit:
            raise RefusedFile(f"it holds {st.st_size} bytes, over the bound of {limit}")
        chunks, size = [], 0
        while size <= limit:  # read to the end, one past the bound: it may have grown
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise RefusedFile(f"it grew past the bound of {limit} bytes as it was read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _warn_once(path: Path, problem: str, fix: str, what: str = "directory") -> None:
    with _WARN_LOCK:
        if str(path) in _WARNED:
            return
        _WARNED.add(str(path))
    if what == "directory":
        fix = f"{fix}, or set" if fix else "set"
        text = (
            f"phobos: the kernel cache directory {path} is refused: {problem}; kernels are "
            f"compiled in memory instead\n  = help: {fix} PHOBOS_CACHE_DIR to a directory of "
            "your own (PHOBOS_CACHE=0 turns the cache off)"
        )
    else:
        text = (
            f"phobos: the kernel cache file {path} is refused: {problem}; the kernel is "
            "compiled again and its entry written anew"
        )
    warnings.warn(text, CacheWarning, stacklevel=4)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parse(contract_json: str):
    try:
        return json.loads(contract_json)
    except RecursionError:
        raise ValueError("the contract is nested too deeply to be a launch contract") from None


def _read(key: Key, path: Path, dir_fd: int) -> Entry | None:
    """The entry at `path` (the `.json`, in the directory `dir_fd`) if every file is
    there, safe to read and matches its hash, else None: one warning for a file refused."""
    name = path.name
    try:
        record = json.loads(read_file(name, MAX_BYTES[".json"], dir_fd))
        if not (
            isinstance(record, dict)
            and record.get("format") == ENTRY_FORMAT
            and record.get("version") == ENTRY_VERSION
            and record.get("key") == str(key)
            and isinstance(record.get("contract"), dict)
        ):
            return None
        name = path.with_suffix(".ptx").name
        ptx = read_file(name, MAX_BYTES[".ptx"], dir_fd)
        if _sha(ptx) != record.get("ptx_sha256"):
            return None
        cubin = None
        if record.get("cubin_sha256") is not None:
            name = path.with_suffix(".cubin").name
            cubin = read_file(name, MAX_BYTES[".cubin"], dir_fd)
            if _sha(cubin) != record["cubin_sha256"]:
                return None
        return Entry(key, ptx.decode(), cubin, json.dumps(record["contract"]), path)
    except RefusedFile as exc:
        _warn_once(path.with_name(name), exc.problem, "", "file")
    except RecursionError:
        _warn_once(path.with_name(name), "it is nested too deeply to be an entry", "", "file")
    except (OSError, ValueError):
        pass
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


def _sync_dir(directory: Path | int) -> None:
    """Sync the directory (a path, or a descriptor), so the renames survive a crash of
    the machine."""
    with contextlib.suppress(OSError):
        if isinstance(directory, int):
            os.fsync(directory)
            return
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _locked(dir_fd: int):
    """An exclusive lock on the directory's `LOCK` file for one writer at a time
    (released if it dies)."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: the hashes still catch a torn entry
        yield
        return
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK, 0o600, dir_fd=dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
