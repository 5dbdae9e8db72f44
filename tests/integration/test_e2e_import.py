"""Bulk import through the streaming Import call: as live appends, failures item by
item, re-sent imports adding nothing twice, and a sender held back by the server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import cast

import grpc
import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.ports.embedder import Embedder
from contextwm_client import (
    Client,
    ConversationSettings,
    ImportItem,
    ImportResult,
    NewItem,
    Role,
)
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from recording_embedder import RecordingEmbedder

SETTINGS = ConversationSettings(window_max_items=6, window_max_tokens=400)
START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

TOPICS = [
    "The deploy of the billing service failed: ConnectionError to postgres on port 5432",
    "Let's plan the team offsite in Lisbon for the second week of June",
    "def retry(fn, attempts=3):\n    for n in range(attempts):\n        return fn()",
    "Can you summarise the quarterly revenue numbers for the board deck?",
    "The fix was to raise max_connections and restart pgbouncer; deploy is green now",
    "Remember: I prefer answers in British English and short bullet lists",
    "What did the customer say about the invoice export bug in the CSV module?",
    "Booked flights to Lisbon, arriving Monday morning, hotel near the river",
]


def timeline(n: int) -> list[NewItem]:
    """n items of a conversation: varied topics, roles, flags and irregular historic times."""
    items = []
    for k in range(n):
        text = f"{TOPICS[k % len(TOPICS)]} (note {k})"
        items.append(
            NewItem(
                content=text,
                role="user" if k % 2 == 0 else "assistant",
                timestamp=START + timedelta(minutes=7 * k + (k % 3) * 50),
                flags=("pinned",) if k == 3 else (),
                metadata={"n": str(k)},
                idempotency_key=f"t-{k}",
            )
        )
    return items


def snapshot(client: Client, conv: str) -> dict[str, object]:
    items = list(client.iter_items(conv))
    info = client.get_conversation(conv)
    return {
        "states": [(i.seq, i.state) for i in items],
        "items": [(i.content, i.role, i.timestamp, i.token_count, i.flags) for i in items],
        "window": info.window,
        "archived": info.archived_items,
        "state": info.state,
    }


@pytest.mark.both_stores
def test_an_import_ends_as_live_appends_of_the_same_items(client: Client) -> None:
    items = timeline(40)
    client.create_conversation("live", settings=SETTINGS)
    for item in items:
        client.append_batch("live", [item])
        # Read-your-writes: a dense search waits until the item is embedded, as a server
        # that keeps up with live appends would have it before the next one.
        client.search("deploy", conversation_id="live", mode="dense", top_k=1)
    client.create_conversation("imported", settings=SETTINGS)
    result = client.import_items([ImportItem("imported", i) for i in items], chunk_size=7)
    assert (result.appended, result.failed, result.duplicates) == (40, 0, 0)
    assert result.conversations == 1
    live, imported = snapshot(client, "live"), snapshot(client, "imported")
    assert imported == live
    assert result.evicted == live["archived"]
    assert result.evicted > 20
    # Scores too: the same context, item by item and score by score.
    query = "what broke in the billing deploy and how was it fixed?"
    a = client.get_context("live", query, max_tokens=600)
    b = client.get_context("imported", query, max_tokens=600)
    for x, y in [(a.recent, b.recent), (a.history, b.history)]:
        assert [s.item.seq for s in x] == [s.item.seq for s in y]
        assert [s.score for s in y] == pytest.approx([s.score for s in x], abs=1e-4)
    assert len(a.history) > 0
    assert b.text == a.text


@pytest.mark.both_stores
def test_items_of_many_conversations_interleaved_keep_their_order(client: Client) -> None:
    convs = [f"c{n}" for n in range(5)]

    def text(n: int, k: int) -> str:
        return f"{TOPICS[(n + k) % len(TOPICS)]} ({convs[n]}, {k})"

    items = [ImportItem(c, NewItem(text(n, k))) for k in range(30) for n, c in enumerate(convs)]
    result = client.import_items(items, chunk_size=16)
    assert (result.appended, result.conversations) == (150, 5)
    for n, c in enumerate(convs):
        assert [i.content for i in client.iter_items(c)] == [text(n, k) for k in range(30)]
        # Each item has its own vector, not a neighbour's of another conversation.
        for k in (0, 13, 29):
            hits = client.search(
                text(n, k), conversation_id=c, mode="dense", top_k=1, include_window=True
            )
            assert hits.hits[0].item.content == text(n, k)


def test_a_refused_item_is_reported_and_the_rest_goes_on(client: Client) -> None:
    items = [
        ImportItem("bad", NewItem("fine 1"), source="in.jsonl:1"),
        ImportItem("bad", NewItem("wrong role", role=cast(Role, "robot")), source="in.jsonl:2"),
        ImportItem("", NewItem("no conversation"), source="in.jsonl:3"),
        ImportItem(
            "bad", NewItem("x", metadata={str(k): "v" for k in range(65)}), source="in.jsonl:4"
        ),
        ImportItem("bad", NewItem("fine 2"), source="in.jsonl:5"),
    ]
    result = client.import_items(items, chunk_size=2)
    assert (result.appended, result.failed) == (2, 3)
    assert [(f.index, f.source, f.code) for f in result.failures] == [
        (1, "in.jsonl:2", "INVALID_ARGUMENT"),
        (2, "in.jsonl:3", "INVALID_ARGUMENT"),
        (3, "in.jsonl:4", "RESOURCE_EXHAUSTED"),
    ]
    assert "robot" in result.failures[0].message
    assert [i.content for i in client.iter_items("bad")] == ["fine 1", "fine 2"]


def test_an_item_over_the_token_limit_fails_alone(start_service: StartService) -> None:
    from contextwm.conversations.validation import Limits

    service = start_service(limits=Limits(max_item_tokens=50))
    with Client(f"127.0.0.1:{service.port}") as client:
        items = [ImportItem("t", NewItem(text)) for text in ["short", "word " * 80, "short again"]]
        result = client.import_items(items)
        assert (result.appended, result.failed) == (2, 1)
        assert result.failures[0].code == "RESOURCE_EXHAUSTED"
        assert "max_item_tokens" in result.failures[0].message
        assert [i.seq for i in client.iter_items("t")] == [1, 2]


@pytest.mark.both_stores
def test_a_re_sent_import_adds_nothing_twice(client: Client) -> None:
    items = [ImportItem("again", i) for i in timeline(30)]
    first = client.import_items(items[:18], chunk_size=5)
    assert first.appended == 18
    # Re-sending from the start, as after an interruption: only the rest is new.
    second = client.import_items(items, chunk_size=5)
    assert (second.appended, second.duplicates) == (12, 18)
    contents = [i.content for i in client.iter_items("again")]
    assert contents == [i.item.content for i in items]


@pytest.mark.both_stores
def test_a_re_sent_import_embeds_only_what_is_new(
    start_service: StartService, embedder: Embedder
) -> None:
    counting = RecordingEmbedder(embedder)
    service = start_service(model=counting)
    items = [ImportItem("twice", i) for i in timeline(30)]
    with Client(f"127.0.0.1:{service.port}") as client:
        client.import_items(items[:20], chunk_size=8)
        before = counting.texts
        result = client.import_items(items, chunk_size=8)
    assert (result.appended, result.duplicates) == (10, 20)
    # Stored items are found by their keys before the chunk is embedded.
    assert counting.texts - before == 10


@pytest.mark.both_stores
def test_each_chunk_is_answered_once_stored(service: Service, client: Client) -> None:
    answered: list[tuple[int, int, int]] = []

    def progress(result: ImportResult) -> None:
        stored = client.get_conversation("acked").total_items
        answered.append(
            (result.appended + result.duplicates + result.failed, stored, result.failed)
        )

    items = [ImportItem("acked", NewItem(f"turn {n}")) for n in range(23)]
    items[9] = ImportItem("acked", NewItem("robot turn", role=cast(Role, "robot")))
    result = client.import_items(items, chunk_size=5, on_progress=progress)
    # One answer per chunk, in order, each sent once the chunk's items are stored (the
    # server may be storing the next chunk by the time the answer is read).
    assert [a for a, _, _ in answered] == [5, 10, 15, 20, 23]
    assert all(stored >= a - failed for a, stored, failed in answered)
    assert (result.appended, result.failed, result.conversations) == (22, 1, 1)
    assert [f.index for f in result.failures] == [9]


def test_a_chunk_over_the_batch_limit_is_refused_whole(service: Service) -> None:
    item = pb.ImportItem(conversation_id="x", item=pb.NewItem(role="user", content="hi"))
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = pb_grpc.ContextServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            list(stub.Import(iter([pb.ImportRequest(items=[item] * 1001)])))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "max_batch_items" in (caught.value.details() or "")


def test_a_garbled_chunk_ends_the_import_invalid_argument(service: Service) -> None:
    good = pb.ImportRequest(
        items=[pb.ImportItem(conversation_id="g", item=pb.NewItem(role="user", content="ok"))]
    )
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        send = channel.stream_stream(
            "/contextwm.v1.ContextService/Import",
            request_serializer=lambda b: b,
            response_deserializer=pb.ImportResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as caught:
            list(send(iter([good.SerializeToString(), b"\xff\xff\xff"])))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not parse" in (caught.value.details() or "")


def test_the_server_holds_a_fast_sender_back(service: Service, client: Client) -> None:
    """The sender can only be a bounded distance ahead of what the server has stored."""
    # Light to embed, heavy to send: about 1 MB a chunk, mostly metadata.
    chunk, chunks = 200, 30
    weight = {"padding": "x" * 5000}
    ahead: list[int] = []

    def items() -> Iterator[ImportItem]:
        with Client(f"127.0.0.1:{service.port}") as probe:
            for n in range(chunk * chunks):
                if n % chunk == 0 and n:
                    stored = probe.get_conversation("flood").total_items
                    ahead.append(n - stored)
                yield ImportItem("flood", NewItem(f"line {n}", metadata=weight))

    client.create_conversation("flood")
    result = client.import_items(items(), chunk_size=chunk)
    assert result.appended == chunk * chunks
    # Two chunks in the server's hands, plus what the transport windows hold (a few MB).
    assert max(ahead) <= 20 * chunk, ahead


@pytest.mark.both_stores
def test_an_import_counts_items_out_of_time_order(client: Client) -> None:
    t0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    hours = [0, 5, 1, 6, 2]  # two items arrive after a later one in each conversation
    items = [
        ImportItem(c, NewItem(f"{c} at hour {h}", timestamp=t0 + timedelta(hours=h)))
        for h in hours
        for c in ("a", "b")
    ]
    result = client.import_items(items, chunk_size=3)
    assert (result.appended, result.out_of_order) == (10, 4)
    # A later import into the same conversations compares with what they hold.
    late = client.import_items([ImportItem("a", NewItem("early", timestamp=t0))])
    assert late.out_of_order == 1
