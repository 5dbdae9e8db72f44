"""A damaged SQLite store: a torn write-ahead log is recovered and served; a damaged database
file is refused at start-up with one readable paragraph, exit status 3 and no traceback, and
is left exactly as it was."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, NewItem
from server_process import ServerProcess

pytestmark = pytest.mark.slow

HASHING = ("--embedder", "hashing")  # the store does not depend on the model: fast starts
STORE = "contextwm.sqlite3"
REFUSED = 3


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory stopped cleanly: conversations with archived and window items, large
    enough that the items' pages lie deep inside the file."""
    data = tmp_path_factory.mktemp("healthy")
    server = ServerProcess(data, *HASHING)
    try:
        with Client(server.target) as client:
            for conv in ("a", "b"):
                client.create_conversation(conv, settings=ConversationSettings(window_max_items=8))
                client.append_batch(
                    conv, [NewItem(f"{conv} note {n}: " + "lorem ipsum " * 40) for n in range(150)]
                )
            client.search("lorem", conversation_id="a")
    finally:
        assert server.terminate() == 0
    return data


def _copy(healthy: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(healthy, data)
    return data


def _serve(data: Path) -> subprocess.CompletedProcess[str]:
    """Runs the server, expecting it to refuse: a server that starts is stopped by the timeout."""
    return subprocess.run(
        [sys.executable, "-m", "contextwm", "serve", "--data-dir", str(data), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _header(path: Path) -> None:
    with path.open("r+b") as f:
        f.write(b"\x5a" * 100)  # SQLite's 100-byte header, magic string included


def _pages(path: Path) -> None:
    """Random bytes over a few pages past the first: the schema still reads, the data not."""
    size = path.stat().st_size
    rng = random.Random(7)
    pages = size // 4096
    with path.open("r+b") as f:
        for page in rng.sample(range(pages // 4, pages), 4):
            f.seek(page * 4096)
            f.write(rng.randbytes(4096))


def _text(path: Path) -> None:
    path.write_text("these are not the rows you are looking for\n" * 100)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _missing_with_indexes(path: Path) -> None:
    path.unlink()  # the indexes/ folder beside it still has the files made from it


def _newer(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "header": (_header, "not a readable SQLite database (file is not a database)"),
    "pages": (_pages, "is damaged: SQLite reports"),
    "text": (_text, "not a readable SQLite database (file is not a database)"),
    "empty": (_empty, "is empty (0 bytes)"),
    "directory": (_directory, "is a directory"),
    "missing": (_missing_with_indexes, "is missing, but"),
    "newer": (_newer, "schema version 99, newer than this contextwm"),
}


def _state(data: Path) -> dict[str, bytes | None]:
    """Every file under the directory and its bytes (None for a folder)."""
    return {
        str(p.relative_to(data)): None if p.is_dir() else p.read_bytes()
        for p in sorted(data.rglob("*"))
        if p.name != "contextwm.lock"
    }


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_refused_and_left_alone(
    healthy: Path, tmp_path: Path, damage: str
) -> None:
    data = _copy(healthy, tmp_path)
    make, reason = DAMAGE[damage]
    make(data / STORE)
    before = _state(data)
    result = _serve(data)
    output = result.stdout + result.stderr
    assert result.returncode == REFUSED, output
    assert "Traceback" not in output and "listening" not in output
    (message,) = result.stderr.strip().splitlines()  # one paragraph
    assert message.startswith("contextwm: not starting: ")
    assert str(data / STORE) in message and reason in message, message
    if damage in ("header", "pages", "text"):  # damaged contents: the check says more
        assert "contextwm check" in message
    assert _state(data) == before  # nothing written, created or recreated


def test_a_second_server_on_the_same_directory_is_refused(healthy: Path, tmp_path: Path) -> None:
    data = _copy(healthy, tmp_path)
    server = ServerProcess(data, *HASHING)
    try:
        result = _serve(data)
        assert result.returncode == REFUSED, result.stderr
        assert "Traceback" not in result.stderr
        assert f"is in use by another contextwm process (pid {server.proc.pid}" in result.stderr
        with Client(server.target) as client:  # the first one serves on, undisturbed
            assert client.get_conversation("a").total_items == 150
    finally:
        server.kill()
    # A killed server leaves no lock behind.
    again = ServerProcess(data, *HASHING)
    again.kill()


# ------------------------------------------------------------------ a torn write-ahead log

FRAME_HEADER = 24
WAL_HEADER = 32


def _wal_position(data: Path) -> tuple[int, int]:
    """(salt, mxFrame) from the WAL index header in the -shm file: which generation of the
    WAL is being written, and its last committed frame (sqlite.org/walformat.html)."""
    with (data / f"{STORE}-shm").open("rb") as f:
        header = f.read(136)
    (mx_frame,) = struct.unpack_from("=I", header, 16)
    (salt,) = struct.unpack_from("=I", header, 32)
    return salt, mx_frame


def _backfilled(data: Path) -> int:
    """Frames already copied into the database file by a checkpoint (nBackfill)."""
    with (data / f"{STORE}-shm").open("rb") as f:
        header = f.read(136)
    (n_backfill,) = struct.unpack_from("=I", header, 96)
    return int(n_backfill)


@pytest.mark.parametrize("tear", ["truncated", "garbage"])
def test_a_torn_wal_keeps_every_item_committed_before_the_tear(tmp_path: Path, tear: str) -> None:
    server = ServerProcess(tmp_path, *HASHING)
    acked: list[tuple[int, str, tuple[int, int]]] = []
    try:
        with Client(server.target) as client:
            client.create_conversation("w", settings=ConversationSettings(window_max_items=10))
            for n in range(120):
                text = f"Entry {n}: " + "the quick brown fox " * (5 + n % 7)
                seq = client.append("w", text).seq
                acked.append((seq, text, _wal_position(tmp_path)))
    finally:
        server.kill()  # the WAL keeps what the last checkpoint did not copy
    wal = tmp_path / f"{STORE}-wal"
    final_salt, mx_frame = _wal_position(tmp_path)
    backfilled = _backfilled(tmp_path)
    page_size = sqlite3.connect(":memory:").execute("PRAGMA page_size").fetchone()[0]
    frame = FRAME_HEADER + page_size
    rng = random.Random(11)
    if tear == "truncated" and backfilled < mx_frame:
        # Power lost before the WAL was synced: a tail of frames not yet checkpointed is
        # gone, cut in the middle of a frame (what a checkpoint copied was synced first).
        kept = rng.randrange(backfilled, mx_frame)
        with wal.open("r+b") as f:
            f.truncate(WAL_HEADER + kept * frame + rng.randrange(1, frame))
    else:
        kept = mx_frame
        with wal.open("ab") as f:
            f.write(rng.randbytes(3 * frame + 123))
    # Committed before the tear: in an earlier generation of the WAL (checkpointed before it
    # started again), or in a frame of this one that is still whole.
    required = [
        (seq, text) for seq, text, (salt, top) in acked if salt != final_salt or top <= kept
    ]
    assert required == [(seq, text) for seq, text, _ in acked[: len(required)]]

    server = ServerProcess(tmp_path, *HASHING)
    try:
        with Client(server.target) as client:
            items = [(i.seq, i.content) for i in client.iter_items("w")]
            assert items == [(seq, text) for seq, text, _ in acked[: len(items)]]  # a prefix
            assert len(items) >= len(required)
            if tear == "garbage":
                assert len(items) == len(acked)
            assert client.append("w", "after the tear").seq == len(items) + 1
            hits = client.search("quick brown fox", conversation_id="w", top_k=3)
            assert hits.hits
    finally:
        server.kill()
