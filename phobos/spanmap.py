"""Span maps on disk: which bytes of a generated `.ph` came from which bytes of the `.py`.

The Python front end prints the Phobos its kernels spell; `phobos-compile kernel.py
--emit ph -o kernel.ph` writes `kernel.ph.map` beside it, the JSON form of a
`phobos.source.SourceMap`. `phobos-compile kernel.ph --origin kernel.ph.map` reads it
back and reports every diagnostic at the Python line.

The original file's name is stored relative to the map's folder, so the `.py`, the
`.ph` and the map can move together.

    >>> import os, tempfile
    >>> from phobos.source import SourceFile
    >>> folder = tempfile.mkdtemp()
    >>> py = os.path.join(folder, "k.py")
    >>> _ = open(py, "w").write("x = 1\\n")
    >>> original = SourceFile.read(py)
    >>> smap = build("k.ph", "let x = 1\\n", [(4, 5, original.span(0, 1))], original)
    >>> write(smap, os.path.join(folder, "k.ph.map"))
    >>> generated = SourceFile("k.ph", "let x = 1\\n")
    >>> back = load(os.path.join(folder, "k.ph.map"), generated)
    >>> back.lookup(generated.span(4, 5)).text
    'x'
"""

from __future__ import annotations

import json
import os

from phobos.source import SourceFile, SourceMap, Span

MAP_SUFFIX = ".map"
VERSION = 1


class SpanMapError(Exception):
    """A span map that cannot be used; the message says why, in diagnostic style."""


def map_path_for(output: str) -> str:
    """Where the span map of `output` goes: `kernel.ph` -> `kernel.ph.map`."""
    return output + MAP_SUFFIX


def build(
    generated_name: str,
    text: str,
    entries: list[tuple[int, int, Span]],
    original: SourceFile,
) -> SourceMap:
    """A `SourceMap` from the entries `printer.print_mapped` returns.

    Entries whose span lies in another file than `original` are left out: a map has
    one original.
    """
    smap = SourceMap(SourceFile(generated_name, text), original)
    for gen_start, gen_end, span in entries:
        if span is not None and span.source is original:
            smap.add(gen_start, gen_end, span)
    return smap


def to_text(smap: SourceMap, map_path: str) -> str:
    """The JSON text of `smap` as written at `map_path` (names relative to its folder)."""
    data = smap.to_json()
    folder = os.path.dirname(os.path.abspath(map_path))
    data["generated"] = _relative(smap.generated.name, folder)
    data["original"] = _relative(smap.original.name, folder)
    return json.dumps(data, indent=None, separators=(",", ":")) + "\n"


def write(smap: SourceMap, map_path: str) -> None:
    """Write `smap` to `map_path` (raises OSError if it cannot)."""
    with open(map_path, "w", encoding="utf-8") as handle:
        handle.write(to_text(smap, map_path))


def load(map_path: str, generated: SourceFile) -> SourceMap:
    """Read the map at `map_path` for the already-read `generated` file.

    The original file it names is read too (relative to the map's folder if the name
    is relative). Every problem is a `SpanMapError`, never another exception.
    """
    try:
        with open(map_path, encoding="utf-8") as handle:
            raw = handle.read()
    except OSError as exc:
        raise SpanMapError(_os_reason(exc)) from None
    except UnicodeDecodeError:
        raise SpanMapError("not valid UTF-8") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        raise SpanMapError("not valid JSON") from None
    if not isinstance(data, dict):
        raise SpanMapError("not a span map (expected a JSON object)")
    if data.get("version") != VERSION:
        raise SpanMapError(f"unsupported span map version {data.get('version')!r}")
    original_name = data.get("original")
    entries = data.get("entries")
    if not isinstance(original_name, str) or not isinstance(entries, list):
        raise SpanMapError("not a span map (missing `original` or `entries`)")

    original_path = original_name
    if not os.path.isabs(original_path):
        original_path = os.path.normpath(
            os.path.join(os.path.dirname(map_path) or ".", original_name)
        )
    try:
        original = SourceFile.read(original_path)
    except OSError as exc:
        raise SpanMapError(
            f"cannot read the original file `{original_path}`: {_os_reason(exc)}"
        ) from None

    smap = SourceMap(generated, original)
    gen_size = len(generated.data)
    orig_size = len(original.data)
    for entry in entries:
        if (
            not isinstance(entry, list)
            or len(entry) != 4
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in entry)
        ):
            raise SpanMapError("not a span map (an entry is not four integers)")
        gs, ge, os_, oe = entry
        if not (0 <= gs <= ge <= gen_size) or not (0 <= os_ <= oe <= orig_size):
            raise SpanMapError(
                f"it does not match `{generated.name}` and `{original.name}` "
                "(an entry lies outside them)"
            )
        smap.entries.append((gs, ge, os_, oe))
    return smap


def _relative(name: str, folder: str) -> str:
    try:
        return os.path.relpath(os.path.abspath(name), folder)
    except ValueError:  # another drive on Windows
        return os.path.abspath(name)


def _os_reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return reason[:1].lower() + reason[1:]
