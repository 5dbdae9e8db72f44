"""The asyncio client and the command line against a real server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from contextwm.app import Service
from contextwm_client import (
    AsyncClient,
    Client,
    ContextWMError,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
)


def test_async_client_round_trip(service: Service) -> None:
    async def run() -> None:
        async with AsyncClient(f"127.0.0.1:{service.port}") as client:
            r = await client.append("a", "async hello", metadata={"k": "v"})
            assert r.seq == 1
            batch = await client.append_batch("a", [NewItem("two"), NewItem("three")])
            assert [x.seq for x in batch.results] == [2, 3]
            results = await asyncio.gather(
                *(client.get_context("a", "hello", max_tokens=100) for _ in range(5))
            )
            assert all(ctx.total_tokens <= 100 for ctx in results)
            assert results[0].recent[0].metadata == {"k": "v"}
            items = [i async for i in client.iter_items("a")]
            assert [i.content for i in items] == ["async hello", "two", "three"]
            with pytest.raises(NotFoundError) as info:
                await client.get_conversation("missing")
            assert info.value.code == "NOT_FOUND"
            assert isinstance(info.value, ContextWMError)

    asyncio.run(run())


def test_a_batch_over_the_servers_limit_is_sent_in_calls_of_that_many(
    service: Service,
) -> None:
    items = [NewItem(f"line {n}") for n in range(2000)]  # the server takes 1,000 a call
    with Client(f"127.0.0.1:{service.port}") as client:
        batch = client.append_batch("big", items)
        assert [r.seq for r in batch.results] == list(range(1, 2001))
        assert batch.window == client.get_conversation("big").window
        # Each call is all or nothing: those before a refused one stay, none after it goes.
        bad = [*items[:5], NewItem("   "), *items[6:8]]
        with pytest.raises(InvalidArgumentError, match="the first 3 items of the batch were"):
            client.append_batch("small", bad, batch_size=3)
        assert [i.content for i in client.iter_items("small")] == ["line 0", "line 1", "line 2"]

    async def run() -> None:
        async with AsyncClient(f"127.0.0.1:{service.port}") as client:
            batch = await client.append_batch("async-big", items[:1500])
            assert len(batch.results) == 1500

    asyncio.run(run())


def _cli(service: Service, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwm", "--target", f"127.0.0.1:{service.port}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_for_people(service: Service) -> None:
    out = _cli(service, "append", "c", "The vault passphrase is Quillfeather.", "--meta", "turn=1")
    assert out.returncode == 0, out.stderr
    assert "appended seq 1" in out.stdout
    out = _cli(service, "context", "c", "passphrase?", "--max-tokens", "100", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["recent"][0]["item"]["content"] == "The vault passphrase is Quillfeather."
    out = _cli(service, "context", "c", "passphrase?", "--max-tokens", "100")
    assert "# Recent Context" in out.stdout and "Quillfeather" in out.stdout
    out = _cli(service, "get", "nope")
    assert out.returncode == 1
    assert out.stderr.startswith("error: NOT_FOUND")
    assert "Traceback" not in out.stderr


def test_cli_agent_loop_commands(service: Service) -> None:
    out = _cli(
        service, "create", "loop", "--context-limit", "1000", "--reserved-reply-tokens", "100"
    )
    assert out.returncode == 0, out.stderr
    assert "context limit" in out.stdout and "1000" in out.stdout
    for k in range(6):
        role = "user" if k % 2 == 0 else "assistant"
        text = f"Turn {k}: always keep the changelog current. " * 8
        assert _cli(service, "append", "loop", text, "--role", role).returncode == 0
    out = _cli(service, "usage", "loop", "--json")
    assert out.returncode == 0, out.stderr
    usage = json.loads(out.stdout)
    assert usage["usable_tokens"] == 900 and usage["active_items"] == 6
    assert _cli(service, "checkpoint", "loop", "six").returncode == 0
    out = _cli(service, "compact", "loop", "--summary", "Six turns about the changelog.")
    assert out.returncode == 0, out.stderr
    out = _cli(service, "active", "loop", "--json")
    entries = json.loads(out.stdout)["entries"]
    assert [e["kind"] for e in entries] == ["compaction"]
    out = _cli(service, "restore", "loop", "six")
    assert out.returncode == 0, out.stderr
    out = _cli(service, "edits", "loop")
    assert "compaction" in out.stdout
    out = _cli(service, "update", "loop", "--no-compaction")
    assert out.returncode == 0 and "False" in out.stdout
    out = _cli(service, "truncate", "loop", "sideways")
    assert out.returncode != 0 and "Traceback" not in out.stderr
