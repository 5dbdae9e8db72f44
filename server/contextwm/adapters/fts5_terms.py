"""Text cut into terms exactly as the SQLite store's full-text index cuts it, for a store that
keeps postings itself (PostgreSQL): the same terms give the same BM25 inputs, and so the same
scores, by construction rather than by a second stemmer kept in step."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from contextwm.adapters.sqlite.schema import FTS_TOKENIZER


class Fts5Terms:
    """FTS5's own tokenizer, run in an in-memory table (about 26 us a conversation turn);
    thread-safe."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, tokenize='{FTS_TOKENIZER}')")
        # One row per term instance: (term, document, column, offset).
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()

    def terms(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """Each text's distinct terms, as the full-text index holds them."""
        out: list[set[str]] = [set() for _ in texts]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO t (rowid, content) VALUES (?, ?)",
                    [(n, text) for n, text in enumerate(texts, 1)],
                )
                for term, doc in self._db.execute("SELECT term, doc FROM v"):
                    out[doc - 1].add(term)
            finally:
                self._db.execute("ROLLBACK")  # the table stays empty between calls
        return [frozenset(s) for s in out]

    def query_terms(self, word: str) -> tuple[str, ...]:
        """The terms a MATCH for this word (quoted, as the SQLite store quotes it) looks up, in
        order: one for a word, several where the tokenizer splits it (a phrase)."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute("INSERT INTO t (rowid, content) VALUES (1, ?)", (word,))
                rows = self._db.execute("SELECT term FROM v ORDER BY offset").fetchall()
            finally:
                self._db.execute("ROLLBACK")
        return tuple(r[0] for r in rows)
