"""The parser's cursor over tokens: lookahead, newline handling, errors, recovery.

Recovery. An error is reported once, where it is found, then `Sync` unwinds to the
nearest recovery point: the statement (resumes after the next newline or `;` at the
same bracket depth, or before a `}`), the comma-separated list (resumes at the next
`,`), or the item (resumes at the next `kernel`, `fn` or `@`). Every loop consumes a
token or stops, and nesting is capped, so the parser neither loops forever nor
overflows the stack.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

from phobos.diagnostics import Diagnostic, Label
from phobos.source import SourceFile, Span
from phobos.syntax.tokens import EOF, ERROR, IDENT, NEWLINE, Token, describe

# Error codes the cursor itself reports (explained in phobos/diagnostics/explain/).
E_EXPECTED = "E0003"  # expected a token, found another
E_UNCLOSED = "E0005"  # a `(`, `[`, `<` or `{` never closed
E_NESTING = "E0017"  # nested past what the parser accepts

# Deeper nesting than any kernel needs; refused so the parser's recursion stays
# far below Python's limit.
MAX_DEPTH = 100

STMT_START = frozenset(("let", "var", "for", "while", "if", "break", "continue", "return"))
ITEM_START = frozenset(("kernel", "fn", "@"))
CLOSERS = {"(": ")", "[": "]", "{": "}", "<": ">"}


class Sync(Exception):
    """Unwinds to a recovery point; the diagnostic is already recorded."""


class Cursor:
    """Token access, error reporting and recovery: what every production leans on."""

    def __init__(self, source: SourceFile, tokens: list[Token]):
        self.source = source
        self.toks = tokens
        self.i = 0
        self.last: Token | None = None  # the last token consumed
        self.nl_off = 0  # > 0 while newlines are insignificant (inside brackets)
        self.depth = 0
        self.diags: list[Diagnostic] = []
        self.first_on_line = {
            id(tok) for j, tok in enumerate(tokens) if j == 0 or tokens[j - 1].kind == NEWLINE
        }
        self.eof_diag: int | None = None  # index of the "unclosed delimiter" at the end

    # -- tokens --------------------------------------------------------------

    def _index(self, k: int = 0) -> int:
        """Index of the k-th significant token from the cursor."""
        j = self.i
        while True:
            if self.nl_off:
                while self.toks[j].kind == NEWLINE:
                    j += 1
            if k == 0 or self.toks[j].kind == EOF:
                return j
            j += 1
            k -= 1

    def peek(self, k: int = 0) -> Token:
        return self.toks[self._index(k)]

    def at(self, *kinds: str) -> bool:
        return self.peek().kind in kinds

    def at_word(self, word: str) -> bool:
        tok = self.peek()
        return tok.kind == IDENT and tok.text == word

    def next(self) -> Token:
        j = self._index()
        tok = self.toks[j]
        if tok.kind != EOF:
            self.i = j + 1
            if tok.kind != NEWLINE:  # `last` ends the text of the code before the cursor
                self.last = tok
        return tok

    def eat(self, kind: str) -> Token | None:
        return self.next() if self.at(kind) else None

    def skip_newlines(self) -> None:
        while self.toks[self.i].kind == NEWLINE:
            self.i += 1

    @contextmanager
    def newlines_off(self):
        self.nl_off += 1
        try:
            yield
        finally:
            self.nl_off -= 1

    @contextmanager
    def nested(self):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                tok = self.peek()
                self.report(
                    E_NESTING,
                    "expression or block nested too deeply",
                    Label(tok.span, f"more than {MAX_DEPTH} levels deep here"),
                    help="split the expression with `let` bindings",
                )
                raise Sync
            yield
        finally:
            self.depth -= 1

    def span_from(self, start: Span) -> Span:
        end = self.last.span if self.last is not None else start
        return start.to(end) if end.end >= start.start else start

    # -- diagnostics ---------------------------------------------------------

    def report(self, code, message, primary, secondary=(), help=(), notes=()) -> None:
        self.diags.append(
            Diagnostic.error(code, message, primary, secondary=secondary, help=help, notes=notes)
        )

    def where_expected(self, tok: Token) -> Span:
        """Where a missing token belongs: at `tok`, or just after the previous token
        when `tok` is on a later line (the missing token ends the previous line)."""
        last = self.last
        if last is None:
            return tok.span
        line = self.source.line_index
        if tok.kind in (NEWLINE, EOF) or line(tok.span.start) != line(last.span.end):
            return self.source.span(last.span.end, last.span.end)
        return tok.span

    def expected(
        self,
        what: str,
        code: str = E_EXPECTED,
        opener: Token | None = None,
        help=(),
        notes=(),
    ) -> Sync:
        """Report "expected X, found Y" at the current token; returns `Sync` to raise."""
        tok = self.peek()
        if tok.kind != ERROR:  # the lexer has reported it
            secondary = [Label(opener.span, "unclosed delimiter")] if opener else []
            self.report(
                code,
                f"expected {what}, found {describe(tok)}",
                Label(self.where_expected(tok), f"expected {what}"),
                secondary,
                help,
                notes,
            )
        return Sync()

    def expect_close(self, opener: Token) -> Token:
        closer = CLOSERS[opener.kind]
        if self.at(closer):
            return self.next()
        raise self.expected(f"`{closer}`", E_UNCLOSED, opener)

    def hard_stop(self, tok: Token) -> bool:
        """A token no list or expression runs into: the list must have ended."""
        if tok.kind in (EOF, "{", "}", ";") or tok.kind in STMT_START or self.item_start(tok):
            return True
        if tok.kind == "else":
            return True
        line = self.source.line_index
        return self.last is not None and line(tok.span.start) != line(self.last.span.end)

    # -- recovery ------------------------------------------------------------

    def at_line_start(self, j: int) -> bool:
        return j == 0 or self.toks[j - 1].kind == NEWLINE

    def item_start(self, tok: Token) -> bool:
        """A token that starts the next item, so ends any statement or block before
        it: `kernel` or `fn` anywhere, `@` first on its line."""
        if tok.kind in ("kernel", "fn"):
            return True
        return tok.kind == "@" and id(tok) in self.first_on_line

    def sync_stmt(self) -> None:
        """Skip to the end of the broken statement: past a newline or `;` at bracket
        depth 0, or to a `}`, a statement keyword starting a line, or an item."""
        depth = 0
        while True:
            tok = self.toks[self.i]
            kind = tok.kind
            if kind == EOF or self.item_start(tok):
                return
            if depth == 0:
                if kind in (NEWLINE, ";"):
                    self.i += 1
                    return
                if kind == "}":
                    return
                if kind in STMT_START and self.at_line_start(self.i):
                    return
            if kind in ("(", "[", "{"):
                depth += 1
            elif kind in (")", "]", "}") and depth > 0:
                depth -= 1
            self.i += 1

    def sync_list(self, closer: str) -> bool:
        """Skip a broken list element. True when stopped at `,` or `closer`."""
        depth = 0
        while True:
            j = self._index()
            tok = self.toks[j]
            kind = tok.kind
            if kind == EOF or self.item_start(tok) or kind in STMT_START or kind in ("{", "}"):
                return False
            if depth == 0 and kind in (",", closer):
                return True
            if kind in ("(", "["):
                depth += 1
            elif kind in (")", "]") and depth > 0:
                depth -= 1
            self.i = j + 1

    def sync_item(self) -> None:
        """Skip to the next `kernel`, `fn` or `@`."""
        while True:
            kind = self.toks[self.i].kind
            if kind == EOF or kind in ITEM_START:
                return
            self.i += 1

    def skip_to_block(self) -> None:
        """After a broken `if`/`for`/`while` header: parse its block if it is on the
        same line (reporting the errors inside it), then drop the statement."""
        depth = 0
        while True:
            tok = self.toks[self.i]
            kind = tok.kind
            if kind == EOF or self.item_start(tok):
                return
            if depth == 0:
                if kind == "{":
                    break
                if kind in (NEWLINE, ";", "}"):
                    return
            if kind in ("(", "["):
                depth += 1
            elif kind in (")", "]") and depth > 0:
                depth -= 1
            self.i += 1
        try:
            self.block()
        except Sync:
            self.sync_stmt()

    def comma_list(self, element: Callable, opener: Token) -> list:
        """`element { "," element }` up to the closer of `opener`, which is consumed.

        A broken element is skipped to the next `,`. A list that runs into a token
        no list holds (a `{`, a statement keyword, a new line) is reported as
        unclosed and ends there, so the statement around it can still be finished.
        """
        closer = CLOSERS[opener.kind]
        items = []
        with self.newlines_off():
            if self.eat(closer):
                return items
            while True:
                try:
                    items.append(element())
                except Sync:
                    if not self.sync_list(closer):
                        return items
                if self.eat(","):
                    continue
                if self.eat(closer):
                    return items
                tok = self.peek()
                if self.hard_stop(tok):
                    self.expected(f"`,` or `{closer}`", E_UNCLOSED, opener)
                    return items
                self.expected(f"`,` or `{closer}`")
                if not self.sync_list(closer):
                    return items
                if self.eat(closer):
                    return items
                self.next()  # the `,`

    # -- items ---------------------------------------------------------------
