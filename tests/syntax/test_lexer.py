"""The lexer: every token kind of SPEC.md "Grammar"/"Lexical", and its errors."""

from __future__ import annotations

import pytest
from syntax_helpers import source

from phobos.source import SourceFile
from phobos.syntax.lexer import tokenize
from phobos.syntax.tokens import KEYWORDS, OPERATORS, describe


def lex(text: str):
    tokens, diags = tokenize(SourceFile("t.ph", text))
    return tokens, diags


def kinds(text: str) -> list[str]:
    tokens, diags = lex(text)
    assert diags == [], [d.message for d in diags]
    assert tokens[-1].kind == "eof"
    return [t.kind for t in tokens[:-1]]


@pytest.mark.parametrize("word", sorted(KEYWORDS))
def test_every_keyword_is_its_own_kind(word):
    assert kinds(word) == [word]


@pytest.mark.parametrize(
    "word", ["ctx", "tensor", "tile", "range", "unroll", "from", "over", "f32", "_x1", "kernels"]
)
def test_contextual_words_are_identifiers(word):
    tokens, _ = lex(word)
    assert (tokens[0].kind, tokens[0].text) == ("ident", word)


def test_every_operator_lexes_alone():
    expected = set(
        "<<= >>= :+ && || == != <= >= << >> += -= *= /= %= &= |= ^= "
        "+ - * / % & | ^ ~ ! < > = ( ) [ ] { } , : ; . @".split()
    )
    assert set(OPERATORS) == expected
    for op in OPERATORS:
        assert kinds(op) == [op], op


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a<<=b", ["ident", "<<=", "ident"]),
        ("a>>=b", ["ident", ">>=", "ident"]),
        ("a<<b", ["ident", "<<", "ident"]),
        ("a<=b", ["ident", "<=", "ident"]),
        ("s:+n", ["ident", ":+", "ident"]),
        ("s: +n", ["ident", ":", "+", "ident"]),
        ("a&&b||c", ["ident", "&&", "ident", "||", "ident"]),
        ("a&b|c^d", ["ident", "&", "ident", "|", "ident", "^", "ident"]),
        ("x/=2", ["ident", "/=", "int"]),
        ("!x", ["!", "ident"]),
        ("a>>b", ["ident", ">>", "ident"]),
    ],
)
def test_longest_operator_wins(text, expected):
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "text, value",
    [("0", 0), ("42", 42), ("007", 7), ("4294967296", 4294967296), ("9" * 40, int("9" * 40))],
)
def test_int_literals(text, value):
    tokens, diags = lex(text)
    assert diags == []
    assert (tokens[0].kind, tokens[0].text, tokens[0].value) == ("int", text, value)


@pytest.mark.parametrize(
    "text, value",
    [
        ("1.", 1.0),
        ("1.5", 1.5),
        ("0.0", 0.0),
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("2.5e-4", 2.5e-4),
        ("1.0e+30", 1.0e30),
        ("1.e2", 100.0),
        ("3e0", 3.0),
    ],
)
def test_float_literals(text, value):
    tokens, diags = lex(text)
    assert diags == []
    assert len(tokens) == 2
    assert (tokens[0].kind, tokens[0].text, tokens[0].value) == ("float", text, value)


def test_minus_is_never_part_of_a_number():
    assert kinds("-1.0e30") == ["-", "float"]


def test_comments_run_to_the_end_of_the_line():
    assert kinds("a // b + c\nd") == ["ident", "newline", "ident"]
    assert kinds("// only a comment") == []
    assert kinds("a/b") == ["ident", "/", "ident"]


def test_newlines_are_tokens_and_other_space_is_not():
    assert kinds("a \t b\r\nc;\n\nd") == [
        "ident",
        "ident",
        "newline",
        "ident",
        ";",
        "newline",
        "newline",
        "ident",
    ]


def test_spans_are_byte_offsets():
    tokens, _ = lex("let é = 1")  # é is a bad character of two bytes
    let, bad, eq, one = tokens[:4]
    assert (let.span.start, let.span.end) == (0, 3)
    assert (bad.kind, bad.span.start, bad.span.end) == ("error", 4, 6)
    assert (eq.span.start, eq.span.end) == (7, 8)
    assert (one.span.start, one.span.end) == (9, 10)
    assert tokens[-1].span.start == tokens[-1].span.end == len("let é = 1".encode())


def test_token_text_matches_its_span():
    text = "kernel k(A: tensor<f32>[M]) {\n  A[0 :+ 4] <<= 1.5e3 // x\n}\n"
    tokens, _ = lex(text)
    for tok in tokens:
        assert tok.span.text == tok.text


def test_bad_characters_are_reported_and_lexing_goes_on():
    tokens, diags = lex("a $ b ?? c")
    assert [t.kind for t in tokens] == ["ident", "error", "ident", "error", "ident", "eof"]
    assert [d.code for d in diags] == ["E0001", "E0001"]
    assert diags[0].message == "unexpected character `$`"
    assert diags[1].message == "unexpected characters `??`"
    assert (diags[1].span.start, diags[1].span.end) == (6, 8)


@pytest.mark.parametrize(
    "text, message, span",
    [
        ("1.5f", "invalid suffix `f` for number literal", (3, 4)),
        ("0x1f", "invalid suffix `x1f` for number literal", (1, 4)),
        ("12abc", "invalid suffix `abc` for number literal", (2, 5)),
        ("1e", "expected at least one digit in exponent", (1, 2)),
        ("2.0e+", "expected at least one digit in exponent", (3, 5)),
        (".5", "float literals need a digit before the `.`", (0, 2)),
    ],
)
def test_malformed_numbers(text, message, span):
    tokens, diags = lex(text)
    assert [d.code for d in diags] == ["E0002"]
    assert diags[0].message == message
    assert (diags[0].span.start, diags[0].span.end) == span
    # One number token stands for the whole literal, so the parser sees a number.
    assert tokens[0].kind in ("int", "float")
    assert tokens[1].kind == "eof"


def test_leading_point_reads_as_the_float_it_meant():
    tokens, _ = lex(".25")
    assert tokens[0].value == 0.25


def test_describe_names_tokens_for_messages():
    tokens, _ = lex("x let\n")
    assert [describe(t) for t in tokens] == ["`x`", "keyword `let`", "newline", "end of file"]


def test_lexing_never_raises_on_arbitrary_text():
    import random

    rng = random.Random(7)
    alphabet = "ab1.e+-*/<>=:;@[](){}\n \t$é\x00\"'#"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        src = source(text)
        tokens, diags = tokenize(src)
        assert tokens[-1].kind == "eof"
        for d in diags:
            assert 0 <= d.span.start <= d.span.end <= len(src.data)
