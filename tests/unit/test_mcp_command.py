"""The mcp command before it serves: its arguments, and the conversation it makes sure of,
over a fake client."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any
from unittest.mock import create_autospec

import pytest
from contextwm.cli import parser as cli_parser
from contextwm.mcp_server import run_mcp
from contextwm.mcp_server.command import ensure_conversation
from contextwm_client import (
    AlreadyExistsError,
    Client,
    ConversationSettings,
)


def fake_client() -> Any:
    return create_autospec(Client, instance=True)


def parse(*arguments: str) -> Any:
    parser, _ = cli_parser.build_parser("127.0.0.1:50051")
    return parser.parse_args(list(arguments))


def test_the_arguments_and_their_defaults() -> None:
    args = parse("mcp", "--conversation", "agent", "--namespace", "team", "--target", "h:1")
    assert (args.conversation, args.namespace, args.target) == ("agent", "team", "h:1")
    assert (args.transport, args.host, args.port, args.log_level) == (
        "stdio",
        None,
        None,
        "WARNING",
    )
    assert args.workspace_root is None
    before = parse("--target", "h:2", "mcp", "--conversation", "agent")
    assert before.target == "h:2" and before.namespace is None
    with pytest.raises(SystemExit):
        parse("mcp")  # --conversation is required


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--port", "9000"), "apply to --transport http only"),
        (("--host", "0.0.0.0"), "apply to --transport http only"),
        (("--transport", "http", "--port", "70000"), "--port must be 0..65535"),
    ],
)
def test_bad_flags_are_refused_before_any_call(arguments: tuple[str, ...], message: str) -> None:
    client = fake_client()
    with pytest.raises(ValueError, match=message):
        run_mcp(client, parse("mcp", "--conversation", "agent", *arguments))
    assert client.method_calls == []


def test_a_missing_conversation_is_created_with_the_workspace_asked_for(tmp_path: Path) -> None:
    client = fake_client()
    ensure_conversation(client, "agent", str(tmp_path), io.StringIO())
    client.create_conversation.assert_called_once_with(
        "agent", settings=ConversationSettings(workspace_root=str(tmp_path))
    )
    client = fake_client()
    ensure_conversation(client, "agent", None, io.StringIO())
    client.create_conversation.assert_called_once_with("agent", settings=None)


def test_an_existing_conversation_is_kept_and_another_workspace_noted() -> None:
    client = fake_client()
    client.create_conversation.side_effect = AlreadyExistsError("ALREADY_EXISTS", "exists")
    client.get_conversation.return_value.settings.workspace_root = "/srv/a"
    stderr = io.StringIO()
    ensure_conversation(client, "agent", "/srv/a", stderr)
    assert stderr.getvalue() == ""
    ensure_conversation(client, "agent", "/srv/b", stderr)
    assert "exists with workspace /srv/a; --workspace-root /srv/b applies to new" in (
        stderr.getvalue()
    )
    # Without --workspace-root there is nothing to compare.
    client.get_conversation.reset_mock()
    ensure_conversation(client, "agent", None, stderr)
    client.get_conversation.assert_not_called()


def test_a_relative_workspace_root_is_taken_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client = fake_client()
    client.create_conversation.side_effect = RuntimeError("stop before serving")
    args = parse("mcp", "--conversation", "agent", "--workspace-root", "project/../ws")
    with pytest.raises(RuntimeError, match="stop before serving"):
        run_mcp(client, args)
    settings = client.create_conversation.call_args.kwargs["settings"]
    assert settings.workspace_root == os.path.join(os.getcwd(), "ws")
