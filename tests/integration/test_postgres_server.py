"""The tests' PostgreSQL: a real cluster, with pgvector in the bundled build, that keeps what
was committed across a crash (pg_ctl -m immediate) and a restart."""

from __future__ import annotations

import os

import psycopg
import pytest
from postgres_server import PostgresServer


def test_a_fresh_database_per_test_with_pgvector(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        major = conn.execute("SHOW server_version_num").fetchone()
        assert major is not None and int(major[0]) >= 150000
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone() == (0,)
        if os.environ.get("CONTEXTWM_TEST_PG_BIN"):
            pytest.skip("other PostgreSQL binaries: pgvector may be missing")
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE v (id int PRIMARY KEY, e vector(3))")
        conn.execute("INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')")
        nearest = conn.execute("SELECT id FROM v ORDER BY e <#> '[1,0,0]' LIMIT 2").fetchall()
        assert nearest == [(1,), (3,)]


def test_what_was_committed_survives_a_crash_and_a_restart() -> None:
    server = PostgresServer()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (1), (2)")
        server.stop("immediate")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(server.dsn(), connect_timeout=2).close()
        server.start()
        with psycopg.connect(server.dsn()) as conn:
            assert conn.execute("SELECT sum(n) FROM kept").fetchone() == (3,)
    finally:
        server.close()
    assert not server.root.exists()
