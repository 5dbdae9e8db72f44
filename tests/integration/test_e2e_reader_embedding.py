"""A context or search asked right after an append embeds the few items it would wait for
itself, with its query, in one pass of the real model; more than that it leaves to the
indexer. The indexer is stopped here, so only the reader can embed them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, ConversationSettings, NewItem
from recording_embedder import RecordingEmbedder

TURN = "The spare key to the boathouse is taped under the blue canoe."


@pytest.fixture
def recorder(embedder: Embedder) -> RecordingEmbedder:
    return RecordingEmbedder(embedder)


@pytest.fixture
def stopped(start_service: StartService, recorder: RecordingEmbedder) -> Iterator[Client]:
    """A client of a server whose indexer is stopped: only readers embed what is appended."""
    service: Service = start_service(model=recorder, index_wait_seconds=5.0)
    service.indexer.stop()
    with Client(f"127.0.0.1:{service.port}") as client:
        yield client


def test_a_context_right_after_an_append_embeds_the_turn_with_its_query(
    stopped: Client, recorder: RecordingEmbedder
) -> None:
    stopped.append("c", TURN, role="user")
    ctx = stopped.get_context("c", "where is the boathouse key hidden?", max_tokens=500)
    assert ctx.unindexed_items == 0
    assert [TURN, "where is the boathouse key hidden?"] in recorder.calls
    turn = next(s for s in ctx.recent if s.item.content == TURN)
    assert turn.parts.similarity > 0.3  # measured against the vector embedded just now
    # Stored like the indexer's: a search finds it by meaning alone, with nothing pending.
    found = stopped.search(
        "canoe storage", conversation_id="c", mode="dense", top_k=1, include_window=True
    )
    assert [h.item.content for h in found.hits] == [TURN]
    assert stopped.get_conversation("c").pending_embeddings == 0


def test_a_search_right_after_an_append_embeds_the_turn_too(
    stopped: Client, recorder: RecordingEmbedder
) -> None:
    stopped.append("c", TURN, role="user")
    found = stopped.search("canoe", conversation_id="c", mode="dense", include_window=True)
    assert [h.item.content for h in found.hits] == [TURN]
    assert [TURN, "canoe"] in recorder.calls


def test_more_items_than_a_query_pass_holds_are_left_to_the_indexer(
    start_service: StartService, recorder: RecordingEmbedder
) -> None:
    service = start_service(model=recorder, index_wait_seconds=0.2)
    service.indexer.stop()
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append_batch("c", [NewItem(content=f"turn {k} about canoes") for k in range(4)])
        ctx = client.get_context("c", "canoes", max_tokens=500)
        assert ctx.unindexed_items == 4  # waited its 0.2 s for the (stopped) indexer
        assert recorder.calls[-1] == ["canoes"]
        assert not any("turn 0 about canoes" in call for call in recorder.calls)


def test_readers_and_the_indexer_never_embed_an_item_twice(start_service: StartService) -> None:
    service = start_service(index_wait_seconds=10.0)
    errors: list[BaseException] = []

    def ask(client: Client) -> None:
        try:
            for _ in range(15):
                client.get_context("c", "canoe", max_tokens=300)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("c", settings=ConversationSettings(window_max_items=8))
        readers = [threading.Thread(target=ask, args=(client,)) for _ in range(2)]
        for r in readers:
            r.start()
        for k in range(30):  # appends evict: some vectors go to the window, some to the index
            turns = [NewItem(content=f"turn {k}.{n} about canoes") for n in (1, 2)]
            client.append_batch("c", turns)
        for r in readers:
            r.join()
        client.search("canoe", conversation_id="c", mode="dense")  # waits for what is left
        assert not errors
        assert client.get_conversation("c").pending_embeddings == 0
    rt = service.engine.runtimes.get("default", "c")
    with rt.lock:
        ids = rt.index.ids().tolist() if rt.index is not None else []
        window = [e.item.seq for e in rt.window]
    assert len(ids) == len(set(ids)) == 60 - len(window)  # each archived item once
    assert all(e.vector is not None for e in rt.window)
