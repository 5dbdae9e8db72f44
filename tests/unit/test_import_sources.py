"""Reading import inputs: field values, derived idempotency keys, resuming mid-file (plain and
gzip), and the progress a terminal and a log get."""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from contextwm.cli.importing.progress import Progress, Tally
from contextwm.cli.importing.sources import Input, Reader, parse_mapping


def lines(path: Path, rows: list[object]) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(text) if path.suffix == ".gz" else text)
    return path


def test_timestamps_in_iso_seconds_and_milliseconds(tmp_path: Path) -> None:
    rows: list[object] = [
        {"conversation_id": "c", "content": "a", "timestamp": "2024-05-01T10:00:00Z"},
        {"conversation_id": "c", "content": "b", "timestamp": 1714557600},
        {"conversation_id": "c", "content": "c", "timestamp": 1714557600000},
        {"conversation_id": "c", "content": "d", "timestamp": "2024-05-01T12:00:00+02:00"},
        {"conversation_id": "c", "content": "e", "timestamp": "yesterday"},
        {"conversation_id": "c", "content": "f", "timestamp": True},
    ]
    records = list(Reader().records(Input(str(lines(tmp_path / "t.jsonl", rows)))))
    moment = datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert [r.items[0].item.timestamp for r in records[:4]] == [moment] * 4
    assert records[4].error == "timestamp 'yesterday' is not an ISO 8601 time"
    assert records[5].error == "timestamp True is not a time"


def test_keys_are_derived_from_line_and_bytes_unless_the_item_has_one(tmp_path: Path) -> None:
    row = {"conversation_id": "c", "content": "same text"}
    path = lines(tmp_path / "k.jsonl", [row, row, {**row, "idempotency_key": "mine"}])
    first = [r.items[0].item.idempotency_key for r in Reader().records(Input(str(path)))]
    again = [r.items[0].item.idempotency_key for r in Reader().records(Input(str(path)))]
    assert first == again  # the same input names the same items
    assert first[0] != first[1]  # the same text on another line is another item
    assert first[0] is not None and first[0].startswith("import:")
    assert first[2] == "mine"


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_resumed_read_starts_after_the_saved_line(tmp_path: Path, name: str) -> None:
    rows: list[object] = [{"conversation_id": "c", "content": f"line {n}"} for n in range(50)]
    source = Input(str(lines(tmp_path / name, rows)))
    whole = list(Reader().records(source))
    point = whole[19]
    resumed = list(Reader().records(source, point.line, point.end))
    assert resumed == whole[20:]
    assert resumed[0].items[0].item.content == "line 20"


def test_openai_records_in_a_json_file_resume_by_record(tmp_path: Path) -> None:
    records = [
        {"id": f"chat-{n}", "messages": [{"role": "user", "content": "hi"}]} for n in range(3)
    ]
    path = tmp_path / "chats.json"
    path.write_text(json.dumps(records))
    read = list(Reader().records(Input(str(path)), skip_lines=1))
    assert [r.items[0].conversation_id for r in read] == ["chat-1", "chat-2"]
    assert read[0].items[0].source == f"{path}#:2"


def test_mappings_are_checked() -> None:
    assert parse_mapping(["role=speaker", "content=msg.text"]) == {
        "role": "speaker",
        "content": "msg.text",
    }
    with pytest.raises(ValueError, match="use FIELD=INPUT_FIELD"):
        parse_mapping(["role"])
    with pytest.raises(ValueError, match="unknown field"):
        parse_mapping(["colour=hue"])


def test_standard_input_is_read_with_a_gzip_name_too() -> None:
    data = io.BytesIO(b'{"conversation_id": "c", "content": "from a pipe"}\n')
    records = list(Reader().records(Input("-", stdin=data)))
    assert records[0].items[0].item.content == "from a pipe"
    assert records[0].items[0].source == "<stdin>:1"


def test_a_terminal_gets_a_bar_and_a_log_gets_lines() -> None:
    now = [0.0]
    tally = Tally(
        appended=400, duplicates=100, conversations={("default", "a"), ("default", "b")}, skipped=1
    )
    bar = io.StringIO()
    progress = Progress(bar, total_bytes=1000, terminal=True, clock=lambda: now[0])
    now[0] = 10.0
    progress.update(tally, 250)
    text = bar.getvalue()
    assert text.startswith("\r\x1b[2Kimporting [######------------------]  25%")
    assert "500 items, 50 items/s, ETA 0:00:30, 2 conversations, 1 bad" in text
    log = io.StringIO()
    progress = Progress(log, total_bytes=None, terminal=False, clock=lambda: now[0])
    progress.update(tally, None)  # too soon after the start for a line
    now[0] = 20.0
    progress.update(tally, None)
    assert log.getvalue() == "import: 500 items, 50 items/s, 2 conversations, 1 bad\n"


def test_a_resumed_input_has_an_eta_by_this_runs_own_pace() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, total_bytes=None, terminal=False, clock=lambda: now[0])
    # An earlier run stored the first 80 % of the input; this one reads 10 % in 5 s.
    progress.begin_input(1000, position=800)
    now[0] = 5.0
    progress.update(Tally(appended=100), 900)
    assert "ETA 0:00:05" in out.getvalue()  # not 0:00:00 (the earlier run's 80 % as its own)


def test_the_summary_counts_as_imported_only_what_was_new() -> None:
    progress = Progress(io.StringIO(), total_bytes=None, terminal=False, clock=lambda: 2.0)
    text = progress.summary(Tally(duplicates=3000, conversations={("d", "a")}), finished=True)
    assert text.startswith("imported 0 new items (3,000 already there) into 1 conversation")
