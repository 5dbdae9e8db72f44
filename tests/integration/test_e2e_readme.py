"""The README's Python and command-line examples, and the agent loop of docs/agent-loop.md,
run as written against a real server; the README's set-up commands are the ones .ci/run and
the scripts use."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.cli.entry import main as contextwm_main
from contextwm.domain.usage import ModelSpec
from contextwm_client import Client, ConversationSettings, UnavailableError
from server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
AGENT_LOOP = ROOT / "docs" / "agent-loop.md"


def python_example(port: int) -> str:
    example: str = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]
    assert "127.0.0.1:50051" in example
    return example.replace("127.0.0.1:50051", f"127.0.0.1:{port}")


def test_python_example_runs_and_runs_again(service: Service) -> None:
    code = compile(python_example(service.port), "README.md", "exec")
    exec(code, {})
    exec(code, {})  # as a reader who runs it twice: the conversation is there already
    with Client(f"127.0.0.1:{service.port}") as cwm:
        assert cwm.get_conversation("ticket-42").total_items == 4


@pytest.mark.slow
def test_python_example_run_while_the_server_starts_waits_for_it(tmp_path: Path) -> None:
    """`contextwm serve` as scripts/serve runs it, the example started the moment the server
    says it listens: it waits for the model to load instead of failing UNAVAILABLE; the
    server says when it is ready, and shows one bar for the model's loading, not one per
    process that loads it."""
    server = ServerProcess(tmp_path / "data", ready=False)
    try:
        assert server.listening, server.log()
        # Proves the gap is there: a client that does not wait is refused.
        with Client(server.target) as early, pytest.raises(UnavailableError, match="starting"):
            early.get_conversation("ticket-42")
        exec(compile(python_example(server.port), "README.md", "exec"), {})
        ready_line = f"contextwm ready on port {server.port}"
        assert server.wait_for_line(ready_line), server.log()
        with Client(server.target) as at_once:  # no waiting after the ready line
            assert at_once.get_conversation("ticket-42").total_items == 2
    finally:
        server.terminate()
    log = server.log()
    listening = log.index(f"contextwm listening on port {server.port}")
    assert listening < log.index(ready_line)
    # At most one progress bar (PyTorch's, while a first start exports the model): the
    # indexer's process loads the same model silently.
    assert log.count("Loading weights: 100%") <= 1, log


def test_command_line_example_runs(service: Service, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's commands, run twice in a window of one item: the second append archives the
    first, which the archived items then show; the search covers the window too."""
    (block,) = re.findall(r"### From the command line.*?```sh\n(.*?)```", README, flags=re.S)
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    assert [c[:2] for c in commands] == [
        ["contextwm", "append"],
        ["contextwm", "context"],
        ["contextwm", "search"],
        ["contextwm", "items"],
    ]
    with Client(f"127.0.0.1:{service.port}") as cwm:
        cwm.create_conversation("ticket-42", settings=ConversationSettings(window_max_items=1))
    for round_ in (1, 2):
        outputs = []
        for command in commands:
            assert contextwm_main(["--target", f"127.0.0.1:{service.port}", *command[1:]]) == 0
            outputs.append(capsys.readouterr().out)
        appended, context, found, archived = outputs
        assert appended.startswith(f"appended seq {round_} (") and "flags: error" in appended
        assert "tool: Deploy failed: ConnectionError on db-3" in context
        assert found.count("ConnectionError on db-3") == round_
        assert ("ConnectionError on db-3" in archived) == (round_ == 2)


def test_setup_commands_are_the_ones_ci_runs() -> None:
    (setup,) = re.findall(r"## Set-up: two commands.*?```sh\n(.*?)```", README, flags=re.S)
    commands = [line.split("#")[0].strip() for line in setup.splitlines()]
    assert commands == ["scripts/serve", "scripts/check && scripts/test"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-2:] == ["scripts/check", "exec scripts/test"]
    for script in ("setup", "serve", "check", "test"):
        text = (ROOT / "scripts" / script).read_text()
        assert text.startswith("#!/usr/bin/env bash")
        if script != "setup":
            assert "scripts/setup" in text  # each creates or reuses .venv itself
    assert ".venv" in (ROOT / "scripts" / "setup").read_text()


class _Call:
    def __init__(self, name: str, args: dict[str, str]) -> None:
        self.name, self.args = name, args


class _Reply:
    def __init__(self, text: str, tool_calls: list[_Call], input_tokens: int) -> None:
        self.text, self.tool_calls = text, tool_calls
        self.input_tokens, self.cache_read_tokens = input_tokens, 0


def test_agent_loop_example_runs_and_compacts(start_service: StartService) -> None:
    """The documented agent loop, with a scripted LLM that reads files for 40 steps."""
    blocks = re.findall(r"```python\n(.*?)```", AGENT_LOOP.read_text(), flags=re.S)
    (loop,) = [b for b in blocks if "def run_task" in b]
    namespace: dict[str, object] = {}
    exec(compile(loop, str(AGENT_LOOP), "exec"), namespace)
    run_task = namespace["run_task"]
    service = start_service(models={"tiny": ModelSpec("tiny", 4000, reserved_reply_tokens=500)})
    prompts: list[list[dict[str, str]]] = []
    replies: list[_Reply] = []

    def llm(messages: list[dict[str, str]]) -> _Reply:
        prompts.append(messages)
        if "<context-compaction-request>" in messages[-1]["content"]:
            return _Reply("Summary: read src/ files; Never push to main.", [], 0)
        step = len(replies)
        sent = sum(len(m["content"]) // 4 for m in messages)
        calls = [_Call("read_file", {"path": f"src/f{step % 5}.py"})] if step < 40 else []
        replies.append(_Reply(f"Step {step}: reading on.", calls, sent))
        return replies[-1]

    tools = {"read_file": lambda args: f"# {args['path']}\n" + "x = 1\n" * 120}
    with Client(f"127.0.0.1:{service.port}") as cwm:
        cwm.create_conversation("task", settings=ConversationSettings(model="tiny"))
        run_task(cwm, "task", "Read the sources. Never push to main.", llm, tools)  # type: ignore[operator]
        usage = cwm.get_usage("task")
        assert usage.compactions >= 1
        assert usage.used_tokens <= usage.usable_tokens
        assert all(sum(len(m["content"]) for m in p) < 4 * 4000 for p in prompts)
        # Nothing was lost: the task, every reply and tool output, and the markers.
        calls = sum(len(r.tool_calls) for r in replies)
        assert calls == 40
        items = list(cwm.iter_items("task"))
        assert len(items) == 1 + len(replies) + calls + usage.compactions


def test_the_command_line_page_runs_as_written(
    start_service: StartService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/clients.md's commands, against a server started with --workspace DIR, DIR holding
    deploy.sh."""
    page = (ROOT / "docs" / "clients.md").read_text()
    (block,) = re.findall(r"## The command line.*?```sh\n(.*?)```", page, flags=re.S)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "deploy.sh").write_text("#!/bin/sh\nkubectl rollout restart deploy/billing\n")
    service = start_service(workspace_root=str(workspace))
    outputs = []
    for line in block.replace("\\\n", " ").splitlines():
        command = shlex.split(line, comments=True)
        if not command:
            continue
        assert command[0] == "contextwm"
        assert contextwm_main(["--target", f"127.0.0.1:{service.port}", *command[1:]]) == 0, line
        outputs.append(capsys.readouterr().out)
    joined = "\n".join(outputs)
    assert "kubectl rollout restart deploy/billing" in joined  # the working file was offered
    assert "ConnectionError on db-3" in outputs[3]  # the search, right after the append
