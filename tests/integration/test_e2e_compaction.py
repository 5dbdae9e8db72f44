"""Compaction with the fact ledger, as a transaction, and the full history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm_client import (
    Client,
    ConversationSettings,
    FailedPreconditionError,
    FileRef,
    InvalidArgumentError,
    NewItem,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores

INSTRUCTION = "Never push to main without asking me first."


def _agent_session(client: Client, cid: str, steps: int = 12) -> None:
    """A request with a standing instruction, then steps of reads, commands and answers."""
    client.append(
        cid, f"Please fix the flaky login test in tests/test_login.py. {INSTRUCTION}", role="user"
    )
    client.append(cid, "I will start by reading the test file.", role="assistant")
    for n in range(steps):
        client.append_batch(
            cid,
            [
                NewItem(
                    f"def test_login_{n}():\n    assert login('user{n}', 'pw') is True\n" * 3,
                    role="tool",
                    metadata={"tool": "read_file"},
                    file=FileRef(f"tests/test_login_{n}.py", "read"),
                ),
                NewItem(
                    f"$ pytest tests/test_login_{n}.py -x\nFAILED test_login_{n} - "
                    "AssertionError: session cookie missing\nexit code 1",
                    role="tool",
                    metadata={"tool": "bash"},
                ),
                NewItem(
                    f"Step {n}: the session cookie is not set before the redirect; I patched "
                    f"auth/session_{n}.py to set it first.",
                    role="assistant",
                ),
            ],
        )


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def _limited(client: Client, cid: str, limit: int = 1400) -> None:
    client.create_conversation(
        cid, settings=ConversationSettings(context_limit=limit, window_max_items=10)
    )


def test_summary_request_carries_the_fact_ledger(client: Client) -> None:
    _limited(client, "s")
    _agent_session(client, "s")
    usage = client.get_usage("s")
    assert usage.should_compact
    request = usage.summary_request
    assert "<context-compaction-request>" in request
    assert INSTRUCTION in request  # the user's instruction, verbatim
    assert "tests/test_login_11.py" in request  # the newest file read
    assert "pytest tests/test_login_11.py -x" in request  # a command, with its outcome
    assert "exit 1" in request


def test_compaction_records_a_marker_and_keeps_everything(client: Client) -> None:
    _limited(client, "c")
    _agent_session(client, "c")
    before = client.get_usage("c")
    total_before = before.active_items
    result = client.compact("c", "Fixed the login tests by setting the cookie first.")
    c = result.compaction
    assert (c.number, c.extractive) == (1, False)
    assert c.summary == "Fixed the login tests by setting the cookie first."
    assert c.items_archived == total_before
    assert c.tokens_before == before.active_tokens
    assert c.tokens_after == result.usage.active_tokens < c.tokens_before
    assert INSTRUCTION in c.ledger
    assert any(f.kind == "instruction" and f.text.startswith("Never push") for f in c.facts)
    assert not result.usage.should_compact  # a compaction never asks for another at once
    # The active context now starts at the marker; the agent continues from there.
    client.append("c", "Thanks. Now run the whole suite.", role="user")
    entries = list(client.iter_active_context("c"))
    assert [e.kind for e in entries] == ["compaction", "message"]
    assert entries[0].seq == c.marker_seq and entries[0].role == "user"
    assert "Fixed the login tests" in entries[0].content and INSTRUCTION in entries[0].content
    # Nothing was deleted: every earlier item is listed, behind the compaction, and searchable.
    items = list(client.iter_items("c"))
    assert len(items) == total_before + 2
    assert {i.state for i in items if i.seq < c.marker_seq} == {"compacted"}
    marker = next(i for i in items if i.seq == c.marker_seq)
    assert marker.kind == "compaction" and marker.compaction is not None
    assert marker.compaction.number == 1 and marker.compaction.summary == c.summary
    hits = client.search("session cookie redirect in auth/session_4.py", conversation_id="c")
    assert 3 * 4 + 2 + 2 + 1 in {h.seq for h in hits.hits}  # the step-4 answer (seq 17)


def test_without_a_summary_the_server_writes_a_labelled_extractive_one(
    client: Client,
) -> None:
    _limited(client, "x")
    _agent_session(client, "x")
    client.pin("x", 2)
    result = client.compact("x")
    c = result.compaction
    assert c.extractive
    assert c.summary.startswith("[Extractive summary written by contextwm without an LLM")
    assert "fix the flaky login test" in c.summary  # the first user request
    assert "I will start by reading the test file." in c.summary  # the pinned item
    assert "session cookie missing" in c.summary  # a flagged error
    assert c.tokens_after < c.tokens_before


def test_a_blank_or_useless_summary_is_refused_and_nothing_changes(client: Client) -> None:
    _limited(client, "b", limit=100_000)
    _agent_session(client, "b")
    before = [(e.seq, e.content) for e in client.iter_active_context("b")]
    active = client.get_usage("b").active_tokens
    with pytest.raises(InvalidArgumentError, match="blank"):
        client.compact("b", "   ")
    with pytest.raises(FailedPreconditionError, match="not make the active context smaller"):
        client.compact("b", "word " * (active + 10))
    # Smaller than the context, but at or over the threshold: it would be asked for again
    # at once. (The marker adds about 320 tokens of ledger and wrapping to the summary.)
    client.update_conversation("b", ConversationSettings(context_limit=active))
    with pytest.raises(FailedPreconditionError, match="threshold"):
        client.compact("b", "word " * (active - 400))
    assert [(e.seq, e.content) for e in client.iter_active_context("b")] == before
    assert client.get_usage("b").compactions == 0
    assert all(i.state != "compacted" for i in client.iter_items("b"))
    assert list(client.iter_context_edits("b")) == []


def test_several_compactions_number_on_and_history_shows_every_marker(
    client: Client,
) -> None:
    _limited(client, "m", limit=100_000)
    numbers = []
    for round_ in range(3):
        _agent_session(client, "m", steps=2)
        numbers.append(client.compact("m", f"Summary of round {round_}.").compaction.number)
    assert numbers == [1, 2, 3]
    items = list(client.iter_items("m"))
    markers = [i for i in items if i.kind == "compaction"]
    assert [m.compaction.number for m in markers if m.compaction] == [1, 2, 3]
    assert [i.state for i in items].count("compacted") == len(items) - 1  # all but the last
    assert client.get_usage("m").compactions == 3
    entries = list(client.iter_active_context("m"))
    assert len(entries) == 1 and "Summary of round 2." in entries[0].content
    edits = [e for e in client.iter_context_edits("m") if e.kind == "compaction"]
    assert [e.related_seq for e in edits] == [m.seq for m in markers]


def test_compaction_survives_a_restart(start_service: StartService, tmp_path: object) -> None:
    service = start_service()
    data_dir = service.settings.data_dir
    with Client(f"127.0.0.1:{service.port}") as client:
        _limited(client, "r")
        _agent_session(client, "r", steps=4)
        client.compact("r", "Before the restart.")
        client.append("r", "next request", role="user")
        active = [(e.seq, e.content, e.token_count) for e in client.iter_active_context("r")]
        usage = client.get_usage("r")
    service.stop(grace=0)
    again = start_service(data_dir=data_dir)
    with Client(f"127.0.0.1:{again.port}") as client:
        assert [
            (e.seq, e.content, e.token_count) for e in client.iter_active_context("r")
        ] == active
        after = client.get_usage("r")
        assert (after.active_tokens, after.compactions) == (usage.active_tokens, 1)
        assert client.compact("r", "After the restart.").compaction.number == 2
