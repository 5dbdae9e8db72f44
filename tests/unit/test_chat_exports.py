"""Reading ChatGPT and Claude exports (tests/data/chat_exports, built to the documented
formats): the current branch of a message tree, hidden messages and reasoning left out,
non-text parts, attachments, per-chat failures, inputs that are no export, .gz and .zip, and
resuming after the chats already imported."""

from __future__ import annotations

import gzip
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from contextwm.cli.importing.chat_exports import ChatReader
from contextwm.cli.importing.sources import BadLine, ChatFormat, Input, Reader, Record
from contextwm_client import FileRef

DATA = Path(__file__).resolve().parents[1] / "data" / "chat_exports"


def export(fmt: ChatFormat) -> list[dict[str, Any]]:
    chats: list[dict[str, Any]] = json.loads((DATA / f"{fmt}.json").read_text())
    return chats


def read(fmt: ChatFormat, path: Path, skip: int = 0) -> list[Record]:
    return list(ChatReader(fmt).records(Input(str(path)), skip))


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_a_chatgpt_chat_is_its_current_branch_with_hidden_messages_left_out() -> None:
    first = read("chatgpt", DATA / "chatgpt.json")[0]
    assert first.error is None
    # The regenerated answer ("flour only") and the edited question with its answer sit on
    # other branches: counted, not imported.
    assert first.other_branches == 3
    assert [(i.item.role, i.item.content) for i in first.items] == [
        ("user", "How do I feed a sourdough starter?"),
        ("assistant", "Feed it equal weights of flour and water\nevery day."),
        ("user", "[image]\nDoes mine look right? It doubled in 6 hours."),
        ("assistant", "tool call: python(print(6 * 60 / 2))"),
        ("tool", "180.0"),
        ("tool", "[tether_browsing_display]"),
        ("tool", "Starter care (https://example.org/starter): A healthy starter doubles in"
         " 4 to 8 hours."),
        ("assistant", "Yes: doubling in 6 hours means it is active."),
    ]  # fmt: skip
    texts = " ".join(i.item.content for i in first.items)
    # The hidden system message and custom instructions, and the model's reasoning: left out.
    assert "I bake on weekends" not in texts and "doubles in range" not in texts
    assert {i.conversation_id for i in first.items} == {
        "chatgpt-6650a1b2-0000-4000-8000-000000000001"
    }
    assert [i.item.idempotency_key for i in first.items][:2] == ["chatgpt:u1", "chatgpt:a1"]
    times = [i.item.timestamp for i in first.items]
    assert times[:2] == [at(1714557610), at(1714557630)]
    assert times[-1] == at(1714557657)  # no time of its own: the one before it
    assert first.items[0].item.metadata == {
        "chat_export": "chatgpt",
        "chat_title": "Sourdough starter",
        "chat_created_at": "2024-05-01T10:00:00+00:00",
        "chat_updated_at": "2024-05-01T11:00:00.500000+00:00",
        "message_id": "u1",
    }
    tool = first.items[4].item.metadata
    assert (tool["author_name"], tool["content_type"]) == ("python", "execution_output")
    assert first.items[1].item.metadata["model"] == "gpt-4o"
    assert first.items[0].source == f"{DATA / 'chatgpt.json'}:1 message u1"


def test_a_chat_without_an_id_takes_its_root_s_and_a_broken_one_is_skipped_alone() -> None:
    _, second, third = read("chatgpt", DATA / "chatgpt.json")
    assert {i.conversation_id for i in second.items} == {"chatgpt-n0"}
    assert second.items[0].item.content == "What is a levain?"
    assert third.line == 3 and not third.items
    assert third.error == "chat 'Broken tree': its current_node 'gone' is not in its mapping"


def chatgpt_chat(mapping: dict[str, Any], current: str, title: str = "t") -> dict[str, Any]:
    return {
        "title": title,
        "id": "c",
        "create_time": 1.0,
        "current_node": current,
        "mapping": mapping,
    }


def node(parent: str | None, role: str, text: str, **message: Any) -> dict[str, Any]:
    return {
        "parent": parent,
        "message": {
            "author": {"role": role},
            "content": {"content_type": "text", "parts": [text]},
            **message,
        },
    }


@pytest.mark.parametrize(
    ("mapping", "current", "error"),
    [
        ({"a": node("b", "user", "x"), "b": node("a", "user", "y")}, "a", "has a cycle at 'a'"),
        ({"a": node(None, "critic", "x")}, "a", "unknown author role 'critic'"),
        ({"a": node(None, "user", "x", create_time="noon")}, "a", "'noon' is not seconds"),
    ],
)
def test_a_chat_that_cannot_be_read_is_skipped_with_the_reason(
    tmp_path: Path, mapping: dict[str, Any], current: str, error: str
) -> None:
    fine = chatgpt_chat({"r": node(None, "user", "still read")}, "r")
    path = write(tmp_path / "c.json", [chatgpt_chat(mapping, current, "Odd"), fine])
    bad, good = read("chatgpt", path)
    assert bad.error is not None and bad.error.startswith("chat 'Odd': ") and error in bad.error
    assert [i.item.content for i in good.items] == ["still read"]


def test_a_claude_chat_with_attachments_files_and_content_blocks() -> None:
    first, second, third = read("claude", DATA / "claude.json")
    assert [(i.item.role, i.item.content) for i in first.items] == [
        ("file", "[attachment: notes.txt]\nDay 1: Alfama. Day 2: Belem. Day 3: Sintra."),
        ("user", "Plan three days in Lisbon around my notes.\n[file: map.png]"),
        ("assistant", 'tool call: web_search({"query": "Sintra opening hours"})\n'
         "tool result: web_search: Pena Palace opens at 9:30.\n"
         "Day 1 Alfama, day 2 Belem, day 3 Sintra: be at Pena Palace at 9:30."),
        ("file", "[attachment]\npastel de nata, bifana"),
        ("user", "Thanks, and a pasted list:"),
    ]  # fmt: skip
    assert "They want a plan" not in first.items[2].item.content  # thinking is left out
    assert first.items[0].item.file == FileRef(path="notes.txt", kind="mention")
    assert first.items[3].item.file is None  # pasted text has no file name
    assert first.items[0].item.metadata == {
        "chat_export": "claude",
        "chat_title": "Trip to Lisbon",
        "chat_created_at": "2024-06-20T09:00:00+00:00",
        "chat_updated_at": "2024-06-20T09:10:00+00:00",
        "message_id": "m1",
        "file_type": "txt",
        "file_size": "41",
    }
    assert [i.item.idempotency_key for i in first.items] == [
        "claude:m1:attachment:0",
        "claude:m1",
        "claude:m2",
        "claude:m3:attachment:0",
        "claude:m3",
    ]
    assert {i.conversation_id for i in first.items} == {
        "claude-1f0e0c4a-0000-4000-8000-0000000000c1"
    }
    assert first.items[2].item.timestamp == datetime(2024, 6, 20, 9, 0, 20, tzinfo=UTC)
    assert second.error == "chat 'Odd sender': message 0: unknown sender 'robot'"
    assert third.error is None and third.items == ()  # an empty chat adds nothing


def test_claude_messages_that_name_their_parents_give_the_last_message_s_branch(
    tmp_path: Path,
) -> None:
    root = "00000000-0000-4000-8000-000000000000"

    def message(uuid: str, parent: str, sender: str, text: str) -> dict[str, Any]:
        return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "text": text}

    chat = {
        "uuid": "b",
        "name": "Edited",
        "chat_messages": [
            message("q1", root, "human", "first question"),
            message("r1", "q1", "assistant", "first answer"),
            message("q2", root, "human", "edited question"),
            message("r2", "q2", "assistant", "answer to the edit"),
        ],
    }
    (record,) = read("claude", write(tmp_path / "b.json", [chat]))
    assert [i.item.content for i in record.items] == ["edited question", "answer to the edit"]


@pytest.mark.parametrize(
    ("fmt", "text", "error"),
    [
        ("chatgpt", "", "not a ChatGPT export (an empty file)"),
        ("chatgpt", "hello", "not a ChatGPT export (not a JSON array of chats)"),
        ("claude", '"a string"', "not a Claude export (not a JSON array of chats)"),
        ("chatgpt", '{"conversation_id": "c", "content": "hi"}\n{"conversation_id": "c"}\n',
         'not a ChatGPT export (its first chat has no "mapping")'),
        ("chatgpt", json.dumps(export("claude")),
         'its first chat has no "mapping"; it looks like a Claude export: --format claude'),
        ("claude", json.dumps(export("chatgpt")),
         'its first chat has no "chat_messages"; it looks like a ChatGPT export: --format chatgpt'),
        ("claude", '[{"messages": []}]', "it looks like OpenAI chat records: --format openai"),
        ("chatgpt", "[1, 2]", 'not a ChatGPT export (its first chat has no "mapping")'),
        ("chatgpt", "[{nope", "not valid JSON at its start"),
    ],
)  # fmt: skip
def test_an_input_that_is_not_the_export_is_refused_naming_the_file(
    tmp_path: Path, fmt: ChatFormat, text: str, error: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(text)
    with pytest.raises(BadLine) as caught:
        read(fmt, path)
    assert str(caught.value).startswith(f"{path}: ")
    assert error in str(caught.value)


def test_json_that_breaks_off_stops_after_the_chats_read(tmp_path: Path) -> None:
    whole = json.dumps(export("chatgpt"))
    path = tmp_path / "cut.json"
    path.write_text(whole[: whole.index('"Untitled, without an id"') + 10])
    records = ChatReader("chatgpt").records(Input(str(path)))
    assert len(next(records).items) == 8
    with pytest.raises(BadLine, match=r"cut\.json: not valid JSON after chat 1"):
        next(records)


def test_one_chat_alone_and_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_bytes(b"\xef\xbb\xbf\n " + json.dumps(export("chatgpt")[1]).encode())
    (record,) = read("chatgpt", path)
    assert record.items[0].item.content == "What is a levain?"


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_gz_and_the_export_zip_read_like_the_plain_file(tmp_path: Path, fmt: ChatFormat) -> None:
    plain = DATA / f"{fmt}.json"
    gz = tmp_path / "conversations.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("user.json", "{}")
        z.writestr("conversations.json", plain.read_bytes())
        z.writestr("backup/conversations.json", "[]")  # a deeper copy is not the export's

    def items(path: Path) -> list[tuple[str, str, str | None]]:
        return [
            (i.conversation_id, i.item.content, i.item.idempotency_key)
            for r in read(fmt, path)
            for i in r.items
        ]

    assert items(gz) == items(plain) == items(archive)
    assert len(items(plain)) > 4


def test_a_zip_without_the_export_or_read_as_another_format_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("notes.json", "[]")
    with pytest.raises(BadLine, match=r"the archive has no conversations\.json"):
        read("chatgpt", archive)
    with pytest.raises(BadLine, match="read for --format chatgpt or claude"):
        list(Reader("items").records(Input(str(archive))))
    (tmp_path / "fake.zip").write_text("[]")
    with pytest.raises(BadLine, match=r"fake\.zip: not a zip archive"):
        read("claude", tmp_path / "fake.zip")


def test_a_resumed_read_starts_after_the_chats_imported() -> None:
    whole = read("chatgpt", DATA / "chatgpt.json")
    resumed = read("chatgpt", DATA / "chatgpt.json", skip=1)
    assert resumed == whole[1:]
    assert [r.line for r in resumed] == [2, 3]


def test_an_export_read_as_openai_records_says_which_format_fits(tmp_path: Path) -> None:
    path = write(tmp_path / "conversations.json", export("claude")[:1])
    (record,) = Reader("auto").records(Input(str(path)))
    assert record.error == (
        'an OpenAI record needs a "messages" list (a claude export? --format claude)'
    )
