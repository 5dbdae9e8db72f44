"""One agent turn with a LangGraph graph on a real server: the node sends the model the
enhanced context (with an archived turn that answers the question) and the store's memories,
a tool runs, and the turn is saved to the chat history; a fake chat model from langchain-core
answers, and a callback records exactly what it was sent."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from contextwm.app import Service
from contextwm_client import AsyncClient, Client, ConversationSettings
from contextwm_client.integrations.langchain import (
    ContextWMChatMessageHistory,
    ContextWMStore,
    acontext_messages,
    context_messages,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

THREAD = "thread-7"
USER = ("users", "alice", "memories")
QUESTION = "Which port does the billing service use, and is it up?"
BUDGET = 300


class Recorder(BaseCallbackHandler):
    """Keeps the messages of every chat model call, as LangChain hands them to the model."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.calls.extend(messages)


@tool
def check_port(port: int) -> str:
    """Says whether a port answers."""
    return f"port {port} answers"


def seed(cwm: Client) -> list[BaseMessage]:
    """An earlier session in a small window: the answer is archived by now."""
    cwm.create_conversation(THREAD, settings=ConversationSettings(window_max_items=4))
    earlier: list[BaseMessage] = [
        HumanMessage("Where does the billing service listen?"),
        AIMessage("The billing service listens on port 8443."),
    ]
    for n in range(5):
        earlier += [HumanMessage(f"Remind me of chore {n}."), AIMessage(f"Chore {n} is laundry.")]
    ContextWMChatMessageHistory(cwm, THREAD).add_messages(earlier)
    (answer,) = [i for i in cwm.iter_items(THREAD) if "8443" in i.content]
    assert answer.state == "archived"
    return earlier


def build_graph(cwm: Client, model: GenericFakeChatModel) -> Any:
    store = ContextWMStore(cwm, namespace="memories")
    history = ContextWMChatMessageHistory(cwm, THREAD)

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        question, *turn = state["messages"]  # this turn: the question, then tool rounds
        memories = store.search(USER, query=question.text, limit=2)
        instructions = "You are an ops assistant. About the user:\n" + "\n".join(
            m.value["memory"] for m in memories
        )
        sent = context_messages(
            cwm, THREAD, question.text, max_tokens=BUDGET, instructions=instructions
        )
        return {"messages": [model.invoke([*sent, *turn], config)]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "save"

    def save(state: MessagesState) -> dict[str, list[BaseMessage]]:
        history.add_messages(state["messages"])
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([check_port]))
    graph.add_node("save", save)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", "save"])
    graph.add_edge("tools", "agent")
    graph.add_edge("save", END)
    return graph.compile()


def test_one_agent_turn_sends_the_enhanced_context_and_saves_the_turn(client: Client) -> None:
    earlier = seed(client)
    store = ContextWMStore(client, namespace="memories")
    store.put(USER, "role", {"memory": "Alice is the on-call engineer for billing."})
    store.put(USER, "tea", {"memory": "Alice drinks green tea."})
    store.put(USER, "pet", {"memory": "Alice has a cat called Miso."})
    call = AIMessage("", tool_calls=[{"name": "check_port", "args": {"port": 8443}, "id": "c-1"}])
    model = GenericFakeChatModel(messages=iter([call, "Billing uses port 8443, and it answers."]))
    # What the node is to send: the enhanced context as the server renders it now.
    expected = client.get_context(THREAD, QUESTION, max_tokens=BUDGET)
    assert "The billing service listens on port 8443." in expected.text
    assert expected.text.endswith(QUESTION) and expected.total_tokens <= BUDGET

    recorder = Recorder()
    result = build_graph(client, model).invoke(
        {"messages": [HumanMessage(QUESTION)]}, {"callbacks": [recorder]}
    )

    first, second = recorder.calls
    system, context = first
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("You are an ops assistant. About the user:\n")
    assert "Alice is the on-call engineer for billing." in system.text
    assert len(system.text.splitlines()) == 3  # limit=2 memories
    assert context == HumanMessage(expected.text)
    question, ai_call, tool_result, answer = result["messages"]
    assert isinstance(tool_result, ToolMessage)
    assert (tool_result.tool_call_id, tool_result.text) == ("c-1", "port 8443 answers")
    assert second == [system, context, ai_call, tool_result]
    assert answer.text == "Billing uses port 8443, and it answers."
    # The turn is in the history as it happened, tool call and result included.
    assert ContextWMChatMessageHistory(client, THREAD).messages == [*earlier, *result["messages"]]
    assert question.text == QUESTION


def test_the_async_helper_sends_the_same_messages(service: Service, client: Client) -> None:
    seed(client)

    async def ask() -> list[BaseMessage]:
        async with AsyncClient(f"127.0.0.1:{service.port}") as acwm:
            return await acontext_messages(acwm, THREAD, QUESTION, max_tokens=BUDGET)

    assert asyncio.run(ask()) == context_messages(client, THREAD, QUESTION, max_tokens=BUDGET)
    (system_context,) = context_messages(client, THREAD, max_tokens=BUDGET, role="system")
    assert isinstance(system_context, SystemMessage)
    assert "# Current Query" not in system_context.text  # no query: the focus stood in
