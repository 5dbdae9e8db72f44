"""Erasure: the items a filter matches, a conversation's footprint, and the removal of items
with every row that holds their text, in one transaction, announced to the other servers
sharing the database so that they drop what their memory and index files hold of them."""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextwm.adapters.history_rows import checkpoint_json, encode_payload, fact_json, seqs_json
from contextwm.adapters.postgres.codecs import (
    filter_sql,
    optional_out,
    stored_item,
    text_in,
    text_out,
)
from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.events import ERASURE_CHANNEL, write_events
from contextwm.adapters.postgres.lexical import item_terms
from contextwm.adapters.session_rows import session_json
from contextwm.adapters.store_rows import ITEM_COLUMNS
from contextwm.domain.history import Event
from contextwm.domain.items import Item, ItemFilter
from contextwm.ports.erasure_store import (
    ErasedRows,
    ErasureStore,
    ErasureWrite,
    Footprint,
    ItemText,
)


class ErasureTables(Database, ErasureStore):
    """Erasure of items and what holds their text."""

    def erasable_items(self, key: int, flt: ItemFilter) -> list[Item]:
        where, params = filter_sql(flt)
        with self._read() as db:
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = %s AND i.kind != 'compaction'{where} ORDER BY i.seq",
                (key, *params),
            ).fetchall()
        return [item for item in map(stored_item, rows) if flt.matches(item)]

    def item_texts(self, key: int, after_seq: int, limit: int) -> list[ItemText]:
        with self._read() as db:
            rows = db.execute(
                "SELECT seq, content, file_path FROM items WHERE conv = %s AND seq > %s"
                " ORDER BY seq LIMIT %s",
                (key, after_seq, limit),
            ).fetchall()
        return [ItemText(r[0], text_out(r[1]), optional_out(r[2])) for r in rows]

    def footprint(self, key: int) -> Footprint:
        with self._read() as db:
            row = db.execute(
                "SELECT (SELECT count(*) FROM items WHERE conv = %(k)s),"
                " (SELECT coalesce(sum(tokens), 0) FROM items WHERE conv = %(k)s),"
                " (SELECT count(*) FROM vectors WHERE conv = %(k)s),"
                " (SELECT count(*) FROM postings WHERE conv = %(k)s),"
                " (SELECT count(*) FROM facts WHERE conv = %(k)s),"
                " (SELECT count(*) FROM compactions WHERE conv = %(k)s),"
                " (SELECT count(*) FROM edits WHERE conv = %(k)s),"
                " (SELECT count(*) FROM events WHERE conv = %(k)s),"
                " (SELECT count(*) FROM checkpoints WHERE conv = %(k)s),"
                " (SELECT count(*) FROM sessions WHERE conv = %(k)s)",
                {"k": key},
            ).fetchone()
        assert row is not None
        return Footprint(*(int(v) for v in row))

    def erase(self, key: int, write: ErasureWrite, events: Sequence[Event]) -> ErasedRows:
        seqs = [int(s) for s in write.seqs]
        marker_terms = item_terms([m.content for m in write.markers])
        with self._transaction() as db:
            items = db.execute(
                "SELECT id, tokens FROM items WHERE conv = %s AND seq = ANY(%s)", (key, seqs)
            ).fetchall()
            ids = [r[0] for r in items]
            # Counted and deleted here rather than left to ON DELETE CASCADE, so the receipt
            # says how many went.
            postings = db.execute("DELETE FROM postings WHERE item = ANY(%s)", (ids,)).rowcount
            vectors = db.execute("DELETE FROM vectors WHERE item = ANY(%s)", (ids,)).rowcount
            # Facts are keyed by seq, not by item: nothing cascades to them.
            facts = db.execute(
                "DELETE FROM facts WHERE conv = %s AND seq = ANY(%s)", (key, seqs)
            ).rowcount
            db.execute("DELETE FROM items WHERE id = ANY(%s)", (ids,))
            for marker, terms in zip(write.markers, marker_terms, strict=True):
                found = db.execute(
                    "UPDATE items SET content = %s, tokens = %s WHERE conv = %s AND seq = %s"
                    " RETURNING id",
                    (text_in(marker.content), marker.tokens, key, marker.seq),
                ).fetchone()
                if found is None:
                    continue
                db.execute("DELETE FROM postings WHERE item = %s", (found[0],))
                db.execute(
                    "INSERT INTO postings (conv, term, item)"
                    " SELECT %s, t, %s FROM unnest(%s::text[]) t",
                    (key, found[0], sorted(terms)),
                )
                vectors += db.execute("DELETE FROM vectors WHERE item = %s", (found[0],)).rowcount
            for c in write.compactions:
                db.execute(
                    "UPDATE compactions SET summary = %s, ledger = %s, facts = %s"
                    " WHERE conv = %s AND marker_seq = %s",
                    (
                        text_in(c.summary),
                        text_in(c.ledger),
                        json.dumps([fact_json(f) for f in c.facts]),
                        key,
                        c.marker_seq,
                    ),
                )
            for e in write.edits:
                db.execute(
                    "UPDATE edits SET seqs = %s, related_seq = %s, detail = %s"
                    " WHERE conv = %s AND id = %s",
                    (seqs_json(e.seqs), e.related_seq, text_in(e.detail), key, e.id),
                )
            db.execute(
                "DELETE FROM edits WHERE conv = %s AND id = ANY(%s)",
                (key, list(write.dropped_edits)),
            )
            for event in write.events:
                db.execute(
                    "UPDATE events SET payload = %s WHERE conv = %s AND number = %s",
                    (json.dumps(encode_payload(event.payload)), key, event.number),
                )
            db.execute(
                "DELETE FROM events WHERE conv = %s AND number = ANY(%s)",
                (key, list(write.dropped_events)),
            )
            for checkpoint in write.checkpoints:
                db.execute(
                    "UPDATE checkpoints SET snapshot = %s WHERE conv = %s AND name = %s",
                    (json.dumps(checkpoint_json(checkpoint)), key, checkpoint.name),
                )
            if write.session is not None:
                db.execute(
                    "INSERT INTO sessions (conv, doc) VALUES (%s, %s)"
                    " ON CONFLICT (conv) DO UPDATE SET doc = excluded.doc",
                    (key, json.dumps(session_json(write.session))),
                )
            db.execute(
                "UPDATE conversations SET removed_items = removed_items + %s WHERE id = %s",
                (len(ids), key),
            )
            write_events(db, key, events)
            # Delivered when this commits: the other servers drop the conversation's index
            # file and their memory of its vectors (see feed.py).
            db.execute("SELECT pg_notify(%s, %s)", (ERASURE_CHANNEL, str(key)))
        return ErasedRows(
            items=len(ids),
            tokens=sum(int(r[1]) for r in items),
            vectors=vectors,
            postings=postings,
            facts=facts,
        )

    def scrub(self) -> None:
        # Deleted rows stay in their pages as dead tuples until VACUUM (autovacuum, by
        # default) reclaims them, and in the write-ahead log and base backups until those
        # rotate out; none of that is this server's to force (see docs/security.md).
        return None
