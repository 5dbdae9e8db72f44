"""Point 11: acknowledged appends survive kill -9; indexes are rebuilt from stored vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, NewItem
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


def _snapshot(client: Client, conv: str) -> tuple[list[tuple[int, str, str]], list[int]]:
    items = [(i.seq, i.state, i.content) for i in client.iter_items(conv)]
    hits = client.search("how do I care for my sourdough starter", conversation_id=conv, top_k=5)
    return items, [h.seq for h in hits.hits]


def test_acknowledged_appends_survive_kill_9(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    acked: list[tuple[int, str]] = []
    try:
        with Client(server.target) as client:
            client.create_conversation("d", settings=ConversationSettings(window_max_items=10))
            for n in range(60):
                text = f"Note {n} on {TOPICS[n % len(TOPICS)]}."
                acked.append((client.append("d", text, metadata={"n": str(n)}).seq, text))
            batch = client.append_many("d", [NewItem(f"batch item {k}") for k in range(20)])
            acked.extend((r.seq, f"batch item {k}") for k, r in enumerate(batch.results))
            window_before = [i.seq for i in client.iter_items("d", states=["window"])]
    finally:
        server.kill()  # immediately after the last acknowledgement; no shutdown code runs
    server = ServerProcess(tmp_path)
    try:
        with Client(server.target) as client:
            items = list(client.iter_items("d"))
            assert [(i.seq, i.content) for i in items] == acked
            assert [i.seq for i in items if i.state == "window"] == window_before
            assert client.get_conversation("d").window.item_count == 10
            # Items that were never embedded before the kill are embedded after the restart.
            hits = client.search("caring for a sourdough starter", conversation_id="d", top_k=3)
            assert hits.hits and all("sourdough" in h.content for h in hits.hits)
            assert client.get_conversation("d").pending_embeddings == 0
            assert client.append("d", "after restart").seq == 81
    finally:
        server.kill()


@pytest.mark.parametrize("damage", ["missing", "corrupt", "stale"])
def test_index_is_rebuilt_from_stored_vectors(tmp_path: Path, damage: str) -> None:
    server = ServerProcess(tmp_path)
    try:
        with Client(server.target) as client:
            client.create_conversation("d", settings=ConversationSettings(window_max_items=5))
            for n in range(30):
                client.append("d", f"Note {n} on {TOPICS[n % len(TOPICS)]}.")
            before = _snapshot(client, "d")
            assert before[1]
    finally:
        assert server.terminate() == 0  # a clean stop writes the index files
    (index_file,) = list((tmp_path / "indexes").rglob("*.faiss"))
    if damage == "missing":
        index_file.unlink()
    elif damage == "corrupt":
        index_file.write_bytes(b"not a faiss index" * 10)
    else:
        # A file from an older state: restart, add more archived items, kill before it is saved.
        old = index_file.read_bytes()
        server = ServerProcess(tmp_path)
        try:
            with Client(server.target) as client:
                for n in range(30, 40):
                    client.append("d", f"Note {n} on {TOPICS[n % len(TOPICS)]}.")
                client.search("sourdough", conversation_id="d")
                before = _snapshot(client, "d")
        finally:
            server.terminate()
        index_file.write_bytes(old)
    server = ServerProcess(tmp_path)
    try:
        with Client(server.target) as client:
            assert _snapshot(client, "d") == before
    finally:
        server.kill()
    if damage != "missing":
        assert "rebuilding it from stored vectors" in server.log()
