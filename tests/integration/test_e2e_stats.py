"""GetStats through a real server: the figures agree with ListItems and GetConversation in
every state, cover a scope across pages and namespaces, count vectors and saved index files;
and `contextwm stats` prints them as a table and as JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm import cli
from contextwm.app import Service
from contextwm.cli import render
from contextwm_client import (
    AsyncClient,
    Client,
    ConversationSettings,
    ConversationStats,
    InvalidArgumentError,
    NotFoundError,
    Role,
    StateStats,
    StatsResult,
)


@pytest.fixture
def service(start_service: StartService) -> Service:
    # Indexes are saved only when a test says so, and reads wait for every vector: the
    # machine running the suite may be busy.
    return start_service(index_save_seconds=3600.0, index_wait_seconds=60.0)


@pytest.fixture
def client(service: Service) -> Iterator[Client]:
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def _turns(client: Client, cid: str, start: int, n: int, namespace: str | None = None) -> None:
    for k in range(start, start + n):
        role: Role = "user" if k % 2 == 0 else "assistant"
        text = f"Turn {k}: notes on the greenhouse irrigation schedule, part {k}."
        client.append(cid, text, role=role, namespace=namespace)


def _every_state(client: Client, cid: str) -> None:
    """Window, archived, compacted and reverted items in one conversation."""
    client.create_conversation(cid, settings=ConversationSettings(window_max_items=4))
    _turns(client, cid, 0, 6)  # two evicted
    client.compact(cid, "Summary: six turns on the irrigation schedule.")
    _turns(client, cid, 6, 5)  # the window evicts again, the pinned marker last
    client.create_checkpoint(cid, "cp")
    _turns(client, cid, 11, 3)
    client.restore_checkpoint(cid, "cp")  # the last three turns are reverted


def test_figures_agree_with_the_items_and_the_conversation(client: Client) -> None:
    _every_state(client, "g")
    items = list(client.iter_items("g"))
    stats = client.get_stats("g")
    (row,) = stats.conversations
    assert (row.namespace, row.conversation_id) == ("default", "g")
    figures = row.stats
    for state in ("window", "archived", "compacted", "reverted"):
        listed = [i for i in items if i.state == state]
        assert getattr(figures, state) == StateStats(
            len(listed), sum(i.token_count for i in listed)
        ), state
        assert listed, f"no {state} item: the set-up no longer covers every state"
    assert (figures.items, figures.tokens) == (len(items), sum(i.token_count for i in items))
    conversation = client.get_conversation("g")
    assert figures.items == conversation.total_items
    assert (figures.window.items, figures.window.tokens) == (
        conversation.window.item_count,
        conversation.window.token_count,
    )
    assert figures.archived.items + figures.compacted.items == conversation.archived_items
    assert figures.oldest_item_at == min(i.timestamp for i in items)
    assert figures.newest_item_at == max(i.timestamp for i in items)
    assert stats.total == figures
    assert (stats.conversation_count, stats.next_page_token) == (1, "")

    # A search waits until every item appended before it has its vector.
    client.search("irrigation schedule", conversation_id="g", include_window=True)
    after = client.get_stats("g").conversations[0].stats
    assert (after.vectors, after.missing_vectors) == (len(items), 0)
    assert after.missing_vectors == client.get_conversation("g").pending_embeddings


def test_totals_cover_the_scope_on_every_page(client: Client) -> None:
    sizes = {("team-a", "a1"): 3, ("team-a", "a2"): 1, ("team-a", "a3"): 2, ("team-b", "b1"): 4}
    for (namespace, cid), n in sizes.items():
        _turns(client, cid, 0, n, namespace=namespace)
    client.create_conversation("b2", namespace="team-b")  # no items
    # Vectors arriving between two pages would change the totals: wait for them all.
    for namespace, cid in sizes:
        client.search("x", conversation_id=cid, namespace=namespace)

    rows: list[ConversationStats] = []
    pages: list[StatsResult] = []
    token = ""
    while True:
        pages.append(client.get_stats(all_namespaces=True, page_size=2, page_token=token))
        rows.extend(pages[-1].conversations)
        token = pages[-1].next_page_token
        if not token:
            break
    assert [(r.namespace, r.conversation_id) for r in rows] == [
        ("team-a", "a1"),
        ("team-a", "a2"),
        ("team-a", "a3"),
        ("team-b", "b1"),
        ("team-b", "b2"),
    ]
    assert [len(p.conversations) for p in pages] == [2, 2, 1]
    assert [r.stats.items for r in rows] == [3, 1, 2, 4, 0]
    assert rows[-1].stats.oldest_item_at is None
    for page in pages:  # every page has the whole scope's totals
        assert page.conversation_count == 5
        assert page.total == pages[0].total
    total = pages[0].total
    assert total.items == sum(sizes.values())
    assert total.tokens == sum(r.stats.tokens for r in rows)
    assert total.oldest_item_at == rows[0].stats.oldest_item_at  # a1 was written first

    team_a = client.get_stats(namespace="team-a", page_size=1)
    assert [r.conversation_id for r in team_a.conversations] == ["a1"]
    assert (team_a.total.items, team_a.conversation_count) == (6, 3)
    second = client.get_stats(namespace="team-a", page_size=1, page_token=team_a.next_page_token)
    assert [r.conversation_id for r in second.conversations] == ["a2"]
    empty = client.get_stats(namespace="nobody")
    assert (empty.conversations, empty.total.items, empty.conversation_count) == ((), 0, 0)


def test_index_bytes_are_the_saved_index_files(client: Client, service: Service) -> None:
    client.create_conversation("idx", settings=ConversationSettings(window_max_items=3))
    _turns(client, "idx", 0, 12)
    client.get_context("idx", "irrigation schedule", max_tokens=500)  # builds the index
    # Never saved yet: nothing on disk.
    assert client.get_stats("idx").total.index_bytes == 0
    assert service.engine.save_indexes() >= 1
    record = service.store.get_conversation("default", "idx")
    assert record is not None
    model = service.engine.embedder.model_name
    saved = service.settings.data_dir / "indexes" / model / f"{record.key}.faiss"
    stats = client.get_stats("idx")
    assert stats.model == model
    assert stats.conversations[0].stats.index_bytes == saved.stat().st_size > 0
    everything = client.get_stats(all_namespaces=True)
    assert everything.total.index_bytes == saved.stat().st_size


def test_the_async_client_reads_the_same_figures(client: Client, service: Service) -> None:
    _turns(client, "async", 0, 3)
    client.search("irrigation", conversation_id="async", include_window=True)  # all embedded

    async def read() -> StatsResult:
        async with AsyncClient(f"127.0.0.1:{service.port}") as c:
            return await c.get_stats("async")

    assert asyncio.run(read()) == client.get_stats("async")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"all_namespaces": True, "namespace": "team-a"}, "leave namespace empty"),
        ({"all_namespaces": True, "conversation_id": "s"}, "leave conversation_id empty"),
        ({"conversation_id": "s", "page_token": "default s"}, "has no pages"),
        ({"page_size": -1}, "page_size must be between 1 and 1000"),
        ({"page_size": 1001}, "page_size must be between 1 and 1000"),
        ({"page_token": "garbage"}, "invalid page_token 'garbage'"),
        ({"page_token": "team-b s"}, "namespace 'team-b', not of 'default'"),
        ({"conversation_id": "x" * 201}, "1..200 characters"),
        ({"namespace": "bad name!"}, "invalid namespace"),
    ],
)
def test_bad_requests_are_invalid_arguments(
    client: Client, kwargs: dict[str, object], message: str
) -> None:
    client.append("s", "one item")
    with pytest.raises(InvalidArgumentError, match=message):
        client.get_stats(**kwargs)  # type: ignore[arg-type]


def test_an_unknown_conversation_is_not_found(client: Client) -> None:
    client.append("s", "one item", namespace="team-a")
    with pytest.raises(NotFoundError, match="conversation 's' not found in namespace 'default'"):
        client.get_stats("s")


def _run_cli(service: Service, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = cli.main(["--target", f"127.0.0.1:{service.port}", "stats", *args])
    captured = capsys.readouterr()
    return status, captured.out if status == 0 else captured.err


def test_the_stats_command_prints_a_table_and_json(
    client: Client, service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    _every_state(client, "g")
    _turns(client, "other", 0, 2, namespace="team-b")
    client.search("irrigation schedule", conversation_id="g", include_window=True)
    figures = client.get_stats("g").total

    status, out = _run_cli(service, capsys)
    assert status == 0
    header, row, total, footer = out.splitlines()
    assert header.split() == [
        "conversation",
        "items",
        "window",
        "archived",
        "compacted",
        "reverted",
        "tokens",
        "vectors",
        "missing",
        "index",
        "oldest",
        "newest",
    ]
    cells = row.split()
    assert cells[:10] == [
        "g",
        str(figures.items),
        str(figures.window.items),
        str(figures.archived.items),
        str(figures.compacted.items),
        str(figures.reverted.items),
        f"{figures.tokens:,}",
        str(figures.items),
        "0",
        "0",
    ]
    assert cells[10] == "B"  # the index's unit: nothing saved yet
    assert total.startswith("total (1 conversation)")
    assert footer.startswith(f"vectors of {service.engine.embedder.model_name}")

    status, out = _run_cli(service, capsys, "--all-namespaces")
    assert status == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["default/g", "team-b/other"]
    assert lines[3].startswith("total (2 conversations)")

    service.engine.save_indexes()
    status, out = _run_cli(service, capsys, "g", "--json")
    assert status == 0
    data = json.loads(out)
    assert json.loads(render.to_json(client.get_stats("g"))) == data
    assert data["total"]["archived"] == {
        "items": figures.archived.items,
        "tokens": figures.archived.tokens,
    }
    assert data["conversations"][0]["stats"]["index_bytes"] > 0

    status, out = _run_cli(service, capsys, "--namespace", "team-b", "--json")
    assert status == 0
    assert [c["conversation_id"] for c in json.loads(out)["conversations"]] == ["other"]

    status, err = _run_cli(service, capsys, "nope")
    assert status == 1
    assert err.startswith("error: NOT_FOUND: conversation 'nope' not found")
    status, err = _run_cli(service, capsys, "g", "--all-namespaces")
    assert status == 2
    assert "--all-namespaces covers every conversation" in err
