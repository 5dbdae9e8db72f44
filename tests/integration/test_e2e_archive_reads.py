"""Archived items read again and again (the server keeps the ones it read in memory) come
back as they are now after every change to them: a pin, a compaction, a restore that
reverts them, a forget; through real gRPC."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm_client import Client, ConversationSettings, ScoredItem

CID = "memo"
WORDS = ["heron", "otter", "badger", "marten", "plover", "curlew", "stoat", "vole"]


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def found(client: Client, word: str) -> list[ScoredItem]:
    """What a lexical search and a context for the word bring back of the archive."""
    hits = client.search(word, conversation_id=CID, mode="lexical").hits
    context = client.get_context(CID, word, max_tokens=400, mode="lexical")
    return [h for h in [*hits, *context.history] if word in h.item.content]


def test_reads_of_archived_items_follow_every_change(client: Client) -> None:
    client.create_conversation(CID, settings=ConversationSettings(window_max_items=2))
    for word in WORDS[:4]:
        client.append(CID, f"We saw a {word} by the river.", metadata={"animal": word})
    client.create_checkpoint(CID, "four")  # heron and otter archived, badger and marten not
    for word in WORDS[4:]:
        client.append(CID, f"We saw a {word} by the river.", metadata={"animal": word})
    assert {h.item.state for h in found(client, "heron")} == {"archived"}  # read once
    assert {h.item.state for h in found(client, "plover")} == {"archived"}

    client.pin(CID, 1)
    assert {h.item.flags for h in found(client, "heron")} == {("pinned",)}

    client.compact(CID, "Animals seen by the river.")
    assert {h.item.state for h in found(client, "otter")} == {"compacted"}

    client.restore_checkpoint(CID, "four")
    assert {h.item.state for h in found(client, "otter")} == {"archived"}
    assert found(client, "plover") == []  # appended after the checkpoint: reverted

    client.forget(CID, metadata={"animal": "heron"})
    assert found(client, "heron") == []
    assert {h.item.state for h in found(client, "otter")} == {"archived"}
