"""Enhanced context: window plus history, rendered in sections, never over budget."""

from __future__ import annotations

import bpe_openai
import pytest
from contextwm_client import Client, ConversationSettings, InvalidArgumentError, NewItem

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores

FILLER = [
    "The quarterly report needs two more charts before Friday.",
    "I switched the office plants to a weekly watering schedule.",
    "Our cat knocked the coffee mug off the desk again.",
    "The new keyboard has a much nicer key travel.",
    "Traffic on the ring road was terrible this morning.",
    "We should order more printer paper for the team.",
]


def _conversation(client: Client, conv: str, n: int = 60, items: int = 6) -> None:
    # No detected flags: importance would keep the question in the window.
    client.create_conversation(
        conv, settings=ConversationSettings(window_max_items=items, detect_importance=False)
    )
    batch = [
        NewItem("Which port does the billing service listen on?", role="user"),
        NewItem("The billing service listens on port 8443 behind the proxy.", role="assistant"),
    ]
    for k in range(n):
        batch.append(
            NewItem(f"{FILLER[k % len(FILLER)]} (note {k})", role=("user", "assistant")[k % 2])
        )
    client.append_batch(conv, batch)


def test_sections_budget_and_no_repeats(client: Client) -> None:
    _conversation(client, "c")
    enc = bpe_openai.get_encoding("cl100k_base")
    for budget in (60, 120, 300, 1000, 4000):
        ctx = client.get_context("c", "what port is billing on?", max_tokens=budget)
        assert ctx.total_tokens <= budget
        assert len(enc.encode_ordinary(ctx.text)) == ctx.total_tokens
        assert ctx.tokens.budget == budget
        recent_seqs = [s.seq for s in ctx.recent]
        assert recent_seqs == sorted(recent_seqs)
        assert not set(recent_seqs) & {s.seq for s in ctx.history}
        assert ctx.text.endswith("# Current Query\n\nwhat port is billing on?")
    # Both layouts put history first, so the text reads in time order up to the query.
    headings = ("# Relevant Historical Context", "# Recent Context", "# Current Query")
    for share in (None, 0.5):
        ctx = client.get_context(
            "c", "what port is billing on?", max_tokens=1000, recent_share=share
        )
        order = [ctx.text.index(h) for h in headings]
        assert order == sorted(order)
        assert ctx.tokens.recent > 0 and ctx.tokens.history > 0


def test_history_hits_carry_score_parts_and_neighbours(client: Client) -> None:
    _conversation(client, "c")
    # The fixed split pairs a hit with its neighbour (the default offers neighbours as
    # candidates of their own: test_e2e_relevant_context).
    ctx = client.get_context("c", "what port is billing on?", max_tokens=400, recent_share=0.5)
    by_seq = {s.seq: s for s in ctx.history}
    # The question and its answer come together: one as a hit, the other as its neighbour.
    assert {1, 2} <= by_seq.keys()
    assert {by_seq[1].neighbor_of, by_seq[2].neighbor_of} in ({None, 1}, {None, 2})
    hit = by_seq[1] if by_seq[1].neighbor_of is None else by_seq[2]
    assert hit.score > 0
    assert hit.parts.similarity > 0.3 and hit.parts.lexical > 0
    assert 0 < hit.parts.recency < 1
    assert hit.parts.role in (0.2, 0.3)
    without = client.get_context(
        "c", "what port is billing on?", max_tokens=400, include_neighbors=False, recent_share=0.5
    )
    assert all(s.neighbor_of is None for s in without.history)


def test_unused_share_flows_to_the_other_part(client: Client) -> None:
    client.create_conversation("flow")
    for k in range(30):
        client.append("flow", f"{FILLER[k % len(FILLER)]} ({k})")
    ctx = client.get_context("flow", "unrelated zebra migration", max_tokens=300)
    assert ctx.history == ()  # nothing archived
    assert ctx.tokens.recent > 150  # more than its half, because history left it unused


def test_threshold_is_configurable(client: Client) -> None:
    _conversation(client, "c")
    strict = client.get_context(
        "c", "what port is billing on?", max_tokens=400, mode="dense", similarity_threshold=0.99
    )
    assert strict.history == ()
    loose = client.get_context(
        "c", "what port is billing on?", max_tokens=400, mode="dense", similarity_threshold=-1.0
    )
    assert loose.history


def test_without_a_query_the_focus_stands_in(client: Client) -> None:
    _conversation(client, "c")
    client.update_conversation("c", ConversationSettings(focus_items=1))
    client.append("c", "Remind me which port the billing service uses?")
    ctx = client.get_context("c", None, max_tokens=400)
    assert ctx.query_from_focus
    assert "billing" in ctx.query
    assert "# Current Query" not in ctx.text
    assert 2 in {s.seq for s in ctx.history}


def test_budget_smaller_than_the_query_is_rejected(client: Client) -> None:
    _conversation(client, "c")
    with pytest.raises(InvalidArgumentError, match="cannot hold the query"):
        client.get_context("c", "word " * 100, max_tokens=20)
    with pytest.raises(InvalidArgumentError, match="max_tokens"):
        client.get_context("c", "q", max_tokens=0)
    with pytest.raises(InvalidArgumentError, match="recent_share"):
        client.get_context("c", "q", max_tokens=100, recent_share=1.5)
