"""Acknowledged appends and the agent loop's state survive kill -9. (Damaged index files:
test_e2e_index_damage.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, Event, EventStream, FileRef, NewItem
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


def test_acknowledged_appends_survive_kill_9(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path)
    acked: list[tuple[int, str]] = []
    try:
        with Client(server.target) as client:
            client.create_conversation("d", settings=ConversationSettings(window_max_items=10))
            for n in range(60):
                text = f"Note {n} on {TOPICS[n % len(TOPICS)]}."
                acked.append((client.append("d", text, metadata={"n": str(n)}).seq, text))
            batch = client.append_batch("d", [NewItem(f"batch item {k}") for k in range(20)])
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


def test_agent_loop_state_survives_kill_9(tmp_path: Path) -> None:
    """Compactions, replacements, truncations, checkpoints and events are committed with the
    change they describe: a kill -9 right after the acknowledgement keeps all of them."""
    server = ServerProcess(tmp_path)
    try:
        with Client(server.target) as client:
            client.create_conversation("a", settings=ConversationSettings(context_limit=50_000))
            client.append("a", "Refactor the parser. Never touch the lexer.", role="user")
            client.append("a", "Reading it.", role="assistant")
            client.append("a", "def parse(): ...\n" * 40, role="tool", file=FileRef("p.py", "read"))
            client.compact("a", "Parser refactor under way; the lexer is off limits.")
            client.create_checkpoint("a", "after-compaction")
            for k in range(6):
                client.append("a", f"Step {k}: " + "changed parse() again. " * 10, role="assistant")
                client.append("a", f"Why step {k}? " + "please explain " * 5, role="user")
            client.append(
                "a", "def parse(): pass\n" * 40, role="tool", file=FileRef("p.py", "read")
            )
            client.truncate("a", "half")
            active = [(e.seq, e.treatment, e.content) for e in client.iter_active_context("a")]
            usage = client.get_usage("a")
            edits = [(e.id, e.kind, e.seqs) for e in client.iter_context_edits("a")]
            client.create_checkpoint("a", "end")  # its event is the last one
            with client.watch("a") as stream:
                events = _until_checkpoint(stream, "end")
    finally:
        server.kill()
    server = ServerProcess(tmp_path)
    try:
        with Client(server.target) as client:
            assert [
                (e.seq, e.treatment, e.content) for e in client.iter_active_context("a")
            ] == active
            again = client.get_usage("a")
            assert (again.active_tokens, again.compactions) == (usage.active_tokens, 1)
            assert again.optimisations == usage.optimisations
            assert [(e.id, e.kind, e.seqs) for e in client.iter_context_edits("a")] == edits
            assert [c.name for c in client.list_checkpoints("a")] == ["after-compaction", "end"]
            with client.watch("a") as stream:
                assert _until_checkpoint(stream, "end") == events
    finally:
        server.kill()


def _until_checkpoint(stream: EventStream, name: str) -> list[tuple[int, str]]:
    """The replayed events up to the creation of the named checkpoint."""
    out: list[tuple[int, str]] = []
    event: Event
    for event in stream:
        out.append((event.id, event.kind))
        if (
            event.kind == "checkpoint_created"
            and event.checkpoint
            and event.checkpoint.name == name
        ):
            return out
    raise AssertionError("the stream ended early")
