"""The agent loop end to end: a long simulated agent loop through gRPC that compacts several
times, restores a checkpoint and re-reads files, never overflows and never loses an item."""

from __future__ import annotations

import random

import pytest
from conftest import StartService
from contextwm_client import Client, ConversationSettings, FileRef, NewItem

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores

LIMIT = 3000
RESERVE = 500
FILES = ["src/app.py", "src/db.py", "src/auth.py", "tests/test_app.py"]


def fake_llm_summary(request: str) -> str:
    """What the agent's LLM would write; it must carry the user's instructions verbatim."""
    instructions = [
        line[2:] for line in request.splitlines() if line.startswith("- ") and "Always" in line
    ]
    return "Task: make the test suite pass. Progress: fixed db and auth.\n" + "\n".join(
        instructions
    )


def source(path: str, version: int) -> str:
    return "\n".join(f"# {path} v{version} line {n}: value = {n * version}" for n in range(25))


def test_a_long_agent_loop_stays_under_its_limit_and_keeps_every_item(
    start_service: StartService,
) -> None:
    service = start_service()
    rng = random.Random(3)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation(
            "agent",
            settings=ConversationSettings(context_limit=LIMIT, reserved_reply_tokens=RESERVE),
        )
        appended = 1
        client.append("agent", "Make the test suite pass. Always run pytest with -x.", role="user")
        versions = dict.fromkeys(FILES, 1)
        compactions = restored = 0
        sent_tokens: list[int] = []
        for step in range(120):
            usage = client.get_usage("agent")
            if usage.should_compact:
                assert "Always run pytest with -x." in usage.summary_request
                summary = fake_llm_summary(usage.summary_request)
                result = client.compact("agent", summary)
                appended += 1  # the marker
                compactions += 1
                assert not result.usage.should_compact
                assert "Always run pytest with -x." in result.compaction.ledger
            # What the agent sends its LLM: the active context, with its token total.
            page = client.get_active_context("agent", page_size=1000)
            assert page.next_page_token == ""
            assert page.total_tokens == sum(e.token_count for e in page.entries)
            sent_tokens.append(page.total_tokens)
            assert page.total_tokens <= LIMIT - RESERVE  # never over the usable context
            path = rng.choice(FILES)
            if rng.random() < 0.3:
                versions[path] += 1
            outcome = f"FAILED test_app.py::test_{step}" if step % 3 else "12 passed"
            batch = [
                NewItem(f"Step {step}: reading {path} and running the tests.", role="assistant"),
                NewItem(
                    source(path, versions[path]),
                    role="tool",
                    metadata={"tool": "read_file"},
                    file=FileRef(path, "read"),
                ),
                NewItem(
                    f"$ pytest -x\n{outcome}\nexit code {1 if step % 3 else 0}",
                    role="tool",
                    metadata={"tool": "bash"},
                ),
            ]
            client.append_batch("agent", batch)
            appended += len(batch)
            if step == 40:
                client.create_checkpoint("agent", "step-40")
            if step == 70:
                restore = client.restore_checkpoint("agent", "step-40")
                restored += 1
                assert restore.reverted_items > 0
        final = client.get_usage("agent")
        items = list(client.iter_items("agent"))
        assert compactions >= 3 and restored == 1
        assert len(items) == appended  # every item is still listed
        assert [i.seq for i in items] == list(range(1, appended + 1))
        states = {i.state for i in items}
        assert {"compacted", "reverted"} <= states
        markers = [i for i in items if i.kind == "compaction"]
        assert len(markers) == compactions and all(m.compaction for m in markers)
        assert final.optimisations.duplicate_reads > 0  # files were re-read
        assert final.used_tokens <= LIMIT - RESERVE
        assert max(sent_tokens) <= LIMIT - RESERVE
