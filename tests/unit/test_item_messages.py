"""Tests for the item messages of contextwm.transport.conversations.convert: an item's
message is built once while the item object lives in the cache, and never stands in for
another object."""

from __future__ import annotations

import dataclasses

from contextwm.domain.items import Flag, Item, ItemState
from contextwm.transport.conversations.convert import ItemMessages, to_proto_item


def item(seq: int, content: str = "the kettle is blue") -> Item:
    return Item(
        conversation_id="c",
        seq=seq,
        role="user",
        content=content,
        timestamp=1_700_000_000.0 + seq,
        token_count=5,
        flags=Flag(0),
        metadata={"k": "v"},
        file=None,
        state=ItemState.ARCHIVED,
    )


def test_an_item_seen_before_gets_the_same_message() -> None:
    cache = ItemMessages()
    a = item(1)
    first = cache.message(a)
    assert first == to_proto_item(a)
    assert cache.message(a) is first
    assert (cache.hits, cache.misses) == (1, 1)


def test_an_equal_but_other_object_gets_a_message_of_its_own() -> None:
    cache = ItemMessages()
    a = item(1)
    cache.message(a)
    pinned = dataclasses.replace(a, flags=Flag.PINNED)
    assert list(cache.message(pinned).flags) == ["pinned"]
    assert cache.misses == 2


def test_the_least_recently_used_go_and_clear_forgets_all() -> None:
    cache = ItemMessages(max_items=2)
    a, b, c = item(1), item(2), item(3)
    cache.message(a)
    cache.message(b)
    cache.message(a)  # b is now the least recently used
    cache.message(c)
    cache.message(a)
    assert cache.misses == 3
    cache.message(b)
    assert cache.misses == 4
    cache.clear()
    cache.message(a)
    assert cache.misses == 5
