"""The newest turns through gRPC: no append evicts what was just said, however many older
turns carry flags, and the recent part of every context holds the newest turns, whatever the
query. On synthetic status chatter and on a real conversation (LoCoMo's conv-26)."""

from __future__ import annotations

import gzip
import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from contextwm_client import Client, ImportItem, NewItem

ROOT = Path(__file__).resolve().parents[2]


def _status_pairs(n: int) -> list[NewItem]:
    """Flagged user questions, each with a plain assistant answer."""
    items: list[NewItem] = []
    for i in range(n):
        region = ("eu-west", "us-east", "ap-south")[i % 3]
        items.append(
            NewItem(f"Question {i}: what is the current status of the X service in {region}?")
        )
        items.append(
            NewItem(
                f"The X service in {region} is healthy; latency is {20 + i % 17} ms.",
                role="assistant",
            )
        )
    return items


def _window(client: Client, conversation_id: str) -> set[int]:
    seqs: set[int] = set()
    token = ""
    while True:
        page = client.list_items(
            conversation_id, page_size=1000, page_token=token, states=["window"]
        )
        seqs.update(i.seq for i in page.entries)
        token = page.next_page_token
        if not token:
            return seqs


def test_an_append_never_evicts_itself_beside_flagged_turns(client: Client) -> None:
    client.append_batch("status", _status_pairs(110))
    updates = []
    for k in range(3):
        text = (
            f"Update {k}: I just rolled back the gateway deploy to version 4.{k} because of a"
            " memory leak."
        )
        outcome = client.append("status", text)
        assert outcome.evicted_seqs and outcome.seq not in outcome.evicted_seqs
        updates.append(outcome.seq)
    window = _window(client, "status")
    assert set(updates) <= window
    assert len(window) == 100  # the item limit still holds
    for query in ("which region has the worst latency?", "summarize the conversation", ""):
        ctx = client.get_context("status", query or None, max_tokens=1024)
        assert updates[-1] in {s.seq for s in ctx.recent}, query
        assert ctx.total_tokens <= 1024


def test_the_tail_settings_are_per_conversation_and_checked(client: Client) -> None:
    from contextwm_client import ConversationSettings, InvalidArgumentError

    client.create_conversation(
        "fifo",
        settings=ConversationSettings(
            window_max_items=5, protected_tail_items=50, protected_tail_share=1.0
        ),
    )
    got = client.get_conversation("fifo").settings
    assert (got.protected_tail_items, got.protected_tail_share) == (50, 1.0)
    # A tail as long as the window makes it first in, first out: flags no longer decide.
    client.append_batch("fifo", [NewItem(f"Why does step {k} fail?") for k in range(5)])
    client.append_batch("fifo", [NewItem(f"ok {k}", role="tool") for k in range(5)])
    assert _window(client, "fifo") == {6, 7, 8, 9, 10}
    with pytest.raises(InvalidArgumentError, match="protected_tail_items"):
        client.update_conversation("fifo", ConversationSettings(protected_tail_items=0))
    with pytest.raises(InvalidArgumentError, match="protected_tail_share"):
        client.update_conversation("fifo", ConversationSettings(protected_tail_share=1.5))


def _locomo_dir() -> Path:
    """LoCoMo's dev half, which its licence keeps out of this repository: named by
    CONTEXTWM_LOCOMO_DATA, or beside the checkout as the project's shared data."""
    named = os.environ.get("CONTEXTWM_LOCOMO_DATA")
    candidates = [Path(named)] if named else []
    candidates += [
        ROOT.parent / "shared" / "data" / "locomo_dev",
        Path("/work/shared/data/locomo_dev"),
    ]
    for path in candidates:
        if (path / "turns.jsonl.gz").is_file():
            return path
    pytest.fail(
        "LoCoMo's dev half was not found (looked in: "
        + ", ".join(str(p) for p in candidates)
        + "); set CONTEXTWM_LOCOMO_DATA to a directory holding turns.jsonl.gz"
        " (snap-research/LoCoMo, data/locomo10.json, converted as bench_locomo.py describes)"
    )


def test_a_real_conversation_keeps_its_last_exchange(client: Client) -> None:
    with gzip.open(_locomo_dir() / "turns.jsonl.gz", "rt") as f:
        turns = [t for t in map(json.loads, f) if t["conversation_id"] == "conv-26"]
    turns.sort(key=lambda t: t["order"])
    first = turns[0]["speaker"]
    result = client.import_items(
        ImportItem(
            "conv-26",
            NewItem(
                f"{t['speaker']}: {t['text']}",
                role="user" if t["speaker"] == first else "assistant",
                timestamp=datetime.fromisoformat(t["timestamp"]),
                idempotency_key=t["dia_id"],
            ),
        )
        for t in turns
    )
    assert result.appended == len(turns) > 400
    last_session = [n + 1 for n, t in enumerate(turns) if t["session"] == turns[-1]["session"]]
    window = _window(client, "conv-26")
    # The whole last session (13 short turns, well inside the tail) is in the window.
    assert set(last_session) <= window
    last_exchange = set(last_session[-2:])
    for query in ("What did Caroline do last?", "summarize the conversation", None):
        ctx = client.get_context("conv-26", query, max_tokens=1024)
        assert last_exchange <= {s.seq for s in ctx.recent}, query
