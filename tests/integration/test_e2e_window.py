"""The window stays within its limits and evicts the least relevant items first."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from conftest import StartService
from contextwm_client import Client, ConversationSettings, NewItem, ScoringWeights

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


def _window_seqs(client: Client, conv: str) -> list[int]:
    return [i.seq for i in client.iter_items(conv, states=["window"])]


def test_window_never_exceeds_item_or_token_limits(client: Client) -> None:
    client.create_conversation(
        "w", settings=ConversationSettings(window_max_items=5, window_max_tokens=60)
    )
    total_evicted: list[int] = []
    for n in range(25):
        r = client.append("w", f"note {n}: " + "lorem ipsum " * (n % 7 + 1))
        assert r.window.item_count <= 5
        assert r.window.token_count <= 60
        total_evicted.extend(r.evicted_seqs)
    conv = client.get_conversation("w")
    assert conv.archived_items == len(total_evicted) == 25 - conv.window.item_count
    archived = [i.seq for i in client.iter_items("w", states=["archived"])]
    assert sorted(total_evicted) == archived


def test_item_larger_than_the_window_goes_straight_to_the_archive(client: Client) -> None:
    client.create_conversation("big", settings=ConversationSettings(window_max_tokens=50))
    client.append("big", "small one")
    r = client.append("big", "huge " * 200)
    assert r.evicted_seqs == (2,)
    assert _window_seqs(client, "big") == [1]
    assert client.list_items("big", states=["archived"]).entries[0].content.startswith("huge")


def test_pinned_items_are_evicted_only_when_nothing_else_is_left(client: Client) -> None:
    client.create_conversation("p", settings=ConversationSettings(window_max_items=3))
    client.append("p", "the one thing to keep", flags=["pinned"])
    for n in range(10):
        client.append("p", f"chatter {n}")
    assert 1 in _window_seqs(client, "p")
    client.create_conversation("allpinned", settings=ConversationSettings(window_max_items=2))
    for n in range(4):
        client.append("allpinned", f"pinned {n}", flags=["pinned"])
    assert _window_seqs(client, "allpinned") == [3, 4]  # oldest pinned went first


def test_importance_keeps_an_error_over_plain_chatter(client: Client) -> None:
    client.create_conversation("imp", settings=ConversationSettings(window_max_items=3))
    client.append("imp", "Deploy failed: ConnectionError: database refused the connection")
    for n in range(4):
        client.append("imp", f"ok, moving on to item {n}", role="assistant")
    assert 1 in _window_seqs(client, "imp")


def test_weights_are_settings(client: Client) -> None:
    # With importance worth nothing and a steep item decay, the error is just the oldest item.
    settings = ConversationSettings(
        window_max_items=3,
        recency_half_life_items=1,
        weights=ScoringWeights(importance={"error": 0.0}, role={"user": 0.0, "assistant": 0.0}),
    )
    client.create_conversation("flat", settings=settings)
    client.append("flat", "Deploy failed: ConnectionError: database refused the connection")
    for n in range(3):
        client.append("flat", f"ok, moving on to item {n}", role="assistant")
    assert _window_seqs(client, "flat") == [2, 3, 4]


def test_recency_uses_the_conversations_own_clock(client: Client) -> None:
    # Historic items from 2019, a day apart: the newest is "now" for this conversation.
    start = datetime(2019, 5, 1, tzinfo=UTC)
    client.create_conversation(
        "hist", settings=ConversationSettings(window_max_items=3, recency_half_life_items=0)
    )
    client.append_batch(
        "hist",
        [NewItem(f"plain remark {n}", timestamp=start + timedelta(days=n)) for n in range(4)],
    )
    assert _window_seqs(client, "hist") == [2, 3, 4]
    ctx = client.get_context("hist", None, max_tokens=500)
    by_seq = {s.seq: s.parts.recency for s in ctx.recent}
    assert by_seq[4] == 1.0  # wall-clock recency would be ~0 for a 2019 item
    assert abs(by_seq[3] - 0.5) < 1e-9  # one half-life (a day) older
    assert abs(by_seq[2] - 0.25) < 1e-9


def test_idle_conversations_leave_memory_and_come_back_the_same(
    start_service: StartService,
) -> None:
    service = start_service(max_loaded_conversations=2)
    service.engine.runtimes.unload_idle_seconds = 0.0
    with Client(f"127.0.0.1:{service.port}") as client:
        settings = ConversationSettings(window_max_items=4)
        for c in range(5):
            client.create_conversation(f"idle-{c}", settings=settings)
            for n in range(9):
                client.append(f"idle-{c}", f"conversation {c}, note {n} about the deploy")
        before = {}
        for c in range(5):
            conv = f"idle-{c}"
            while client.get_conversation(conv).pending_embeddings:  # pending keeps it loaded
                time.sleep(0.05)
            info = client.get_conversation(conv)
            before[conv] = ([(i.seq, i.state) for i in client.iter_items(conv)], info.window)
        deadline = time.monotonic() + 30
        while len(service.engine.runtimes.loaded()) > 2:  # the indexer's housekeeping
            assert time.monotonic() < deadline, "idle conversations were never unloaded"
            time.sleep(0.05)
        for conv, (items, window) in before.items():
            assert [(i.seq, i.state) for i in client.iter_items(conv)] == items
            assert client.get_conversation(conv).window == window
            hits = client.search("deploy note", conversation_id=conv, mode="dense", top_k=3)
            assert len(hits.hits) == 3
        client.append("idle-0", "one more after the reload")
        assert client.get_conversation("idle-0").total_items == 10
