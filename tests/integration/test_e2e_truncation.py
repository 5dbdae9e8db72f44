"""Truncation strategies and tool-output masking in the active context."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm_client import (
    Client,
    ConversationSettings,
    FailedPreconditionError,
    InvalidArgumentError,
    TruncationStrategy,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def _dialog(client: Client, cid: str, pairs: int) -> None:
    for k in range(pairs):
        client.append(cid, f"Question {k}: how do I tune the {k}th rowing drill?", role="user")
        client.append(
            cid, f"Answer {k}: keep the catch light and the drive long " * 3, role="assistant"
        )


@pytest.mark.parametrize(
    ("strategy", "kept_after_pair"),
    [("none", 0), ("last_two", 2), ("half", 12), ("quarter", 6)],
)
def test_strategies_keep_the_first_pair_and_leave_a_notice(
    client: Client, strategy: TruncationStrategy, kept_after_pair: int
) -> None:
    _dialog(client, strategy, 12)  # 24 items: the first pair and 22 after it
    result = client.truncate(strategy, strategy)
    entries = list(client.iter_active_context(strategy))
    assert [e.seq for e in entries[:2]] == [1, 2]  # the first user/assistant pair
    notice = entries[2]
    assert notice.treatment == "truncation_notice" and notice.seq == 0
    assert f"{len(result.truncated_seqs)} earlier items" in notice.content
    kept = [e.seq for e in entries[3:]]
    assert len(kept) == kept_after_pair
    assert kept == list(range(25 - kept_after_pair, 25))
    assert result.truncated_seqs == tuple(range(3, 25 - kept_after_pair))
    usage = result.usage
    assert usage.optimisations.truncated_items == len(result.truncated_seqs)
    assert usage.active_tokens == sum(e.token_count for e in entries)
    # Archived, not deleted, and searchable.
    states = {i.seq: i.state for i in client.iter_items(strategy)}
    assert all(states[s] in ("archived",) for s in result.truncated_seqs)
    hits = client.search("how do I tune the 5th rowing drill", conversation_id=strategy)
    assert 11 in {h.seq for h in hits.hits}


def test_truncations_add_up_and_bad_requests_are_refused(client: Client) -> None:
    _dialog(client, "t", 12)
    first = client.truncate("t", "quarter")
    second = client.truncate("t", "half")
    assert set(first.truncated_seqs).isdisjoint(second.truncated_seqs)
    entries = list(client.iter_active_context("t"))
    assert [e.treatment for e in entries].count("truncation_notice") == 1  # one run, one notice
    with pytest.raises(InvalidArgumentError, match="unknown truncation strategy 'most'"):
        client.truncate("t", "most")  # type: ignore[arg-type]
    client.truncate("t", "none")
    with pytest.raises(FailedPreconditionError, match="nothing to truncate"):
        client.truncate("t", "none")
    assert [e.kind for e in client.iter_context_edits("t")] == ["truncation"] * 3


def test_old_tool_outputs_are_masked_and_the_stored_item_is_unchanged(
    client: Client,
) -> None:
    client.create_conversation("m", settings=ConversationSettings(mask_tool_outputs_after_turns=2))
    client.append("m", "List the open ports on the build host.", role="user")
    big = "tcp 0.0.0.0:{p} LISTEN\n"
    for step in range(4):
        client.append("m", f"Running netstat, step {step}.", role="assistant")
        client.append(
            "m",
            "".join(big.format(p=8000 + step * 100 + i) for i in range(40)),
            role="tool",
            metadata={"tool": "netstat"},
        )
    client.append("m", "Ports 8000-8339 are open.", role="assistant")
    entries = {e.seq: e for e in client.iter_active_context("m")}
    # Tool outputs at seqs 3, 5, 7, 9: those with two assistant turns after them are masked.
    assert [entries[s].treatment for s in (3, 5, 7, 9)] == ["masked", "masked", "masked", "as_is"]
    masked = entries[3]
    assert "netstat" in masked.content and "seq 3" in masked.content
    assert "\n" not in masked.content and masked.token_count < masked.original_tokens
    stored = next(i for i in client.iter_items("m") if i.seq == 3)
    assert stored.content.startswith("tcp 0.0.0.0:8000 LISTEN")
    usage = client.get_usage("m")
    assert usage.optimisations.masked_items == 3
    assert usage.optimisations.masked_tokens_saved == sum(
        entries[s].original_tokens - entries[s].token_count for s in (3, 5, 7)
    )
    client.update_conversation("m", ConversationSettings(mask_tool_outputs_after_turns=0))
    assert all(e.treatment == "as_is" for e in client.iter_active_context("m"))
