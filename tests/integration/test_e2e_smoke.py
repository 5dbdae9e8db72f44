"""A first end-to-end pass through a real server: append, read back, get context."""

from __future__ import annotations

from contextwm_client import Client


def test_append_then_context_returns_the_items(client: Client) -> None:
    first = client.append("c1", "My sister moved to Lisbon last spring.", role="user")
    second = client.append("c1", "Lisbon is lovely in spring.", role="assistant")
    assert (first.seq, second.seq) == (1, 2)
    ctx = client.get_context("c1", "where does my sister live?", max_tokens=200)
    assert [s.seq for s in ctx.recent] == [1, 2]
    assert "Lisbon" in ctx.text
    assert ctx.total_tokens <= 200
