"""The PostgreSQL store's connections and schema migration, on a real PostgreSQL: replicas
starting together migrate once, a newer schema is refused untouched, an unreachable database
is reported in one line without the password."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from contextwm.adapters.postgres.database import Database, StoreUnavailable
from contextwm.adapters.postgres.schema import SCHEMA_VERSION
from postgres_server import PostgresServer


def tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in rows}


def stored_version(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert row is not None
    return int(row[0])


def test_an_empty_database_is_migrated_and_a_second_open_changes_nothing(pg_dsn: str) -> None:
    first = Database(pg_dsn)
    try:
        assert stored_version(pg_dsn) == SCHEMA_VERSION >= 1
        with first._transaction() as db:
            db.execute(
                "INSERT INTO conversations (namespace, conversation_id, settings, created_at)"
                " VALUES ('ns', 'c', '{}', 1.0)"
            )
    finally:
        first.close()
    assert {"meta", "conversations"} <= tables(pg_dsn)
    again = Database(pg_dsn)
    try:
        assert stored_version(pg_dsn) == SCHEMA_VERSION
        with again._read() as db:
            assert db.execute("SELECT count(*) FROM conversations").fetchone() == (1,)
    finally:
        again.close()


def test_a_version_1_database_gains_the_key_table_and_keeps_its_rows(pg_dsn: str) -> None:
    Database(pg_dsn).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE api_keys")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        conn.execute(
            "INSERT INTO conversations (namespace, conversation_id, settings, created_at)"
            " VALUES ('ns', 'c', '{}', 1.0)"
        )
    Database(pg_dsn).close()
    assert stored_version(pg_dsn) == SCHEMA_VERSION == 2
    assert "api_keys" in tables(pg_dsn)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM conversations").fetchone() == (1,)


def test_replicas_starting_together_migrate_once(pg_dsn: str) -> None:
    opened: list[Database] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_one() -> None:
        start.wait()
        try:
            opened.append(Database(pg_dsn, pool_size=2))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert len(opened) == 4 and stored_version(pg_dsn) == SCHEMA_VERSION
    finally:
        for d in opened:
            d.close()


def test_a_newer_schema_is_refused_and_left_as_it_is(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(RuntimeError, match="newer than this contextwm"):
        Database(pg_dsn)
    assert tables(pg_dsn) == {"meta"}


def test_an_unreachable_database_is_reported_without_its_password(
    postgres: PostgresServer,
) -> None:
    dead = PostgresServer.free_port()
    dsn = f"postgresql://someone:s3cret@127.0.0.1:{dead}/nowhere"
    began = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        Database(dsn, connect_seconds=1.0)
    assert time.monotonic() - began < 10
    message = str(info.value)
    assert f"port={dead}" in message and "nowhere" in message
    assert "s3cret" not in message
