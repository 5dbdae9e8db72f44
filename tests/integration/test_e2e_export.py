"""Export and restore through gRPC: a conversation with every kind of row comes back exactly,
on the same store and on the other one; a restore cut short is resumed; a file cut short or
changed is refused, naming the line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import StartService
from contextwm_client import (
    AlreadyExistsError,
    Client,
    InvalidArgumentError,
    NotFoundError,
)
from rich_conversation import build, seen


def without_namespace(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        record = json.loads(line)
        if record["type"] == "conversation":
            record["namespace"] = ""
            record["embed_model"] = None  # set once the copy's items are embedded again
        if record["type"] == "end":
            record["digest"] = ""
        out.append(json.dumps(record, sort_keys=True))
    return out


def other_store(store_kind: str, request: pytest.FixtureRequest) -> str:
    return "" if store_kind == "postgresql" else request.getfixturevalue("pg_dsn")


# The path that differs by store: it runs on SQLite, then PostgreSQL (restoring into the
# other one each time); the rest is the same on both.
@pytest.mark.both_stores
def test_a_conversation_comes_back_exactly_on_this_store_and_the_other(
    start_service: StartService, store_kind: str, request: pytest.FixtureRequest
) -> None:
    source = start_service()
    target = start_service(store=other_store(store_kind, request))
    with Client(f"127.0.0.1:{source.port}") as a, Client(f"127.0.0.1:{target.port}") as b:
        build(a)
        lines = list(a.export("rich"))
        kinds = {json.loads(line)["type"] for line in lines}
        assert kinds == {
            "conversation",
            "item",
            "compaction",
            "fact",
            "edit",
            "checkpoint",
            "event",
            "session",
            "end",
        }
        assert b.restore_export(lines).restored == 1
        assert seen(b, "rich") == seen(a, "rich")
        assert without_namespace(list(b.export("rich"))) == without_namespace(lines)
        # Into another namespace of the same store, and embedded again there.
        result = a.restore_export(lines, namespace="copy")
        items = sum('"type":"item"' in line for line in lines)
        assert (result.restored, result.unchanged, result.items) == (1, 0, items)
        assert seen(a, "rich", "copy") == seen(a, "rich")
        hits = a.search("kernel scheduling turn", conversation_id="rich", namespace="copy").hits
        assert hits and "kernel scheduling" in hits[0].item.content


def test_a_restore_resumes_and_refuses_what_differs(client: Client) -> None:
    build(client, "one")
    build(client, "two")
    lines = list(client.export())
    assert [json.loads(x)["conversation_id"] for x in lines if '"type":"conversation"' in x] == [
        "one",
        "two",
    ]
    client.delete_conversation("two")
    result = client.restore_export(lines)  # "one" is there: a resumed restore
    assert (result.restored, result.unchanged) == (1, 1)
    client.append("two", "a change after the export")
    with pytest.raises(AlreadyExistsError, match=r"'two' already exists .* differs"):
        client.restore_export(lines)
    with pytest.raises(NotFoundError, match="'nope' not found"):
        list(client.export("nope"))


def test_an_export_right_after_a_restore_is_the_one_restored(client: Client) -> None:
    client.append_batch("e", [{"content": f"note {n} on the tide tables"} for n in range(3)])
    client.search("tide", conversation_id="e", mode="dense", include_window=True)  # embedded
    lines = list(client.export("e"))
    assert json.loads(lines[0])["embed_model"]
    client.delete_conversation("e")
    assert client.restore_export(lines).restored == 1
    # Before the server embeds the items again: they will have its model's vectors.
    assert list(client.export("e")) == lines


# Edits of an exported file, and what the refusal says.
EDITS: list[tuple[Callable[[list[str]], list[str]], str]] = [
    (lambda ls: ls[:-1], "ends inside conversation 'one' .* cut short"),
    (lambda ls: [ls[0], *ls[2:]], "lines are missing or added"),
    (lambda ls: [ls[0], ls[1].replace("8443", "8080"), *ls[2:]], "digest .* does not match"),
    (lambda ls: [ls[0], "{not json", *ls[1:]], "line 2: not JSON"),
    (lambda ls: ls[1:], "line 1: a 'item' line before any conversation line"),
    (lambda ls: [ls[0].replace('"format":1', '"format":9'), *ls[1:]], "line 1: export format 9"),
]


def test_a_file_cut_short_or_changed_is_refused_naming_the_line(client: Client) -> None:
    build(client, "one")
    lines = list(client.export("one"))
    client.delete_conversation("one")
    for edit, message in EDITS:
        with pytest.raises(InvalidArgumentError, match=message):
            client.restore_export(edit(lines))
        with pytest.raises(NotFoundError):
            client.get_conversation("one")


def test_the_cli_exports_to_a_file_and_import_restores_it(client: Client, tmp_path: Path) -> None:
    build(client, "one")
    target = client.target
    out = tmp_path / "one.jsonl"
    cli = [sys.executable, "-m", "contextwm", "--target", target]
    run = subprocess.run([*cli, "export", "one", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert out.read_text().splitlines() == list(client.export("one"))
    run = subprocess.run(
        [*cli, "--namespace", "moved", "import", str(out)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "restored 1 conversation (" in run.stdout
    assert seen(client, "one", "moved") == seen(client, "one")
