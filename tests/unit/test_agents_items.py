"""The Agents SDK's input items as contextwm items and back (texts apart from the skeleton,
roles, metadata), and the compact list made of an enhanced context."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from agents_items import ITEMS
from contextwm_client import (
    EnhancedContext,
    Item,
    Role,
    ScoredItem,
    ScoreParts,
    TokenAccount,
)
from contextwm_client.integrations import _response_items, _slots
from contextwm_client.integrations._response_items import (
    CALL_ID_KEY,
    ID_KEY,
    ITEM_KEY,
    SLOTS_KEY,
    TYPE_KEY,
    compact_items,
    from_item,
    to_new_item,
)

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def stored(seq: int, value: dict[str, Any], *, at: datetime = T0) -> Item:
    """The item the server gives back for what the session appended."""
    new = to_new_item(value, f"id{seq}")
    return plain(seq, new.role, new.content, metadata=dict(new.metadata), at=at)


def plain(
    seq: int, role: Role, content: str, *, metadata: dict[str, str] | None = None, at: datetime = T0
) -> Item:
    return Item(
        conversation_id="s",
        seq=seq,
        role=role,
        content=content,
        timestamp=at,
        token_count=len(content.split()),
        flags=(),
        metadata=metadata or {},
        file=None,
        state="window",
    )


def scored(item: Item) -> ScoredItem:
    return ScoredItem(item=item, score=1.0, parts=ScoreParts(0, 0, 0, 0, 0, 0), neighbor_of=None)


def context(recent: list[Item], history: list[Item] = ()) -> EnhancedContext:  # type: ignore[assignment]
    return EnhancedContext(
        text="(the server's rendering)",
        recent=tuple(scored(i) for i in recent),
        history=tuple(scored(i) for i in history),
        query="",
        query_from_focus=True,
        tokens=TokenAccount(100, 10, 5, 5, 0, 0, "o200k_base"),
        time_range=None,
        unindexed_items=0,
        state="general",
    )


@pytest.mark.parametrize("value", ITEMS, ids=[f"{i}" for i in range(len(ITEMS))])
def test_every_kind_of_item_comes_back_equal(value: dict[str, Any]) -> None:
    before = json.dumps(value)
    back = from_item(stored(1, value))
    assert back == value
    assert json.dumps(back) == before  # same keys in the same order, and the input untouched


def test_texts_are_the_content_and_the_rest_is_metadata() -> None:
    call, output, answer, parts = (to_new_item(v, "x") for v in ITEMS[1:5])
    assert call.content == 'get_port\n{"service":"billing"}'
    assert output.content == "billing listens on 5432"
    assert answer.content == "Billing uses port 5432."
    assert parts.content == "And this diagram?\n  second part\r\nwith a CRLF  "
    # The image URL is not text: it stays in the skeleton.
    assert "https://example.com/d.png" in parts.metadata[ITEM_KEY]
    assert "Billing uses" not in answer.metadata[ITEM_KEY]
    assert call.metadata[TYPE_KEY] == "function_call"
    assert call.metadata[CALL_ID_KEY] == output.metadata[CALL_ID_KEY] == "call_1"
    assert CALL_ID_KEY not in answer.metadata
    assert answer.metadata[ID_KEY] == "x"


def test_roles_follow_the_item_type() -> None:
    roles = [to_new_item(v, "x").role for v in ITEMS]
    assert roles == [
        "user",  # easy input message
        "assistant",  # function_call
        "tool",  # function_call_output
        "assistant",  # output message
        "user",
        "assistant",  # reasoning
        "system",  # developer
        "assistant",
        "tool",
        "assistant",  # refusal
    ]


def test_an_item_without_text_keeps_its_whole_self_in_metadata() -> None:
    new = to_new_item({"role": "assistant", "content": "  "}, "x")
    assert new.content == "[message item]"
    assert new.metadata[SLOTS_KEY] == "[]"
    assert from_item(plain(1, new.role, new.content, metadata=dict(new.metadata))) == {
        "role": "assistant",
        "content": "  ",
    }


def test_other_writers_items_come_back_as_plain_messages() -> None:
    assert from_item(plain(1, "user", "hi")) == {"role": "user", "content": "hi"}
    assert from_item(plain(2, "tool", "exit 1")) == {"role": "system", "content": "tool: exit 1"}


def test_a_content_that_no_longer_fits_its_slots_is_an_error() -> None:
    new = to_new_item(ITEMS[1], "x")
    with pytest.raises(ValueError, match="longer"):
        from_item(plain(1, new.role, new.content + "!", metadata=dict(new.metadata)))
    with pytest.raises(ValueError, match="shorter"):
        from_item(plain(1, new.role, new.content[:-3], metadata=dict(new.metadata)))


def test_what_json_cannot_carry_is_refused() -> None:
    with pytest.raises(TypeError):
        to_new_item({"role": "user", "content": "x", "extra": object()}, "x")
    with pytest.raises(ValueError):
        _slots.split({"n": float("nan")}, ["content"])


def test_the_compact_list_is_the_history_as_text_then_the_recent_items() -> None:
    old = [
        stored(1, {"role": "user", "content": "Which port does billing use?"}),
        stored(2, {"role": "assistant", "content": "5432."}, at=T0 + timedelta(days=1)),
    ]
    recent = [stored(9, ITEMS[1]), stored(10, ITEMS[2]), stored(11, ITEMS[3])]
    items = compact_items(context(recent, old))
    assert items[0] == {
        "role": "system",
        "content": "# Relevant Historical Context\n\n## Mon 3 Mar 2025\n\n"
        "user: Which port does billing use?\n\n## Tue 4 Mar\n\nassistant: 5432.",
    }
    assert items[1:] == ITEMS[1:4]


def test_recent_items_that_cannot_stand_alone_become_text() -> None:
    # A call whose output was left out, an output whose call was, a reasoning item, and a
    # tool item of another writer: each would be refused or meaningless as an item.
    lone_call = stored(3, ITEMS[1])
    lone_output = stored(4, {**ITEMS[2], "call_id": "call_9"})
    reasoning = stored(5, ITEMS[5])
    foreign_tool = plain(6, "tool", "exit 1")
    user = stored(7, ITEMS[0])
    items = compact_items(context([user, foreign_tool, reasoning, lone_output, lone_call]))
    assert items[1:] == [ITEMS[0]]
    text = items[0]["content"]
    for line in (
        f"assistant: {lone_call.content}",
        "tool: billing listens on 5432",
        "assistant: The user asks about a diagram.",
        "tool: exit 1",
    ):
        assert line in text
    # In time order (seq order at one time), whatever order the server listed them in.
    order = ["get_port", "billing listens", "The user asks", "exit 1"]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)


def test_no_history_no_system_message() -> None:
    assert compact_items(context([stored(1, ITEMS[0])])) == [ITEMS[0]]
    assert compact_items(context([])) == []


def test_the_module_names_every_metadata_key_it_writes() -> None:
    keys = set(to_new_item(ITEMS[1], "x").metadata)
    assert keys == {ID_KEY, TYPE_KEY, ITEM_KEY, SLOTS_KEY, CALL_ID_KEY}
    assert all(k.startswith("openai_agents.") for k in keys)
    assert set(_response_items.TEXT_KEYS) >= {"content", "text", "output", "arguments"}
