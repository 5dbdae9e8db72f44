"""The LangChain chat message history on a real server, held to BaseChatMessageHistory's
documented contract (langchain-core ships no standard tests for chat histories): messages
read back equal to what was added, in order, add_messages in one call, clear empties it;
and the mapping of roles, tool calls, names and fields onto items."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from contextwm.app import Service
from contextwm_client import (
    AppendBatchResult,
    Client,
    ConversationSettings,
    NewItem,
    NotFoundError,
)
from contextwm_client.integrations.langchain import ContextWMChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

# One of each kind a history may hold, with the fields that make them differ.
EVERY_KIND: list[BaseMessage] = [
    SystemMessage("You are a release assistant."),
    HumanMessage("Why did the deploy fail?", name="alice", id="h-1"),
    AIMessage(
        "Let me look at the log.",
        id="a-1",
        tool_calls=[{"name": "read_log", "args": {"service": "billing", "lines": 50}, "id": "c-1"}],
        usage_metadata={"input_tokens": 120, "output_tokens": 14, "total_tokens": 134},
        response_metadata={"model_name": "some-model", "finish_reason": "tool_calls"},
    ),
    ToolMessage(
        "ConnectionError on db-3",
        tool_call_id="c-1",
        name="read_log",
        status="error",
        artifact={"exit": 1},
    ),
    AIMessage("", tool_calls=[{"name": "restart", "args": {"host": "db-3"}, "id": "c-2"}]),
    ToolMessage("restarted", tool_call_id="c-2", name="restart"),
    AIMessage("db-3 was down; I restarted it.", additional_kwargs={"refusal": None, "x": [1, 2]}),
    ChatMessage(role="critic", content="The answer skips the root cause."),
    ChatMessage(role="file", content="deploy.sh: set -e"),
    FunctionMessage(name="lookup", content="port 8443"),
    AIMessageChunk(content="streamed"),
    HumanMessage(
        content=[
            {"type": "text", "text": "And this chart?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/c.png"}},
        ]
    ),
    AIMessage(""),
]


class CountingClient(Client):
    """A real client that counts its append calls."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.append_batch_calls = 0

    def append_batch(
        self,
        conversation_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int = 1000,
    ) -> AppendBatchResult:
        self.append_batch_calls += 1
        return super().append_batch(
            conversation_id, items, namespace=namespace, batch_size=batch_size
        )


def test_a_conversation_not_created_yet_has_no_messages(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    assert history.messages == []
    history.clear()  # nothing to clear is not an error
    with pytest.raises(NotFoundError):
        client.get_conversation("thread-1")


def test_every_kind_of_message_reads_back_equal_in_order(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    history.add_messages(EVERY_KIND)
    assert history.messages == EVERY_KIND
    assert [type(m) for m in history.messages] == [type(m) for m in EVERY_KIND]
    # A second history object on the same conversation reads the same: nothing is cached.
    assert ContextWMChatMessageHistory(client, "thread-1").messages == EVERY_KIND


def test_roles_tool_calls_and_names_map_onto_items(client: Client) -> None:
    ContextWMChatMessageHistory(client, "thread-1", metadata={"user": "alice"}).add_messages(
        EVERY_KIND
    )
    items = list(client.iter_items("thread-1"))
    assert [i.role for i in items] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
        "user", "file", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    system, human, ai, tool, bare_call, _, _, critic, _, function, _, image, empty = items
    assert human.metadata["langchain.name"] == "alice"
    assert human.metadata["langchain.id"] == "h-1"
    # The tool calls are in the text that search and the enhanced context see.
    assert ai.content == (
        'Let me look at the log.\ntool call read_log({"lines":50,"service":"billing"})'
    )
    assert bare_call.content == 'tool call restart({"host":"db-3"})'
    assert tool.metadata["langchain.tool_call_id"] == "c-1"
    assert "error" in tool.flags  # status="error"
    assert critic.metadata["langchain.type"] == "chat"
    assert function.metadata["langchain.type"] == "function"
    assert image.content == "And this chart?"
    assert empty.content == "(no text)"
    assert all(i.metadata["user"] == "alice" for i in items)
    assert "langchain.fields" not in system.metadata  # nothing beyond its text
    found = client.search(
        "restart", conversation_id="thread-1", include_window=True, metadata={"user": "alice"}
    )
    assert bare_call.seq in {h.seq for h in found.hits}


def test_add_messages_appends_in_one_call(service: Service) -> None:
    with CountingClient(f"127.0.0.1:{service.port}") as counting:
        history = ContextWMChatMessageHistory(counting, "thread-1")
        history.add_messages(EVERY_KIND)
        assert counting.append_batch_calls == 1
        history.add_messages([])
        assert counting.append_batch_calls == 1  # nothing to add, no call
        assert counting.get_conversation("thread-1").total_items == len(EVERY_KIND)


def test_add_message_and_its_shorthands_append_one_message_each(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    history.add_user_message("hi")
    history.add_ai_message("hello")
    history.add_message(SystemMessage("be brief"))
    assert history.messages == [HumanMessage("hi"), AIMessage("hello"), SystemMessage("be brief")]


def test_the_async_methods_do_the_same(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")

    async def turn() -> tuple[list[BaseMessage], list[BaseMessage]]:
        await history.aadd_messages(EVERY_KIND[:4])
        before = await history.aget_messages()
        await history.aclear()
        return before, await history.aget_messages()

    before, after = asyncio.run(turn())
    assert before == EVERY_KIND[:4]
    assert after == []


def test_clear_deletes_the_conversation_and_a_new_one_starts_after(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    history.add_messages(EVERY_KIND)
    history.clear()
    assert history.messages == []
    with pytest.raises(NotFoundError):
        client.get_conversation("thread-1")
    assert client.search("ConnectionError", include_window=True).hits == ()  # erased, not hidden
    history.add_user_message("again")
    assert history.messages == [HumanMessage("again")]
    assert [i.seq for i in client.iter_items("thread-1")] == [1]


def test_histories_are_kept_apart_by_conversation_and_namespace(client: Client) -> None:
    one = ContextWMChatMessageHistory(client, "thread-1")
    two = ContextWMChatMessageHistory(client, "thread-2")
    other_tenant = ContextWMChatMessageHistory(client, "thread-1", namespace="tenant-b")
    one.add_user_message("one")
    two.add_user_message("two")
    other_tenant.add_user_message("b")
    assert one.messages == [HumanMessage("one")]
    assert two.messages == [HumanMessage("two")]
    assert other_tenant.messages == [HumanMessage("b")]
    other_tenant.clear()
    assert one.messages == [HumanMessage("one")]


def test_a_message_with_an_id_added_again_is_stored_once(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    retried = [HumanMessage("hi", id="m-1"), AIMessage("hello", id="m-2")]
    history.add_messages(retried)
    history.add_messages(retried)  # a retry after a lost answer
    history.add_messages([HumanMessage("hi")])  # no id: a new message each time
    assert history.messages == [*retried, HumanMessage("hi")]


def test_archived_and_compacted_items_stay_in_the_history_reverted_ones_leave(
    client: Client,
) -> None:
    client.create_conversation("thread-1", settings=ConversationSettings(window_max_items=4))
    history = ContextWMChatMessageHistory(client, "thread-1")
    turns: list[BaseMessage] = [
        HumanMessage(f"question {n}: which of the twelve services listens on port {8000 + n}?")
        for n in range(12)
    ]
    history.add_messages(turns)
    assert {i.state for i in client.iter_items("thread-1")} >= {"window", "archived"}
    client.compact("thread-1", "Ports.")
    assert "compacted" in {i.state for i in client.iter_items("thread-1")}
    client.create_checkpoint("thread-1", "before-detour")
    history.add_messages([HumanMessage("a detour"), AIMessage("undone later")])
    client.restore_checkpoint("thread-1", "before-detour")
    assert history.messages == turns


def test_items_appended_by_other_clients_read_as_messages_of_their_role(client: Client) -> None:
    for role in ("user", "assistant", "system", "tool", "file", "error"):
        client.append("thread-1", f"a {role} item", role=role)
    assert ContextWMChatMessageHistory(client, "thread-1").messages == [
        HumanMessage("a user item"),
        AIMessage("a assistant item"),
        SystemMessage("a system item"),
        ToolMessage("a tool item", tool_call_id=""),
        ChatMessage(role="file", content="a file item"),
        ChatMessage(role="error", content="a error item"),
    ]


def test_a_message_that_is_not_one_to_store_is_refused_before_any_call(client: Client) -> None:
    history = ContextWMChatMessageHistory(client, "thread-1")
    with pytest.raises(ValueError, match="RemoveMessage is not a message to store"):
        history.add_messages([HumanMessage("kept?"), RemoveMessage(id="x")])
    with pytest.raises(ValueError, match="not JSON"):
        history.add_messages([AIMessage("x", additional_kwargs={"raw": b"bytes"})])
    assert history.messages == []
