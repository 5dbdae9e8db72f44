"""The client's conveniences: dict items for append_batch, short reprs, deprecated old names."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from contextwm_client import (
    ActiveEntry,
    AsyncClient,
    Client,
    EnhancedContext,
    FileRef,
    Item,
    NewItem,
    Optimisations,
    Page,
    ScoredItem,
    ScoreParts,
    TokenAccount,
    Usage,
)
from contextwm_client import _requests as requests
from contextwm_client._repr import PREVIEW_CHARS, preview
from contextwm_client.v1 import contextwm_pb2 as pb

T0 = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
LONG = "word " * 400  # 2000 characters
BATCH_ANSWER = pb.AppendBatchResponse(results=[pb.AppendResult(seq=1), pb.AppendResult(seq=2)])


class FakeStub:
    """Stands in for the generated stub: records each call and answers from a queue per RPC."""

    def __init__(self, answers: dict[str, list[Any]], *, awaitable: bool = False) -> None:
        self.answers = answers
        self.awaitable = awaitable
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, rpc: str) -> Callable[..., Any]:
        def call(request: Any, **kwargs: Any) -> Any:
            self.calls.append((rpc, request))
            return self.answers[rpc].pop(0)

        async def call_async(request: Any, **kwargs: Any) -> Any:
            return call(request, **kwargs)

        return call_async if self.awaitable else call


def fake_client(answers: dict[str, list[Any]]) -> tuple[Client, FakeStub]:
    client = Client("127.0.0.1:1")
    stub = FakeStub(answers)
    client._stub = stub  # type: ignore[assignment]
    return client, stub


# ---------------------------------------------------------------- dict items


def test_a_bare_dict_is_a_bare_new_item() -> None:
    # The converter's defaults are NewItem's.
    assert requests.new_item({"content": "hello"}, 0) == NewItem("hello")


def test_dicts_of_every_field_and_as_message_round_trip() -> None:
    full = NewItem(
        "hello",
        role="tool",
        timestamp=T0,
        flags=("code", "error"),
        metadata={"k": "v"},
        file=FileRef("a.py", "read"),
        idempotency_key="key",
    )
    fields = {f.name: getattr(full, f.name) for f in dataclasses.fields(NewItem)}
    fields["flags"] = list(full.flags)  # any sequence of flags
    assert requests.new_item(fields, 3) == full
    message = NewItem("hi", role="assistant").as_message()
    assert message == {"role": "assistant", "content": "hi"}
    assert requests.new_item(message, 0) == NewItem("hi", role="assistant")
    assert requests.new_item(full, 0) is full


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (42, r"items\[2\] has type int; expected a NewItem or a dict"),
        ("hello", r"items\[2\] has type str"),
        (("user", "hello"), r"items\[2\] has type tuple"),
        ({"content": "x", "flags": "code"}, r"items\[2\] has flags 'code'; expected a sequence"),
        ({"role": "user"}, r'items\[2\] has no "content"'),
        ({"content": "x", "text": "y"}, r"items\[2\] has unknown keys \['text'\]"),
    ],
)
def test_anything_else_is_a_type_error_naming_index_and_type(item: Any, message: str) -> None:
    items = [NewItem("a"), {"content": "b"}, item]
    with pytest.raises(TypeError, match=message):
        requests.append_batch("ns", "c", items)


def test_append_batch_sends_dicts_and_new_items_alike() -> None:
    client, stub = fake_client({"AppendBatch": [BATCH_ANSWER]})
    entry = ActiveEntry(1, "user", "from the context", 3, 3, "as_is", "message", T0, {}, None)
    with client:
        result = client.append_batch("c", [NewItem("one", role="tool"), entry.as_message()])
    assert [r.seq for r in result.results] == [1, 2]
    ((rpc, request),) = stub.calls
    assert rpc == "AppendBatch"
    assert [(i.role, i.content) for i in request.items] == [
        ("tool", "one"),
        ("user", "from the context"),
    ]


def test_a_bad_item_fails_before_the_call() -> None:
    client, stub = fake_client({})
    with client, pytest.raises(TypeError, match=r"items\[0\]"):
        client.append_batch("c", [None])  # type: ignore[list-item]
    assert stub.calls == []


# ---------------------------------------------------------------- short reprs


def make_item(content: str) -> Item:
    return Item("c", 1, "user", content, T0, 3, (), {}, None, "window")


def test_preview_cuts_long_text_and_says_how_long_it_was() -> None:
    assert preview("short") == "'short'"
    cut = preview(LONG)
    assert cut.endswith("...' (2000 chars)")
    assert cut.startswith(repr(LONG[:10])[:-1])
    assert len(cut) < PREVIEW_CHARS + 30


def test_results_with_long_text_have_short_reprs() -> None:
    item = make_item(LONG)
    assert "(2000 chars)" in repr(item) and len(repr(item)) < 400
    assert repr(make_item("short")).startswith("Item(conversation_id='c', seq=1, role='user'")
    assert "content='short'" in repr(make_item("short"))
    parts = ScoreParts(0, 0, 0, 0, 0, 0)
    context = EnhancedContext(
        text=LONG,
        recent=(ScoredItem(item, 0.5, parts, None),),
        history=(),
        query=LONG,
        query_from_focus=False,
        tokens=TokenAccount(1, 1, 1, 0, 0, 0, "e"),
        time_range=None,
        unindexed_items=0,
        state="general",
    )
    shown = repr(context)
    assert shown.count("(2000 chars)") == 3  # text, query and the nested item's content
    assert len(shown) < 1200
    # Equality and the fields themselves are untouched.
    assert context.text == LONG and eval(repr(make_item("x").content)) == "x"


def test_every_long_text_type_is_cut() -> None:
    entry = ActiveEntry(1, "tool", LONG, 3, 3, "as_is", "message", None, {}, None)
    none = Optimisations(0, 0, 0, 0, 0, 0)
    usage = Usage(1, 0, 1, "server", 0, 0, 0, 0.0, 0.8, True, True, LONG, 0, 1, "", none)
    for value in (NewItem(LONG), entry, usage):
        assert "(2000 chars)" in repr(value), type(value).__name__


# ---------------------------------------------------------------- deprecated names


def test_append_many_warns_and_appends_a_batch() -> None:
    client, stub = fake_client({"AppendBatch": [BATCH_ANSWER]})
    with client, pytest.warns(DeprecationWarning, match="append_many.*append_batch") as caught:
        result = client.append_many("c", [NewItem("one"), {"content": "two"}])
    assert [r.seq for r in result.results] == [1, 2]
    assert [rpc for rpc, _ in stub.calls] == ["AppendBatch"]
    assert caught[0].filename == __file__  # the warning points at the caller


def test_async_append_many_warns_and_appends_a_batch() -> None:
    async def scenario() -> list[int]:
        async with AsyncClient("127.0.0.1:1") as client:
            client._stub = FakeStub({"AppendBatch": [BATCH_ANSWER]}, awaitable=True)  # type: ignore[assignment]
            result = await client.append_many("c", [NewItem("one"), NewItem("two")])
            return [r.seq for r in result.results]

    with pytest.warns(DeprecationWarning, match=r"AsyncClient\.append_many"):
        assert asyncio.run(scenario()) == [1, 2]


def test_old_cache_read_keyword_warns_and_is_sent() -> None:
    client, stub = fake_client({"GetUsage": [pb.Usage(), pb.Usage()]})
    with client:
        with pytest.warns(DeprecationWarning, match="reported_cache_read_input_tokens"):
            client.get_usage("c", reported_input_tokens=10, reported_cache_read_tokens=4)
        client.get_usage("c", reported_input_tokens=10, reported_cache_read_input_tokens=5)
        with pytest.raises(TypeError, match="only"):
            client.get_usage(
                "c",
                reported_input_tokens=10,
                reported_cache_read_input_tokens=5,
                reported_cache_read_tokens=4,
            )
    sent = [request.reported.cache_read_input_tokens for _, request in stub.calls]
    assert sent == [4, 5]


def test_page_items_warns_and_is_entries() -> None:
    page = Page(entries=(1, 2), next_page_token="")
    with pytest.warns(DeprecationWarning, match=r"Page\.items.*Page\.entries"):
        assert page.items == (1, 2)
