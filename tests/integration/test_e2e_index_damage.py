"""Damaged or missing FAISS files, made while the server is stopped: each conversation's index
is rebuilt from the stored vectors, and search answers as it did before the damage."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings
from server_process import ServerProcess

pytestmark = pytest.mark.slow

TOPICS = [
    "kayaking on the fjord",
    "sourdough starter care",
    "rust borrow checker errors",
    "tax return deadlines",
    "greenhouse tomato blight",
    "jazz piano voicings",
]
QUERY = "how do I care for my sourdough starter"
# Index files do not depend on the model: the hashing embedder makes these tests fast.
HASHING = ("--embedder", "hashing")

# Each conversation's index file gets one kind of damage. "twin" and "other" hold as many
# archived items as each other, so their files have the same ids (seqs) and other vectors.
DAMAGE = {
    "truncated": 30,
    "garbled": 30,
    "empty": 30,
    "not-faiss": 30,
    "fewer-ids": 30,
    "twin": 24,
    "other": 24,
}


Snapshot = tuple[list[tuple[int, str, str]], list[tuple[int, float]]]


def _snapshot(client: Client, conv: str) -> Snapshot:
    items = [(i.seq, str(i.state), i.content) for i in client.iter_items(conv)]
    hits = client.search(QUERY, conversation_id=conv, top_k=5)
    return items, [(h.seq, round(h.score, 4)) for h in hits.hits]


def _fill(tmp_path: Path, sizes: dict[str, int]) -> tuple[dict[str, Snapshot], dict[str, Path]]:
    """Conversations of these sizes (window of 5: the rest archived), searched so that their
    indexes exist, and a clean stop that saves them; returns the snapshots and index files."""
    server = ServerProcess(tmp_path, *HASHING)
    try:
        with Client(server.target) as client:
            for conv, size in sizes.items():
                client.create_conversation(conv, settings=ConversationSettings(window_max_items=5))
                for n in range(size):
                    client.append(conv, f"Note {n} on {TOPICS[n % len(TOPICS)]} ({conv}).")
            snapshots = {conv: _snapshot(client, conv) for conv in sizes}
    finally:
        assert server.terminate() == 0  # a clean stop writes the index files
    (model_dir,) = (tmp_path / "indexes").iterdir()
    # A fresh store numbers its conversations 1, 2, ... in the order they were created; the
    # number names the index file.
    files = {conv: model_dir / f"{key}.faiss" for key, conv in enumerate(sizes, start=1)}
    assert all(f.exists() for f in files.values())
    for conv, (items, hits) in snapshots.items():
        archived = {seq for seq, state, _ in items if state == "archived"}
        assert hits and archived & {seq for seq, _ in hits}, conv  # search reaches the archive
    return snapshots, files


def test_every_kind_of_damaged_index_file_is_rebuilt(tmp_path: Path) -> None:
    snapshots, files = _fill(tmp_path, DAMAGE)
    data = {conv: f.read_bytes() for conv, f in files.items()}
    files["truncated"].write_bytes(data["truncated"][: len(data["truncated"]) * 2 // 3])
    garbled = bytearray(data["garbled"])
    middle = len(garbled) // 2  # inside the vectors: FAISS alone would load this file
    garbled[middle : middle + 256] = os.urandom(256)
    files["garbled"].write_bytes(bytes(garbled))
    files["empty"].write_bytes(b"")
    files["not-faiss"].write_bytes(b"not a faiss index" * 10)
    # A sound file of an older state: the same conversation with fewer items archived.
    older = tmp_path / "older"
    _, older_files = _fill(older, {"fewer-ids": 20})
    shutil.copyfile(older_files["fewer-ids"], files["fewer-ids"])
    shutil.copyfile(files["other"], files["twin"])  # sound, right ids, wrong vectors

    server = ServerProcess(tmp_path, *HASHING)
    try:
        with Client(server.target) as client:
            for conv, before in snapshots.items():
                assert _snapshot(client, conv) == before, conv
    finally:
        assert server.terminate() == 0
    log = server.log()
    for conv in DAMAGE:
        if conv != "other":  # each damaged file is named, or its conversation
            assert str(files[conv]) in log or f"conversation {files[conv].stem} " in log, conv
    assert "checksum mismatch" in log
    # The rebuilt indexes were saved: the next start loads them without complaint.
    server = ServerProcess(tmp_path, *HASHING)
    try:
        with Client(server.target) as client:
            for conv, before in snapshots.items():
                assert _snapshot(client, conv) == before, conv
    finally:
        server.kill()
    assert "rebuilding" not in server.log() and "stale" not in server.log()


def test_a_deleted_index_directory_is_rebuilt(tmp_path: Path) -> None:
    snapshots, _ = _fill(tmp_path, {"a": 30, "b": 12})
    shutil.rmtree(tmp_path / "indexes")
    server = ServerProcess(tmp_path, *HASHING)
    try:
        with Client(server.target) as client:
            for conv, before in snapshots.items():
                assert _snapshot(client, conv) == before, conv
    finally:
        assert server.terminate() == 0
    assert len(list((tmp_path / "indexes").rglob("*.faiss"))) == 2
