"""`contextwm import` against real servers: the formats, bad lines, progress and summary,
standard input, and imports interrupted (client killed, Ctrl-C, server restarted) and
resumed without adding anything twice."""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from contextwm.app import Service
from contextwm.cli import main
from contextwm.cli.importing import progress
from contextwm_client import Client
from server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
# The command line in a child process, on this checkout's code.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "client")])}


def write_lines(path: Path, rows: Sequence[object]) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def items_rows(conversations: int, per: int) -> list[object]:
    return [
        {
            "conversation_id": f"conv-{c}",
            "role": "user" if k % 2 == 0 else "assistant",
            "content": f"message {k} of conversation {c}",
            "timestamp": f"2024-05-{1 + k // 24:02d}T{k % 24:02d}:00:00Z",
            "metadata": {"k": k},
        }
        for k in range(per)
        for c in range(conversations)
    ]


def run_cli(target: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["--target", target, "import", *args])
    return status, capsys.readouterr().err


def contents(client: Client, conv: str) -> list[str]:
    return [i.content for i in client.iter_items(conv)]


@pytest.fixture
def target(service: Service) -> str:
    return f"127.0.0.1:{service.port}"


def test_items_jsonl_and_gz_with_a_bad_line(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = items_rows(3, 4)
    rows.insert(5, "{not json")
    rows.insert(8, {"role": "user", "content": "no conversation"})
    path = write_lines(tmp_path / "timeline.jsonl.gz", rows)
    status, err = run_cli(target, str(path), "--state-dir", str(tmp_path / "s"), capsys=capsys)
    assert status == 1  # something was skipped
    assert f"{path}:6: skipped: not JSON" in err
    assert f"{path}:9: skipped: no conversation id" in err
    assert "imported 12 new items (0 already there) into 3 conversations" in err
    assert "2 skipped (bad lines), 0 failed" in err
    assert contents(client, "conv-1") == [f"message {k} of conversation 1" for k in range(4)]
    item = next(iter(client.iter_items("conv-2")))
    assert item.timestamp.isoformat() == "2024-05-01T00:00:00+00:00"
    assert item.metadata == {"k": "0"}


def test_openai_jsonl_and_json_files(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {
        "id": "chat-1",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "add", "arguments": '{"a":2,"b":2}'}}],
            },
            {"role": "tool", "content": "4"},
            {"role": "assistant", "content": "4."},
        ],
    }
    unnamed = {"messages": [{"role": "user", "content": "hello"}]}
    lines = write_lines(tmp_path / "chats.jsonl", [record, unnamed])
    state = ["--state-dir", str(tmp_path / "s")]
    assert run_cli(target, str(lines), *state, capsys=capsys)[0] == 0
    assert contents(client, "chat-1") == [
        "You are terse.",
        "What is 2+2?",
        'tool call: add({"a":2,"b":2})',
        "4",
        "4.",
    ]
    roles = [i.role for i in client.iter_items("chat-1")]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    derived = [c.conversation_id for c in client.list_conversations().entries]
    assert [c for c in derived if c.startswith("openai-")] != []
    # The same records as one JSON file, into another namespace, conversation by "name".
    named = [{**record, "name": "chat-json"}]
    (tmp_path / "chats.json").write_text(json.dumps(named))
    status, err = run_cli(
        target,
        str(tmp_path / "chats.json"),
        *state,
        "--conversation-field",
        "name",
        capsys=capsys,
    )
    assert status == 0, err
    assert len(contents(client, "chat-json")) == 5


def test_a_mapped_format(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"thread": "t1", "speaker": "assistant", "msg": {"text": "mapped one"}, "ts": 1700000000},
        {"thread": "t1", "speaker": "user", "msg": {"text": "mapped two"}, "ts": 1700000060000},
    ]
    path = write_lines(tmp_path / "other.jsonl", rows)
    maps = ["--map", "conversation_id=thread", "--map", "role=speaker"]
    maps += ["--map", "content=msg.text", "--map", "timestamp=ts"]
    status, _ = run_cli(target, str(path), *maps, "--state-dir", str(tmp_path), capsys=capsys)
    assert status == 0
    got = list(client.iter_items("t1"))
    assert [(i.role, i.content) for i in got] == [
        ("assistant", "mapped one"),
        ("user", "mapped two"),
    ]
    assert got[1].timestamp.timestamp() == 1700000060  # milliseconds read as such
    status, err = run_cli(target, str(path), "--map", "colour=x", capsys=capsys)
    assert status == 2 and "unknown field" in err


def test_strict_stops_at_the_first_bad_line(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [*items_rows(1, 3), "[1, 2]", *items_rows(1, 6)[3:]]
    path = write_lines(tmp_path / "strict.jsonl", rows)
    status, err = run_cli(
        target, str(path), "--strict", "--state-dir", str(tmp_path / "s"), capsys=capsys
    )
    assert status == 1
    assert "strict.jsonl:4: skipped: expected a JSON object" in err
    assert "stopped after 3 new items" in err
    assert len(contents(client, "conv-0")) == 3


def test_server_refusals_are_reported_with_file_and_line(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"conversation_id": "r", "content": "fine"},
        {"conversation_id": "r", "content": "odd role", "role": "robot"},
        {"conversation_id": "r", "content": "fine again"},
    ]
    path = write_lines(tmp_path / "roles.jsonl", rows)
    status, err = run_cli(target, str(path), "--state-dir", str(tmp_path), capsys=capsys)
    assert status == 1
    assert f"{path}:2: failed: INVALID_ARGUMENT:" in err and "robot" in err
    assert contents(client, "r") == ["fine", "fine again"]


def test_progress_counts_what_the_server_answered(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)  # a line at every update
    path = write_lines(tmp_path / "acked.jsonl", items_rows(2, 30))
    args = [str(path), "--state-dir", str(tmp_path / "s"), "--chunk-size", "10"]
    status, err = run_cli(target, *args, capsys=capsys)
    assert status == 0, err
    counts = [int(line.split()[1]) for line in err.splitlines() if line.startswith("import: ")]
    # Chunk by chunk as the server stores them, never items merely handed to gRPC.
    assert counts and set(counts) <= {10, 20, 30, 40, 50, 60}, counts
    assert counts == sorted(counts) and counts[-1] == 60


def test_bad_lines_are_reported_in_file_order(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[object] = [{"conversation_id": "o", "content": f"turn {n}"} for n in range(40)]
    rows[3] = {"conversation_id": "o", "content": "refused by the server", "role": "robot"}
    rows[17] = "{not json"
    rows[25] = {"conversation_id": "o", "content": "refused again", "role": "robot"}
    rows[33] = "[1, 2]"
    path = write_lines(tmp_path / "order.jsonl", rows)
    args = [str(path), "--state-dir", str(tmp_path / "s"), "--chunk-size", "4"]
    status, err = run_cli(target, *args, capsys=capsys)
    assert status == 1
    reported = [int(line.split(":")[1]) for line in err.splitlines() if line.startswith(str(path))]
    assert reported == [4, 18, 26, 34], err
    assert "imported 36 new items (0 already there)" in err
    assert "2 skipped (bad lines), 2 failed" in err


def test_a_finished_import_run_again_sends_nothing_unless_restarted(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "once.jsonl", items_rows(2, 5))
    state = ["--state-dir", str(tmp_path / "s")]
    assert run_cli(target, str(path), *state, capsys=capsys)[0] == 0
    status, err = run_cli(target, str(path), *state, capsys=capsys)
    assert status == 0 and "imported already" in err
    status, err = run_cli(target, str(path), *state, "--restart", capsys=capsys)
    assert status == 0
    assert "imported 0 new items (10 already there)" in err
    assert len(contents(client, "conv-0")) == 5


def test_a_resume_point_holds_only_for_what_decides_what_is_stored(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(
        tmp_path / "spoken.jsonl",
        [{"conversation_id": f"s-{n % 2}", "said": f"line {n} of the talk"} for n in range(6)],
    )
    state = ["--state-dir", str(tmp_path / "s")]

    def run(*args: str) -> tuple[int, str]:
        status = main(["--target", target, *args])
        return status, capsys.readouterr().err

    # Every line fails without the mapping: the re-run with it sends them again.
    status, err = run("import", str(path), *state)
    assert status == 1 and "6 skipped (bad lines)" in err
    status, err = run("import", str(path), *state)
    assert status == 1 and "imported already" in err and "6 bad" in err, err
    status, err = run("import", str(path), *state, "--map", "content=said")
    assert status == 0 and "imported 6 new items" in err, err
    assert contents(client, "s-0") == [
        "line 0 of the talk",
        "line 2 of the talk",
        "line 4 of the talk",
    ]
    # Into another namespace: sent again, into it.
    status, err = run("--namespace", "other", "import", str(path), *state, "--map", "content=said")
    assert status == 0 and "imported 6 new items" in err, err
    assert len(list(client.iter_items("s-1", namespace="other"))) == 3
    # The server no longer holds what the point says (its data gone, a conversation made
    # again since): the input is sent whole again.
    client.delete_conversation("s-0")
    client.delete_conversation("s-1")
    client.append("s-0", "made again after the data went")
    status, err = run("import", str(path), *state, "--map", "content=said")
    assert status == 0, err
    assert "imported already" not in err and "no longer holds" in err, err
    assert "imported 6 new items" in err
    assert len(contents(client, "s-0")) == 4 and len(contents(client, "s-1")) == 3
    status, err = run("import", str(path), *state, "--map", "content=said")
    assert status == 0 and "imported already" in err


def cli_process(target: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "contextwm", "--target", target, "import", *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def test_standard_input_with_plain_progress_lines(
    target: str, client: Client, tmp_path: Path
) -> None:
    data = "".join(json.dumps(r) + "\n" for r in items_rows(4, 50)).encode()
    proc = cli_process(target, "-", stdin=subprocess.PIPE)
    _, err = proc.communicate(data.decode(), timeout=120)
    assert proc.returncode == 0, err
    assert "imported 200 new items (0 already there) into 4 conversations" in err
    assert "import: " in err  # a plain line, not a bar: stderr is not a terminal
    assert "\r" not in err
    assert len(contents(client, "conv-3")) == 50


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_killed_client_resumes_where_it_stopped(
    target: str, client: Client, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "big.jsonl", items_rows(10, 300))
    state = tmp_path / "s"
    args = [str(path), "--state-dir", str(state), "--segment-items", "500", "--chunk-size", "50"]
    first = cli_process(target, *args)
    # Killed once a resume point exists and more is on its way.
    wait_for(lambda: any(state.glob("*.json")), "a resume point")
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    saved = json.loads(next(state.glob("*.json")).read_text())
    assert 0 < saved["line"] < 3000 and not saved["done"]
    second = cli_process(target, *args)
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert f"resuming after line {saved['line']:,}" in err
    # Re-sent at most what the first run sent past its resume point.
    new = int(err.split(" new items (")[0].rsplit(" ", 1)[1].replace(",", ""))
    again = int(err.split(" already there)")[0].rsplit("(", 1)[1].replace(",", ""))
    assert new + again == 3000 - saved["line"]
    assert again < 1000
    for c in range(10):
        assert contents(client, f"conv-{c}") == [
            f"message {k} of conversation {c}" for k in range(300)
        ]


def test_ctrl_c_exits_130_and_a_rerun_finishes(target: str, client: Client, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "int.jsonl", items_rows(4, 400))
    args = [str(path), "--state-dir", str(tmp_path / "s"), "--segment-items", "400"]
    first = cli_process(target, *args)
    wait_for(lambda: any((tmp_path / "s").glob("*.json")), "a resume point")
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert "run the same command again" in err
    second = cli_process(target, *args)
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    for c in range(4):
        assert len(contents(client, f"conv-{c}")) == 400


def test_ctrl_c_summary_counts_what_the_server_holds(
    target: str, client: Client, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "stop.jsonl", items_rows(6, 300))
    state = tmp_path / "s"
    first = cli_process(target, str(path), "--state-dir", str(state), "--chunk-size", "50")
    wait_for(lambda: any(state.glob("*.json")), "a resume point (a chunk answered)")
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    summary = next(line for line in err.splitlines() if line.startswith("stopped after"))
    # "stopped after N new items (M already there) into K conversations ..."
    words = summary.split()
    new, again, conversations = (int(words[i].strip("(").replace(",", "")) for i in (2, 5, 9))
    items = new + again
    stats = client.get_stats(all_namespaces=True)
    held = [c for c in stats.conversations if c.stats.items]
    assert (items, conversations) == (stats.total.items, len(held)), summary
    assert 0 < items < 1800


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_restarted_server_is_waited_for_and_nothing_is_added_twice(tmp_path: Path) -> None:
    port = str(free_port())
    server = ServerProcess(tmp_path / "data", "--port", port)
    target = f"127.0.0.1:{port}"
    path = write_lines(tmp_path / "long.jsonl", items_rows(8, 500))
    state = tmp_path / "s"
    proc = cli_process(target, str(path), "--state-dir", str(state), "--segment-items", "500")
    try:
        wait_for(lambda: any(state.glob("*.json")), "a resume point", timeout=120)
        server.kill()
        server = ServerProcess(tmp_path / "data", "--port", port)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "server unavailable" in err
        with Client(target) as client:
            for c in range(8):
                assert contents(client, f"conv-{c}") == [
                    f"message {k} of conversation {c}" for k in range(500)
                ]
    finally:
        proc.kill()
        server.kill()


def test_the_bulk_index_script_is_the_import_command(
    target: str, client: Client, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "script.jsonl", items_rows(2, 3))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bulk_index.py"),
            "--target",
            target,
            str(path),
            "--state-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 6 new items (0 already there) into 2 conversations" in done.stderr
    assert len(contents(client, "conv-1")) == 3


def test_the_summary_says_how_many_items_came_out_of_time_order(
    target: str, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = items_rows(1, 6)
    rows[2], rows[4] = rows[4], rows[2]  # hour 4 arrives before hours 3 and 2
    path = write_lines(tmp_path / "shuffled.jsonl", rows)
    status, err = run_cli(target, str(path), "--state-dir", str(tmp_path / "s"), capsys=capsys)
    assert status == 0, err
    assert "; 2 stored with a time before an earlier item's" in err
    # Stored as given, shown in time order.
    assert [i.seq for i in client.iter_items("conv-0")] == [1, 2, 3, 4, 5, 6]
    text = client.get_context("conv-0", "message", max_tokens=2000).text
    assert text.index("message 2 of") < text.index("message 3 of") < text.index("message 4 of")
