"""Checkpoints restore window, archive, active context and usage."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm_client import (
    AlreadyExistsError,
    Client,
    ConversationSettings,
    InvalidArgumentError,
    NotFoundError,
    Role,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


TOPICS = ["rowing technique", "sourdough baking", "kernel scheduling", "tax deadlines"]


def _turns(client: Client, cid: str, start: int, n: int) -> None:
    for k in range(start, start + n):
        role: Role = "user" if k % 2 == 0 else "assistant"
        client.append(cid, f"Turn {k} about {TOPICS[k % len(TOPICS)]}.", role=role)


def _state(client: Client, cid: str) -> tuple[object, ...]:
    conv = client.get_conversation(cid)
    usage = client.get_usage(cid)
    return (
        [i.seq for i in client.iter_items(cid, states=["window"])],
        [i.seq for i in client.iter_items(cid, states=["archived"])],
        [(e.seq, e.content) for e in client.iter_active_context(cid)],
        (usage.active_tokens, usage.compactions, conv.window.token_count, conv.archived_items),
    )


def test_restore_returns_everything_to_the_checkpoint(client: Client) -> None:
    client.create_conversation("k", settings=ConversationSettings(window_max_items=6))
    _turns(client, "k", 0, 10)
    at_checkpoint = _state(client, "k")
    checkpoint = client.create_checkpoint("k", "before-rework")
    assert (checkpoint.name, checkpoint.last_seq) == ("before-rework", 10)
    _turns(client, "k", 10, 8)  # evicts checkpoint-time window items into the archive
    client.compact("k", "Summary of the first 18 turns.")
    _turns(client, "k", 18, 2)
    assert _state(client, "k") != at_checkpoint
    result = client.restore_checkpoint("k", "before-rework")
    assert result.reverted_items == 8 + 1 + 2  # the later turns and the compaction marker
    assert result.undone_edits == 1  # the compaction
    assert _state(client, "k") == at_checkpoint
    assert result.usage.active_tokens == at_checkpoint[3][0]  # type: ignore[index]
    # Later items stay stored and listed, but reverted, out of the window and the index.
    items = list(client.iter_items("k"))
    assert len(items) == 21
    assert {i.state for i in items if i.seq > 10} == {"reverted"}
    hits = client.search("Turn 19 about", conversation_id="k", include_window=True, top_k=50)
    assert all(h.seq <= 10 for h in hits.hits)
    edits = list(client.iter_context_edits("k"))
    assert [(e.kind, e.undone_at is not None) for e in edits] == [("compaction", True)]
    # Work goes on after the restore with fresh seqs; nothing is reused.
    assert client.append("k", "A new direction.", role="user").seq == 22


def test_checkpoints_are_listed_named_once_and_found_by_name(client: Client) -> None:
    _turns(client, "n", 0, 3)
    client.create_checkpoint("n", "one")
    _turns(client, "n", 3, 2)
    client.create_checkpoint("n", "two")
    assert [(c.name, c.last_seq) for c in client.list_checkpoints("n")] == [("one", 3), ("two", 5)]
    with pytest.raises(AlreadyExistsError, match="'one'"):
        client.create_checkpoint("n", "one")
    with pytest.raises(NotFoundError, match=r"no checkpoint 'three'.*'one', 'two'"):
        client.restore_checkpoint("n", "three")
    with pytest.raises(InvalidArgumentError, match="checkpoint name"):
        client.create_checkpoint("n", "")


def test_restoring_a_later_checkpoint_brings_reverted_items_back(client: Client) -> None:
    _turns(client, "r", 0, 4)
    client.create_checkpoint("r", "early")
    _turns(client, "r", 4, 4)
    late = _state(client, "r")
    client.create_checkpoint("r", "late")
    client.restore_checkpoint("r", "early")
    assert [i.seq for i in client.iter_items("r", states=["reverted"])] == [5, 6, 7, 8]
    client.restore_checkpoint("r", "late")
    assert _state(client, "r") == late
    assert list(client.iter_items("r", states=["reverted"])) == []


def test_a_restored_window_fits_todays_limits(client: Client) -> None:
    """Settings are not part of a checkpoint: a window restored under a smaller item limit
    evicts down to it (found by the engine's state machine)."""
    _turns(client, "s", 0, 4)
    client.create_checkpoint("s", "four")
    client.update_conversation("s", ConversationSettings(window_max_items=2))
    client.restore_checkpoint("s", "four")
    conv = client.get_conversation("s")
    assert conv.window.item_count == 2 <= conv.window.item_limit
    states = {i.seq: i.state for i in client.iter_items("s")}
    assert [states[s] for s in (1, 2, 3, 4)].count("window") == 2
