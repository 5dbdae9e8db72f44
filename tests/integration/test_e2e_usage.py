"""The models table, usage and the active context, through gRPC."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm.domain.usage import ModelSpec
from contextwm_client import (
    Client,
    ConversationSettings,
    FailedPreconditionError,
    InvalidArgumentError,
    NewItem,
)

MODELS = {
    "small": ModelSpec("small", context_limit=1000, reserved_reply_tokens=200),
    "wide": ModelSpec(
        "wide", context_limit=128_000, reserved_reply_tokens=0, encoding="o200k_base"
    ),
}


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service(models=MODELS)
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def _fill(client: Client, cid: str, n: int, words: int = 30) -> int:
    """Appends n turns of about `words` words; returns their total tokens."""
    items = [
        NewItem(
            " ".join(f"word{k}" for k in range(i, i + words)),
            role="user" if i % 2 == 0 else "assistant",
        )
        for i in range(n)
    ]
    result = client.append_batch(cid, items)
    return sum(r.token_count for r in result.results)


def test_a_named_model_brings_its_limit_reserve_and_encoding(client: Client) -> None:
    conv = client.create_conversation("m", settings=ConversationSettings(model="wide"))
    assert conv.settings.model == "wide"
    assert conv.settings.encoding == "o200k_base"  # the model's encoding
    usage = client.get_usage("m")
    assert (usage.context_limit, usage.reserved_reply_tokens, usage.usable_tokens) == (
        128_000,
        0,
        128_000,
    )
    assert usage.model == "wide"


def test_the_threshold_applies_to_the_limit_minus_the_reply_reserve(client: Client) -> None:
    client.create_conversation("t", settings=ConversationSettings(model="small"))
    tokens = _fill(client, "t", 12)  # 720 tokens: over 85 % of 800, under 1000
    usage = client.get_usage("t")
    assert usage.usable_tokens == 800
    assert usage.active_tokens == tokens
    assert usage.fill_ratio == pytest.approx(tokens / 800)
    assert usage.threshold == 0.85
    assert 0.85 * 800 <= tokens < 1000
    assert usage.should_compact  # would be false against the whole limit of 1000
    assert "<context-compaction-request>" in usage.summary_request


def test_own_limit_overrides_the_model_and_no_limit_means_no_management(
    client: Client,
) -> None:
    client.create_conversation(
        "own", settings=ConversationSettings(model="small", context_limit=50_000)
    )
    _fill(client, "own", 12)
    usage = client.get_usage("own")
    assert (usage.context_limit, usage.reserved_reply_tokens) == (50_000, 200)
    assert not usage.should_compact
    client.create_conversation("free")
    _fill(client, "free", 200)
    free = client.get_usage("free")
    assert free.context_limit == 0 and free.fill_ratio == 0.0
    assert not free.should_compact and free.summary_request == ""
    assert free.active_tokens > 5000


def test_unknown_model_and_bad_limits_are_invalid_argument(client: Client) -> None:
    with pytest.raises(InvalidArgumentError, match=r"unknown model 'gpt-9'.*small, wide"):
        client.create_conversation("x", settings=ConversationSettings(model="gpt-9"))
    with pytest.raises(InvalidArgumentError, match="compaction_threshold"):
        client.create_conversation("x", settings=ConversationSettings(compaction_threshold=1.5))
    with pytest.raises(InvalidArgumentError, match="reserved_reply_tokens"):
        client.create_conversation(
            "x", settings=ConversationSettings(context_limit=100, reserved_reply_tokens=100)
        )


def test_threshold_is_per_conversation_and_can_be_switched_off(client: Client) -> None:
    client.create_conversation(
        "low", settings=ConversationSettings(model="small", compaction_threshold=0.2)
    )
    _fill(client, "low", 8)
    assert client.get_usage("low").should_compact
    client.update_conversation("low", ConversationSettings(compaction_enabled=False))
    usage = client.get_usage("low")
    assert not usage.should_compact and not usage.compaction_enabled
    assert usage.fill_ratio > 0.2


def test_a_reported_count_wins_when_larger_and_grows_with_appends(client: Client) -> None:
    client.create_conversation("r", settings=ConversationSettings(context_limit=10_000))
    ours = _fill(client, "r", 4)
    low = client.get_usage("r", reported_input_tokens=1, reported_cache_read_input_tokens=0)
    assert (low.used_tokens, low.source) == (ours, "server")
    high = client.get_usage("r", reported_input_tokens=3000, reported_cache_read_input_tokens=1200)
    assert (high.used_tokens, high.reported_tokens, high.source) == (4200, 4200, "reported")
    added = client.append("r", "one more turn from the user", role="user").token_count
    later = client.get_usage("r")  # no new report: the last one plus what came since
    assert later.reported_tokens == 4200 + added
    assert later.used_tokens == 4200 + added and later.source == "reported"
    assert later.fill_ratio == pytest.approx((4200 + added) / 10_000)
    with pytest.raises(InvalidArgumentError, match="reported"):
        client.get_usage("r", reported_input_tokens=-5)


def test_active_context_is_paged_in_order_with_roles_and_a_token_total(
    client: Client,
) -> None:
    client.create_conversation("a", settings=ConversationSettings(window_max_items=5))
    tokens = _fill(client, "a", 23)  # most of it is evicted from the window: still active
    first = client.get_active_context("a", page_size=10)
    assert [e.seq for e in first.entries] == list(range(1, 11))
    assert first.total_entries == 23 and first.total_tokens == tokens
    assert [e.role for e in first.entries[:2]] == ["user", "assistant"]
    entries = list(client.iter_active_context("a", page_size=7))
    assert [e.seq for e in entries] == list(range(1, 24))
    assert sum(e.token_count for e in entries) == tokens
    assert all(e.treatment == "as_is" and e.content.startswith("word") for e in entries)
    assert entries[0].as_message() == {"role": "user", "content": entries[0].content}


def test_compacting_nothing_is_refused(client: Client) -> None:
    client.create_conversation("empty")
    with pytest.raises(FailedPreconditionError, match="nothing to compact"):
        client.compact("empty", "a summary")
