"""Tokenizer and parser of the evaluator: precedence, references, literals."""

from __future__ import annotations

import pytest

from sheetgen.evaluate.parser import FormulaSyntaxError, parse
from sheetgen.evaluate.tokenizer import MAX_ROW, tokenize


def test_tokenizer_reports_relative_row_spans():
    text = 'IF($D6="ok",2*A6*$B$6,"")'
    tokens, spans = tokenize(text)
    assert [text[a:b] for a, b in spans] == ["6", "6"]  # $D6 and A6, not $B$6
    assert tokens[0].kind == "func" and tokens[0].value == "IF"
    assert [t.kind for t in tokens].count("ref") == 3


def test_tokenizer_quoted_sheet_and_ranges():
    tokens, _ = tokenize("SUM('GPU Specs'!$B$5:$G$13)+'It''s'!A1")
    ref = tokens[1].value
    assert (ref.sheet, ref.r1, ref.c1, ref.r2, ref.c2) == ("GPU Specs", 5, 2, 13, 7)
    assert tokens[4].value.sheet == "It's"


def test_function_name_with_digits_is_not_a_cell():
    tokens, spans = tokenize("LOG10(A1)")
    assert tokens[0].kind == "func" and tokens[0].value == "LOG10"
    assert spans == [(7, 8)]


def test_whole_column_reference():
    tokens, _ = tokenize("SUM(A:A)")
    ref = tokens[1].value
    assert (ref.r1, ref.r2, ref.c1, ref.c2) == (1, MAX_ROW, 1, 1)


def test_xlfn_prefix_is_stripped():
    tokens, _ = tokenize("_xlfn.XLOOKUP(1,A1:A2,B1:B2)")
    assert tokens[0].value == "XLOOKUP"


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=-2^2", ("bin", "^", ("neg", ("num", 2.0)), ("num", 2.0))),
        ("=1+2*3", ("bin", "+", ("num", 1.0), ("bin", "*", ("num", 2.0), ("num", 3.0)))),
        ("=1-2-3", ("bin", "-", ("bin", "-", ("num", 1.0), ("num", 2.0)), ("num", 3.0))),
        ("=2^3^2", ("bin", "^", ("bin", "^", ("num", 2.0), ("num", 3.0)), ("num", 2.0))),
        ("=50%", ("pct", ("num", 50.0))),
        ('="a"&1+2', ("bin", "&", ("str", "a"), ("bin", "+", ("num", 1.0), ("num", 2.0)))),
        ("=1<2=TRUE", ("bin", "=", ("bin", "<", ("num", 1.0), ("num", 2.0)), ("bool", True))),
    ],
)
def test_precedence(formula, expected):
    assert parse(formula, "S", 1) == expected


def test_references_become_relative_to_the_formula_row():
    node = parse("=A5+$B$5+C$5", "S", 6)
    assert node[2][2] == ("ref", "S", -1, False, 1)
    assert node[2][3] == ("ref", "S", 5, True, 2)
    assert node[3] == ("ref", "S", 5, True, 3)


def test_string_with_doubled_quotes_and_missing_argument():
    node = parse('=IF(A1,,"say ""hi""")', "S", 1)
    assert node[2][1] == ("missing",)
    assert node[2][2] == ("str", 'say "hi"')


@pytest.mark.parametrize("bad", ["=1+", "=(1", "=SUM(1 2)", "=1)", "={1,A1}", "={1,2;3}", "=@"])
def test_syntax_errors(bad):
    with pytest.raises(FormulaSyntaxError):
        parse(bad, "S", 1)


def test_tokenize_remembers_within_a_bound_and_hands_out_fresh_lists(monkeypatch):
    """A remembered text gives the same tokens in new lists (a caller's change stays its
    own); past TOKENIZED_CHARS characters the memory starts again, so it stays bounded."""
    from sheetgen.evaluate import tokenizer

    monkeypatch.setattr(tokenizer, "TOKENIZED_CHARS", 40)
    monkeypatch.setattr(tokenizer, "_kept", {})
    monkeypatch.setattr(tokenizer, "_kept_chars", 0)
    first, spans = tokenize("SUM(A1:A3)+B2")
    first.pop()
    spans.clear()
    again, spans_again = tokenize("SUM(A1:A3)+B2")
    assert [t.text for t in again] == ["SUM(", "A1:A3", ")", "+", "B2"]
    assert len(spans_again) == 3  # the relative rows 1, 3 and 2
    long = "+".join(["1"] * 15)  # 13 + 29 characters: over the bound, so forgotten first
    tokenize(long)
    assert list(tokenizer._kept) == [long]
    assert tokenizer._kept_chars == 29
