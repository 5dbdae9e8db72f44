"""The embedded Store: one SQLite file in WAL mode, FTS5 for BM25, vectors as float32 blobs."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from contextwm.adapters.store_sqlite_history import HistoryTables, compaction_row, insert_rows
from contextwm.domain.categories import Category, CategoryBudget, ContributorType
from contextwm.domain.conversations import ConversationSettings, ScoringWeights
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
from contextwm.domain.items import FileRef, Flag, Item, ItemFilter, ItemState
from contextwm.domain.usage import Reported
from contextwm.ports.embedder import Vectors
from contextwm.ports.store import ConversationRecord, ItemCounts, PendingVector, TermPostings

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    token_limit INTEGER,
    state TEXT NOT NULL DEFAULT 'general',
    UNIQUE (namespace, conversation_id)
);

CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    ts REAL NOT NULL,
    tokens INTEGER NOT NULL,
    flags INTEGER NOT NULL,
    metadata TEXT,
    file_path TEXT,
    file_kind TEXT,
    state INTEGER NOT NULL,
    idem TEXT,
    UNIQUE (conv, seq)
);

CREATE UNIQUE INDEX IF NOT EXISTS items_idem ON items (conv, idem) WHERE idem IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_state ON items (conv, state, seq);
CREATE INDEX IF NOT EXISTS items_time ON items (conv, ts);
CREATE TABLE IF NOT EXISTS vectors (
    item INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
-- Contentless: the text lives in items once. The tag column ("c<conversation key>") lets
-- a MATCH narrow to one conversation inside the index instead of filtering afterwards.
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
    content, tag, content='', tokenize='porter unicode61 remove_diacritics 2'
);
"""

# Version 2 (the agent loop): columns added to version-1 files by ALTER TABLE, so one list
# serves new files and migrated ones alike.
_V2_COLUMNS = (
    ("items", "kind TEXT NOT NULL DEFAULT 'message'"),
    ("items", "whole_file INTEGER"),
    ("conversations", "active_start INTEGER NOT NULL DEFAULT 0"),
    ("conversations", "reported_tokens INTEGER"),
    ("conversations", "reported_server_tokens INTEGER"),
    ("conversations", "last_event INTEGER NOT NULL DEFAULT 0"),
)
_V2_TABLES = """
CREATE INDEX IF NOT EXISTS items_file ON items (conv, file_path) WHERE file_path IS NOT NULL;
CREATE TABLE IF NOT EXISTS facts (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS facts_conv ON facts (conv, seq);
CREATE TABLE IF NOT EXISTS edits (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    id INTEGER NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    seqs TEXT NOT NULL,
    related_seq INTEGER NOT NULL DEFAULT 0,
    tokens_saved INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '',
    undone_at REAL,
    PRIMARY KEY (conv, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at REAL NOT NULL,
    summary TEXT NOT NULL,
    extractive INTEGER NOT NULL,
    marker_seq INTEGER NOT NULL,
    items_archived INTEGER NOT NULL,
    tokens_before INTEGER NOT NULL,
    tokens_after INTEGER NOT NULL,
    ledger TEXT NOT NULL,
    facts TEXT NOT NULL,
    undone_at REAL
);
CREATE INDEX IF NOT EXISTS compactions_conv ON compactions (conv, marker_seq);
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    at REAL NOT NULL,
    snapshot TEXT NOT NULL,
    UNIQUE (conv, name)
);
CREATE TABLE IF NOT EXISTS events (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (conv, number)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_at ON events (at);
"""

# Every item's FTS row is written by this trigger, so that an item costs one INSERT statement
# rather than two: each sqlite3 call releases and re-takes the interpreter lock, which under
# concurrent appends means a switch to another thread and back. TEMP: it exists on the write
# connection only and is never stored in the file, which older versions can still open.
_FTS_TRIGGER = """
CREATE TEMP TRIGGER items_fts_insert AFTER INSERT ON main.items BEGIN
    INSERT INTO items_fts (rowid, content, tag) VALUES (new.id, new.content, 'c' || new.conv);
END
"""

_CONVERSATION_COLUMNS = (
    "id, namespace, conversation_id, settings, created_at, last_seq, token_limit, state,"
    " active_start, reported_tokens, reported_server_tokens, last_event"
)
_ITEM_COLUMNS = (
    "c.conversation_id, i.seq, i.role, i.content, i.ts, i.tokens, i.flags, i.metadata,"
    " i.file_path, i.file_kind, i.state, i.kind, i.whole_file"
)


def _settings_to_json(settings: ConversationSettings) -> str:
    data: dict[str, Any] = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.name not in ("weights", "category_budgets", "contributor_weights")
    }
    data["category_budgets"] = {
        str(c): [b.share, b.min_share, b.max_share] for c, b in settings.category_budgets.items()
    }
    data["contributor_weights"] = {str(t): w for t, w in settings.contributor_weights.items()}
    data["weights"] = {
        "recency": settings.weights.recency,
        "similarity": settings.weights.similarity,
        "importance": dict(settings.weights.importance),
        "role": dict(settings.weights.role),
    }
    return json.dumps(data, sort_keys=True)


def _settings_from_json(text: str) -> ConversationSettings:
    data = json.loads(text)
    w = data.pop("weights")
    weights = ScoringWeights(
        recency=w["recency"],
        similarity=w["similarity"],
        importance=MappingProxyType(w["importance"]),
        role=MappingProxyType(w["role"]),
    )
    # Rows written before budgets existed have neither field: the defaults apply.
    budgets = data.pop("category_budgets", None)
    if budgets is not None:
        data["category_budgets"] = MappingProxyType(
            {Category(c): CategoryBudget(*b) for c, b in budgets.items()}
        )
    contributors = data.pop("contributor_weights", None)
    if contributors is not None:
        data["contributor_weights"] = MappingProxyType(
            {ContributorType(t): w for t, w in contributors.items()}
        )
    known = {f.name for f in dataclasses.fields(ConversationSettings)}
    return ConversationSettings(weights=weights, **{k: v for k, v in data.items() if k in known})


def _item(row: Sequence[Any]) -> Item:
    return Item(
        conversation_id=row[0],
        seq=row[1],
        role=row[2],
        content=row[3],
        timestamp=row[4],
        token_count=row[5],
        flags=Flag(row[6]),
        metadata=MappingProxyType(json.loads(row[7])) if row[7] else MappingProxyType({}),
        file=FileRef(row[8], row[9], None if row[12] is None else bool(row[12]))
        if row[8] is not None
        else None,
        state=ItemState(row[10]),
        kind=row[11],
    )


def _record(row: Sequence[Any]) -> ConversationRecord:
    return ConversationRecord(
        key=row[0],
        namespace=row[1],
        conversation_id=row[2],
        settings=_settings_from_json(row[3]),
        created_at=row[4],
        last_seq=row[5],
        token_limit=row[6],
        state=row[7],
        active_start=row[8],
        reported=Reported(row[9], row[10]) if row[9] is not None else None,
        last_event=row[11],
    )


def _filter_sql(flt: ItemFilter | None) -> tuple[str, list[Any]]:
    """SQL conditions on items alias i for a filter: ' AND ...' and its parameters."""
    if flt is None or flt.empty:
        return "", []
    sql: list[str] = []
    params: list[Any] = []
    if flt.roles:
        sql.append(f"i.role IN ({','.join('?' * len(flt.roles))})")
        params.extend(sorted(flt.roles))
    if flt.flags:
        sql.append("(i.flags & ?) = ?")
        params.extend([int(flt.flags), int(flt.flags)])
    if flt.since is not None:
        sql.append("i.ts >= ?")
        params.append(flt.since)
    if flt.until is not None:
        sql.append("i.ts < ?")
        params.append(flt.until)
    for k, v in sorted(flt.metadata.items()):
        # json_each compares keys as plain strings: no JSON path quoting to get wrong.
        sql.append(
            "EXISTS (SELECT 1 FROM json_each(i.metadata) WHERE json_each.key = ?"
            " AND json_each.value = ?)"
        )
        params.extend([k, v])
    return " AND " + " AND ".join(sql), params


def _fts_query(term: str, key: int) -> str:
    # The term is quoted, so no user text is ever parsed as FTS5 syntax, and scoped to the
    # content column, so it never matches a conversation tag.
    quoted = '"' + term.replace("\x00", "").replace('"', '""') + '"'
    return f'tag:"c{key}" AND content:{quoted}'


class SqliteStore(HistoryTables):
    """A Store on one SQLite file.

    One write connection behind a lock (SQLite has one writer anyway); reads use a
    connection per thread, which WAL lets run beside the writer. synchronous=NORMAL in WAL
    mode survives a killed process (the point of the kill -9 test); "FULL" also survives
    power loss at the cost of an fsync per commit.
    """

    def __init__(self, path: Path, *, synchronous: str = "NORMAL") -> None:
        if synchronous not in {"NORMAL", "FULL"}:
            raise ValueError(f"synchronous must be NORMAL or FULL, got {synchronous!r}")
        self._path = path
        self._synchronous = synchronous
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._writer = self._connect()
        # Checkpoints copy the WAL into the database file and fsync it: done by maintain() on
        # a background thread, not by whichever append happens to cross the WAL size limit.
        self._writer.execute("PRAGMA wal_autocheckpoint=0")
        with self._write_lock:
            self._migrate()
            self._writer.execute(_FTS_TRIGGER)
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()

    def _migrate(self) -> None:
        """Creates a new file at SCHEMA_VERSION or brings an older one up to it, in one
        transaction (a crash half-way leaves the old version, which is migrated again)."""
        db = self._writer
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self._path} has schema version {version}, newer than this contextwm"
                    f" ({SCHEMA_VERSION}); upgrade contextwm"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            for table, column in _V2_COLUMNS:
                present = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
                if column.split()[0] not in present:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            for statement in _V2_TABLES.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
            self._writer.execute("COMMIT")

    def maintain(self) -> None:
        """Moves committed WAL pages into the database file without blocking writers."""
        self._reader().execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._writer.close()

    # ------------------------------------------------------------ conversations

    def create_conversation(
        self, namespace: str, conversation_id: str, settings: ConversationSettings, now: float
    ) -> ConversationRecord:
        with self._transaction() as db:
            try:
                cur = db.execute(
                    "INSERT INTO conversations (namespace, conversation_id, settings, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (namespace, conversation_id, _settings_to_json(settings), now),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(
                    f"conversation {conversation_id!r} already exists in namespace {namespace!r}"
                ) from None
            key = cur.lastrowid
        assert key is not None
        return ConversationRecord(
            key, namespace, conversation_id, settings, now, 0, None, "general"
        )

    def get_conversation(self, namespace: str, conversation_id: str) -> ConversationRecord | None:
        row = (
            self._reader()
            .execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = ? AND conversation_id = ?",
                (namespace, conversation_id),
            )
            .fetchone()
        )
        return _record(row) if row else None

    def conversation_record(self, key: int) -> ConversationRecord | None:
        row = (
            self._reader()
            .execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?",
                (key,),
            )
            .fetchone()
        )
        return _record(row) if row else None

    def list_conversations(
        self, namespace: str, after: str, limit: int
    ) -> list[ConversationRecord]:
        rows = (
            self._reader()
            .execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = ? AND conversation_id > ? ORDER BY conversation_id LIMIT ?",
                (namespace, after, limit),
            )
            .fetchall()
        )
        return [_record(r) for r in rows]

    def conversation_keys(self, namespace: str) -> list[tuple[int, str]]:
        rows = (
            self._reader()
            .execute(
                "SELECT id, conversation_id FROM conversations WHERE namespace = ?", (namespace,)
            )
            .fetchall()
        )
        return [(r[0], r[1]) for r in rows]

    def update_settings(self, key: int, settings: ConversationSettings, token_limit: int) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET settings = ?, token_limit = ? WHERE id = ?",
                (_settings_to_json(settings), token_limit, key),
            )

    def delete_conversation(self, key: int) -> int:
        with self._transaction() as db:
            rows = db.execute("SELECT id, content FROM items WHERE conv = ?", (key,)).fetchall()
            # A contentless FTS5 table forgets a row only when told its original values.
            db.executemany(
                "INSERT INTO items_fts (items_fts, rowid, content, tag) VALUES ('delete', ?, ?, ?)",
                [(r[0], r[1], f"c{key}") for r in rows],
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (key,))
        return len(rows)

    def counts(self, key: int, model: str) -> ItemCounts:
        db = self._reader()
        total, archived, reverted, tokens = db.execute(
            "SELECT count(*), coalesce(sum(state IN (?, ?)), 0), coalesce(sum(state = ?), 0),"
            " coalesce(sum(tokens), 0) FROM items WHERE conv = ?",
            (int(ItemState.ARCHIVED), int(ItemState.COMPACTED), int(ItemState.REVERTED), key),
        ).fetchone()
        embedded = db.execute(
            "SELECT count(*) FROM items i JOIN vectors v ON v.item = i.id"
            " WHERE i.conv = ? AND v.model = ?",
            (key, model),
        ).fetchone()[0]
        return ItemCounts(
            total=total,
            archived=archived,
            pending_vectors=total - embedded,
            reverted=reverted,
            tokens=tokens,
        )

    # ------------------------------------------------------------ items

    def find_idempotent(self, key: int, idempotency_keys: Sequence[str]) -> dict[str, Item]:
        found: dict[str, Item] = {}
        db = self._reader()
        for idem in idempotency_keys:
            row = db.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                " WHERE i.conv = ? AND i.idem = ?",
                (key, idem),
            ).fetchone()
            if row:
                found[idem] = _item(row)
        return found

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
    ) -> None:
        with self._transaction() as db:
            self._insert_items(db, key, items, idempotency_keys)
            self._archive(db, key, evicted)
            last_seq = max((i.seq for i in items), default=0)
            # One UPDATE of the conversation row per append, the event counter included.
            db.execute(
                "UPDATE conversations SET last_seq = max(last_seq, ?), token_limit = ?, state = ?,"
                " last_event = max(last_event, ?) WHERE id = ?",
                (last_seq, token_limit, state, events[-1].number if events else 0, key),
            )
            self._write_facts(db, key, facts)
            self._write_edits(db, key, edits)
            self._write_events(db, key, events, counter=False)

    @staticmethod
    def _insert_items(
        db: sqlite3.Connection,
        key: int,
        items: Sequence[Item],
        idempotency_keys: Sequence[str | None],
    ) -> None:
        """Inserts the items; their FTS rows come from _FTS_TRIGGER."""
        insert_rows(
            db,
            "items (conv, seq, role, content, ts, tokens, flags, metadata, file_path,"
            " file_kind, state, idem, kind, whole_file)",
            [
                (
                    key,
                    item.seq,
                    item.role,
                    item.content,
                    item.timestamp,
                    item.token_count,
                    int(item.flags),
                    json.dumps(dict(item.metadata)) if item.metadata else None,
                    item.file.path if item.file else None,
                    item.file.kind if item.file else None,
                    int(item.state),
                    idem,
                    item.kind,
                    None
                    if item.file is None or item.file.whole_file is None
                    else int(item.file.whole_file),
                )
                for item, idem in zip(items, idempotency_keys, strict=True)
            ],
        )

    @staticmethod
    def _archive(db: sqlite3.Connection, key: int, seqs: Sequence[int]) -> None:
        """Marks these items archived: one UPDATE per 500 rather than one per item (see
        insert_rows on why statements are counted)."""
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            db.execute(
                f"UPDATE items SET state = ? WHERE conv = ? AND seq IN ({marks})",
                (int(ItemState.ARCHIVED), key, *chunk),
            )

    def commit_compaction(
        self,
        key: int,
        marker: Item,
        record: CompactionRecord,
        edit: ContextEdit,
        evicted: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Adds the marker item, moves every earlier item in the window or archive behind
        the compaction, records it, and starts the active context at the marker."""
        with self._transaction() as db:
            self._insert_items(db, key, [marker], [None])
            db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq < ? AND state IN (?, ?)",
                (
                    int(ItemState.COMPACTED),
                    key,
                    marker.seq,
                    int(ItemState.WINDOW),
                    int(ItemState.ARCHIVED),
                ),
            )
            # The marker itself, when it is larger than the whole window.
            self._archive(db, key, evicted)
            db.execute(
                "INSERT INTO compactions (conv, number, at, summary, extractive, marker_seq,"
                " items_archived, tokens_before, tokens_after, ledger, facts)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                compaction_row(key, record),
            )
            self._write_edits(db, key, [edit])
            db.execute(
                "UPDATE conversations SET last_seq = max(last_seq, ?), active_start = ?,"
                " reported_tokens = NULL, reported_server_tokens = NULL WHERE id = ?",
                (marker.seq, marker.seq, key),
            )
            self._write_events(db, key, events)

    def set_flags(self, key: int, seq: int, flags: Flag) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE items SET flags = ? WHERE conv = ? AND seq = ?", (int(flags), key, seq)
            )

    def get_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]:
        if not seqs:
            return {}
        out: dict[int, Item] = {}
        db = self._reader()
        # Chunked: SQLite caps the number of bound parameters.
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = ? AND i.seq IN ({marks})",
                (key, *chunk),
            ).fetchall()
            for row in rows:
                item = _item(row)
                out[item.seq] = item
        return out

    def file_paths(self, key: int, limit: int) -> list[str]:
        rows = (
            self._reader()
            .execute(
                "SELECT file_path FROM items WHERE conv = ? AND file_path IS NOT NULL"
                " AND state != ? GROUP BY file_path ORDER BY MAX(seq) DESC LIMIT ?",
                (key, int(ItemState.REVERTED), limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def list_items(
        self, key: int, after_seq: int, limit: int, states: Sequence[ItemState]
    ) -> list[Item]:
        state_clause = ""
        params: list[Any] = [key, after_seq]
        if states:
            state_clause = f" AND i.state IN ({','.join('?' * len(states))})"
            params.extend(int(s) for s in states)
        params.append(limit)
        rows = (
            self._reader()
            .execute(
                f"SELECT {_ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = ? AND i.seq > ?{state_clause} ORDER BY i.seq LIMIT ?",
                params,
            )
            .fetchall()
        )
        return [_item(r) for r in rows]

    def window_items(
        self, key: int, model: str
    ) -> list[tuple[Item, npt.NDArray[np.float32] | None]]:
        rows = (
            self._reader()
            .execute(
                f"SELECT {_ITEM_COLUMNS}, v.vec FROM items i"
                " JOIN conversations c ON c.id = i.conv"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
                " WHERE i.conv = ? AND i.state = ? ORDER BY i.seq",
                (model, key, int(ItemState.WINDOW)),
            )
            .fetchall()
        )
        return [
            (_item(r), np.frombuffer(r[13], dtype=np.float32) if r[13] is not None else None)
            for r in rows
        ]

    # ------------------------------------------------------------ vectors

    def pending_vectors(self, model: str, limit: int, after_id: int = 0) -> list[PendingVector]:
        rows = (
            self._reader()
            .execute(
                "SELECT i.id, i.conv, i.seq, i.content FROM items i"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
                " WHERE i.id > ? AND v.item IS NULL ORDER BY i.id LIMIT ?",
                (model, after_id, limit),
            )
            .fetchall()
        )
        return [PendingVector(r[0], r[1], r[2], r[3]) for r in rows]

    def put_vectors(self, model: str, rows: Sequence[tuple[int, int]], vectors: Vectors) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (item, model, vec)"
                " SELECT id, ?, ? FROM items WHERE conv = ? AND seq = ?",
                [
                    (model, np.ascontiguousarray(vec, dtype=np.float32).tobytes(), key, seq)
                    for (key, seq), vec in zip(rows, vectors, strict=True)
                ],
            )

    def archived_vectors(self, key: int, model: str) -> tuple[npt.NDArray[np.int64], Vectors]:
        db = self._reader()
        joined = (
            " FROM items i JOIN vectors v ON v.item = i.id"
            " WHERE i.conv = ? AND i.state IN (?, ?) AND v.model = ?"
        )
        params = (key, int(ItemState.ARCHIVED), int(ItemState.COMPACTED), model)
        count, width = db.execute(f"SELECT count(*), max(length(v.vec)){joined}", params).fetchone()
        seqs = np.zeros(count, dtype=np.int64)
        matrix = np.zeros((count, (width or 0) // 4), dtype=np.float32)
        cursor = db.execute(f"SELECT i.seq, v.vec{joined} ORDER BY i.seq", params)
        # Filled in chunks: holding every row, then joining them, tripled the peak memory.
        row = 0
        while chunk := cursor.fetchmany(4096):
            for seq, blob in chunk:
                if row == count:  # rows committed since the count: the next load sees them
                    break
                seqs[row] = seq
                matrix[row] = np.frombuffer(blob, dtype=np.float32)
                row += 1
        return seqs[:row], matrix[:row]

    # ------------------------------------------------------------ lexical

    def term_postings(
        self, key: int, terms: Sequence[str], limit: int, counts: Mapping[str, int] | None = None
    ) -> dict[str, TermPostings]:
        """For each term, the conversation's items that contain it: how many (counts gives
        those the caller knows already), and the row ids of the first limit of them."""
        db = self._reader()
        out: dict[str, TermPostings] = {}
        for term in terms:
            match = _fts_query(term, key)
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
                if counts and term in counts:
                    count = counts[term]
                else:
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
        db = self._reader()
        where, params = _filter_sql(flt)
        out: dict[int, tuple[int, int]] = {}
        for start in range(0, len(rows), 500):
            chunk = [int(r) for r in rows[start : start + 500]]
            # The unary + keeps SQLite from scanning the conversation by its index instead of
            # looking the few rows up by id (10x slower at 10k items).
            found = db.execute(
                "SELECT i.id, i.seq, i.tokens FROM items i"
                f" WHERE i.id IN ({','.join('?' * len(chunk))}) AND +i.conv = ?"
                f" AND +i.state IN ({','.join('?' * len(states))}){where}",
                (*chunk, key, *(int(s) for s in states), *params),
            )
            out.update((r[0], (r[1], r[2])) for r in found)
        return out

    def filtered_seqs(
        self, key: int, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> npt.NDArray[np.int64]:
        """Seqs of the newest items (up to limit) in these states that match the filter."""
        where, params = _filter_sql(flt)
        rows = (
            self._reader()
            .execute(
                f"SELECT i.seq FROM items i WHERE i.conv = ?"
                f" AND i.state IN ({','.join('?' * len(states))}){where}"
                " ORDER BY i.seq DESC LIMIT ?",
                (key, *(int(s) for s in states), *params, limit),
            )
            .fetchall()
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_for(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors of these items (items without one are left out)."""
        out: dict[int, npt.NDArray[np.float32]] = {}
        db = self._reader()
        for start in range(0, len(seqs), 500):
            chunk = [int(s) for s in seqs[start : start + 500]]
            rows = db.execute(
                "SELECT i.seq, v.vec FROM items i JOIN vectors v ON v.item = i.id"
                f" WHERE i.conv = ? AND v.model = ? AND i.seq IN ({','.join('?' * len(chunk))})",
                (key, model, *chunk),
            ).fetchall()
            for seq, blob in rows:
                out[seq] = np.frombuffer(blob, dtype=np.float32)
        return out

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        """Seqs of archived (or compacted) items that have a vector: what the conversation's
        index must hold."""
        rows = (
            self._reader()
            .execute(
                "SELECT i.seq FROM items i JOIN vectors v ON v.item = i.id"
                " WHERE i.conv = ? AND i.state IN (?, ?) AND v.model = ? ORDER BY i.seq",
                (key, int(ItemState.ARCHIVED), int(ItemState.COMPACTED), model),
            )
            .fetchall()
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def clock_bounds(self, key: int) -> tuple[float | None, float | None]:
        """Timestamps of the conversation's oldest and newest items."""
        row = (
            self._reader()
            .execute("SELECT min(ts), max(ts) FROM items WHERE conv = ?", (key,))
            .fetchone()
        )
        return row[0], row[1]
