"""The words of items: a postings table (conversation, term, item), its terms cut by FTS5's own
tokenizer, read without ranking for BM25, as the SQLite store reads its full-text index."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from contextwm.adapters.fts5_terms import Fts5Terms
from contextwm.adapters.postgres.codecs import filter_sql
from contextwm.adapters.postgres.database import Database
from contextwm.domain.items import ItemFilter, ItemState
from contextwm.ports.lexical_store import LexicalStore, TermPostings


@functools.cache
def _tokenizer() -> Fts5Terms:
    return Fts5Terms()


def item_terms(texts: Sequence[str]) -> list[frozenset[str]]:
    """Each text's distinct terms, as the postings table holds them."""
    return _tokenizer().terms(texts)


def lookup_terms(word: str) -> tuple[str, ...]:
    """The terms a word is looked up by (several where the tokenizer splits it)."""
    return _tokenizer().query_terms(word)


def matching_items(
    looked_up: Sequence[str], where: str, params: Sequence[object]
) -> tuple[str, tuple[object, ...]]:
    """A query for the items (postings meeting `where`) that hold every one of a word's terms
    (from lookup_terms, at least one), and its parameters."""
    if len(looked_up) == 1:
        return f"SELECT item FROM postings WHERE {where} AND term = %s", (*params, looked_up[0])
    # A word the tokenizer splits is found where all its terms are (SQLite's phrase query also
    # asks they be adjacent: rare, since query words are cut by the same rule).
    return (
        f"SELECT item FROM postings WHERE {where} AND term = ANY(%s)"
        " GROUP BY item HAVING count(*) = %s",
        (*params, list(looked_up), len(looked_up)),
    )


class LexicalTables(Database, LexicalStore):
    """The words of items, read from the postings table."""

    def term_postings(self, key: int, terms: Sequence[str], limit: int) -> dict[str, TermPostings]:
        out: dict[str, TermPostings] = {}
        with self._read() as db:
            for word in terms:
                looked_up = lookup_terms(word)
                if not looked_up:
                    out[word] = TermPostings(0, ())
                    continue
                matched, params = matching_items(looked_up, "conv = %s", (key,))
                rows = [
                    r[0]
                    for r in db.execute(f"{matched} ORDER BY item LIMIT %s", (*params, limit + 1))
                ]
                count = len(rows)
                if count > limit:
                    found = db.execute(f"SELECT count(*) FROM ({matched}) m", params)
                    count = found.fetchone()[0]  # type: ignore[index]
                    rows = rows[:limit]
                out[word] = TermPostings(count, tuple(rows))
        return out

    def row_items(
        self,
        key: int,
        rows: Sequence[int],
        states: Sequence[ItemState],
        flt: ItemFilter | None = None,
    ) -> dict[int, tuple[int, int]]:
        if not len(rows):
            return {}
        where, params = filter_sql(flt)
        with self._read() as db:
            found = db.execute(
                "SELECT i.id, i.seq, i.tokens FROM items i WHERE i.id = ANY(%s) AND i.conv = %s"
                f" AND i.state = ANY(%s){where}",
                ([int(r) for r in rows], key, [int(s) for s in states], *params),
            ).fetchall()
        return {r[0]: (r[1], r[2]) for r in found}
