"""The stats command of the CLI: its table, its units, its paging and its arguments, over a
fake client."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import pytest
from contextwm import cli
from contextwm.cli import parser as cli_parser
from contextwm.cli import render
from contextwm.cli.stats import stats
from contextwm_client import ChunkCacheStats, ConversationStats, StateStats, StatsResult, StoreStats

T0 = datetime(2025, 3, 3, 14, 10, tzinfo=UTC)
T1 = datetime(2025, 3, 4, 9, 5, tzinfo=UTC)


def figures(items: int, index_bytes: int = 0, *, times: bool = True) -> StoreStats:
    return StoreStats(
        items=items,
        tokens=items * 1000,
        window=StateStats(min(items, 4), min(items, 4) * 1000),
        archived=StateStats(max(items - 4, 0), max(items - 4, 0) * 1000),
        compacted=StateStats(0, 0),
        reverted=StateStats(0, 0),
        vectors=max(items - 1, 0),
        missing_vectors=min(items, 1),
        index_bytes=index_bytes,
        oldest_item_at=T0 if times else None,
        newest_item_at=T1 if times else None,
    )


NO_CACHE = ChunkCacheStats(0, 0, 0.0, 0, 0, 0, 0)


def result(*rows: tuple[str, str, StoreStats], token: str = "", count: int = 0) -> StatsResult:
    conversations = tuple(ConversationStats(ns, cid, s) for ns, cid, s in rows)
    return StatsResult(
        conversations=conversations,
        total=figures(sum(s.items for *_, s in rows), sum(s.index_bytes for *_, s in rows)),
        conversation_count=count or len(rows),
        next_page_token=token,
        model="all-MiniLM-L6-v2",
        chunk_cache=NO_CACHE,
    )


def test_the_table_lines_up_counts_right_and_names_left() -> None:
    page = result(("team-a", "ticket-42", figures(1200, 7 * 1024)), ("team-b", "b", figures(5)))
    assert render.stats_table(page, namespaces=True, total=True) == [
        "conversation             items  window  archived  compacted  reverted     tokens  vectors"
        "  missing    index  oldest            newest",
        "team-a/ticket-42         1,200       4     1,196          0         0  1,200,000    1,199"
        "        1  7.0 KiB  2025-03-03 14:10  2025-03-04 09:05",
        "team-b/b                     5       4         1          0         0      5,000        4"
        "        1      0 B  2025-03-03 14:10  2025-03-04 09:05",
        "total (2 conversations)  1,205       4     1,201          0         0  1,205,000    1,204"
        "        1  7.0 KiB  2025-03-03 14:10  2025-03-04 09:05",
        "vectors of all-MiniLM-L6-v2; index: FAISS files as last saved; times in UTC",
    ]


def test_one_namespace_names_conversations_by_id_and_empty_ones_have_no_times() -> None:
    page = result(("default", "empty", figures(0, times=False)))
    lines = render.stats_table(page, namespaces=False, total=False)
    assert len(lines) == 3
    cells = ["empty", *["0"] * 8, "0", "B", "-", "-"]  # "0 B": the index's size and unit
    assert lines[1].split() == cells


def test_human_units_for_bytes() -> None:
    sizes = (0, 1023, 1024, 1536, 5 * 1024**2, 3 * 1024**4, 5000 * 1024**4)
    assert [render.human_bytes(n) for n in sizes] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "5.0 MiB",
        "3.0 TiB",
        "5000.0 TiB",
    ]


class PagingClient:
    """Answers get_stats from a list of pages, recording the tokens asked with."""

    def __init__(self, pages: list[StatsResult]) -> None:
        self.pages = pages
        self.asked: list[tuple[Any, ...]] = []

    def get_stats(
        self, conversation_id: str | None = None, *, all_namespaces: bool, page_token: str
    ) -> StatsResult:
        self.asked.append((conversation_id, all_namespaces, page_token))
        return self.pages[len(self.asked) - 1]


def test_every_page_is_read_and_printed_with_the_last_totals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = result(("a", "1", figures(3)), token="a/1", count=2)
    last = result(("b", "2", figures(4)), count=2)
    client = PagingClient([first, last])
    args = argparse.Namespace(
        conversation=None, all_namespaces=True, json=True, namespace="default"
    )
    assert stats(client, args) == 0  # type: ignore[arg-type]
    assert client.asked == [(None, True, ""), (None, True, "a/1")]
    expected = StatsResult(
        first.conversations + last.conversations, last.total, 2, "", last.model, NO_CACHE
    )
    assert capsys.readouterr().out == render.to_json(expected) + "\n"


def test_namespace_and_target_are_taken_after_the_command_too() -> None:
    parser, _ = cli_parser.build_parser("127.0.0.1:50051")
    before = parser.parse_args(["--namespace", "team-a", "stats"])
    after = parser.parse_args(["stats", "--namespace", "team-a", "--target", "unix:/s"])
    assert (before.namespace, before.target) == ("team-a", "127.0.0.1:50051")
    assert (after.namespace, after.target) == ("team-a", "unix:/s")
    assert parser.parse_args(["stats", "c", "--json"]).conversation == "c"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stats", "c", "--all-namespaces"], "name no CONVERSATION"),
        (["--namespace", "team-a", "stats", "--all-namespaces"], "leave out --namespace"),
    ],
)
def test_scopes_named_twice_are_usage_errors_before_any_call(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing listens on port 1: a call would fail with status 1, not 2.
    assert cli.main(["--target", "127.0.0.1:1", *argv]) == 2
    assert message in capsys.readouterr().err
