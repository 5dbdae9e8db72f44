"""Namespace-wide reads for search: term postings, item lengths, states and vectors of the
items of every conversation of a namespace, each in one statement (lists of ids travel as
arrays, so no chunking)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from contextwm.adapters.postgres.codecs import filter_sql, stored_item
from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.lexical import lookup_terms, matching_items
from contextwm.adapters.store_rows import ITEM_COLUMNS
from contextwm.domain.items import Item, ItemFilter, ItemState
from contextwm.ports.lexical_store import TermPostings
from contextwm.ports.namespace_store import ItemKey, NamespaceStore, NamespaceVectors, PostingRow

_OF_NAMESPACE = "conv IN (SELECT id FROM conversations WHERE namespace = %s)"

# Rows of vectors fetched per round trip from the server-side cursor of namespace_vectors.
_VECTOR_ROWS = 4096


def _states(states: Sequence[ItemState]) -> list[int]:
    return [int(s) for s in states]


def _pairs(items: Sequence[ItemKey]) -> tuple[list[int], list[int]]:
    """Items as two arrays, conversation keys and seqs, for unnest."""
    return [int(k) for k, _ in items], [int(s) for _, s in items]


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
        """As the port says, with one difference from SQLite: a term in more than limit
        items is counted in the namespace alone, exactly (the postings_term index holds a
        term's postings by conversation, so counting the namespace's costs no more than
        counting the store's); SQLite counts it in the whole store."""
        out: dict[str, TermPostings] = {}
        with self._read() as db:
            for word in terms:
                looked_up = lookup_terms(word)
                if not looked_up:
                    out[word] = TermPostings(0, ())
                    continue
                matched, params = matching_items(looked_up, _OF_NAMESPACE, (namespace,))
                # In row order, as SQLite's full-text index gives them.
                rows = [
                    r[0]
                    for r in db.execute(f"{matched} ORDER BY item LIMIT %s", (*params, limit + 1))
                ]
                count = len(rows)
                if count > limit:
                    found = db.execute(f"SELECT count(*) FROM ({matched}) m", params).fetchone()
                    # Items removed since the rows were read leave the count at least this.
                    count = max(limit + 1, found[0] if found else 0)
                    rows = rows[:limit]
                out[word] = TermPostings(count, tuple(rows))
        return out

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        with self._read() as db:
            # Items come and go only with their conversation, a new last_seq (appends) or
            # more removed_items (removals): while those stand, so do the totals, and reading
            # them costs a look at the namespace's conversation rows instead of a sum over
            # its items. (Keys are never reused here, so a conversation deleted and another
            # made in its place always changes the mark.)
            mark = db.execute(
                "SELECT count(*), coalesce(sum(id), 0), coalesce(sum(created_at), 0),"
                " coalesce(sum(last_seq), 0), coalesce(sum(removed_items), 0)"
                " FROM conversations WHERE namespace = %s",
                (namespace,),
            ).fetchone()
            assert mark is not None
            known = self._totals.get(namespace)
            if known is not None and known[0] == tuple(mark):
                return known[1]
            row = db.execute(
                f"SELECT count(*), coalesce(sum(tokens), 0) FROM items WHERE {_OF_NAMESPACE}",
                (namespace,),
            ).fetchone()
        assert row is not None
        # Read after the mark (autocommit: each statement sees the latest commits): a change
        # in between makes the next call read them again.
        totals = (int(row[0]), int(row[1]))
        self._totals[namespace] = (tuple(mark), totals)
        return totals

    def posting_rows(
        self, rows: Sequence[int], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> dict[int, PostingRow]:
        if not len(rows):
            return {}
        where, params = filter_sql(flt)
        with self._read() as db:
            found = db.execute(
                "SELECT i.id, i.conv, i.seq, i.tokens FROM items i"
                f" WHERE i.id = ANY(%s) AND i.state = ANY(%s){where}",
                ([int(r) for r in rows], _states(states), *params),
            ).fetchall()
        return {r[0]: PostingRow(r[1], r[2], r[3]) for r in found}

    def present_items(
        self, items: Sequence[ItemKey], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> set[ItemKey]:
        if not len(items):
            return set()
        where, params = filter_sql(flt)
        with self._read() as db:
            found = db.execute(
                "SELECT i.conv, i.seq FROM unnest(%s::bigint[], %s::bigint[]) AS w (conv, seq)"
                " JOIN items i ON i.conv = w.conv AND i.seq = w.seq"
                f" WHERE i.state = ANY(%s){where}",
                (*_pairs(items), _states(states), *params),
            ).fetchall()
        return {(r[0], r[1]) for r in found}

    def namespace_filtered(
        self, namespace: str, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> list[ItemKey]:
        where, params = filter_sql(flt)
        with self._read() as db:
            # In the order SQLite's plan gives them without a time bound (by its items_state
            # index): a limit then keeps the same items in either store.
            rows = db.execute(
                f"SELECT i.conv, i.seq FROM items i WHERE i.{_OF_NAMESPACE}"
                f" AND i.state = ANY(%s){where} ORDER BY i.conv, i.state, i.seq LIMIT %s",
                (namespace, _states(states), *params, limit),
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def namespace_items(self, items: Sequence[ItemKey]) -> dict[ItemKey, Item]:
        if not len(items):
            return {}
        with self._read() as db:
            found = db.execute(
                f"SELECT i.conv, {ITEM_COLUMNS}"
                " FROM unnest(%s::bigint[], %s::bigint[]) AS w (conv, seq)"
                " JOIN items i ON i.conv = w.conv AND i.seq = w.seq"
                " JOIN conversations c ON c.id = i.conv",
                _pairs(items),
            ).fetchall()
        out: dict[ItemKey, Item] = {}
        for row in found:
            item = stored_item(row[1:])
            out[(row[0], item.seq)] = item
        return out

    def vector_marks(self, namespace: str) -> dict[int, int]:
        with self._read() as db:
            rows = db.execute(
                "SELECT id, vectors_written FROM conversations WHERE namespace = %s",
                (namespace,),
            ).fetchall()
        return {key: int(mark) for key, mark in rows}

    def vectors_since(
        self, namespace: str, model: str, marks: Mapping[int, int]
    ) -> NamespaceVectors:
        with self._read() as db:
            rows = db.execute(
                "SELECT v.conv, i.seq, v.vec FROM unnest(%s::bigint[], %s::bigint[])"
                " AS m (conv, after) JOIN vectors v ON v.conv = m.conv AND v.written > m.after"
                " JOIN items i ON i.id = v.item WHERE i.state != %s AND v.model = %s",
                (list(marks), list(marks.values()), int(ItemState.REVERTED), model),
            ).fetchall()
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return NamespaceVectors(keys, seqs, np.zeros((0, 0), dtype=np.float32))
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
        return NamespaceVectors(keys, seqs, matrix.reshape(len(rows), -1))

    def namespace_vectors(self, namespace: str, model: str) -> NamespaceVectors:
        joined = (
            " FROM items i JOIN vectors v ON v.item = i.id"
            f" WHERE i.{_OF_NAMESPACE} AND i.state != %s AND v.model = %s"
        )
        params = (namespace, int(ItemState.REVERTED), model)
        # One snapshot: the count sizes the arrays for exactly the rows that follow.
        with self._snapshot() as db:
            sized = db.execute(f"SELECT count(*), max(octet_length(v.vec)){joined}", params)
            count, width = sized.fetchone() or (0, None)
            keys = np.zeros(count, dtype=np.int64)
            seqs = np.zeros(count, dtype=np.int64)
            matrix = np.zeros((count, (width or 0) // 4), dtype=np.float32)
            # A server-side cursor, filled in chunks as archived_vectors does: holding every
            # row first triples the peak. In item order, as SQLite reads them (vectors_model).
            with db.cursor(name="namespace_vectors", binary=True) as cur:
                cur.execute(f"SELECT i.conv, i.seq, v.vec{joined} ORDER BY v.item", params)
                row = 0
                while chunk := cur.fetchmany(_VECTOR_ROWS):
                    for key, seq, blob in chunk:
                        keys[row], seqs[row] = key, seq
                        matrix[row] = np.frombuffer(blob, dtype=np.float32)
                        row += 1
        return NamespaceVectors(keys, seqs, matrix)
