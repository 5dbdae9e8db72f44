"""The conversation, event and session roles of the store, the same tests on SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest
from contextwm.domain.conversations import ConversationSettings, ScoringWeights
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.history import ContextEdit, EditKind, Event, EventKind
from contextwm.domain.workspace_files import ChunkSpec, ChunkStrategy, FileView, SessionState
from stores import T0, RoleStore, new_conversation


def test_create_get_and_duplicate(store: RoleStore) -> None:
    weights = ScoringWeights(recency=0.7, importance={"pinned": 2.0}, role={"user": 0.9})
    cs = ConversationSettings(window_max_tokens=123, encoding="o200k_base", weights=weights)
    rec = store.create_conversation("ns", "conv", cs, T0)
    got = store.get_conversation("ns", "conv")
    assert got is not None
    assert got == rec
    assert got.settings == cs  # settings round-trip through JSON, weights included
    assert (got.last_seq, got.token_limit, got.state) == (0, None, "general")
    assert store.conversation_record(rec.key) == rec
    with pytest.raises(AlreadyExists, match="conv"):
        store.create_conversation("ns", "conv", ConversationSettings(), T0)
    # The same id in another namespace is another conversation.
    other = store.create_conversation("ns2", "conv", ConversationSettings(), T0)
    assert other.key != rec.key
    assert store.get_conversation("ns3", "conv") is None


def test_update_settings(store: RoleStore) -> None:
    key = new_conversation(store)
    cs = ConversationSettings(window_max_items=7, adaptive_window=True)
    store.update_settings(key, cs, 1234)
    rec = store.get_conversation("default", "c1")
    assert rec is not None and rec.settings == cs
    assert rec.token_limit == 1234


def test_list_conversations_pages(store: RoleStore) -> None:
    ids = [f"conv-{n:02d}" for n in range(23)]
    for cid in reversed(ids):
        new_conversation(store, cid)
    new_conversation(store, "elsewhere", ns="other")
    seen: list[str] = []
    after = ""
    while True:
        page = store.list_conversations("default", after, 5)
        if not page:
            break
        assert len(page) <= 5
        seen.extend(r.conversation_id for r in page)
        after = page[-1].conversation_id
    assert seen == ids
    assert sorted(cid for _, cid in store.conversation_keys("default")) == ids


def test_conversations_are_listed_in_byte_order_of_their_ids(store: RoleStore) -> None:
    # As SQLite compares text: whatever the database's locale, pages come in one order.
    ids = ["b", "B", "a", "_x", "-y", "Z9", "é", "conv-1", "conv_1", "conv1"]
    for cid in ids:
        new_conversation(store, cid)
    page = store.list_conversations("default", "", 100)
    assert [r.conversation_id for r in page] == sorted(ids, key=lambda s: s.encode())
    assert [r.conversation_id for r in store.list_conversations("default", "a", 100)] == [
        "b",
        "conv-1",
        "conv1",
        "conv_1",
        "é",
    ]


def test_deleting_a_conversation_leaves_the_others(store: RoleStore) -> None:
    keep = new_conversation(store, "keep")
    gone = new_conversation(store, "gone")
    assert store.delete_conversation(gone) == 0
    assert store.conversation_record(gone) is None
    assert store.get_conversation("default", "gone") is None
    assert store.conversation_record(keep) is not None
    counts = store.counts(keep, "any-model")
    assert (counts.total, counts.archived, counts.pending_vectors, counts.tokens) == (0, 0, 0, 0)
    assert store.clock_bounds(keep) == (None, None)
    # The id is free again, for a new conversation.
    assert new_conversation(store, "gone") != keep


# ---------------------------------------------------------------- events


def edit(seq: int) -> ContextEdit:
    return ContextEdit(7, T0 + seq, EditKind.DUPLICATE_READ, (seq, seq + 1), seq + 5, 40, "x")


def test_events_round_trip_in_order_and_page(store: RoleStore) -> None:
    key = new_conversation(store)
    other = new_conversation(store, "other")
    events = [
        Event(1, T0 + 1, EventKind.EVICTION, (3, 4, 5)),
        Event(2, T0 + 2, EventKind.DUPLICATE_READ, edit(2)),
        Event(3, T0 + 3, EventKind.TRUNCATION, edit(3)),
    ]
    store.record_events(key, events[:2])
    store.record_events(key, events[2:])
    store.record_events(other, [Event(1, T0, EventKind.EVICTION, (1,))])
    assert store.events_after(key, 0, 10) == events
    assert store.events_after(key, 1, 1) == events[1:2]
    assert store.events_after(key, 3, 10) == []
    assert store.first_event_number(key) == 1
    record = store.conversation_record(key)
    assert record is not None and record.last_event == 3
    assert store.first_event_number(new_conversation(store, "quiet")) is None


def test_old_events_are_pruned_and_a_deleted_conversation_takes_its_own(
    store: RoleStore,
) -> None:
    key = new_conversation(store)
    gone = new_conversation(store, "gone")
    store.record_events(key, [Event(n, T0 + n, EventKind.EVICTION, (n,)) for n in range(1, 6)])
    store.record_events(gone, [Event(1, T0 + 10, EventKind.EVICTION, (1,))])
    assert store.prune_events(T0 + 3) == 2
    assert [e.number for e in store.events_after(key, 0, 10)] == [3, 4, 5]
    assert store.first_event_number(key) == 3
    store.delete_conversation(gone)
    assert store.events_after(gone, 0, 10) == []
    assert store.prune_events(T0 + 100) == 3  # the deleted conversation's went with it


# ---------------------------------------------------------------- sessions


def test_a_session_round_trips_replaces_and_records_its_events(store: RoleStore) -> None:
    key = new_conversation(store)
    assert store.session(key) == SessionState()
    view = FileView(
        "src/app.py", ChunkSpec(ChunkStrategy.LINES, 200, 2000, "o200k_base"), 2, 5, (0, 1, 2), "ab"
    )
    first = SessionState(("editing",), view)
    store.put_session(key, first, [Event(1, T0, EventKind.EVICTION, (1,))])
    assert store.session(key) == first
    second = SessionState(("testing", "reviewing"), None)
    store.put_session(key, second, [])
    assert store.session(key) == second
    assert [e.number for e in store.events_after(key, 0, 10)] == [1]
