"""The OpenAI Agents SDK session against a real server: the SDK's documented session
contract with either client, items given back exactly, pops and clears as receipted
erasures, the compact list under a token budget, and agent turns with the SDK's scripted
model, checking what the model was sent."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from agents import Agent, RunConfig, Runner, TResponseInputItem, function_tool
from agents.memory import Session, SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call
from agents_items import ITEMS
from contextwm.app import Service
from contextwm_client import AsyncClient, Client, ConversationSettings, NotFoundError
from contextwm_client.integrations._response_items import compact_items
from contextwm_client.integrations.openai_agents import ContextWMSession
from offline import refuse_internet

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations" / "openai-agents.md"
T = TypeVar("T")
ClientKind = Literal["sync", "asyncio"]
MakeSession = Callable[..., ContextWMSession]
# Traces would be sent to OpenAI: the tests never reach the network.
OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_internet(monkeypatch)


def with_sessions(
    service: Service, kind: ClientKind, body: Callable[[MakeSession], Awaitable[T]]
) -> T:
    """Runs body in a new event loop with a maker of sessions over one client of that kind
    (an AsyncClient is made inside the loop it serves)."""
    target = f"127.0.0.1:{service.port}"

    async def main() -> T:
        if kind == "asyncio":
            async with AsyncClient(target) as aio:
                return await body(lambda sid, **kw: ContextWMSession(sid, aio, **kw))
        with Client(target) as sync:
            return await body(lambda sid, **kw: ContextWMSession(sid, sync, **kw))

    return asyncio.run(main())


def texts(items: list[TResponseInputItem]) -> list[Any]:
    return [item.get("content") for item in items]


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_the_sdk_session_contract(service: Service, kind: ClientKind) -> None:
    """What the SDK's own session tests ask of every session, step by step."""

    async def body(make: MakeSession) -> None:
        session = make("pop_test")
        assert isinstance(session, Session)  # the SDK's runtime-checkable protocol
        assert await session.pop_item() is None
        assert await session.get_items() == []
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "Message 1"},
            {"role": "assistant", "content": "Response 1"},
            {"role": "user", "content": "Message 2"},
            {"role": "assistant", "content": "Response 2"},
            {"role": "user", "content": "Message 3"},
            {"role": "assistant", "content": "Response 3"},
        ]
        await session.add_items(items[:2])
        await session.add_items(items[2:])
        await session.add_items([])
        assert await session.get_items() == items
        assert texts(await session.get_items(limit=2)) == ["Message 3", "Response 3"]
        assert await session.get_items(limit=4) == items[2:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=-1) == items

        other = make("other_session")
        await other.add_items([{"role": "user", "content": "Session 2 message"}])
        assert await session.pop_item() == items[-1]
        assert await session.pop_item() == items[-2]
        assert await session.get_items() == items[:-2]
        assert await other.get_items() == [{"role": "user", "content": "Session 2 message"}]
        for expected in reversed(items[:-2]):
            assert await session.pop_item() == expected
        assert await session.pop_item() is None
        assert await session.get_items() == []

        await session.add_items(items[:2])
        await session.clear_session()
        assert await session.get_items() == []
        await session.clear_session()  # clearing an empty session is no error
        assert await other.get_items() == [{"role": "user", "content": "Session 2 message"}]

    with_sessions(service, kind, body)


def test_the_settings_limit_applies_without_a_limit(service: Service) -> None:
    async def body(make: MakeSession) -> None:
        session = make("limited", session_settings=SessionSettings(limit=2))
        await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
        assert texts(await session.get_items()) == ["m3", "m4"]
        assert len(await session.get_items(limit=4)) == 4

    with_sessions(service, "sync", body)


def test_every_kind_of_item_comes_back_exactly_and_is_stored_readably(
    service: Service, client: Client
) -> None:
    async def body(make: MakeSession) -> list[TResponseInputItem]:
        session = make("kinds")
        await session.add_items(list(ITEMS))  # type: ignore[arg-type]
        return await session.get_items()

    assert with_sessions(service, "asyncio", body) == ITEMS
    stored = list(client.iter_items("kinds"))
    assert [i.role for i in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "system",
        "assistant",
        "tool",
        "assistant",
    ]
    assert stored[2].content == "billing listens on 5432"
    assert stored[7].content == "[message item]"  # an empty message is no empty item
    # The texts are searchable, and the item's type and call id filter a search.
    hits = client.search(
        "which port", conversation_id="kinds", include_window=True,
        metadata={"openai_agents.call_id": "call_1", "openai_agents.type": "function_call_output"},
    ).hits  # fmt: skip
    assert [h.item.seq for h in hits] == [stored[2].seq]


def test_a_pop_is_an_erasure_with_a_receipt(service: Service, client: Client) -> None:
    async def body(make: MakeSession) -> ContextWMSession:
        session = make("popped")
        await session.add_items(
            [{"role": "user", "content": "keep me"}, {"role": "user", "content": "my card 4111"}]
        )
        assert await session.pop_item() == {"role": "user", "content": "my card 4111"}
        return session

    session = with_sessions(service, "sync", body)
    receipt = session.last_erasure
    assert receipt is not None and receipt.counts.items == 1
    assert [(c.conversation_id, c.seqs) for c in receipt.conversations] == [("popped", ((2, 2),))]
    # Gone for good, in every state: not kept as reverted or archived.
    assert [i.content for i in client.iter_items("popped")] == ["keep me"]
    words = client.search(
        "card 4111", conversation_id="popped", include_window=True, mode="lexical"
    )
    assert words.hits == ()


def test_a_pop_refuses_an_item_no_session_added(service: Service, client: Client) -> None:
    client.append("shared", "appended by a person, not by the agent")

    async def body(make: MakeSession) -> None:
        session = make("shared")
        assert await session.get_items() == [
            {"role": "user", "content": "appended by a person, not by the agent"}
        ]
        with pytest.raises(ValueError, match=r"seq 1\) was not added by a session"):
            await session.pop_item()

    with_sessions(service, "sync", body)
    assert client.get_conversation("shared").total_items == 1


def test_a_clear_deletes_the_conversation_and_the_next_add_creates_it_with_its_settings(
    service: Service, client: Client
) -> None:
    settings = ConversationSettings(window_max_items=7)

    async def body(make: MakeSession) -> ContextWMSession:
        session = make("cleared", conversation_settings=settings)
        await session.add_items([{"role": "user", "content": "first life"}])
        assert client.get_conversation("cleared").settings.window_max_items == 7
        await session.clear_session()
        with pytest.raises(NotFoundError):
            client.get_conversation("cleared")
        await session.add_items([{"role": "user", "content": "second life"}])
        return session

    session = with_sessions(service, "asyncio", body)
    assert session.last_erasure is not None and session.last_erasure.counts.items == 1
    again = client.get_conversation("cleared")
    assert again.settings.window_max_items == 7
    assert [i.content for i in client.iter_items("cleared")] == ["second life"]


def facts(n: int) -> list[TResponseInputItem]:
    """n question and answer turns, each about another service's port."""
    items: list[TResponseInputItem] = []
    for i in range(n):
        items.append({"role": "user", "content": f"Which port does service-{i} use?"})
        items.append({"role": "assistant", "content": f"service-{i} listens on port {6000 + i}."})
    return items


def test_the_compact_list_is_the_enhanced_context_within_its_budget(
    service: Service, client: Client
) -> None:
    client.create_conversation("long", settings=ConversationSettings(window_max_items=4))
    history = facts(12)

    async def body(make: MakeSession) -> tuple[list[TResponseInputItem], ...]:
        session = make("long", context_tokens=120)
        await session.add_items(history)
        return await session.get_items(), await session.get_items(limit=3)

    compact, tail = with_sessions(service, "sync", body)
    context = client.get_context("long", max_tokens=120)
    assert context.history and context.tokens.total <= 120
    assert compact == compact_items(context)
    first: dict[str, Any] = dict(compact[0])
    assert first["role"] == "system"
    assert first["content"].startswith("# Relevant Historical Context")
    # The recent items are the ones added, exactly; the newest always among them.
    assert all(item in history for item in compact[1:])
    assert compact[-1] == history[-1]
    assert len(compact) < len(history)
    # A limit still reads the stored items exactly: the SDK checks its writes that way.
    assert tail == history[-3:]


@function_tool
def get_port(service: str) -> str:
    """The port a service listens on."""
    return {"billing": "5432"}.get(service, "unknown")


@pytest.mark.parametrize("runner", ["run", "run_sync"])
def test_one_agent_turn_sends_the_model_the_session_history(
    service: Service, client: Client, runner: str
) -> None:
    """Two turns of an agent with a tool: the second model call gets the first turn's items
    (the question, the call, its output, the answer) exactly, then the new question."""
    model = ScriptedModel(
        [
            [function_call("get_port", {"service": "billing"}, call_id="call_1")],
            [assistant_message("Billing uses 5432.", item_id="msg_1")],
            [assistant_message("You asked about billing.", item_id="msg_2")],
        ]
    )
    agent = Agent(name="ops", instructions="Answer briefly.", model=model, tools=[get_port])

    def turn(session: ContextWMSession, text: str) -> Any:
        if runner == "run":
            return asyncio.run(Runner.run(agent, text, session=session, run_config=OFFLINE))
        return Runner.run_sync(agent, text, session=session, run_config=OFFLINE)

    with Client(f"127.0.0.1:{service.port}") as cwm:
        session = ContextWMSession("turns", cwm)
        assert turn(session, "Which port does billing use?").final_output == "Billing uses 5432."
        assert turn(session, "What did I ask?").final_output == "You asked about billing."

    first_turn = [
        {"content": "Which port does billing use?", "role": "user"},
        {
            "arguments": '{"service":"billing"}',
            "call_id": "call_1",
            "name": "get_port",
            "type": "function_call",
            "id": "call_1",
        },
        {"call_id": "call_1", "output": "5432", "type": "function_call_output"},
        {
            "id": "msg_1",
            "content": [
                {
                    "annotations": [],
                    "text": "Billing uses 5432.",
                    "type": "output_text",
                    "logprobs": [],
                }
            ],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
    ]
    calls = model.calls
    assert calls[0].input == [first_turn[0]]
    assert calls[0].system_instructions == "Answer briefly."
    assert calls[2].input == [*first_turn, {"content": "What did I ask?", "role": "user"}]
    model.assert_complete()
    assert [(i.role, i.content) for i in client.iter_items("turns")] == [
        ("user", "Which port does billing use?"),
        ("assistant", 'get_port\n{"service":"billing"}'),
        ("tool", "5432"),
        ("assistant", "Billing uses 5432."),
        ("user", "What did I ask?"),
        ("assistant", "You asked about billing."),
    ]


def test_one_agent_turn_with_a_budget_sends_the_enhanced_context(
    service: Service, client: Client
) -> None:
    """Under context_tokens the model gets the compact list (the relevant history as one
    system message, the recent items as added), then the question; not the whole history."""
    client.create_conversation("budgeted", settings=ConversationSettings(window_max_items=4))
    history = facts(12)
    model = ScriptedModel([[assistant_message("6003.", item_id="msg_9")]])
    agent = Agent(name="ops", instructions="Answer briefly.", model=model)

    async def body(make: MakeSession) -> None:
        session = make("budgeted", context_tokens=150)
        await session.add_items(history)
        expected = compact_items(client.get_context("budgeted", max_tokens=150))
        result = await Runner.run(agent, "And service-3?", session=session, run_config=OFFLINE)
        assert result.final_output == "6003."
        assert model.calls[0].input == [*expected, {"content": "And service-3?", "role": "user"}]
        assert len(model.calls[0].input) < len(history)

    with_sessions(service, "sync", body)


def test_the_pages_example_runs_as_written(
    service: Service, client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    example = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)[0]
    assert "127.0.0.1:50051" in example
    code = example.replace("127.0.0.1:50051", f"127.0.0.1:{service.port}")
    namespace: dict[str, Any] = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    assert capsys.readouterr().out.splitlines() == [
        "Billing listens on 5432.",
        "You asked which port billing uses.",
        "6 items in the session",
    ]
    second_turn = namespace["model"].calls[-1].input
    assert [(i.get("type", "message"), i.get("role")) for i in second_turn] == [
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert [i.role for i in client.iter_items("ops-agent-1")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
