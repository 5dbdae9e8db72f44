"""What only the SQLite store has: its files (full-text rows, the WAL), migrations of older
files, durability on reopening, keys reused after a delete."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.sqlite.schema import SCHEMA_VERSION
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import FileRef
from contextwm.ports.retention_store import RemovedRows
from stores import MODEL, T0, A, add, make_item, new_conversation, search, unit_vectors


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(path)
    yield s
    s.close()


# ---------------------------------------------------------------- delete


def raw_count(path: Path, sql: str, *args: object) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(sql, args).fetchone()[0])
    finally:
        db.close()


def test_delete_removes_items_vectors_and_fts_rows(store: SqliteStore, path: Path) -> None:
    k1, k2 = new_conversation(store, "gone"), new_conversation(store, "kept")
    add(store, k1, [make_item(s, f"walrus {s}", conversation_id="gone") for s in range(1, 5)])
    add(store, k2, [make_item(1, "walrus kept", conversation_id="kept")])
    store.put_vectors(MODEL, [(k1, s) for s in range(1, 5)] + [(k2, 1)], unit_vectors(5))
    assert store.delete_conversation(k1) == 4
    assert store.get_conversation("default", "gone") is None
    assert store.get_items(k1, [1, 2, 3, 4]) == {}
    assert raw_count(path, "SELECT count(*) FROM items WHERE conv = ?", k1) == 0
    assert raw_count(path, "SELECT count(*) FROM vectors") == 1
    # The FTS index forgot the rows: only the kept conversation's row still matches.
    assert raw_count(path, "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'walrus'") == 1
    assert search(store, k1, "walrus") == []
    assert search(store, k2, "walrus") == [1]


def test_remove_items_tells_the_full_text_table_the_rows_it_forgets(
    store: SqliteStore, path: Path
) -> None:
    # A contentless FTS5 table forgets a row only when told its original values: else the row
    # keeps counting in its sizes and its words (the roles' side: test_store_retention.py).
    key = new_conversation(store)
    add(store, key, [make_item(s, f"walrus {s}") for s in range(1, 6)])
    add(store, key, [], evicted=[1, 2, 3])
    assert store.remove_items(key, [2, 3, 4]) == RemovedRows(count=2, tokens=6)
    assert raw_count(path, "SELECT count(*) FROM items_fts") == 3
    assert raw_count(path, "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'walrus'") == 3
    assert raw_count(path, "SELECT count(*) FROM items_fts WHERE items_fts MATCH '2 OR 3'") == 0


def test_namespace_totals_see_removals_and_a_successor_under_a_reused_key(
    store: SqliteStore,
) -> None:
    # The rest of the totals' changes: test_store_namespace. Removals are the retention
    # role's, which PostgreSQL does not serve yet; reused keys are SQLite's alone.
    a = new_conversation(store, "a")
    add(store, a, [make_item(s, tokens=s, conversation_id="a") for s in range(1, 5)])
    add(store, a, [], evicted=[1, 2])
    assert store.namespace_totals("default") == (4, 10)
    store.remove_items(a, [2])
    assert store.namespace_totals("default") == (3, 8)
    b = new_conversation(store, "b")
    add(store, b, [make_item(1, tokens=100, conversation_id="b")])
    assert store.namespace_totals("default") == (4, 108)
    store.delete_conversation(b)
    # The successor gets the deleted conversation's key and item count: other tokens.
    c = store.create_conversation("default", "c", ConversationSettings(), T0 + 1).key
    add(store, c, [make_item(1, tokens=1, conversation_id="c")])
    assert c == b
    assert store.namespace_totals("default") == (4, 9)


# ---------------------------------------------------------------- durability


def test_data_survives_reopening(path: Path) -> None:
    store = SqliteStore(path, synchronous="FULL")
    cs = ConversationSettings(window_max_tokens=77)
    key = store.create_conversation("ns", "c1", cs, T0).key
    items = [make_item(s, f"durable {s}", metadata={"m": str(s)}) for s in range(1, 5)]
    add(store, key, items, idems=["i1", None, None, None])
    add(store, key, [make_item(5, "durable 5")], evicted=[2])
    vecs = unit_vectors(5)
    store.put_vectors(MODEL, [(key, s) for s in range(1, 6)], vecs)
    store.close()

    again = SqliteStore(path)
    try:
        rec = again.get_conversation("ns", "c1")
        assert rec is not None and rec.key == key and rec.settings == cs and rec.last_seq == 5
        listed = again.list_items(key, 0, 10, ())
        expected = [*items, make_item(5, "durable 5")]
        expected[1] = dataclasses.replace(expected[1], state=A)
        assert listed == expected
        assert again.archived_ids(key, MODEL).tolist() == [2]
        assert sorted(search(again, key, "durable")) == [1, 2, 3, 4, 5]
        assert again.find_idempotent(key, ["i1"])["i1"].seq == 1
        assert again.pending_vectors(MODEL, 10) == []
    finally:
        again.close()


def test_bad_synchronous_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SqliteStore(tmp_path / "x.db", synchronous="OFF")


# ---------------------------------------------------------------- schema


def test_a_version_1_file_is_migrated_in_place(path: Path) -> None:
    store = SqliteStore(path)
    key = new_conversation(store)
    add(store, key, [make_item(1, "before the upgrade", file=FileRef("a.py", "read"))])
    store.close()
    # Turn the file back into what version 1 wrote: no agent-loop columns or tables.
    db = sqlite3.connect(path)
    for table in ("facts", "edits", "compactions", "checkpoints", "events"):
        db.execute(f"DROP TABLE {table}")
    db.execute("DROP INDEX items_file")
    for table, column in (
        ("items", "kind"),
        ("items", "whole_file"),
        ("conversations", "active_start"),
        ("conversations", "reported_tokens"),
        ("conversations", "reported_server_tokens"),
        ("conversations", "last_event"),
    ):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        (item,) = store.list_items(key, 0, 10, [])
        assert (item.content, item.kind, item.file) == (
            "before the upgrade",
            "message",
            FileRef("a.py", "read"),
        )
        record = store.conversation_record(key)
        assert record is not None and (record.active_start, record.last_event) == (0, 0)
        assert store.whole_file_copies(key) == {"a.py": 1}
        assert store.checkpoints(key) == [] and store.edits(key) == []
    finally:
        store.close()
    version = sqlite3.connect(path).execute("SELECT value FROM meta").fetchone()[0]
    assert version == str(SCHEMA_VERSION)


def test_a_version_2_file_is_migrated_and_its_activity_read_from_its_items(path: Path) -> None:
    store = SqliteStore(path)
    key = new_conversation(store)
    add(store, key, [make_item(1, "before retention", ts=T0 + 500)])
    store.close()
    # What version 2 wrote: no retention columns.
    db = sqlite3.connect(path)
    for column in ("last_append_at", "removed_items"):
        db.execute(f"ALTER TABLE conversations DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        # No append time recorded: the newest of creation and the newest item stands in.
        assert store.last_active(key) == T0 + 500
        store.commit_append(key, [make_item(2)], [None], [], 8000, "general", appended_at=T0 + 9)
        assert store.last_active(key) == T0 + 9  # items may carry older or newer timestamps
        store.commit_append(key, [], [], [1], 8000, "general")  # an eviction is no append
        assert store.last_active(key) == T0 + 9
    finally:
        store.close()


def test_a_version_3_file_learns_each_conversations_model_from_its_vectors(path: Path) -> None:
    old_model, new_model = "old-model", "new-model"
    store = SqliteStore(path)
    keys = {}
    for cid, n in (("mixed", 3), ("old", 2), ("empty", 2)):
        keys[cid] = new_conversation(store, cid)
        add(store, keys[cid], [make_item(s, conversation_id=cid) for s in range(1, n + 1)])
    # An older server re-embedding silently; the old conversation's first item waits.
    store.put_vectors(new_model, [(keys["mixed"], 1)], unit_vectors(1))
    store.put_vectors(old_model, [(keys["mixed"], 2), (keys["mixed"], 3)], unit_vectors(2))
    store.put_vectors(old_model, [(keys["old"], 2)], unit_vectors(1))
    store.close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE conversations DROP COLUMN embed_model")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        # That of its oldest embedded item.
        models = {cid: store.conversation_record(key) for cid, key in keys.items()}
        assert {cid: r.embed_model if r else "?" for cid, r in models.items()} == {
            "mixed": new_model,
            "old": old_model,
            "empty": None,
        }
    finally:
        store.close()
    assert raw_count(path, "SELECT value FROM meta") == SCHEMA_VERSION == 5


def test_a_version_4_file_gains_the_key_table_and_keeps_its_conversations(path: Path) -> None:
    store = SqliteStore(path)
    key = new_conversation(store)
    add(store, key, [make_item(1, "before keys")])
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE api_keys")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        assert store.list_keys() == []
        (item,) = store.list_items(key, 0, 10, [])
        assert item.content == "before keys"
    finally:
        store.close()
    assert raw_count(path, "SELECT value FROM meta") == 5


def test_a_newer_file_is_refused(path: Path) -> None:
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(RuntimeError, match="schema version 99, newer"):
        SqliteStore(path)


def test_the_wal_shrinks_back_after_a_burst(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("contextwm.adapters.sqlite.database.WAL_SIZE_LIMIT", 64 * 1024)
    store = SqliteStore(path)
    try:
        key = new_conversation(store)
        for start in range(1, 400, 20):
            add(store, key, [make_item(s, "burst " * 200) for s in range(start, start + 20)])
        wal = path.with_name(path.name + "-wal")
        assert wal.stat().st_size > 1024 * 1024
        store.maintain()  # the checkpoint; the next write starts the WAL over and truncates it
        add(store, key, [make_item(401)])
        assert wal.stat().st_size <= 64 * 1024
    finally:
        store.close()
