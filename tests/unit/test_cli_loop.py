"""The agent-loop commands of the CLI: argument parsing, and their output over a fake client."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from contextwm import cli
from contextwm.cli import agent_loop, render
from contextwm.cli import parser as cli_parser
from contextwm_client import (
    ActiveContext,
    ActiveEntry,
    Checkpoint,
    Compaction,
    CompactResult,
    ContextEdit,
    Event,
    Optimisations,
    RestoreResult,
    TruncateResult,
    Usage,
)

T0 = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
USAGE = Usage(
    active_tokens=90000,
    reported_tokens=0,
    used_tokens=90000,
    source="server",
    context_limit=128000,
    reserved_reply_tokens=8000,
    usable_tokens=120000,
    fill_ratio=0.75,
    threshold=0.85,
    compaction_enabled=True,
    should_compact=False,
    summary_request="",
    compactions=1,
    active_items=40,
    model="gpt-4o",
    optimisations=Optimisations(2, 300, 1, 800, 0, 0),
)
COMPACTION = Compaction(
    number=2,
    created_at=T0,
    summary="s",
    extractive=True,
    marker_seq=41,
    items_archived=30,
    tokens_before=90000,
    tokens_after=9000,
    ledger="",
    facts=(),
    undone=False,
)
CHECKPOINT = Checkpoint(name="cp", created_at=T0, last_seq=40, active_tokens=9000, compactions=1)
EDIT = ContextEdit(
    id=3,
    created_at=T0,
    kind="truncation",
    seqs=(3, 4, 5, 9),
    related_seq=0,
    tokens_saved=700,
    detail="half",
    undone_at=None,
)


def entry(seq: int, treatment: str = "as_is", **changes: Any) -> ActiveEntry:
    fields: dict[str, Any] = {
        "seq": seq,
        "role": "user",
        "content": f"entry {seq}",
        "token_count": 5,
        "original_tokens": 5,
        "treatment": treatment,
        "kind": "message",
        "timestamp": T0,
        "metadata": {},
        "file": None,
    }
    fields.update(changes)
    return ActiveEntry(**fields)


class FakeClient:
    """Answers the agent-loop methods with canned values and records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.cancelled = False

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))

    def get_usage(self, *args: Any, **kwargs: Any) -> Usage:
        self._record("get_usage", *args, **kwargs)
        return USAGE

    def get_active_context(self, *args: Any, **kwargs: Any) -> ActiveContext:
        self._record("get_active_context", *args, **kwargs)
        if kwargs["page_token"] == "":
            entries = (entry(1), entry(0, "truncation_notice", role="system"))
            return ActiveContext(entries, "p2", 3, 15, USAGE)
        masked = entry(7, "masked", role="tool", token_count=4, original_tokens=400)
        return ActiveContext((masked,), "", 3, 15, USAGE)

    def compact(self, *args: Any, **kwargs: Any) -> CompactResult:
        self._record("compact", *args, **kwargs)
        return CompactResult(COMPACTION, USAGE)

    def truncate(self, *args: Any, **kwargs: Any) -> TruncateResult:
        self._record("truncate", *args, **kwargs)
        return TruncateResult((3, 4, 5, 9), 700, USAGE)

    def create_checkpoint(self, *args: Any, **kwargs: Any) -> Checkpoint:
        self._record("create_checkpoint", *args, **kwargs)
        return CHECKPOINT

    def list_checkpoints(self, *args: Any, **kwargs: Any) -> list[Checkpoint]:
        self._record("list_checkpoints", *args, **kwargs)
        return [CHECKPOINT]

    def restore_checkpoint(self, *args: Any, **kwargs: Any) -> RestoreResult:
        self._record("restore_checkpoint", *args, **kwargs)
        return RestoreResult(CHECKPOINT, 4, 2, USAGE)

    def iter_context_edits(self, *args: Any, **kwargs: Any) -> Iterator[ContextEdit]:
        self._record("iter_context_edits", *args, **kwargs)
        return iter([EDIT])

    def watch(self, *args: Any, **kwargs: Any) -> FakeClient:
        self._record("watch", *args, **kwargs)
        return self

    # The watch stream: a context manager over two events.
    def __enter__(self) -> Iterator[Event]:
        return iter(
            [
                Event(1, T0, "usage", usage=USAGE),
                Event(2, T0, "eviction", eviction_seqs=(1, 2, 3)),
                Event(3, T0, "gap", missed=5),
                Event(4, T0, "erasure", erased_seqs=(2, 5, 6)),
            ]
        )

    def __exit__(self, *exc: object) -> None:
        self.cancelled = True


def parse(*argv: str) -> argparse.Namespace:
    parser, _ = cli_parser.build_parser("127.0.0.1:1")
    return parser.parse_args(argv)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[FakeClient, str]:
    args = parse(*argv)
    client = FakeClient()
    assert args.handler(client, args) == 0
    return client, capsys.readouterr().out


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("argv", "handler", "expected"),
    [
        (["usage", "c"], agent_loop.usage, {"reported": None, "json": False}),
        (["usage", "c", "--reported", "1200", "--json"], agent_loop.usage, {"reported": 1200}),
        (["active", "c"], agent_loop.active, {}),
        (["compact", "c"], agent_loop.compact, {"summary": None, "summary_file": None}),
        (["compact", "c", "--summary", "done"], agent_loop.compact, {"summary": "done"}),
        (["compact", "c", "--summary-file", "-"], agent_loop.compact, {"summary_file": "-"}),
        (["truncate", "c", "last_two"], agent_loop.truncate, {"strategy": "last_two"}),
        (["checkpoint", "c", "cp"], agent_loop.checkpoint, {"name": "cp"}),
        (["checkpoints", "c"], agent_loop.checkpoints, {}),
        (["restore", "c", "cp"], agent_loop.restore, {"name": "cp"}),
        (["edits", "c", "--json"], agent_loop.edits, {"json": True}),
        (["watch", "c"], agent_loop.watch, {"after": 0}),
        (["watch", "c", "--after", "41"], agent_loop.watch, {"after": 41}),
    ],
)
def test_parsing(argv: list[str], handler: Any, expected: dict[str, Any]) -> None:
    args = parse(*argv)
    assert args.handler is handler
    assert args.conversation == "c"
    for name, value in expected.items():
        assert getattr(args, name) == value, name


@pytest.mark.parametrize(
    "argv",
    [
        ["compact", "c", "--summary", "a", "--summary-file", "b"],
        ["truncate", "c", "most"],
        ["usage", "c", "--reported", "many"],
        ["checkpoint", "c"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--target", "127.0.0.1:1", *argv]) == 2
    assert "usage:" in capsys.readouterr().err


def test_unreadable_summary_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.txt"
    argv = ["--target", "127.0.0.1:1", "compact", "c", "--summary-file", str(missing)]
    assert cli.main(argv) == 2
    assert "cannot read the summary file" in capsys.readouterr().err


def test_no_server_exits_1_saying_where_it_looked_and_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Nothing listens on port 1; --wait 0 does not wait for one to come up.
    assert cli.main(["--target", "127.0.0.1:1", "--wait", "0", "usage", "c"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: UNAVAILABLE: no contextwm ready at 127.0.0.1:1 after 0 s")
    assert "hint: start a server at 127.0.0.1:1 with `contextwm serve`" in err
    assert "--target or $CONTEXTWM_TARGET" in err


def test_a_host_without_a_port_means_port_50051(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--target", "localhost", "--wait", "0", "usage", "c"]) == 1
    assert "no contextwm ready at localhost:50051" in capsys.readouterr().err


# ---------------------------------------------------------------- output


def test_usage_output(capsys: pytest.CaptureFixture[str]) -> None:
    client, out = run(capsys, "usage", "c", "--reported", "1200")
    assert client.calls == [("get_usage", ("c",), {"reported_input_tokens": 1200})]
    assert "75.0% of usable (threshold 85%)" in out
    assert "summary request" not in out
    _, out = run(capsys, "usage", "c", "--json")
    assert json.loads(out)["optimisations"]["masked_tokens_saved"] == 300


def test_active_output_pages_and_totals(capsys: pytest.CaptureFixture[str]) -> None:
    client, out = run(capsys, "active", "c")
    lines = out.splitlines()
    assert [call[2]["page_token"] for call in client.calls] == ["", "p2"]
    assert lines[0] == "1\tuser\tas_is\t5 tok\tentry 1"
    assert lines[1].startswith("-\tsystem\ttruncation_notice\t")
    assert lines[2] == "7\ttool\tmasked\t4 tok (of 400)\tentry 7"
    assert lines[3].startswith("3 entries, 15 tokens; 90000/120000 tokens (75.0%, server)")
    _, out = run(capsys, "active", "c", "--json")
    data = json.loads(out)
    assert [e["seq"] for e in data["entries"]] == [1, 0, 7]
    assert data["next_page_token"] == ""


def test_compact_summary_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client, out = run(capsys, "compact", "c")
    assert client.calls == [("compact", ("c", None), {})]  # extractive
    assert out.startswith("compaction 2 (extractive summary): marker seq 41")
    client, _ = run(capsys, "compact", "c", "--summary", "")
    assert client.calls[0][1] == ("c", "")  # sent as given; the server refuses blanks
    summary = tmp_path / "summary.md"
    summary.write_text("from a file", encoding="utf-8")
    client, _ = run(capsys, "compact", "c", "--summary-file", str(summary))
    assert client.calls[0][1] == ("c", "from a file")
    monkeypatch.setattr("sys.stdin", type("Stdin", (), {"read": lambda self: "piped"})())
    client, _ = run(capsys, "compact", "c", "--summary-file", "-")
    assert client.calls[0][1] == ("c", "piped")


def test_truncate_checkpoint_restore_edits_output(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run(capsys, "truncate", "c", "half")
    assert out.startswith("truncated 4 items (3-5, 9), 700 tokens removed\nusage: ")
    _, out = run(capsys, "checkpoint", "c", "cp")
    assert out == "created checkpoint cp at seq 40 (9000 active tokens, 1 compaction)\n"
    _, out = run(capsys, "checkpoints", "c")
    assert out.startswith("cp\t2024-05-17T09:30:00+00:00\tseq 40\t9000 tok")
    _, out = run(capsys, "restore", "c", "cp", "--json")
    assert json.loads(out)["reverted_items"] == 4
    _, out = run(capsys, "edits", "c")
    assert out == "3\t2024-05-17T09:30:00+00:00\ttruncation 3-5, 9, 700 tokens saved; half\n"
    _, out = run(capsys, "edits", "c", "--json")
    assert json.loads(out)[0]["seqs"] == [3, 4, 5, 9]


def test_watch_prints_a_line_per_event_and_cancels(capsys: pytest.CaptureFixture[str]) -> None:
    client, out = run(capsys, "watch", "c", "--after", "7")
    assert client.calls == [("watch", ("c",), {"after_event_id": 7})]
    assert client.cancelled
    lines = out.splitlines()
    assert [line.split("\t")[2] for line in lines] == ["usage", "eviction", "gap", "erasure"]
    assert lines[1].endswith("archived 1-3")
    assert lines[2].endswith("5 events missed (dropped by retention)")
    assert lines[3].endswith("erased 2, 5-6")
    _, out = run(capsys, "watch", "c", "--json")
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1, 2, 3, 4]


def test_seq_ranges() -> None:
    assert render.seq_ranges([]) == ""
    assert render.seq_ranges([9, 3, 4, 5, 11, 12]) == "3-5, 9, 11-12"


def test_an_import_with_no_server_says_so_after_the_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"conversation_id": "c", "role": "user", "content": "hello"}\n')
    argv = ["--target", "127.0.0.1:1", "--wait", "0", "import", str(path)]
    assert cli.main([*argv, "--state-dir", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "error: UNAVAILABLE: no contextwm ready at 127.0.0.1:1 after 0 s" in err
    assert "waiting for it" not in err
