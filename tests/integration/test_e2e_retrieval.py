"""Hybrid retrieval finds rare-word matches that dense search misses; time words use
the items' timestamps."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, NewItem, RetrievalMode

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from bench_data import generate_conversation, ingest_items

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


def _found(client: Client, conv: str, question: str, turn: int, mode: RetrievalMode) -> bool:
    ctx = client.get_context(conv, question, max_tokens=1024, mode=mode)
    return any(s.metadata.get("turn") == str(turn) for s in (*ctx.recent, *ctx.history))


def test_hybrid_beats_dense_on_rare_words_and_keeps_paraphrases(client: Client) -> None:
    conv = generate_conversation(7, turns=300, questions=12)
    client.append_batch(
        conv.conversation_id,
        [
            NewItem(i["content"], role=i["role"], timestamp=i["timestamp"], metadata=i["metadata"])
            for i in ingest_items(conv)
        ],
    )
    found = {
        mode: [
            _found(client, conv.conversation_id, q.text, q.answer_turn, mode)
            for q in conv.questions
        ]
        for mode in ("dense", "hybrid")
    }
    rare = [n for n, q in enumerate(conv.questions) if q.shares_rare_word]
    para = [n for n, q in enumerate(conv.questions) if not q.shares_rare_word]
    assert rare and para
    assert all(found["hybrid"][n] for n in rare)  # every rare-word question answered
    assert sum(found["hybrid"][n] for n in rare) > sum(found["dense"][n] for n in rare)
    assert sum(found["hybrid"]) > sum(found["dense"])
    # Paraphrases stay dense search's job: hybrid loses at most one of them.
    assert sum(found["hybrid"][n] for n in para) >= sum(found["dense"][n] for n in para) - 1


def test_time_words_select_items_by_timestamp(client: Client) -> None:
    client.create_conversation("garden", settings=ConversationSettings(window_max_items=2))
    start = datetime(2024, 4, 1, tzinfo=UTC)
    notes = [
        (start + timedelta(days=5), "Planted tomatoes and basil in the raised bed."),
        (start + timedelta(days=40), "Pruned the tomatoes and tied them to stakes."),  # May
        (start + timedelta(days=75), "Harvested the first tomatoes, very sweet."),
        (start + timedelta(days=100), "Cleared the raised bed for winter crops."),
        (start + timedelta(days=101), "Ordered garlic bulbs for autumn planting."),
    ]
    client.append_batch("garden", [NewItem(text, timestamp=when) for when, text in notes])
    ctx = client.get_context("garden", "what did I do with the tomatoes in May?", max_tokens=400)
    assert ctx.time_range is not None
    assert ctx.time_range.since == datetime(2024, 5, 1, tzinfo=UTC)
    assert ctx.time_range.until == datetime(2024, 6, 1, tzinfo=UTC)
    best = max(ctx.history, key=lambda s: s.score)
    assert best.seq == 2
    assert best.parts.time == 1.0
    # Without time hints the May note has no special standing.
    plain = client.get_context(
        "garden", "what did I do with the tomatoes in May?", max_tokens=400, time_hints=False
    )
    assert plain.time_range is None
    assert all(s.parts.time == 0.0 for s in plain.history)


def test_before_an_event_uses_the_events_time(client: Client) -> None:
    client.create_conversation("ops", settings=ConversationSettings(window_max_items=2))
    t0 = datetime(2024, 1, 10, tzinfo=UTC)
    client.append_batch(
        "ops",
        [
            NewItem("Backups ran nightly on the old cluster.", timestamp=t0),
            NewItem(
                "We ran the postgres migration to the new cluster today.",
                timestamp=t0 + timedelta(days=3),
            ),
            NewItem("Backups now run hourly on the new cluster.", timestamp=t0 + timedelta(days=5)),
            NewItem("Lunch order: noodles.", timestamp=t0 + timedelta(days=6)),
            NewItem("Weekly sync moved to Thursday.", timestamp=t0 + timedelta(days=7)),
        ],
    )
    ctx = client.get_context("ops", "how did backups run before the migration?", max_tokens=400)
    assert ctx.time_range is not None and ctx.time_range.until is not None
    best = max(ctx.history, key=lambda s: s.score)
    assert best.seq == 1
    # "before failing" orders steps; it names no time, though an item mentions failing.
    client.append("ops", "The restore job kept failing on the new cluster.")
    retries = client.get_context(
        "ops", "how often does the backup job retry before failing?", max_tokens=400
    )
    assert retries.time_range is None
