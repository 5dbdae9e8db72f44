"""`contextwm move`: a SQLite data directory copied into PostgreSQL with its vectors, resumed
after an interruption, checked at the end, and served from there as it was."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import StartService
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.domain.items import Flag
from contextwm_client import Client
from rich_conversation import build, seen


def move(data_dir: Path, dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwm", "move", str(data_dir), "--to", dsn],
        capture_output=True,
        text=True,
        timeout=120,
    )


def embedded(client: Client, cid: str) -> None:
    deadline = time.monotonic() + 60
    while client.get_conversation(cid).pending_embeddings and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_data_directory_moves_to_postgresql_resumably_and_is_served_from_there(
    start_service: StartService, pg_dsn: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "sqlite-data"
    sqlite = start_service(data_dir=data_dir)
    with Client(f"127.0.0.1:{sqlite.port}") as client:
        for cid in ("one", "two"):
            build(client, cid)
            embedded(client, cid)
        before = {cid: seen(client, cid) for cid in ("one", "two")}
        hits = client.search("kernel scheduling turn", conversation_id="one").hits
        # A server on the directory: the move refuses to read under it.
        running = move(data_dir, pg_dsn)
        assert running.returncode == 2 and "is in use" in running.stderr
    sqlite.stop(grace=0)

    first = move(data_dir, pg_dsn)
    assert first.returncode == 0, first.stderr
    assert "moved 2 conversations" in first.stdout
    assert "checked 2 of 2 conversations identical" in first.stdout

    # An interruption that left one conversation behind: the next run copies only it.
    store = PostgresStore(pg_dsn)
    record = store.get_conversation("default", "two")
    assert record is not None
    store.delete_conversation(record.key)
    again = move(data_dir, pg_dsn)
    assert again.returncode == 0, again.stderr
    assert "moved 1 conversation" in again.stdout and "1 were there already" in again.stdout

    # A conversation that differs in the database is never overwritten.
    record = store.get_conversation("default", "one")
    assert record is not None
    store.set_flags(record.key, 1, Flag.NONE)
    store.close()
    differs = move(data_dir, pg_dsn)
    assert differs.returncode == 2 and "'one' of namespace 'default'" in differs.stderr

    moved = start_service(store=pg_dsn, data_dir=tmp_path / "pg-replica")
    with Client(f"127.0.0.1:{moved.port}") as client:
        assert seen(client, "two") == before["two"]
        # Vectors came along: nothing waits to be embedded, and search ranks as before.
        assert client.get_conversation("two").pending_embeddings == 0
        assert client.get_conversation("one").pending_embeddings == 0
        assert client.search("kernel scheduling turn", conversation_id="one").hits == hits
