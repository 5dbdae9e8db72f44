"""`contextwm import --format chatgpt|claude` against a real server: what a chat becomes
(items, roles, times, metadata), chats that cannot be read, files that are no export, re-runs
and newer exports that add only what is new, and a 100+ MB export imported by a client whose
memory stays far below the file's size."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import StartService
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.app import Service
from contextwm.cli import main
from contextwm_client import Client

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "chat_exports"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "client")])}
SOURDOUGH = "chatgpt-6650a1b2-0000-4000-8000-000000000001"
LISBON = "claude-1f0e0c4a-0000-4000-8000-0000000000c1"


@pytest.fixture
def target(service: Service) -> str:
    return f"127.0.0.1:{service.port}"


def run_cli(target: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["--target", target, "import", *args])
    return status, capsys.readouterr().err


def test_a_chatgpt_export_imports_the_current_branch_of_each_chat(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = DATA / "chatgpt.json"
    state = ["--state-dir", str(tmp_path / "s")]
    status, err = run_cli(target, "--format", "chatgpt", str(path), *state, capsys=capsys)
    assert status == 1, err  # one chat could not be read
    assert (
        f"{path}:3: skipped: chat 'Broken tree': its current_node 'gone' is not in its mapping"
        in err
    )
    assert "imported 10 new items (0 already there) into 2 conversations" in err
    assert "1 skipped (bad lines), 0 failed" in err
    assert "3 messages on other branches of chats left out" in err
    items = list(client.iter_items(SOURDOUGH))
    assert [(i.role, i.content) for i in items][:3] == [
        ("user", "How do I feed a sourdough starter?"),
        ("assistant", "Feed it equal weights of flour and water\nevery day."),
        ("user", "[image]\nDoes mine look right? It doubled in 6 hours."),
    ]
    assert "Feed it flour only." not in [i.content for i in items]  # the regenerated answer
    assert items[0].timestamp == datetime(2024, 5, 1, 10, 0, 10, tzinfo=UTC)
    assert items[0].metadata["chat_title"] == "Sourdough starter"
    assert items[0].metadata["chat_created_at"] == "2024-05-01T10:00:00+00:00"
    assert items[0].metadata["chat_updated_at"] == "2024-05-01T11:00:00.500000+00:00"
    assert [i.content for i in client.iter_items("chatgpt-n0")] == [
        "What is a levain?",
        "A levain is a portion of starter built up for one bake.",
    ]
    # Every item carries its chat's title: a search can keep to one chat of the export.
    found = client.search(
        "how long until it doubles",
        metadata={"chat_title": "Sourdough starter"},
        include_window=True,
        top_k=20,
    )
    assert found.hits
    assert {h.item.conversation_id for h in found.hits} == {SOURDOUGH}


def test_a_claude_export_imports_messages_and_attachments(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = DATA / "claude.json"
    state = ["--state-dir", str(tmp_path / "s")]
    status, err = run_cli(target, "--format", "claude", str(path), *state, capsys=capsys)
    assert status == 1, err
    assert f"{path}:2: skipped: chat 'Odd sender': message 0: unknown sender 'robot'" in err
    assert "imported 5 new items (0 already there) into 1 conversation " in err
    items = list(client.iter_items(LISBON))
    assert [i.role for i in items] == ["file", "user", "assistant", "file", "user"]
    assert items[0].file is not None and items[0].file.path == "notes.txt"
    assert items[0].content.endswith("Day 1: Alfama. Day 2: Belem. Day 3: Sintra.")
    assert items[1].content == "Plan three days in Lisbon around my notes.\n[file: map.png]"
    assert items[2].timestamp == datetime(2024, 6, 20, 9, 0, 20, tzinfo=UTC)
    assert {i.metadata["chat_title"] for i in items} == {"Trip to Lisbon"}


def test_a_file_that_is_not_the_export_exits_2_and_stores_nothing(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = DATA / "claude.json"
    state = ["--state-dir", str(tmp_path / "s")]
    status, err = run_cli(target, "--format", "chatgpt", str(path), *state, capsys=capsys)
    assert status == 2
    assert err.strip().splitlines()[-1] == (
        f'error: {path}: not a ChatGPT export (its first chat has no "mapping";'
        " it looks like a Claude export: --format claude)"
    )
    assert client.list_conversations().entries == ()
    status, err = run_cli(
        target, "--format", "claude", "--map", "content=x", str(path), *state, capsys=capsys
    )
    assert status == 2 and "--map and --conversation-field do not apply" in err


def test_json_that_breaks_off_keeps_the_chats_before_it_and_exits_2(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = (DATA / "chatgpt.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(whole[: whole.index('"Untitled, without an id"')])
    state = ["--state-dir", str(tmp_path / "s")]
    status, err = run_cli(target, "--format", "chatgpt", str(path), *state, capsys=capsys)
    assert status == 2
    assert f"error: {path}: not valid JSON after chat 1" in err
    assert len(list(client.iter_items(SOURDOUGH))) == 8


def test_a_rerun_adds_nothing_and_a_newer_export_adds_only_its_new_messages(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chats: list[dict[str, Any]] = json.loads((DATA / "chatgpt.json").read_text())[:2]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chats))
    state = ["--state-dir", str(tmp_path / "s")]
    args = ["--format", "chatgpt", str(path), *state]
    assert run_cli(target, *args, capsys=capsys)[0] == 0
    status, err = run_cli(target, *args, capsys=capsys)
    assert status == 0 and "imported already" in err
    status, err = run_cli(target, *args, "--restart", capsys=capsys)
    assert status == 0 and "imported 0 new items (10 already there)" in err, err
    # The chat went on after the export, and its last answer was regenerated: a newer
    # export has one more question and the new answer on the current branch.
    newer = copy.deepcopy(chats)
    mapping = newer[0]["mapping"]
    mapping["a3-new"] = copy.deepcopy(mapping["a3"])
    mapping["a3-new"]["id"] = mapping["a3-new"]["message"]["id"] = "a3-new"
    mapping["a3-new"]["message"]["content"]["parts"] = ["Yes, it is ready to bake with."]
    mapping["u4"] = copy.deepcopy(mapping["u1"])
    mapping["u4"].update(id="u4", parent="a3-new", children=[])
    mapping["u4"]["message"].update(id="u4", create_time=1714560000.0)
    mapping["u4"]["message"]["content"]["parts"] = ["When do I bake?"]
    newer[0]["current_node"] = "u4"
    path.write_text(json.dumps(newer))
    status, err = run_cli(target, *args, capsys=capsys)
    assert status == 0, err
    assert "imported 2 new items (9 already there) into 2 conversations" in err
    # The answer imported before stays: it was on the current branch then.
    assert [i.content for i in client.iter_items(SOURDOUGH)][-3:] == [
        "Yes: doubling in 6 hours means it is active.",
        "Yes, it is ready to bake with.",
        "When do I bake?",
    ]


# The client's memory probe: the command's own process, its peak resident size as the kernel
# kept it (VmHWM, not getrusage's ru_maxrss, which a child inherits from this process across
# fork and exec).
RSS_PROBE = """
import json, sys
from contextwm.cli import main

def peak_kib():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])

before = peak_kib()
status = main(sys.argv[1:])
print(json.dumps({"status": status, "before_kib": before, "peak_kib": peak_kib()}))
"""
LARGE_CHATS = 1200
# Each chat's regenerated answers: 20 of about 4 KB, on a branch that is not imported, so
# the file passes 100 MB while the server stores two items a chat (the test stays short; what
# is measured is the client reading the file).
ALTERNATIVES, ALTERNATIVE_WORDS = 20, 300


def large_chat(c: int) -> dict[str, Any]:
    def message(node: str, role: str, text: str, t: float) -> dict[str, Any]:
        return {
            "id": node,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": t,
            "content": {"content_type": "text", "parts": [text]},
            "metadata": {},
            "recipient": "all",
        }

    t = 1.7e9 + c * 3600
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["q"]},
        "q": {
            "id": "q",
            "message": message(f"q{c}", "user", f"Question {c} about topic {c % 97}?", t),
            "parent": "root",
            "children": ["a", "alt0"],
        },
        "a": {
            "id": "a",
            "message": message(f"a{c}", "assistant", f"Answer {c}: it depends.", t + 5),
            "parent": "q",
            "children": [],
        },
    }
    for k in range(ALTERNATIVES):
        filler = " ".join(f"draft{k}w{w}x{c}" for w in range(ALTERNATIVE_WORDS))
        mapping[f"alt{k}"] = {
            "id": f"alt{k}",
            "message": message(f"alt{k}-{c}", "assistant", filler, t + 1),
            "parent": "q" if k == 0 else f"alt{k - 1}",
            "children": [f"alt{k + 1}"] if k + 1 < ALTERNATIVES else [],
        }
    return {
        "title": f"Chat {c}",
        "create_time": t,
        "update_time": t + 5,
        "conversation_id": f"large-{c}",
        "current_node": "a",
        "mapping": mapping,
    }


def test_a_large_export_is_imported_with_the_client_s_memory_far_below_its_size(
    start_service: StartService, tmp_path: Path
) -> None:
    service = start_service(model=HashingEmbedder())
    path = tmp_path / "conversations.json"
    with path.open("w") as f:  # written a chat at a time: the test holds no whole copy
        f.write("[")
        for c in range(LARGE_CHATS):
            f.write(("," if c else "") + json.dumps(large_chat(c)))
        f.write("]")
    size = path.stat().st_size
    assert size > 100 * 2**20
    result = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, "--target", f"127.0.0.1:{service.port}", "import",
         "--format", "chatgpt", str(path), "--state-dir", str(tmp_path / "s")],
        capture_output=True, text=True, env=ENV, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["status"] == 0, result.stderr
    assert f"imported {2 * LARGE_CHATS:,} new items" in result.stderr
    assert f"{ALTERNATIVES * LARGE_CHATS:,} messages on other branches" in result.stderr
    peak, grew = report["peak_kib"] * 1024, (report["peak_kib"] - report["before_kib"]) * 1024
    # Loading the file whole would take more than its size (its strings alone); streamed, the
    # import adds about one chat and the chunks in flight to what the command's modules take
    # (about 60 MB, most of the peak).
    assert grew < size / 10, (grew, size)
    assert peak < size, (peak, size)
    with Client(f"127.0.0.1:{service.port}") as client:
        assert [i.content for i in client.iter_items(f"chatgpt-large-{LARGE_CHATS - 1}")] == [
            f"Question {LARGE_CHATS - 1} about topic {(LARGE_CHATS - 1) % 97}?",
            f"Answer {LARGE_CHATS - 1}: it depends.",
        ]
