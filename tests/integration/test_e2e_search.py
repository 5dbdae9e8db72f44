"""Search over a conversation's archive (optionally window) or a whole namespace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from contextwm_client import (
    Client,
    ConversationSettings,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _fill(client: Client, conv: str, namespace: str = "default") -> None:
    client.create_conversation(
        conv, settings=ConversationSettings(window_max_items=2), namespace=namespace
    )
    client.append_batch(
        conv,
        [
            NewItem(
                "The invoice service crashed with an OutOfMemoryError.",
                role="tool",
                timestamp=T0,
                metadata={"host": "a1"},
            ),
            NewItem(
                "We fixed the invoice crash by raising the heap limit.",
                role="assistant",
                timestamp=T0 + timedelta(days=10),
                metadata={"host": "a1"},
            ),
            NewItem(
                "Invoice totals are rounded to two decimals.",
                role="user",
                timestamp=T0 + timedelta(days=20),
                metadata={"host": "b2"},
                flags=("pinned",),
            ),
            NewItem(
                "Filler about the weather today.", role="user", timestamp=T0 + timedelta(days=30)
            ),
            NewItem(
                "More filler about lunch.", role="assistant", timestamp=T0 + timedelta(days=31)
            ),
        ],
        namespace=namespace,
    )


def test_archive_only_unless_window_is_asked_for(client: Client) -> None:
    _fill(client, "s")
    archived = {i.seq for i in client.iter_items("s", states=["archived"])}
    hits = client.search("invoice", conversation_id="s", top_k=10).hits
    assert hits and {h.seq for h in hits} <= archived
    window_hits = client.search("weather lunch", conversation_id="s", include_window=True).hits
    assert {h.seq for h in window_hits} & {4, 5}
    assert all(h.item.conversation_id == "s" for h in hits)


def test_top_k_and_filters(client: Client) -> None:
    _fill(client, "s")
    assert (
        len(client.search("invoice", conversation_id="s", include_window=True, top_k=1).hits) == 1
    )
    by_role = client.search("invoice", conversation_id="s", include_window=True, roles=["tool"])
    assert [h.seq for h in by_role.hits] == [1]
    by_flag = client.search("invoice", conversation_id="s", include_window=True, flags=["pinned"])
    assert [h.seq for h in by_flag.hits] == [3]
    by_time = client.search(
        "invoice",
        conversation_id="s",
        include_window=True,
        since=T0 + timedelta(days=5),
        until=T0 + timedelta(days=15),
    )
    assert [h.seq for h in by_time.hits] == [2]
    by_meta = client.search(
        "invoice", conversation_id="s", include_window=True, metadata={"host": "a1"}
    )
    assert sorted(h.seq for h in by_meta.hits) == [1, 2]
    assert all(dict(h.metadata)["host"] == "a1" for h in by_meta.hits)


def test_namespace_wide_search_and_isolation(client: Client) -> None:
    _fill(client, "one", namespace="tenant-a")
    _fill(client, "two", namespace="tenant-a")
    _fill(client, "other", namespace="tenant-b")
    hits = client.search(
        "invoice crash heap", top_k=20, include_window=True, namespace="tenant-a"
    ).hits
    assert {h.item.conversation_id for h in hits} == {"one", "two"}
    b_hits = client.search("invoice crash heap", include_window=True, namespace="tenant-b").hits
    assert {h.item.conversation_id for h in b_hits} == {"other"}
    assert client.search("invoice", namespace="tenant-c").hits == ()
    with pytest.raises(NotFoundError):
        client.search("invoice", conversation_id="one", namespace="tenant-b")


def test_bad_search_requests(client: Client) -> None:
    _fill(client, "s")
    with pytest.raises(InvalidArgumentError, match="query is empty"):
        client.search("  ", conversation_id="s")
    with pytest.raises(InvalidArgumentError, match="top_k"):
        client.search("invoice", conversation_id="s", top_k=5000)
    with pytest.raises(InvalidArgumentError, match="unknown importance flag"):
        client.search("invoice", conversation_id="s", flags=["shiny"])  # type: ignore[list-item]
