"""The example of docs/integrations/langchain.md, run as written against a real server, with
a callback that records what the scripted model was sent."""

from __future__ import annotations

import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest
from contextwm.app import Service
from contextwm_client import Client
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tracers.context import register_configure_hook

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "integrations" / "langchain.md"


class Recorder(BaseCallbackHandler):
    """Keeps the messages of every chat model call, as LangChain hands them to the model."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


# Every run started while it is set reports to the recorder: the example's own code, which
# passes no callbacks, is run unchanged.
RECORDER: ContextVar[Recorder | None] = ContextVar("page_recorder", default=None)
register_configure_hook(RECORDER, inheritable=True)


def example(port: int) -> str:
    (block,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert isinstance(block, str)
    assert "127.0.0.1:50051" in block
    return block.replace("127.0.0.1:50051", f"127.0.0.1:{port}")


def run(code: Any) -> Recorder:
    recorder = Recorder()
    token = RECORDER.set(recorder)
    try:
        exec(code, {})
    finally:
        RECORDER.reset(token)
    return recorder


def test_the_pages_example_runs_as_written(
    service: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    code = compile(example(service.port), str(PAGE), "exec")
    first_run = run(code)
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["Use Helix: `hx deploy.sh`.", "You asked how to open deploy.sh."]
    assert "HumanMessage(content='What did I just ask you?'" in printed[2]

    (system, first), (system_again, second) = first_run.calls
    assert isinstance(system, SystemMessage) and isinstance(system_again, SystemMessage)
    assert system.text.startswith("You help Alice. What you know about her:\n")
    assert "Alice edits in Helix and wants short answers." in system.text
    assert first == HumanMessage("# Current Query\n\nHow do I open deploy.sh?")
    # The second turn's context holds the first turn, then the new question.
    assert isinstance(second, HumanMessage)
    assert second.text.startswith("# Recent Context\n\n## ")
    assert "user: How do I open deploy.sh?\n\nassistant: Use Helix: `hx deploy.sh`." in second.text
    assert second.text.endswith("# Current Query\n\nWhat did I just ask you?")

    with Client(f"127.0.0.1:{service.port}") as cwm:
        items = list(cwm.iter_items("alice-deploy"))
        assert [(i.role, i.content) for i in items] == [
            ("user", "How do I open deploy.sh?"),
            ("assistant", "Use Helix: `hx deploy.sh`."),
            ("user", "What did I just ask you?"),
            ("assistant", "You asked how to open deploy.sh."),
        ]
        assert {c.conversation_id for c in cwm.iter_conversations(namespace="agent-memories")} == {
            "users.alice"
        }

    # As a reader who runs it again: the thread goes on, the memories are updated in place.
    again = run(code)
    assert "You asked how to open deploy.sh." in again.calls[0][1].text
    with Client(f"127.0.0.1:{service.port}") as cwm:
        assert cwm.get_conversation("alice-deploy").total_items == 8
        assert cwm.get_conversation("users.alice", namespace="agent-memories").total_items == 2
