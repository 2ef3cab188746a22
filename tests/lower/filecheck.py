"""Expectations written in a kernel's own source, checked against its emitted text.

A line of the kernel holding `// CHECK: text` (or `# CHECK: text` in Python) says that
`text` appears in the output after what the previous CHECK matched; `CHECK-NOT: text`
that `text` does not appear between the two CHECKs around it (or before the first, or
after the last); `CHECK-NEXT: text` that `text` is on the line right after the previous
match; `CHECK-COUNT-n: text` that the next `n` matches of `text` follow in order;
`PTX: text` and the like are the same for another output, named by `prefix`.
Matching is by substring, one output line at a time; `{{loop end}}` matches the
line closing a block (`}` alone).

    >>> filecheck("// CHECK: b\\n// CHECK-NOT: x\\n// CHECK: d", "a\\nb\\nc\\nd")
    >>> filecheck("// CHECK: b\\n// CHECK-NEXT: c", "a\\nb\\nc\\nd")
    >>> filecheck("// CHECK: b\\n// CHECK-NEXT: d", "a\\nb\\nc\\nd")
    Traceback (most recent call last):
    ...
    AssertionError: CHECK-NEXT: d (line 2) is not output line 3: c
    >>> filecheck("// CHECK: d\\n// CHECK: b", "a\\nb\\nc\\nd")
    Traceback (most recent call last):
    ...
    AssertionError: CHECK: b (line 2) not found after output line 4
"""

from __future__ import annotations

import re


def _directive(prefix: str):
    return re.compile(rf"(?://|#)\s*{prefix}(-NOT|-NEXT|-COUNT-(\d+))?:\s*(.*?)\s*$")


def directives(source: str, prefix: str = "CHECK") -> list[tuple[str, int, str, int]]:
    """(kind, count, text, source line) for each `prefix` line of `source`."""
    out = []
    pattern = _directive(prefix)
    for number, line in enumerate(source.splitlines(), 1):
        m = pattern.search(line)
        if m:
            kind = {"-NOT": "not", "-NEXT": "next"}.get(m.group(1), "check")
            out.append((kind, int(m.group(2) or 1), m.group(3), number))
    return out


def filecheck(source: str, output: str, prefix: str = "CHECK") -> None:
    """Fail with the first expectation of `source` that `output` does not meet; `prefix`
    names the lines read (`CHECK` for the lir, `PTX` for the PTX, say)."""
    lines = output.splitlines()
    found = directives(source, prefix)
    assert found, f"the source has no {prefix} lines"
    at = 0  # the output line after the last match
    pending: list[tuple[str, int]] = []  # CHECK-NOTs waiting for the next match
    for kind, count, text, number in found:
        if kind == "not":
            pending.append((text, number))
            continue
        if kind == "next":
            line = lines[at] if at < len(lines) else "(the end)"
            assert at > 0 and _meets(text, line), (
                f"{prefix}-NEXT: {text} (line {number}) is not output line {at + 1}: {line}"
            )
            pending = []  # a CHECK-NOT before a CHECK-NEXT has no line between to look at
            at += 1
            continue
        for _ in range(count):
            hit = next((i for i in range(at, len(lines)) if _meets(text, lines[i])), None)
            assert hit is not None, (
                f"CHECK: {text} (line {number}) not found after output line {at}"
            )
            _none_between(pending, lines, at, hit)
            pending = []
            at = hit + 1
    _none_between(pending, lines, at, len(lines))


def _meets(text: str, line: str) -> bool:
    if text == "{{loop end}}":
        return line.strip() == "}"
    return text in line


def _none_between(pending, lines, lo, hi) -> None:
    for text, number in pending:
        for i in range(lo, hi):
            assert text not in lines[i], (
                f"CHECK-NOT: {text} (line {number}) found at output line {i + 1}: {lines[i]}"
            )
