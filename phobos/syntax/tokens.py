"""The tokens of `.ph` text (SPEC.md "Grammar", "Lexical").

A token's `kind` is one of the class names below (`ident`, `int`, `float`,
`newline`, `eof`, `error`) or, for keywords and punctuation, the token's own text, so the
parser can write `tok.kind == "let"` or `tok.kind == ":+"`.

    >>> from phobos.source import SourceFile
    >>> src = SourceFile("k.ph", "x")
    >>> tok = Token(IDENT, "x", src.span(0, 1))
    >>> describe(tok)
    '`x`'
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.source import Span

IDENT = "ident"
INT = "int"
FLOAT = "float"
NEWLINE = "newline"
EOF = "eof"
# A run of characters that start no token; the lexer has reported it, so the parser
# skips it without a second diagnostic.
ERROR = "error"

# SPEC.md "Lexical": reserved words. `ctx` is a reserved *name*, not a keyword: the
# parser refuses it wherever a name is bound or used alone.
KEYWORDS = frozenset(
    "kernel fn let var if else for in while break continue return true false".split()
)

# Every operator and punctuation token, longest first so the lexer can take the
# first one that matches (`<<=` before `<<` before `<`).
OPERATORS: tuple[str, ...] = tuple(
    sorted(
        """
        <<= >>=
        :+ && || == != <= >= << >> += -= *= /= %= &= |= ^=
        + - * / % & | ^ ~ ! < > = ( ) [ ] { } , : ; . @
        """.split(),
        key=len,
        reverse=True,
    )
)

# Assignment operators of SPEC.md `assign_stmt`.
ASSIGN_OPS = frozenset("= += -= *= /= %= &= |= ^= <<= >>=".split())


@dataclass(frozen=True)
class Token:
    """One token: its kind, its text as written, its span, and a literal's value."""

    kind: str
    text: str
    span: Span
    value: int | float | None = None

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.span.start}..{self.span.end})"


def describe(token: Token) -> str:
    """How a diagnostic names a token: "`x`", "newline", "end of file"."""
    if token.kind == NEWLINE:
        return "newline"
    if token.kind == EOF:
        return "end of file"
    if token.kind in KEYWORDS:
        return f"keyword `{token.text}`"
    return f"`{token.text}`"
