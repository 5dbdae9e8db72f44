"""Namespace-wide reads for search: term postings, item lengths, states and vectors of the
items of every conversation of a namespace, each in one statement (chunked where SQLite's
limit on bound parameters asks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from contextwm.adapters.sqlite.codecs import filter_sql
from contextwm.adapters.sqlite.database import MAX_PARAMETERS, Database
from contextwm.adapters.store_rows import ITEM_COLUMNS, item_of
from contextwm.domain.items import Item, ItemFilter, ItemState
from contextwm.ports.lexical_store import TermPostings
from contextwm.ports.namespace_store import ItemKey, NamespaceStore, NamespaceVectors, PostingRow

# Bound parameters left for the conditions beside a chunk of ids (states, filter).
_SPARE = 64


def _content_query(term: str) -> str:
    # Quoted, so no user text is parsed as FTS5 syntax; the content column only, so it never
    # matches a conversation tag.
    return 'content:"' + term.replace("\x00", "").replace('"', '""') + '"'


class NamespaceTables(Database, NamespaceStore):
    """Namespace-wide reads for search."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # namespace -> (what its conversations looked like, its totals then); see
        # namespace_totals.
        self._totals: dict[str, tuple[tuple[Any, ...], tuple[int, int]]] = {}

    def namespace_postings(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> dict[str, TermPostings]:
        db = self._reader()
        out: dict[str, TermPostings] = {}
        for term in terms:
            match = _content_query(term)
            rows = [
                r[0]
                for r in db.execute(
                    "SELECT f.rowid FROM items_fts f JOIN items i ON i.id = f.rowid"
                    " WHERE items_fts MATCH ?"
                    " AND i.conv IN (SELECT id FROM conversations WHERE namespace = ?) LIMIT ?",
                    (match, namespace, limit + 1),
                )
            ]
            count = len(rows)
            if count > limit:
                # Counted in the full-text index alone: a common term matches thousands of
                # rows, and looking each up to see its namespace would cost the most.
                found = db.execute(
                    "SELECT count(*) FROM items_fts WHERE items_fts MATCH ?", (match,)
                )
                count = max(limit + 1, found.fetchone()[0])
                rows = rows[:limit]
            out[term] = TermPostings(count, tuple(rows))
        return out

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        db = self._reader()
        # Items come and go only with their conversation, a new last_seq (appends) or more
        # removed_items (removals): while those stand, so do the totals. Reading them takes
        # 0.25 ms for 1,000 conversations, summing 100k items' lengths 9 ms. (Only a
        # conversation deleted and another made in its place with the same key, creation
        # time and last_seq would go unseen.)
        mark = tuple(
            db.execute(
                "SELECT count(*), total(id), total(created_at), total(last_seq),"
                " total(removed_items) FROM conversations WHERE namespace = ?",
                (namespace,),
            ).fetchone()
        )
        known = self._totals.get(namespace)
        if known is not None and known[0] == mark:
            return known[1]
        row = db.execute(
            "SELECT count(*), coalesce(sum(tokens), 0) FROM items"
            " WHERE conv IN (SELECT id FROM conversations WHERE namespace = ?)",
            (namespace,),
        ).fetchone()
        # Read after the mark: a change in between makes the next call read them again.
        totals = (int(row[0]), int(row[1]))
        self._totals[namespace] = (mark, totals)
        return totals

    def posting_rows(
        self, rows: Sequence[int], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> dict[int, PostingRow]:
        db = self._reader()
        where, params = filter_sql(flt)
        out: dict[int, PostingRow] = {}
        step = MAX_PARAMETERS - _SPARE - len(params)
        for start in range(0, len(rows), step):
            chunk = [int(r) for r in rows[start : start + step]]
            found = db.execute(
                "SELECT i.id, i.conv, i.seq, i.tokens FROM items i"
                f" WHERE i.id IN ({','.join('?' * len(chunk))})"
                f" AND +i.state IN ({','.join('?' * len(states))}){where}",
                (*chunk, *(int(s) for s in states), *params),
            )
            out.update((r[0], PostingRow(r[1], r[2], r[3])) for r in found)
        return out

    def present_items(
        self, items: Sequence[ItemKey], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> set[ItemKey]:
        db = self._reader()
        where, params = filter_sql(flt)
        out: set[ItemKey] = set()
        step = (MAX_PARAMETERS - _SPARE - len(params)) // 2
        for start in range(0, len(items), step):
            chunk = items[start : start + step]
            # Joined rather than (conv, seq) IN (VALUES ...), which SQLite answers by a scan.
            found = db.execute(
                f"WITH w(conv, seq) AS (VALUES {','.join(['(?, ?)'] * len(chunk))})"
                " SELECT i.conv, i.seq FROM w JOIN items i ON i.conv = w.conv AND i.seq = w.seq"
                f" WHERE +i.state IN ({','.join('?' * len(states))}){where}",
                (*(int(v) for pair in chunk for v in pair), *(int(s) for s in states), *params),
            )
            out.update((r[0], r[1]) for r in found)
        return out

    def namespace_filtered(
        self, namespace: str, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> list[ItemKey]:
        where, params = filter_sql(flt)
        rows = (
            self._reader()
            .execute(
                "SELECT i.conv, i.seq FROM items i"
                " WHERE i.conv IN (SELECT id FROM conversations WHERE namespace = ?)"
                f" AND i.state IN ({','.join('?' * len(states))}){where} LIMIT ?",
                (namespace, *(int(s) for s in states), *params, limit),
            )
            .fetchall()
        )
        return [(r[0], r[1]) for r in rows]

    def namespace_items(self, items: Sequence[ItemKey]) -> dict[ItemKey, Item]:
        db = self._reader()
        out: dict[ItemKey, Item] = {}
        step = (MAX_PARAMETERS - _SPARE) // 2
        for start in range(0, len(items), step):
            chunk = items[start : start + step]
            found = db.execute(
                f"WITH w(conv, seq) AS (VALUES {','.join(['(?, ?)'] * len(chunk))})"
                f" SELECT i.conv, {ITEM_COLUMNS} FROM w"
                " JOIN items i ON i.conv = w.conv AND i.seq = w.seq"
                " JOIN conversations c ON c.id = i.conv",
                [int(v) for pair in chunk for v in pair],
            )
            for row in found:
                item = item_of(row[1:])
                out[(row[0], item.seq)] = item
        return out

    def vector_marks(self, namespace: str) -> dict[int, int]:
        return {}  # one server per file: its writers tell the namespace index themselves

    def vectors_since(
        self, namespace: str, model: str, marks: Mapping[int, int]
    ) -> NamespaceVectors:
        empty = np.zeros(0, dtype=np.int64)
        return NamespaceVectors(empty, empty, np.zeros((0, 0), dtype=np.float32))

    def namespace_vectors(self, namespace: str, model: str) -> NamespaceVectors:
        db = self._reader()
        joined = (
            " FROM items i JOIN vectors v ON v.item = i.id"
            " WHERE i.conv IN (SELECT id FROM conversations WHERE namespace = ?)"
            " AND i.state != ? AND v.model = ?"
        )
        params = (namespace, int(ItemState.REVERTED), model)
        count, width = db.execute(f"SELECT count(*), max(length(v.vec)){joined}", params).fetchone()
        keys = np.zeros(count, dtype=np.int64)
        seqs = np.zeros(count, dtype=np.int64)
        matrix = np.zeros((count, (width or 0) // 4), dtype=np.float32)
        cursor = db.execute(f"SELECT i.conv, i.seq, v.vec{joined}", params)
        # Filled in chunks, as archived_vectors does: holding every row first triples the peak.
        row = 0
        while chunk := cursor.fetchmany(4096):
            for key, seq, blob in chunk:
                if row == count:  # rows committed since the count: their writers add them
                    break
                keys[row], seqs[row] = key, seq
                matrix[row] = np.frombuffer(blob, dtype=np.float32)
                row += 1
        return NamespaceVectors(keys[:row], seqs[:row], matrix[:row])
