"""Tests for contextwm.retrieval.query_terms: stopwords, numbers, FTS5 unicode61 tokenisation."""

from __future__ import annotations

import sqlite3
import unicodedata

from contextwm.retrieval.query_terms import MAX_TERMS, query_terms
from hypothesis import given, settings
from hypothesis import strategies as st


def test_drops_stopwords_and_question_words() -> None:
    assert query_terms("What did we say about the kestrel?") == ["kestrel"]
    assert query_terms("Do you remember when I mentioned it?") == []


def test_keeps_numbers_and_rare_words() -> None:
    assert query_terms("Was it 7 or 2024 for zyxwv?") == ["7", "2024", "zyxwv"]


def test_drops_single_letters_but_not_single_digits() -> None:
    assert query_terms("x y 3 z") == ["3"]


def test_lower_cases_and_deduplicates_in_order() -> None:
    assert query_terms("Kestrel KESTREL falcon kestrel Falcon") == ["kestrel", "falcon"]


def test_splits_file_names_like_fts5() -> None:
    assert query_terms("kestrel_sync.py") == ["kestrel", "sync", "py"]
    assert query_terms("src/api-v2/Main.RS") == ["src", "api", "v2", "main", "rs"]


def test_keeps_non_ascii_words() -> None:
    assert query_terms("Café Über straße 東京") == ["café", "über", "straße", "東京"]


def test_caps_the_number_of_terms() -> None:
    text = " ".join(f"word{n}" for n in range(100))
    terms = query_terms(text)
    assert len(terms) == MAX_TERMS
    assert terms == [f"word{n}" for n in range(MAX_TERMS)]


# ---------------------------------------------------------------- against FTS5 itself

_DB = sqlite3.connect(":memory:")
_DB.execute("CREATE VIRTUAL TABLE f USING fts5(content, tokenize='unicode61 remove_diacritics 0')")
_DB.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")


def fts_tokens(text: str) -> list[str]:
    """Tokens exactly as SQLite's unicode61 tokenizer makes them, in order."""
    _DB.execute("DELETE FROM f")
    _DB.execute("INSERT INTO f (rowid, content) VALUES (1, ?)", (text,))
    return [r[0] for r in _DB.execute("SELECT term FROM v ORDER BY offset")]


ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éüßçøÅ"
    + " _-./:,;'\"()[]{}#@!?\n\t"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_tokens_match_fts5_unicode61(text: str) -> None:
    # query_terms = FTS5's tokens, minus stopwords and single letters, distinct, in order.
    terms = query_terms(text)
    fts = fts_tokens(text)
    expected: list[str] = []
    for token in fts:
        if token in expected or (len(token) < 2 and not token.isdigit()):
            continue
        if not query_terms(token):  # a stopword on its own
            continue
        expected.append(token)
    assert terms == expected[:MAX_TERMS]


def test_decomposed_accents_stay_in_the_word() -> None:
    # Text typed on macOS often arrives decomposed (e + U+0301). FTS5 keeps "résumé" one
    # token (and with remove_diacritics folds it to "resume"); query_terms splits it at the
    # combining mark into "re" and "sume", neither of which the index holds.
    nfd = unicodedata.normalize("NFD", "café résumé")
    assert fts_tokens(nfd) == [nfd.split()[0], nfd.split()[1]]
    assert [unicodedata.normalize("NFC", t) for t in query_terms(nfd)] == ["café", "résumé"]
