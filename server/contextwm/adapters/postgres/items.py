"""Items: appended with their postings, evictions, facts, edits and events in one transaction;
read by seq, page, window or filter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from contextwm.adapters.history_rows import compaction_row
from contextwm.adapters.postgres.codecs import (
    filter_sql,
    optional_in,
    stored_item,
    text_in,
    text_out,
)
from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.events import write_events
from contextwm.adapters.postgres.history import write_edits, write_facts
from contextwm.adapters.postgres.lexical import item_terms
from contextwm.adapters.postgres.vectors import write_vectors
from contextwm.adapters.store_rows import ITEM_COLUMNS, metadata_json
from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
from contextwm.domain.items import Flag, Item, ItemFilter, ItemState
from contextwm.ports.item_store import ItemStore, ItemVectors

_ITEMS_OF = "FROM items i JOIN conversations c ON c.id = i.conv"
# The parameters of insert_items' columns, in their order.
_ITEM_FIELDS = (
    "seq",
    "role",
    "content",
    "ts",
    "tokens",
    "flags",
    "metadata",
    "path",
    "file_kind",
    "state",
    "idem",
    "kind",
    "whole",
)


def insert_items(
    db: psycopg.Connection,
    key: int,
    items: Sequence[Item],
    idempotency_keys: Sequence[str | None],
    terms: Sequence[frozenset[str]],
) -> None:
    """Inserts the items and their postings, in one statement (a round trip each costs more
    than either insert)."""
    columns: list[list[Any]] = [[] for _ in range(13)]
    for item, idem in zip(items, idempotency_keys, strict=True):
        row = (
            item.seq,
            item.role,
            text_in(item.content),
            item.timestamp,
            item.token_count,
            int(item.flags),
            metadata_json(item.metadata),
            optional_in(item.file.path) if item.file else None,
            item.file.kind if item.file else None,
            int(item.state),
            optional_in(idem),
            item.kind,
            None
            if item.file is None or item.file.whole_file is None
            else int(item.file.whole_file),
        )
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    posting_seqs = [item.seq for item, held in zip(items, terms, strict=True) for _ in held]
    posting_terms = [term for held in terms for term in held]
    db.execute(
        "WITH added AS (INSERT INTO items (conv, seq, role, content, ts, tokens, flags,"
        " metadata, file_path, file_kind, state, idem, kind, whole_file)"
        " SELECT %(key)s, * FROM unnest(%(seq)s::bigint[], %(role)s::text[],"
        " %(content)s::text[], %(ts)s::float8[], %(tokens)s::bigint[], %(flags)s::bigint[],"
        " %(metadata)s::text[], %(path)s::text[], %(file_kind)s::text[],"
        " %(state)s::smallint[], %(idem)s::text[], %(kind)s::text[], %(whole)s::smallint[])"
        " RETURNING seq, id)"
        " INSERT INTO postings (conv, term, item) SELECT %(key)s, p.term, added.id"
        " FROM unnest(%(posting_seqs)s::bigint[], %(posting_terms)s::text[]) AS p (seq, term)"
        " JOIN added ON added.seq = p.seq",
        {
            "key": key,
            **dict(zip(_ITEM_FIELDS, columns, strict=True)),
            "posting_seqs": posting_seqs,
            "posting_terms": posting_terms,
        },
    )


def archive_rows(db: psycopg.Connection, key: int, seqs: Sequence[int]) -> None:
    if seqs:
        db.execute(
            "UPDATE items SET state = %s WHERE conv = %s AND seq = ANY(%s)",
            (int(ItemState.ARCHIVED), key, list(seqs)),
        )


class ItemTables(Database, ItemStore):
    """Reads and writes of the items table."""

    def find_idempotent(self, key: int, idempotency_keys: Sequence[str]) -> dict[str, Item]:
        if not idempotency_keys:
            return {}
        wanted = {optional_in(k): k for k in idempotency_keys}
        with self._read() as db:
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS}, i.idem {_ITEMS_OF} WHERE i.conv = %s AND i.idem = ANY(%s)",
                (key, list(wanted)),
            ).fetchall()
        return {wanted[r[-1]]: stored_item(r[:-1]) for r in rows}

    def commit_append(
        self,
        key: int,
        items: Sequence[Item],
        idempotency_keys: Sequence[str | None],
        evicted: Sequence[int],
        token_limit: int,
        state: str,
        *,
        facts: Sequence[Fact] = (),
        edits: Sequence[ContextEdit] = (),
        events: Sequence[Event] = (),
        vectors: ItemVectors | None = None,
        appended_at: float | None = None,
    ) -> None:
        # Cut into terms before the transaction: it holds the conversation's rows meanwhile.
        terms = item_terms([i.content for i in items])
        with self._transaction() as db:
            # One round trip for the statements an append always makes, not one each: the
            # conversation's row is held meanwhile, so every round trip delays the next append.
            with db.pipeline():
                insert_items(db, key, items, idempotency_keys, terms)
                archive_rows(db, key, evicted)
                db.execute(
                    "UPDATE conversations SET last_seq = greatest(last_seq, %s), token_limit = %s,"
                    " state = %s, last_event = greatest(last_event, %s),"
                    " last_append_at = coalesce(%s, last_append_at) WHERE id = %s",
                    (
                        max((i.seq for i in items), default=0),
                        token_limit,
                        state,
                        events[-1].number if events else 0,
                        appended_at,
                        key,
                    ),
                )
                write_events(db, key, events, counter=False)
            # After it: COPY and RETURNING rows do not go through a pipeline.
            if vectors is not None:
                write_vectors(db, vectors.model, [(key, s) for s in vectors.seqs], vectors.vectors)
            write_facts(db, key, facts)
            write_edits(db, key, edits)

    def commit_compaction(
        self,
        key: int,
        marker: Item,
        record: CompactionRecord,
        edit: ContextEdit,
        evicted: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        terms = item_terms([marker.content])
        with self._transaction() as db:
            insert_items(db, key, [marker], [None], terms)
            db.execute(
                "UPDATE items SET state = %s WHERE conv = %s AND seq < %s AND state IN (%s, %s)",
                (
                    int(ItemState.COMPACTED),
                    key,
                    marker.seq,
                    int(ItemState.WINDOW),
                    int(ItemState.ARCHIVED),
                ),
            )
            # The marker itself, when it is larger than the whole window.
            archive_rows(db, key, evicted)
            row = list(compaction_row(key, record))
            row[3], row[9] = text_in(row[3]), text_in(row[9])  # summary, ledger
            db.execute(
                "INSERT INTO compactions (conv, number, at, summary, extractive, marker_seq,"
                " items_archived, tokens_before, tokens_after, ledger, facts)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                row,
            )
            write_edits(db, key, [edit])
            db.execute(
                "UPDATE conversations SET last_seq = greatest(last_seq, %s), active_start = %s,"
                " reported_tokens = NULL, reported_server_tokens = NULL WHERE id = %s",
                (marker.seq, marker.seq, key),
            )
            write_events(db, key, events)

    def set_flags(self, key: int, seq: int, flags: Flag) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE items SET flags = %s WHERE conv = %s AND seq = %s", (int(flags), key, seq)
            )

    def get_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]:
        if not len(seqs):
            return {}
        with self._read() as db:
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS} {_ITEMS_OF} WHERE i.conv = %s AND i.seq = ANY(%s)",
                (key, [int(s) for s in seqs]),
            ).fetchall()
        items = (stored_item(r) for r in rows)
        return {item.seq: item for item in items}

    def file_paths(self, key: int, limit: int) -> list[str]:
        with self._read() as db:
            rows = db.execute(
                "SELECT file_path FROM items WHERE conv = %s AND file_path IS NOT NULL"
                " AND state != %s GROUP BY file_path ORDER BY max(seq) DESC LIMIT %s",
                (key, int(ItemState.REVERTED), limit),
            ).fetchall()
        return [text_out(r[0]) for r in rows]

    def list_items(
        self, key: int, after_seq: int, limit: int, states: Sequence[ItemState]
    ) -> list[Item]:
        state_clause = " AND i.state = ANY(%s)" if states else ""
        params: list[Any] = [key, after_seq]
        if states:
            params.append([int(s) for s in states])
        with self._read() as db:
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS} {_ITEMS_OF} WHERE i.conv = %s AND i.seq > %s"
                f"{state_clause} ORDER BY i.seq LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [stored_item(r) for r in rows]

    def window_items(
        self, key: int, model: str
    ) -> list[tuple[Item, npt.NDArray[np.float32] | None]]:
        with self._read() as db:
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS}, v.vec {_ITEMS_OF}"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = %s"
                " WHERE i.conv = %s AND i.state = %s ORDER BY i.seq",
                (model, key, int(ItemState.WINDOW)),
            ).fetchall()
        return [
            (stored_item(r), np.frombuffer(r[13], dtype=np.float32) if r[13] is not None else None)
            for r in rows
        ]

    def filtered_seqs(
        self, key: int, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> npt.NDArray[np.int64]:
        where, params = filter_sql(flt)
        with self._read() as db:
            rows = db.execute(
                f"SELECT i.seq FROM items i WHERE i.conv = %s AND i.state = ANY(%s){where}"
                " ORDER BY i.seq DESC LIMIT %s",
                (key, [int(s) for s in states], *params, limit),
            ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
