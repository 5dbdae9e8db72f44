"""Erasure: the items a filter matches, a conversation's footprint, and the removal of items
with every row that holds their text, in one transaction; then the full-text index merged and
the write-ahead log truncated, so that the erased text leaves the files too."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from contextwm.adapters.history_rows import checkpoint_json, encode_payload, fact_json, seqs_json
from contextwm.adapters.session_rows import session_json
from contextwm.adapters.sqlite.codecs import filter_sql
from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.sqlite.events import write_events
from contextwm.adapters.store_rows import ITEM_COLUMNS, item_of
from contextwm.domain.history import Event
from contextwm.domain.items import Item, ItemFilter
from contextwm.ports.erasure_store import (
    ErasedRows,
    ErasureStore,
    ErasureWrite,
    Footprint,
    ItemText,
)

log = logging.getLogger(__name__)

_CHUNK = 500  # seqs per statement: SQLite caps the bound parameters
# Item texts cut into terms per call when a footprint counts postings.
_TERM_BATCH = 256


def _chunks(values: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), _CHUNK):
        yield [int(v) for v in values[start : start + _CHUNK]]


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


class ErasureTables(Database, ErasureStore):
    """Erasure of items and what holds their text."""

    _terms: Any = None  # an Fts5Terms, made on first use

    def _postings_of(self, texts: Sequence[str]) -> int:
        """The (item, term) postings of these texts: the full-text index keeps no count of
        its own that a contentless table answers, so they are cut into terms as it cut them."""
        if self._terms is None:
            # Imported here: fts5_terms takes the tokenizer from this package's schema.
            from contextwm.adapters.fts5_terms import Fts5Terms

            self._terms = Fts5Terms()
        return sum(
            len(terms)
            for start in range(0, len(texts), _TERM_BATCH)
            for terms in self._terms.terms(texts[start : start + _TERM_BATCH])
        )

    def erasable_items(self, key: int, flt: ItemFilter) -> list[Item]:
        where, params = filter_sql(flt)
        rows = (
            self._reader()
            .execute(
                f"SELECT {ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = ? AND i.kind != 'compaction'{where} ORDER BY i.seq",
                (key, *params),
            )
            .fetchall()
        )
        # The SQL filter is exact; matching again costs little and keeps it so.
        return [item for item in map(item_of, rows) if flt.matches(item)]

    def item_texts(self, key: int, after_seq: int, limit: int) -> list[ItemText]:
        rows = (
            self._reader()
            .execute(
                "SELECT seq, content, file_path FROM items WHERE conv = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (key, after_seq, limit),
            )
            .fetchall()
        )
        return [ItemText(*r) for r in rows]

    def footprint(self, key: int) -> Footprint:
        db = self._reader()

        def count(sql: str) -> int:
            return int(db.execute(sql, (key,)).fetchone()[0])

        items, tokens = db.execute(
            "SELECT count(*), coalesce(sum(tokens), 0) FROM items WHERE conv = ?", (key,)
        ).fetchone()
        postings = 0
        after = 0
        while page := self.item_texts(key, after, 4096):
            postings += self._postings_of([t.content for t in page])
            after = page[-1].seq
        return Footprint(
            items=items,
            tokens=tokens,
            vectors=count(
                "SELECT count(*) FROM vectors v JOIN items i ON i.id = v.item WHERE i.conv = ?"
            ),
            postings=postings,
            facts=count("SELECT count(*) FROM facts WHERE conv = ?"),
            compactions=count("SELECT count(*) FROM compactions WHERE conv = ?"),
            edits=count("SELECT count(*) FROM edits WHERE conv = ?"),
            events=count("SELECT count(*) FROM events WHERE conv = ?"),
            checkpoints=count("SELECT count(*) FROM checkpoints WHERE conv = ?"),
            sessions=count("SELECT count(*) FROM sessions WHERE conv = ?"),
        )

    def erase(self, key: int, write: ErasureWrite, events: Sequence[Event]) -> ErasedRows:
        tag = f"c{key}"
        removed = ErasedRows()
        with self._transaction(changes=key) as db:
            for chunk in _chunks(write.seqs):
                removed = _plus(removed, self._delete_items(db, key, tag, chunk))
            marker_vectors = 0
            for marker in write.markers:
                marker_vectors += _rewrite_marker(db, key, tag, marker.seq, marker.content)
                db.execute(
                    "UPDATE items SET content = ?, tokens = ? WHERE conv = ? AND seq = ?",
                    (marker.content, marker.tokens, key, marker.seq),
                )
            for c in write.compactions:
                db.execute(
                    "UPDATE compactions SET summary = ?, ledger = ?, facts = ?"
                    " WHERE conv = ? AND marker_seq = ?",
                    (
                        c.summary,
                        c.ledger,
                        json.dumps([fact_json(f) for f in c.facts]),
                        key,
                        c.marker_seq,
                    ),
                )
            db.executemany(
                "UPDATE edits SET seqs = ?, related_seq = ?, detail = ? WHERE conv = ? AND id = ?",
                [(seqs_json(e.seqs), e.related_seq, e.detail, key, e.id) for e in write.edits],
            )
            db.executemany(
                "DELETE FROM edits WHERE conv = ? AND id = ?",
                [(key, n) for n in write.dropped_edits],
            )
            db.executemany(
                "UPDATE events SET payload = ? WHERE conv = ? AND number = ?",
                [(json.dumps(encode_payload(e.payload)), key, e.number) for e in write.events],
            )
            db.executemany(
                "DELETE FROM events WHERE conv = ? AND number = ?",
                [(key, n) for n in write.dropped_events],
            )
            db.executemany(
                "UPDATE checkpoints SET snapshot = ? WHERE conv = ? AND name = ?",
                [(json.dumps(checkpoint_json(c)), key, c.name) for c in write.checkpoints],
            )
            if write.session is not None:
                db.execute(
                    "INSERT OR REPLACE INTO sessions (conv, doc) VALUES (?, ?)",
                    (key, json.dumps(session_json(write.session))),
                )
            db.execute(
                "UPDATE conversations SET removed_items = removed_items + ? WHERE id = ?",
                (removed.items, key),
            )
            write_events(db, key, events)
        return ErasedRows(
            items=removed.items,
            tokens=removed.tokens,
            vectors=removed.vectors + marker_vectors,
            postings=removed.postings,
            facts=removed.facts,
        )

    def _delete_items(
        self, db: sqlite3.Connection, key: int, tag: str, seqs: list[int]
    ) -> ErasedRows:
        rows = db.execute(
            "SELECT id, seq, content, tokens FROM items"
            f" WHERE conv = ? AND seq IN ({_marks(seqs)})",
            (key, *seqs),
        ).fetchall()
        if not rows:
            return ErasedRows()
        ids = [r[0] for r in rows]
        found = [r[1] for r in rows]
        # A contentless FTS5 table forgets a row only when told its original values.
        db.executemany(
            "INSERT INTO items_fts (items_fts, rowid, content, tag) VALUES ('delete', ?, ?, ?)",
            [(r[0], r[2], tag) for r in rows],
        )
        vectors = db.execute(f"DELETE FROM vectors WHERE item IN ({_marks(ids)})", ids).rowcount
        # Facts are keyed by seq, not by item: nothing cascades to them.
        facts = db.execute(
            f"DELETE FROM facts WHERE conv = ? AND seq IN ({_marks(found)})", (key, *found)
        ).rowcount
        db.execute(f"DELETE FROM items WHERE id IN ({_marks(ids)})", ids)
        return ErasedRows(
            items=len(rows),
            tokens=sum(r[3] for r in rows),
            vectors=vectors,
            postings=self._postings_of([r[2] for r in rows]),
            facts=facts,
        )

    def scrub(self) -> None:
        # A deleted row leaves delete markers in the full-text index that hold its terms, and
        # its earlier segments keep them too, until segments merge: "optimize" merges them
        # all into one (it rewrites the whole index: seconds on a large store). Then the
        # write-ahead log, whose earlier frames hold the pages as they were, is copied into
        # the file (where secure_delete has zeroed the freed cells) and cut to nothing.
        with self._transaction() as db:
            db.execute("INSERT INTO items_fts (items_fts) VALUES ('optimize')")
        with self._write_lock:
            busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            # A reader held an older snapshot past the busy timeout: the log keeps the frames
            # it had until a later checkpoint lets the writer start it over.
            log.warning("the write-ahead log could not be truncated after an erasure (busy)")


def _rewrite_marker(db: sqlite3.Connection, key: int, tag: str, seq: int, content: str) -> int:
    """Moves a marker's full-text row to its new text and drops its vector (embedded again
    from the new text); returns how many vectors went."""
    row = db.execute(
        "SELECT id, content FROM items WHERE conv = ? AND seq = ?", (key, seq)
    ).fetchone()
    if row is None:
        return 0
    db.execute(
        "INSERT INTO items_fts (items_fts, rowid, content, tag) VALUES ('delete', ?, ?, ?)",
        (row[0], row[1], tag),
    )
    db.execute(
        "INSERT INTO items_fts (rowid, content, tag) VALUES (?, ?, ?)", (row[0], content, tag)
    )
    return db.execute("DELETE FROM vectors WHERE item = ?", (row[0],)).rowcount


def _plus(a: ErasedRows, b: ErasedRows) -> ErasedRows:
    return ErasedRows(
        a.items + b.items,
        a.tokens + b.tokens,
        a.vectors + b.vectors,
        a.postings + b.postings,
        a.facts + b.facts,
    )
