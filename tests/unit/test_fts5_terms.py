"""Fts5Terms cuts text as the SQLite store's full-text index does: for every word of a corpus,
the items holding its term are exactly the items a MATCH finds in a real SqliteStore."""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path
from types import MappingProxyType

from contextwm.adapters.fts5_terms import Fts5Terms
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, Item, ItemState

T0 = 1_700_000_000.0
EDGES = [
    "Résumé naïve CAFÉ œuvre Straße İstanbul Ångström",
    "kestrel_sync.py failed at 10:45 with ERR_CONN_RESET (errno 104)",
    "running runs ran runner; connection connected connecting connections",
    "日本語のテキスト と 中文 混合 text",
    "emoji 🙂 between words, CamelCaseWords and snake_case_words",
    "decomposed re\u0301sume\u0301 and composed résumé",
    "a I x 42 3.14 1e10 v2.0.1 #tag @user http://example.com/path?q=1",
]


CORPUS_WORDS = (
    "deploy deployment deploying port ports billing service services listen listening"
    " database databases migrate migration migrations kubernetes pods pod crash crashed"
    " crashing happiness happily generous generously relational conditional rational"
    " valency hesitancy digitizer conformabli radicalli differentli vileli analogousli"
    " vietnamization predication operator feudalism decisiveness hopefulness callousness"
    " formaliti sensitiviti sensibiliti triplicate formative formalize electriciti"
)


def corpus(n: int) -> list[str]:
    rng = random.Random(5)
    words = CORPUS_WORDS.split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 25))) for _ in range(n)]


def test_terms_find_exactly_what_match_finds(tmp_path: Path) -> None:
    texts = [*EDGES, *corpus(400)]
    store = SqliteStore(tmp_path / "store.db")
    try:
        key = store.create_conversation("ns", "c", ConversationSettings(), T0).key
        items = [
            Item(
                "c",
                n,
                "user",
                text,
                T0 + n,
                5,
                Flag.NONE,
                MappingProxyType({}),
                None,
                ItemState.WINDOW,
            )
            for n, text in enumerate(texts, 1)
        ]
        store.commit_append(key, items, [None] * len(items), [], 1000, "general")
        cutter = Fts5Terms()
        terms = cutter.terms(texts)
        words = sorted(
            {w for t in texts for w in re.findall(r"[^\W_]+", unicodedata.normalize("NFC", t))}
        )
        checked = 0
        for word in words:
            looked_up = cutter.query_terms(word)
            if len(looked_up) != 1:
                continue  # a phrase: no single term to compare
            postings = store.term_postings(key, [word], 10_000)[word]
            found = {
                seq for seq, _ in store.row_items(key, postings.rows, [ItemState.WINDOW]).values()
            }
            holding = {n for n, ts in enumerate(terms, 1) if looked_up[0] in ts}
            assert holding == found, word
            checked += 1
        assert checked >= 100
    finally:
        store.close()


def test_a_word_is_folded_stemmed_and_stripped_of_diacritics() -> None:
    cutter = Fts5Terms()
    assert cutter.query_terms("Running") == ("run",)
    assert cutter.query_terms("Résumé") == cutter.query_terms("resume") == ("resum",)
    assert cutter.query_terms("kestrel_sync") == ("kestrel", "sync")
    assert cutter.terms(["Connections connected", ""]) == [frozenset({"connect"}), frozenset()]
