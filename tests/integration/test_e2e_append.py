"""Appends (single, batch, idempotent), exact token counts, importance flags."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import bpe_openai
import pytest
from conftest import StartService
from contextwm.conversations.validation import Limits
from contextwm_client import (
    Client,
    ConversationSettings,
    FileRef,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
    ResourceExhaustedError,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


def test_append_returns_seq_and_exact_token_count(client: Client) -> None:
    text = "Tokenizers split naïve café menus into subwords <|endoftext|> unexpectedly."
    r = client.append("c", text)
    expected = len(bpe_openai.get_encoding("cl100k_base").encode_ordinary(text))
    assert (r.seq, r.token_count) == (1, expected)
    assert client.append("c", "hello world").token_count == 2


def test_o200k_conversations_count_with_their_encoding(client: Client) -> None:
    text = "Sehr geehrte Damen und Herren, 東京で会いましょう。"
    client.create_conversation("o", settings=ConversationSettings(encoding="o200k_base"))
    r = client.append("o", text)
    assert r.token_count == len(bpe_openai.get_encoding("o200k_base").encode_ordinary(text))
    assert r.token_count != len(bpe_openai.get_encoding("cl100k_base").encode_ordinary(text))


def test_fields_are_returned_unchanged(client: Client) -> None:
    when = datetime(2021, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)
    client.append(
        "c",
        "Read the config file.",
        role="tool",
        timestamp=when,
        metadata={"turn": "7", "k.with dots": "v=1"},
        file=FileRef("src/app/config.py", "read"),
    )
    (item,) = client.list_items("c").entries
    assert item.role == "tool"
    assert item.timestamp == when
    assert dict(item.metadata) == {"turn": "7", "k.with dots": "v=1"}
    assert item.file == FileRef("src/app/config.py", "read")
    assert item.state == "window"
    ctx = client.get_context("c", "config", max_tokens=200)
    assert dict(ctx.recent[0].metadata) == {"turn": "7", "k.with dots": "v=1"}


def test_batch_is_all_or_nothing(client: Client) -> None:
    good = [NewItem(f"item {n}") for n in range(3)]
    with pytest.raises(InvalidArgumentError, match=r"items\[3\]: content is empty"):
        client.append_batch("b", [*good, NewItem("   "), NewItem("after")])
    with pytest.raises(NotFoundError):
        client.list_items("b")  # not even the conversation was created
    result = client.append_batch("b", good)
    assert [r.seq for r in result.results] == [1, 2, 3]
    assert result.window.item_count == 3


def test_idempotency_key_makes_a_retry_a_no_op(client: Client) -> None:
    first = client.append("c", "once only", idempotency_key="k-1")
    again = client.append("c", "once only", idempotency_key="k-1")
    assert (again.seq, again.token_count, again.duplicate) == (first.seq, first.token_count, True)
    assert not first.duplicate
    batch = client.append_batch(
        "c", [NewItem("new one", idempotency_key="k-2"), NewItem("dup", idempotency_key="k-1")]
    )
    assert [(r.seq, r.duplicate) for r in batch.results] == [(2, False), (1, True)]
    assert [i.content for i in client.iter_items("c")] == ["once only", "new one"]
    with pytest.raises(InvalidArgumentError, match="share an idempotency_key"):
        client.append_batch(
            "c", [NewItem("x", idempotency_key="s"), NewItem("y", idempotency_key="s")]
        )


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (NewItem("", role="user"), "content is empty"),
        (NewItem("hi", role="robot"), "unknown role 'robot'"),  # type: ignore[arg-type]
        (NewItem("hi", flags=("urgent",)), "unknown importance flag 'urgent'"),  # type: ignore[arg-type]
        (NewItem("hi", file=FileRef("a.py", "delete")), "unknown file kind 'delete'"),  # type: ignore[arg-type]
        (NewItem("hi", file=FileRef("", "read")), "empty path"),
        (NewItem("hi", timestamp=datetime(1960, 1, 1, tzinfo=UTC)), "between 1970 and 9999"),
    ],
)
def test_bad_items_are_invalid_argument(client: Client, item: NewItem, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        client.append_batch("c", [item])


def test_limits_are_resource_exhausted_and_named(start_service: StartService) -> None:
    service = start_service(limits=Limits(max_item_tokens=20, max_batch_items=3))
    with Client(f"127.0.0.1:{service.port}") as client:
        with pytest.raises(ResourceExhaustedError, match=r"over the limit of 20.*max_item_tokens"):
            client.append("c", "word " * 50)
        with pytest.raises(ResourceExhaustedError, match=r"4 items.*max_batch_items"):
            client.append_batch("c", [NewItem("x")] * 4)
        with pytest.raises(ResourceExhaustedError, match="max_metadata_entries"):
            client.append("c", "x", metadata={str(n): "v" for n in range(65)})


def test_client_flags_and_detected_flags(client: Client) -> None:
    assert client.append("c", "plain note", flags=["user_starred"]).flags == ("pinned",)
    err = client.append(
        "c", "Traceback (most recent call last):\nValueError: bad input", role="tool"
    )
    assert "error" in err.flags
    code = client.append("c", "Try this:\n```python\nprint('hi')\n```", role="assistant")
    assert "code" in code.flags
    question = client.append("c", "How do I rotate the API keys?")
    assert "question" in question.flags
    assert client.append("c", "The sky is blue today.").flags == ()


def test_detection_can_be_switched_off(client: Client) -> None:
    client.create_conversation("quiet", settings=ConversationSettings(detect_importance=False))
    assert client.append("quiet", "Why does this raise an Exception?").flags == ()


def test_pin_and_unpin(client: Client) -> None:
    client.append("c", "remember this")
    assert client.pin("c", 1).flags == ("pinned",)
    assert client.list_items("c").entries[0].flags == ("pinned",)
    assert client.unpin("c", 1).flags == ()
    with pytest.raises(NotFoundError, match="no item with seq 9"):
        client.pin("c", 9)
    with pytest.raises(NotFoundError):
        client.pin("nope", 1)


def test_items_out_of_time_order_are_said_so_and_shown_in_time_order(client: Client) -> None:
    day = timedelta(days=1)
    t0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)  # a Monday
    assert not client.append("late", "Monday: the deploy freeze starts.", timestamp=t0).out_of_order
    late = client.append("late", "Saturday: the freeze ends.", timestamp=t0 + 5 * day)
    assert not late.out_of_order
    batch = client.append_batch(
        "late",
        [
            NewItem("Tuesday: the freeze was moved to Wednesday.", timestamp=t0 + day),
            NewItem("Sunday: all clear.", timestamp=t0 + 6 * day),
            NewItem("Wednesday: the freeze started.", timestamp=t0 + 2 * day),
        ],
    )
    assert [r.out_of_order for r in batch.results] == [True, False, True]
    assert batch.out_of_order == 2
    # Kept as given (seq order is arrival order) and shown in time order.
    ctx = client.get_context("late", "when does the freeze start and end?", max_tokens=2000)
    days = [line for line in ctx.text.splitlines() if line.startswith("## ")]
    assert days == [
        "## Mon 3 Mar 2025",
        "## Tue 4 Mar",
        "## Wed 5 Mar",
        "## Sat 8 Mar",
        "## Sun 9 Mar",
    ]
    text = ctx.text
    assert text.index("Tuesday:") < text.index("Wednesday:") < text.index("Saturday:")
    assert [s.seq for s in ctx.recent] == sorted(s.seq for s in ctx.recent)
