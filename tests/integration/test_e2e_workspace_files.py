"""Workspace files end to end through a real server on loopback: chunked reads and
scrolling, scrollable search, safe edits, the chunk cache and tool availability, on a real
temporary workspace (real SQLite, the real MiniLM model)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from code_samples import SAMPLES
from conftest import StartService
from contextwm.settings import ContextWindowSettings
from contextwm_client import (
    AbortedError,
    Client,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
)

# A module whose definitions the parser sees: a header, a class with methods, functions.
SERVICE = '''"""Orders and their invoices."""

import json
from dataclasses import dataclass


@dataclass
class Order:
    """One order."""

    id: int
    lines: list

    def total(self):
        return sum(line.amount for line in self.lines)

    def to_json(self):
        return json.dumps({"id": self.id, "total": self.total()})


def load_orders(path):
    """Reads orders from a JSON file."""
    with open(path) as f:
        return [Order(**row) for row in json.load(f)]


def invoice(order):
    def line_text(line):
        return f"{line.name}: {line.amount}"

    return "\\n".join(line_text(line) for line in order.lines)
'''
LONG = "".join(f"line {n} of the long log\n" for n in range(1, 251))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n")
    (root / "src" / "orders.py").write_text(SERVICE)
    (root / "notes.md").write_text(LONG)
    (root / "build" / "orders_copy.py").write_text(SERVICE)  # ignored
    (root / "data.bin").write_bytes(b"\x00\x01binary order\x00" * 10)
    (root / "latin1.txt").write_bytes("caf\xe9 order\n".encode("latin-1"))
    outside = tmp_path / "outside.txt"
    outside.write_text("secret order\n")
    os.symlink(outside, root / "escape.txt")
    return root


StartClient = Callable[..., Client]


@pytest.fixture
def start_client(start_service: StartService, workspace: Path) -> Iterator[StartClient]:
    clients: list[Client] = []

    def start(**overrides: Any) -> Client:
        overrides.setdefault("workspace_root", str(workspace))
        service = start_service(**overrides)
        c = Client(f"127.0.0.1:{service.port}")
        clients.append(c)
        return c

    yield start
    for c in clients:
        c.close()


@pytest.fixture
def client(start_client: StartClient) -> Client:
    c = start_client()
    c.create_conversation("agent")
    return c


# --- chunks -----------------------------------------------------------------------------


def test_a_chunk_by_lines_says_where_it_is(client: Client) -> None:
    chunk = client.read_file_chunk("agent", "notes.md", strategy="lines", max_lines=100)
    assert (chunk.index, chunk.first_line, chunk.last_line) == (0, 1, 100)
    assert (chunk.total_lines, chunk.total_chunks) == (250, 3)
    assert chunk.has_more and not chunk.has_previous
    assert chunk.content == "".join(LONG.splitlines(keepends=True)[:100])
    assert chunk.strategy == "lines" and chunk.fallback == ""
    assert chunk.sha256 == hashlib.sha256(LONG.encode()).hexdigest()
    assert chunk.token_count > 0
    last = client.read_file_chunk("agent", "notes.md", strategy="lines", chunk_index=2)
    assert (last.first_line, last.last_line, last.has_more, last.has_previous) == (
        201,
        250,
        False,
        True,
    )


def test_functions_cut_at_definitions_and_other_files_fall_back(client: Client) -> None:
    first = client.read_file_chunk("agent", "src/orders.py", strategy="functions", max_lines=40)
    chunks = [first] + [
        client.read_file_chunk("agent", "src/orders.py", strategy="functions", chunk_index=i)
        for i in range(1, first.total_chunks)
    ]
    assert "".join(c.content for c in chunks) == SERVICE
    starts = {c.content.lstrip().split("\n", 1)[0] for c in chunks}
    assert "@dataclass" in starts and "def load_orders(path):" in starts
    assert all(c.strategy == "functions" for c in chunks)
    md = client.read_file_chunk("agent", "notes.md", strategy="functions")
    assert md.strategy == "lines" and ".md" in md.fallback


def test_every_parsed_language_is_cut_at_its_definitions(client: Client, workspace: Path) -> None:
    # Real code in each language: a class (or its equivalent), nested functions and a
    # definition longer than the limit, which is split.
    for name, source in SAMPLES.items():
        (workspace / name).write_text(source)
        first = client.read_file_chunk("agent", name, strategy="functions", max_lines=5)
        chunks = [first] + [
            client.scroll_file("agent", "next", record=False) for _ in range(first.total_chunks - 1)
        ]
        assert "".join(c.content for c in chunks) == source, name
        assert all(c.strategy == "functions" and c.fallback == "" for c in chunks), name
        assert any(c.split for c in chunks), name
        assert all(c.last_line - c.first_line < 5 for c in chunks), name


def test_semantic_keeps_the_header_apart_and_groups_definitions(client: Client) -> None:
    header = client.read_file_chunk("agent", "src/orders.py", strategy="semantic", max_lines=40)
    assert header.content.startswith('"""Orders') and "class Order" not in header.content
    body = client.read_file_chunk("agent", "src/orders.py", strategy="semantic", chunk_index=1)
    assert "class Order" in body.content and "def load_orders" in body.content


def test_max_tokens_sizes_every_chunk(client: Client) -> None:
    chunk = client.read_file_chunk("agent", "notes.md", strategy="lines", max_tokens=60)
    assert 0 < chunk.token_count <= 60
    assert chunk.total_chunks > 3
    chunks = [chunk] + [client.scroll_file("agent", "next") for _ in range(chunk.total_chunks - 1)]
    assert all(c.token_count <= 60 for c in chunks)  # scrolling keeps the read's sizing
    assert [c.first_line for c in chunks[1:]] == [c.last_line + 1 for c in chunks[:-1]]
    assert chunks[-1].last_line == 250


def test_a_line_or_a_text_finds_its_chunk(client: Client) -> None:
    by_line = client.read_file_chunk("agent", "notes.md", strategy="lines", line=150)
    assert by_line.first_line <= 150 <= by_line.last_line
    by_text = client.read_file_chunk("agent", "notes.md", strategy="lines", text="line 230 of")
    assert by_text.index == 2
    with pytest.raises(NotFoundError, match="does not occur"):
        client.read_file_chunk("agent", "notes.md", text="nowhere in the file")
    with pytest.raises(InvalidArgumentError, match="250"):
        client.read_file_chunk("agent", "notes.md", line=999)
    with pytest.raises(InvalidArgumentError, match="3"):
        client.read_file_chunk("agent", "notes.md", strategy="lines", chunk_index=7)


def test_bad_files_get_clear_errors(client: Client, start_client: StartClient) -> None:
    with pytest.raises(InvalidArgumentError, match="binary"):
        client.read_file_chunk("agent", "data.bin")
    small = start_client(context_window=ContextWindowSettings(max_file_mb=0.001))
    small.create_conversation("agent")
    with pytest.raises(ResourceExhaustedError, match=r"notes\.md.*over the limit"):
        small.read_file_chunk("agent", "notes.md")
    with pytest.raises(NotFoundError, match=r"missing\.py"):
        client.read_file_chunk("agent", "missing.py")
    with pytest.raises(InvalidArgumentError, match=r"directory|regular file"):
        client.read_file_chunk("agent", "src")


def test_text_that_is_not_utf8_is_read_with_replacement(client: Client) -> None:
    chunk = client.read_file_chunk("agent", "latin1.txt")
    assert chunk.replaced and "\ufffd order" in chunk.content


def test_a_conversation_without_a_workspace_is_refused(start_client: StartClient) -> None:
    client = start_client(workspace_root="")
    client.create_conversation("agent")
    with pytest.raises(FailedPreconditionError, match="no workspace"):
        client.read_file_chunk("agent", "notes.md")
    with pytest.raises(FailedPreconditionError, match="no workspace"):
        client.search_files("agent", "order")


@pytest.mark.parametrize("path", ["../outside.txt", "escape.txt", "/etc/passwd", "src/../../x"])
def test_paths_leaving_the_workspace_are_refused_by_every_call(client: Client, path: str) -> None:
    with pytest.raises(PermissionDeniedError):
        client.read_file_chunk("agent", path)
    with pytest.raises(PermissionDeniedError):
        client.search_files("agent", "secret", path=path)
    with pytest.raises(PermissionDeniedError):
        client.edit_file("agent", path, "secret", "public")


def test_a_read_is_an_item_and_a_whole_reread_replaces_the_first(client: Client) -> None:
    first = client.read_file_chunk("agent", "src/orders.py", strategy="lines", max_lines=500)
    assert first.total_chunks == 1 and first.seq > 0
    item = client.list_items("agent").entries[-1]
    assert item.role == "file" and item.content == SERVICE
    assert item.file is not None and (item.file.path, item.file.kind) == ("src/orders.py", "read")
    second = client.read_file_chunk("agent", "src/orders.py", strategy="lines", max_lines=500)
    active = client.get_active_context("agent")
    treatments = {e.seq: e.treatment for e in active.entries}
    assert treatments[first.seq] == "duplicate_read" and treatments[second.seq] == "as_is"
    unrecorded = client.read_file_chunk("agent", "notes.md", record=False)
    assert unrecorded.seq == 0
    assert client.list_items("agent").entries[-1].seq == second.seq


# --- scrolling --------------------------------------------------------------------------


def test_scrolling_moves_through_the_viewed_file(client: Client) -> None:
    with pytest.raises(FailedPreconditionError, match="views no file"):
        client.scroll_file("agent", "next")
    client.read_file_chunk("agent", "notes.md", strategy="lines", max_lines=100)
    nxt = client.scroll_file("agent", "next")
    assert (nxt.index, nxt.first_line) == (1, 101)
    assert client.scroll_file("agent", "next").index == 2
    with pytest.raises(InvalidArgumentError, match="last chunk"):
        client.scroll_file("agent", "next")
    assert client.scroll_file("agent", "previous").index == 1
    assert client.scroll_file("agent", line=30).index == 0
    found = client.scroll_file("agent", text="line 175 of")
    assert found.first_line <= 175 <= found.last_line
    session = client.get_session("agent")
    assert session.view is not None
    assert session.view.path == "notes.md" and session.view.chunk_index == found.index
    assert session.view.seen_chunks == (0, 1, 2)
    assert (session.view.strategy, session.view.max_lines) == ("lines", 100)


def test_the_view_and_states_survive_a_restart(
    start_service: StartService, workspace: Path, tmp_path: Path
) -> None:
    data = tmp_path / "kept"
    service = start_service(workspace_root=str(workspace), data_dir=data)
    with Client(f"127.0.0.1:{service.port}") as c:
        c.create_conversation("agent")
        c.read_file_chunk("agent", "notes.md", strategy="lines", chunk_index=1)
        c.set_session_state("agent", set=["search_active"])
    service.stop(grace=0)
    again = start_service(workspace_root=str(workspace), data_dir=data)
    with Client(f"127.0.0.1:{again.port}") as c:
        session = c.get_session("agent")
        assert session.states == ("search_active",)
        assert session.view is not None and session.view.chunk_index == 1
        assert c.scroll_file("agent", "next").index == 2


# --- search -----------------------------------------------------------------------------


def test_search_pages_through_every_match_once(client: Client) -> None:
    page = client.search_files("agent", "long log", page_size=40, context_lines=0)
    assert page.total_files == 1 and page.total_matches == 20  # capped per file by default
    seen: list[int] = []
    pages = 0
    while True:
        pages += 1
        seen += [ln.number for f in page.files for ln in f.lines if ln.match]
        if not page.next_page_token:
            break
        page = client.search_files(
            "agent", "long log", page_size=40, context_lines=0, page_token=page.next_page_token
        )
    assert seen == list(range(1, 21)) and pages == 1
    many = client.search_files(
        "agent", "long log", max_matches_per_file=250, page_size=100, context_lines=0
    )
    assert (many.total_matches, many.remaining_matches) == (250, 150)
    assert many.remaining_files == 1 and many.next_page_token


def test_search_respects_gitignore_globs_case_and_binary(client: Client) -> None:
    page = client.search_files("agent", "def invoice")
    assert [f.path for f in page.files] == ["src/orders.py"]  # build/ is ignored
    assert page.binary_skipped >= 1
    assert client.search_files("agent", "ORDER", case="sensitive").total_matches == 0
    assert client.search_files("agent", "ORDER").total_matches == 0  # smart: upper-case
    assert client.search_files("agent", "ORDER", case="insensitive").total_matches > 0
    regex = client.search_files("agent", r"def \w+_orders?\(", regex=True)
    assert [ln.text for f in regex.files for ln in f.lines if ln.match] == [
        "def load_orders(path):"
    ]
    only_md = client.search_files("agent", "order", case="insensitive", include=["*.md"])
    assert {f.path for f in only_md.files} <= {"notes.md"}
    no_py = client.search_files("agent", "order", exclude=["*.py"])
    assert all(not f.path.endswith(".py") for f in no_py.files)
    with pytest.raises(InvalidArgumentError, match=r"regular expression|regex"):
        client.search_files("agent", "(unclosed", regex=True)
    with pytest.raises(InvalidArgumentError, match="empty"):
        client.search_files("agent", "")


def test_search_context_lines_and_a_token_budget(client: Client) -> None:
    page = client.search_files("agent", "def total")
    (orders,) = page.files
    numbers = [ln.number for ln in orders.lines]
    match = next(ln.number for ln in orders.lines if ln.match)
    assert numbers == list(range(match - 3, match + 4))
    assert f"{match}:    def total(self):" in page.text
    small = client.search_files("agent", "long log", max_tokens=50)
    assert 0 < small.token_count <= 50 and small.next_page_token
    with pytest.raises(InvalidArgumentError, match=r"page token|another search|different"):
        client.search_files("agent", "other words", page_token=small.next_page_token)


# --- edits ------------------------------------------------------------------------------


def test_an_edit_replaces_one_occurrence_atomically(client: Client, workspace: Path) -> None:
    path = workspace / "src" / "orders.py"
    os.chmod(path, 0o754)
    chunk = client.read_file_chunk("agent", "src/orders.py", strategy="lines", max_lines=500)
    edit = client.edit_file(
        "agent",
        "src/orders.py",
        "def load_orders(path):",
        "def load_orders(path, strict=False):",
        expected_sha256=chunk.sha256,
    )
    text = path.read_text()
    assert "def load_orders(path, strict=False):" in text
    assert text.splitlines()[edit.first_line - 1] == "def load_orders(path, strict=False):"
    assert edit.sha256_before == chunk.sha256
    assert edit.sha256_after == hashlib.sha256(text.encode()).hexdigest()
    assert oct(path.stat().st_mode & 0o777) == oct(0o754)
    # The cache saw the edit: the next read has the new content.
    again = client.read_file_chunk("agent", "src/orders.py", strategy="lines", max_lines=500)
    assert again.sha256 == edit.sha256_after and "strict=False" in again.content


def test_a_failed_edit_leaves_the_file_untouched(client: Client, workspace: Path) -> None:
    path = workspace / "src" / "orders.py"
    before = path.read_bytes()
    with pytest.raises(FailedPreconditionError, match=r"not found|absent|does not occur"):
        client.edit_file("agent", "src/orders.py", "def nowhere():", "x")
    with pytest.raises(FailedPreconditionError, match=r"5 times") as info:
        client.edit_file("agent", "src/orders.py", "return ", "yield ")
    assert all(re.search(rf"\b{n}\b", str(info.value)) for n in (15, 18, 24, 29, 31))
    with pytest.raises(AbortedError, match="changed since"):
        client.edit_file(
            "agent", "src/orders.py", "import json", "import ujson", expected_sha256="0" * 64
        )
    with pytest.raises(InvalidArgumentError):
        client.edit_file("agent", "src/orders.py", "", "x")
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["orders.py"]  # no temp files


def test_an_edit_keeps_crlf_line_endings(client: Client, workspace: Path) -> None:
    path = workspace / "dos.txt"
    path.write_bytes(b"first line\r\nsecond line\r\nthird line\r\n")
    client.edit_file("agent", "dos.txt", "first line\nsecond line", "one\ntwo")
    assert path.read_bytes() == b"one\r\ntwo\r\nthird line\r\n"


# --- the chunk cache ------------------------------------------------------------------------


def test_scrolling_is_served_from_the_cache(client: Client, workspace: Path) -> None:
    # A file written within the last 2 s is re-read on every read (its mtime cannot be
    # trusted yet); an agent scrolls files older than that.
    old = time.time() - 60
    os.utime(workspace / "notes.md", (old, old))
    before = client.get_stats().chunk_cache
    client.read_file_chunk("agent", "notes.md", strategy="lines", max_lines=25)
    for _ in range(9):
        client.scroll_file("agent", "next", record=False)
    for _ in range(9):
        client.scroll_file("agent", "previous", record=False)
    stats = client.get_stats().chunk_cache
    hits, misses = stats.hits - before.hits, stats.misses - before.misses
    assert hits / (hits + misses) > 0.8
    assert 0 < stats.bytes <= stats.max_bytes and stats.entries >= 1
    assert stats.max_bytes == ContextWindowSettings().cache_bytes


# --- tool availability ------------------------------------------------------------------------


def test_tools_follow_the_session_states(client: Client) -> None:
    free = client.get_session("agent")
    assert free.states == () and free.deciding_state == ""
    assert "edit_files" in free.tools and "run_command" in free.tools
    viewing = client.set_session_state("agent", set=["large_file_viewing"])
    assert viewing.deciding_state == "large_file_viewing"
    assert "scroll_file_chunk" in viewing.tools and "edit_files" not in viewing.tools
    check = client.check_tool("agent", "edit_files")
    assert not check.allowed and "large_file_viewing" in check.reason
    assert client.check_tool("agent", "get_next_chunk").allowed
    interactive = client.set_session_state("agent", set=["interactive_commands"])
    assert interactive.deciding_state == "interactive_commands"
    assert "project_analyze" not in interactive.tools  # exclusive: only its own tools
    cleared = client.set_session_state("agent", clear=["interactive_commands"])
    assert cleared.states == ("large_file_viewing",)
    assert client.set_session_state("agent", clear_all=True).states == ()
    with pytest.raises(InvalidArgumentError, match="unknown session state"):
        client.set_session_state("agent", set=["bogus_state"])
    with pytest.raises(NotFoundError):
        client.get_session("nobody")


def test_custom_states_and_tools_come_from_the_settings(start_client: StartClient) -> None:
    rules = dataclasses.replace(
        ContextWindowSettings().tools,
        restrictions={
            **ContextWindowSettings().tools.restrictions,
            "reviewing": ("comment_on_diff",),
        },
    )
    client = start_client(context_window=ContextWindowSettings(tools=rules))
    client.create_conversation("agent")
    session = client.set_session_state("agent", set=["reviewing"])
    assert session.deciding_state == "reviewing" and "comment_on_diff" in session.tools
    assert not client.check_tool("agent", "edit_files").allowed
