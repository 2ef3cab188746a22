"""The `.ph` lexer: text to tokens, with a diagnostic for every bad character.

    >>> from phobos.source import SourceFile
    >>> tokens, diags = tokenize(SourceFile("k.ph", "x :+ 1.5e3 // done\\n"))
    >>> [t.kind for t in tokens]
    ['ident', ':+', 'float', 'newline', 'eof']
    >>> tokens[2].value, diags
    (1500.0, [])

Newlines are tokens: a statement ends at one (SPEC.md "Lexical"). The lexer emits
every newline; the parser decides where one is insignificant (inside `(`, `[` and
`<...>`, after a binary or assignment operator, before a block's `{`), so the
lexer needs no memory of brackets and an unclosed `(` cannot swallow the rest of
the file.

Lexing never stops at an error: a run of bad characters becomes one diagnostic and
one `error` token (which the parser skips without a second report); a malformed number becomes one token with the value of its valid part.
"""

from __future__ import annotations

from phobos.diagnostics import Diagnostic, Label
from phobos.source import SourceFile
from phobos.syntax.tokens import (
    EOF,
    ERROR,
    FLOAT,
    IDENT,
    INT,
    KEYWORDS,
    NEWLINE,
    OPERATORS,
    Token,
)

# Error codes of this module (explained in phobos/diagnostics/explain/).
E_BAD_CHAR = "E0001"
E_BAD_NUMBER = "E0002"


def _is_ident_start(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _is_ident_char(ch: str) -> bool:
    return _is_ident_start(ch) or _is_digit(ch)


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


class _Lexer:
    def __init__(self, source: SourceFile):
        self.source = source
        self.text = source.text
        self.pos = 0
        self.tokens: list[Token] = []
        self.diags: list[Diagnostic] = []

    def span(self, start: int, end: int):
        return self.source.span(self.source.byte_offset(start), self.source.byte_offset(end))

    def add(self, kind: str, start: int, value=None) -> None:
        text = self.text[start : self.pos]
        self.tokens.append(Token(kind, text, self.span(start, self.pos), value))

    def error(self, start: int, end: int, message: str, label: str, code: str, help=()) -> None:
        self.diags.append(
            Diagnostic.error(code, message, Label(self.span(start, end), label), help=help)
        )

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def run(self) -> tuple[list[Token], list[Diagnostic]]:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            start = self.pos
            if ch == "\n":
                self.pos += 1
                self.add(NEWLINE, start)
            elif ch in " \t\r\f\v":
                self.pos += 1
            elif ch == "/" and self.peek(1) == "/":
                while self.pos < len(text) and text[self.pos] != "\n":
                    self.pos += 1
            elif _is_ident_start(ch):
                while self.pos < len(text) and _is_ident_char(text[self.pos]):
                    self.pos += 1
                word = text[start : self.pos]
                self.add(word if word in KEYWORDS else IDENT, start)
            elif _is_digit(ch):
                self.number()
            elif ch == "." and _is_digit(self.peek(1)):
                self.leading_point()
            else:
                for op in OPERATORS:
                    if text.startswith(op, self.pos):
                        self.pos += len(op)
                        self.add(op, start)
                        break
                else:
                    self.bad_chars()
        end = self.source.span(len(self.source.data), len(self.source.data))
        self.tokens.append(Token(EOF, "", end))
        return self.tokens, self.diags

    def digits(self) -> None:
        while _is_digit(self.peek()):
            self.pos += 1

    def number(self) -> None:
        # int   = digit { digit }
        # float = digit { digit } ( "." { digit } [ exponent ] | exponent )
        start = self.pos
        self.digits()
        is_float = False
        if self.peek() == ".":
            is_float = True
            self.pos += 1
            self.digits()
        valid_end = self.pos
        if self.peek() in ("e", "E"):
            mark = self.pos
            self.pos += 1
            if self.peek() in ("+", "-"):
                self.pos += 1
            if _is_digit(self.peek()):
                self.digits()
                is_float = True
                valid_end = self.pos
            else:
                self.error(
                    mark,
                    self.pos,
                    "expected at least one digit in exponent",
                    "exponent without digits",
                    E_BAD_NUMBER,
                    help="write the exponent's digits, as in `1.0e30`",
                )
        if _is_ident_char(self.peek()):
            # `12abc`, `0x1f`, `1.5f`: a suffix is no part of a number in Phobos.
            mark = self.pos
            while _is_ident_char(self.peek()):
                self.pos += 1
            suffix = self.text[mark : self.pos]
            help = (
                "Phobos has decimal literals only"
                if suffix[:1] in ("x", "X", "b", "B", "o", "O") and self.text[start:mark] == "0"
                else "a number is digits only; convert with a call, as in `f16(1.5)`"
            )
            self.error(
                mark,
                self.pos,
                f"invalid suffix `{suffix}` for number literal",
                "invalid suffix",
                E_BAD_NUMBER,
                help=help,
            )
        literal = self.text[start:valid_end]
        if is_float:
            self.add(FLOAT, start, float(literal))
        else:
            self.add(INT, start, int(literal))

    def leading_point(self) -> None:
        # `.5`: not a Phobos float; read it as one so the parser sees a number.
        start = self.pos
        self.pos += 1
        self.digits()
        digits = self.text[start : self.pos]
        self.error(
            start,
            self.pos,
            "float literals need a digit before the `.`",
            "missing the leading digit",
            E_BAD_NUMBER,
            help=f"write `0{digits}`",
        )
        self.add(FLOAT, start, float("0" + digits))

    def bad_chars(self) -> None:
        # One diagnostic for a run of characters that start no token.
        start = self.pos
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if (
                ch in " \t\r\n\f\v"
                or _is_ident_start(ch)
                or _is_digit(ch)
                or any(self.text.startswith(op, self.pos) for op in OPERATORS)
            ):
                break
            self.pos += 1
        bad = self.text[start : self.pos]
        shown = bad if bad.isprintable() else bad.encode("unicode_escape").decode("ascii")
        if len(bad) == 1:
            message = f"unexpected character `{shown}`"
        else:
            message = f"unexpected characters `{shown}`"
        self.error(start, self.pos, message, "not part of any token", E_BAD_CHAR)
        self.add(ERROR, start)


def tokenize(source: SourceFile) -> tuple[list[Token], list[Diagnostic]]:
    """Split `source` into tokens, ending with one `eof` token.

    Returns the tokens and the diagnostics for bad characters and malformed numbers;
    both are complete whatever the input (lexing never raises).

        >>> toks, _ = tokenize(SourceFile("k.ph", "a <<= 2;"))
        >>> [(t.kind, t.text) for t in toks]
        [('ident', 'a'), ('<<=', '<<='), ('int', '2'), (';', ';'), ('eof', '')]
    """
    return _Lexer(source).run()
