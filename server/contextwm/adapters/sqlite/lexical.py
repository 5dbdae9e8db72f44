"""The words of items: postings from the full-text index, read without ranking, for BM25."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.adapters.item_memo import Row
from contextwm.adapters.sqlite.codecs import filter_sql, fts_query
from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.store_rows import item_state
from contextwm.domain.items import ItemFilter, ItemState
from contextwm.ports.lexical_store import LexicalStore, TermPostings


class LexicalIndex(Database, LexicalStore):
    """The words of items: postings from the full-text index, read without ranking, for BM25."""

    def term_postings(self, key: int, terms: Sequence[str], limit: int) -> dict[str, TermPostings]:
        """For each term, the conversation's items that contain it: how many, and the row
        ids of the first limit of them."""
        db = self._reader()
        out: dict[str, TermPostings] = {}
        for term in terms:
            match = fts_query(term, key)
            # Read from the index alone, without an item lookup per matching row or a rank
            # to compute: a common term matches thousands of rows.
            rows = [
                r[0]
                for r in db.execute(
                    "SELECT rowid FROM items_fts WHERE items_fts MATCH ? LIMIT ?",
                    (match, limit + 1),
                )
            ]
            count = len(rows)
            if count > limit:
                found = db.execute(
                    "SELECT count(*) FROM items_fts WHERE items_fts MATCH ?", (match,)
                )
                count = found.fetchone()[0]
                rows = rows[:limit]
            out[term] = TermPostings(count, tuple(rows))
        return out

    def row_items(
        self,
        key: int,
        rows: Sequence[int],
        states: Sequence[ItemState],
        flt: ItemFilter | None = None,
    ) -> dict[int, tuple[int, int]]:
        """Of these rows (from term_postings), those in these states matching flt: their
        (seq, token count) by row id."""
        if flt is not None and not flt.empty:
            found = self._read_rows(key, rows, flt)
        else:
            found, missing = self._memo.rows(key, rows)
            if missing:
                generation = self._memo.generation
                read = self._read_rows(key, missing)
                self._memo.keep(key, generation, rows=read)
                found.update(read)
        wanted = set(states)
        return {
            row: (seq, tokens) for row, (seq, tokens, state) in found.items() if state in wanted
        }

    def _read_rows(
        self, key: int, rows: Sequence[int], flt: ItemFilter | None = None
    ) -> dict[int, Row]:
        db = self._reader()
        where, params = filter_sql(flt)
        out: dict[int, Row] = {}
        for start in range(0, len(rows), 500):
            chunk = [int(r) for r in rows[start : start + 500]]
            # The unary + keeps SQLite from scanning the conversation by its index instead of
            # looking the few rows up by id (10x slower at 10k items).
            found = db.execute(
                "SELECT i.id, i.seq, i.tokens, i.state FROM items i"
                f" WHERE i.id IN ({','.join('?' * len(chunk))}) AND +i.conv = ?{where}",
                (*chunk, key, *params),
            )
            out.update((r[0], (r[1], r[2], item_state(r[3]))) for r in found)
        return out
