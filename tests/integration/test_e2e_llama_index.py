"""The LlamaIndex memory block against a real server: what the block contract and Memory
ask of a block (messages flushed in, context out, truncation, short-term flushes refused on
request), messages stored readably and rebuilt equal, and one FunctionAgent turn with
LlamaIndex's mock function-calling LLM, checking exactly what the model was sent.

Offline: every test refuses connections off this machine, and LlamaIndex's default
tokenizer reads the tiktoken table bundled in llama-index-core (TIKTOKEN_CACHE_DIR unset),
or the test passes its own."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from contextwm.app import Service
from contextwm_client import AsyncClient, Client
from contextwm_client.integrations.llama_index import ContextWMMemoryBlock
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from offline import refuse_internet

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "llama-index.md"
T = TypeVar("T")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_internet(monkeypatch)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)


def words(text: str) -> list[str]:
    """A tokenizer for Memory whose counts a reader can check by eye."""
    return text.split()


def run(service: Service, body: Callable[[Client], Coroutine[Any, Any, T]]) -> T:
    with Client(f"127.0.0.1:{service.port}") as cwm:
        return asyncio.run(body(cwm))


MESSAGES = [
    ChatMessage(role="user", content="Which port does billing use?"),
    ChatMessage(
        role="assistant",
        blocks=[
            ThinkingBlock(content="Look it up."),
            ToolCallBlock(
                tool_call_id="c1", tool_name="get_port", tool_kwargs={"service": "billing"}
            ),
        ],
    ),
    ChatMessage(role="tool", content="5432", additional_kwargs={"tool_call_id": "c1"}),
    ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="And this diagram? "),
            ImageBlock(url="https://example.com/d.png"),
            TextBlock(text="Grüße — 東京\r\n"),
        ],
    ),
    ChatMessage(role="developer", content="Answer in one line."),
    ChatMessage(role="assistant", content=""),
]


def test_flushed_messages_are_stored_readably_and_rebuilt_equal(service: Service) -> None:
    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(client=cwm, conversation_id="kept")
        await block.aput([m.model_copy(deep=True) for m in MESSAGES], session_id="memory-1")
        assert await block.aget_messages() == MESSAGES
        stored = list(cwm.iter_items("kept"))
        assert [(i.role, i.content) for i in stored] == [
            ("user", "Which port does billing use?"),
            ("assistant", "Look it up.\nget_port"),  # the arguments, a dict, stay metadata
            ("tool", "5432"),
            ("user", "And this diagram? \nGrüße — 東京\r\n"),
            ("system", "Answer in one line."),
            ("assistant", "[assistant message]"),
        ]
        # Memory's session id is the conversation's, not the message's.
        assert all(i.metadata["llama_index.session_id"] == "memory-1" for i in stored)
        assert "session_id" not in stored[0].metadata["llama_index.message"]

    run(service, body)


def test_the_block_answers_with_the_enhanced_context_for_the_newest_user_message(
    service: Service,
) -> None:
    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(client=cwm, conversation_id="ctx", max_tokens=200)
        assert await block.aget([ChatMessage(role="user", content="anything")]) == ""
        await block.aput(
            [
                ChatMessage(role="user", content="Billing runs on db-3, port 5432."),
                ChatMessage(role="assistant", content="Noted: billing is on db-3."),
                ChatMessage(role="user", content="The cafeteria opens at nine."),
            ]
        )
        asked = [
            ChatMessage(role="user", content="Where does billing run?"),
            ChatMessage(role="assistant", content="Let me check."),
        ]
        text = await block.aget(asked)
        context = cwm.get_context("ctx", "Where does billing run?", max_tokens=200)
        # The server's text without its last section, the query, which Memory's messages hold.
        assert context.text == text + "\n\n# Current Query\n\nWhere does billing run?"
        assert "db-3, port 5432" in text and "Where does billing run?" not in text
        # No user message: the conversation's newest items stand in, and nothing is cut.
        assert await block.aget([]) == cwm.get_context("ctx", max_tokens=200).text

    run(service, body)


def test_truncating_asks_for_a_smaller_context(service: Service) -> None:
    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(client=cwm, conversation_id="trunc", max_tokens=300)
        assert await block.atruncate("", 10) is None  # nothing asked yet
        await block.aput(
            [
                ChatMessage(role="user", content=f"Fact {i}: service-{i} uses port {6000 + i}.")
                for i in range(20)
            ]
        )
        full = await block.aget([ChatMessage(role="user", content="service-7 port?")])
        total = cwm.get_context("trunc", "service-7 port?", max_tokens=300).tokens.total
        smaller = await block.atruncate(full, 100)
        assert smaller is not None and len(smaller) < len(full)
        expected = cwm.get_context("trunc", "service-7 port?", max_tokens=total - 100)
        assert expected.tokens.total <= total - 100
        assert smaller == expected.text.removesuffix("\n\n# Current Query\n\nservice-7 port?")
        assert await block.atruncate(smaller, 10_000) is None

    run(service, body)


def test_memory_flushes_its_oldest_messages_into_the_conversation(service: Service) -> None:
    """With Memory's own sync API (each call in a new event loop) and a sync Client; the
    conversation is named by Memory's session id."""
    with Client(f"127.0.0.1:{service.port}") as cwm:
        block = ContextWMMemoryBlock(client=cwm, max_tokens=200)
        memory = Memory.from_defaults(
            session_id="user-42", token_limit=40, tokenizer_fn=words, memory_blocks=[block]
        )
        turns = [
            ChatMessage(role=role, content=f"{role} turn {i} mentions port {6000 + i}")
            for i in range(8)
            for role in ("user", "assistant")
        ]
        for message in turns:
            memory.put(message)
        short_term = memory.get_all(status=None)
        flushed = [m.content for m in block_messages(cwm, "user-42")]
        active = [m.content for m in memory.get()[1:]]
        # The oldest messages went to contextwm, in order; the newest stayed with Memory.
        assert flushed and flushed + active == [m.content for m in turns]
        assert len(short_term) == len(turns)
        system = memory.get()[0]
        assert system.role.value == "system"
        assert system.content is not None and system.content.startswith("<memory>\n<contextwm>")
        assert "port 6000" in system.content


def block_messages(cwm: Client, conversation_id: str) -> list[ChatMessage]:
    block = ContextWMMemoryBlock(client=cwm, conversation_id=conversation_id)
    return asyncio.run(block.aget_messages())


def test_a_block_that_refuses_short_term_flushes_gets_none(service: Service) -> None:
    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(
            client=cwm, conversation_id="refused", accept_short_term_memory=False
        )
        await block.aput([ChatMessage(role="user", content="x")], from_short_term_memory=True)
        assert await block.aget_messages() == []
        await block.aput([ChatMessage(role="user", content="y")])
        assert [m.content for m in await block.aget_messages()] == ["y"]

    run(service, body)


def test_an_asyncio_client_serves_the_block_in_its_loop(service: Service) -> None:
    async def body() -> list[ChatMessage]:
        async with AsyncClient(f"127.0.0.1:{service.port}") as aio:
            block = ContextWMMemoryBlock(client=aio, conversation_id="aio")
            await block.aput(MESSAGES[:1])
            assert "billing" in await block.aget([])
            return await block.aget_messages()

    assert asyncio.run(body()) == MESSAGES[:1]


def test_without_a_conversation_the_block_says_what_it_needs(service: Service) -> None:
    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(client=cwm)
        with pytest.raises(ValueError, match="give it conversation_id"):
            await block.aget([])

    run(service, body)
    with pytest.raises(ValueError):
        ContextWMMemoryBlock(client=object())  # type: ignore[arg-type]


def test_one_agent_turn_sends_the_model_the_enhanced_context(service: Service) -> None:
    """A FunctionAgent with a Memory whose older turns were flushed to contextwm: the model
    gets the agent's prompt, the memory block with the context for its question, the
    short-term turns and the question, and nothing else."""
    sent: list[list[ChatMessage]] = []

    def model(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        sent.append([m.model_copy(deep=True) for m in messages])
        return ChatMessage(role="assistant", content="Billing uses 5432.")

    async def body(cwm: Client) -> None:
        block = ContextWMMemoryBlock(client=cwm, max_tokens=300)
        # 30 words: the question makes Memory flush its two oldest turns to the block.
        memory = Memory.from_defaults(
            session_id="agent-1", token_limit=30, tokenizer_fn=words, memory_blocks=[block]
        )
        await memory.aput_messages(
            [
                ChatMessage(role="user", content="Billing runs on db-3 and listens on port 5432."),
                ChatMessage(role="assistant", content="Noted."),
                ChatMessage(role="user", content="The search service runs on db-5."),
                ChatMessage(role="assistant", content="Noted too."),
                ChatMessage(role="user", content="Lunch is at noon on Fridays."),
                ChatMessage(role="assistant", content="Good to know."),
            ]
        )
        agent = FunctionAgent(
            llm=MockFunctionCallingLLM(response_generator=model),
            tools=[],
            system_prompt="Be brief.",
        )
        result = await agent.run(user_msg="Which port does billing use?", memory=memory)
        assert str(result) == "Billing uses 5432."

        assert [m.content for m in await block.aget_messages("agent-1")] == [
            "Billing runs on db-3 and listens on port 5432.",
            "Noted.",
            "The search service runs on db-5.",
            "Noted too.",
        ]
        context = cwm.get_context("agent-1", "Which port does billing use?", max_tokens=300)
        remembered = context.text.removesuffix(
            "\n\n# Current Query\n\nWhich port does billing use?"
        )
        assert "user: Billing runs on db-3 and listens on port 5432." in remembered
        assert "Which port" not in remembered
        assert [(m.role.value, m.content) for m in sent[-1]] == [
            ("system", "Be brief."),
            ("system", f"<memory>\n<contextwm>\n{remembered}\n</contextwm>\n</memory>"),
            ("user", "Lunch is at noon on Fridays."),
            ("assistant", "Good to know."),
            ("user", "Which port does billing use?"),
        ]

    run(service, body)


def test_the_pages_example_runs_as_written(
    service: Service, client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    """With LlamaIndex's default tokenizer (the tiktoken table it ships), offline."""
    example = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)[0]
    assert "127.0.0.1:50051" in example
    code = example.replace("127.0.0.1:50051", f"127.0.0.1:{service.port}")
    exec(compile(code, str(PAGE), "exec"), {})
    printed = capsys.readouterr().out
    flushed = [i.content for i in client.iter_items("ops-chat-1")]
    assert flushed[:2] == [
        "Billing runs on db-3 and listens on port 5432.",
        "Noted: billing is on db-3, port 5432.",
    ]
    memory_block = printed.split("[system] <memory>\n<contextwm>\n", 1)[1].split("</contextwm>")[0]
    assert "user: Billing runs on db-3 and listens on port 5432." in memory_block
    # What Memory still holds follows the block, then the question; then the answer.
    tail = printed.split("</memory>\n", 1)[1].splitlines()
    assert tail[-2:] == ["[user] Which port does billing use?", "Billing listens on 5432."]
    held = [line for line in tail[:-2] if line.startswith("[")]
    assert held and all(line[line.index("] ") + 2 :] not in flushed for line in held)
