"""`contextwm check DIR`, run as a command on directories a real server made: healthy ones pass
(exit 0), each kind of damage is named (exit 1, or 0 with a note for what a server repairs by
itself), and nothing in the directory changes."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from contextwm.adapters.sqlite.schema import SCHEMA_VERSION
from contextwm_client import Client, ConversationSettings
from server_process import ServerProcess

pytestmark = pytest.mark.slow

HASHING = ("--embedder", "hashing")
STORE = "contextwm.sqlite3"
MODEL = "hashing-64"
# Conversations a, b and c are keys 1, 2 and 3; a and b archive as many items as each other.
SIZES = {"a": 30, "b": 30, "c": 12}


def _fill(data: Path) -> ServerProcess:
    server = ServerProcess(data, *HASHING)
    with Client(server.target) as client:
        for conv, size in SIZES.items():
            client.create_conversation(conv, settings=ConversationSettings(window_max_items=5))
            for n in range(size):
                client.append(conv, f"Note {n} of {conv}: " + "checks and balances " * 4)
            client.search("balances", conversation_id=conv)  # its index exists from here on
    return server


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose server stopped cleanly: the store and three saved index files."""
    data = tmp_path_factory.mktemp("healthy")
    server = _fill(data)
    assert server.terminate() == 0
    return data


def _copy(healthy: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    return data


def _check(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwm", "check", str(data), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _files(data: Path) -> dict[str, bytes | None]:
    """Every file's bytes (None for a folder), but SQLite's shared-memory index (-shm),
    which any reader of a WAL may rebuild, and holds no data."""
    return {
        str(p.relative_to(data)): None if p.is_dir() else p.read_bytes()
        for p in sorted(data.rglob("*"))
        if not p.name.endswith("-shm")
    }


def _index(data: Path, key: int) -> Path:
    return data / "indexes" / MODEL / f"{key}.faiss"


def test_a_healthy_directory_passes_and_is_left_alone(healthy: Path, tmp_path: Path) -> None:
    data = _copy(healthy, tmp_path)
    before = _files(data)
    result = _check(data, "--verbose")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.splitlines()[-1] == "healthy (0 problems, 0 notes)", out
    assert f"integrity ok, schema version {SCHEMA_VERSION}" in out
    assert "3 conversations, 72 items (15 window, 57 archived)" in out
    assert f"vectors of {MODEL} (64 floats): 72 of 72 items" in out
    assert f"indexes of {MODEL}: 3 files" in out
    assert "default/a (key 1): 30 items (5 window, 25 archived), last seq 30" in out
    assert _files(data) == before


def test_after_a_kill_9_the_directory_is_healthy_with_notes(tmp_path: Path) -> None:
    server = _fill(tmp_path)
    with Client(server.target) as client:
        for n in range(8):  # archived after the index files were last saved
            client.append("c", f"late note {n}")
    server.kill()
    before = _files(tmp_path)
    result = _check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{STORE}-wal holds transactions not yet copied" in result.stdout
    assert _files(tmp_path) == before


def test_a_directory_a_server_runs_on_is_not_checked(healthy: Path, tmp_path: Path) -> None:
    data = _copy(healthy, tmp_path)
    server = ServerProcess(data, *HASHING)
    try:
        result = _check(data)
    finally:
        server.kill()
    assert result.returncode == 2
    assert f"a contextwm server (pid {server.proc.pid}) is running on {data}" in result.stderr
    assert result.stdout == ""


def test_what_is_not_a_data_directory_is_not_checked(tmp_path: Path) -> None:
    assert "is not a directory" in _check(tmp_path / "nowhere").stderr
    result = _check(tmp_path)
    assert result.returncode == 2 and "holds no contextwm store" in result.stderr


# ------------------------------------------------------------------ damage


def _sql(*statements: str) -> Callable[[Path], None]:
    def damage(data: Path) -> None:
        db = sqlite3.connect(data / STORE)
        for statement in statements:
            db.execute(statement)
        db.commit()
        db.close()

    return damage


def _overwrite(offset_of: Callable[[int], int], length: int) -> Callable[[Path], None]:
    def damage(data: Path) -> None:
        path = data / STORE
        with path.open("r+b") as f:
            f.seek(offset_of(path.stat().st_size))
            f.write(random.Random(3).randbytes(length))

    return damage


def _pages(data: Path) -> None:
    path = data / STORE
    pages = path.stat().st_size // 4096
    rng = random.Random(5)
    with path.open("r+b") as f:
        for page in rng.sample(range(pages // 4, pages), 3):
            f.seek(page * 4096)
            f.write(rng.randbytes(4096))


def _replace_store(content: bytes | None) -> Callable[[Path], None]:
    def damage(data: Path) -> None:
        (data / STORE).unlink()
        if content is None:
            (data / STORE).mkdir()
        else:
            (data / STORE).write_bytes(content)

    return damage


def _index_bytes(key: int, change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(data: Path) -> None:
        _index(data, key).write_bytes(change(_index(data, key).read_bytes()))

    return damage


def _garble(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + random.Random(9).randbytes(64) + data[middle + 64 :]


def _twin(data: Path) -> None:
    shutil.copyfile(_index(data, 1), _index(data, 2))  # sound, same ids, other vectors


def _orphan(data: Path) -> None:
    shutil.copyfile(_index(data, 3), _index(data, 9))


def _no_indexes(data: Path) -> None:
    shutil.rmtree(data / "indexes")


def _missing(data: Path) -> None:
    (data / STORE).unlink()


# kind -> (damage, exit status, what the report says)
DAMAGE: dict[str, tuple[Callable[[Path], None], int, str]] = {
    "store header": (
        _overwrite(lambda _: 0, 100),
        1,
        "problem: store: ",  # followed by the start-up refusal's paragraph
    ),
    "store pages": (_pages, 1, "problem: store: SQLite's integrity_check reports"),
    "store text": (
        _replace_store(b"not a database\n" * 200),
        1,
        "is not a readable SQLite database (file is not a database)",
    ),
    "store empty": (_replace_store(b""), 1, "is empty (0 bytes)"),
    "store directory": (_replace_store(None), 1, "is a directory"),
    "store missing": (_missing, 1, f"{STORE} is missing"),
    "seq gap": (
        _sql("DELETE FROM items WHERE conv = 1 AND seq = 7"),
        1,
        "conversation default/a: its 29 items have seqs 1..30: items are missing",
    ),
    "last seq behind": (
        _sql("UPDATE conversations SET last_seq = 28 WHERE id = 2"),
        1,
        "an item has seq 30, past the last seq 28 the conversation records",
    ),
    "last seq ahead": (
        _sql("UPDATE conversations SET last_seq = 40 WHERE id = 2"),
        1,
        "the last seq is 40 but the newest item 30",
    ),
    "unknown state": (
        _sql("UPDATE items SET state = 9 WHERE conv = 3 AND seq = 2"),
        1,
        "conversation default/c: items in unknown states [9]",
    ),
    "settings": (
        _sql("UPDATE conversations SET settings = '{\"window' WHERE id = 3"),
        1,
        "conversation default/c: its settings do not decode",
    ),
    "vector width": (
        _sql("UPDATE vectors SET vec = zeroblob(100) WHERE item = 5"),
        1,
        f"1 stored vector of {MODEL} not 256 bytes long like the others",
    ),
    "no schema version": (
        _sql("DELETE FROM meta WHERE key = 'schema_version'"),
        1,
        "no valid schema version",
    ),
    "word index": (
        _sql("INSERT INTO items_fts (rowid, content, tag) VALUES (9999, 'ghost', 'c1')"),
        1,
        "72 items but 73 rows in the full-text index",
    ),
    "index truncated": (
        _index_bytes(1, lambda b: b[: len(b) // 2]),
        0,
        "note: indexes/hashing-64/1.faiss: has no checksum (truncated, or older)",
    ),
    "index garbled": (
        _index_bytes(2, _garble),
        0,
        "note: indexes/hashing-64/2.faiss: is damaged (checksum mismatch)",
    ),
    "index empty": (
        _index_bytes(3, lambda _: b""),
        0,
        "note: indexes/hashing-64/3.faiss: is truncated (0 bytes)",
    ),
    "index of another conversation": (
        _twin,
        0,
        "indexes/hashing-64/2.faiss: its vectors are not the stored ones; the server rebuilds it",
    ),
    "stale index": (
        _sql("UPDATE items SET state = 2 WHERE conv = 3 AND seq = 12"),
        0,
        "indexes/hashing-64/3.faiss: stale: holds 7 vectors, the store 8 (1 missing, 0 not"
        " archived)",
    ),
    "window over its limits": (
        _sql("UPDATE items SET state = 1 WHERE conv = 1 AND seq < 4"),
        0,
        "its window holds 8 items and",
    ),
    "orphan index": (_orphan, 0, "indexes/hashing-64/9.faiss: no conversation has key 9: unused"),
    "no indexes": (_no_indexes, 0, "indexes: none yet"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_each_kind_of_damage_is_reported(healthy: Path, tmp_path: Path, kind: str) -> None:
    data = _copy(healthy, tmp_path)
    damage, status, said = DAMAGE[kind]
    damage(data)
    before = _files(data)
    result = _check(data)
    out = result.stdout
    assert result.returncode == status, out + result.stderr
    assert said in out, out
    assert "Traceback" not in out + result.stderr
    assert out.splitlines()[-1].startswith("healthy" if status == 0 else "UNHEALTHY")
    assert _files(data) == before
