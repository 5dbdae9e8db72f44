"""Duplicate file reads are replaced by a notice, recorded, and undone by a checkpoint
restore."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm_client import Client, ConversationSettings, FileRef, NewItem


def _source(version: int) -> str:
    return "\n".join(f"def handler_{n}(event):  # v{version}\n    return {n}" for n in range(30))


def _read(client: Client, cid: str, path: str, version: int, **file: object) -> int:
    return client.append(
        cid,
        _source(version),
        role="tool",
        metadata={"tool": "read_file"},
        file=FileRef(path, "read", **file),  # type: ignore[arg-type]
    ).seq


@pytest.fixture
def client(start_service: StartService) -> Iterator[Client]:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def test_a_reread_replaces_the_earlier_copy_everywhere_but_the_store(client: Client) -> None:
    client.create_conversation("d", settings=ConversationSettings(mask_tool_outputs_after_turns=0))
    client.append("d", "Look at the event handlers.", role="user")
    first = _read(client, "d", "app/handlers.py", 1)
    other = _read(client, "d", "app/models.py", 1)
    client.append("d", "The handlers return constants.", role="assistant")
    second = _read(client, "d", "app/handlers.py", 2)
    entries = {e.seq: e for e in client.iter_active_context("d")}
    assert entries[first].treatment == "duplicate_read"
    assert "app/handlers.py" in entries[first].content and f"seq {second}" in entries[first].content
    assert entries[second].treatment == entries[other].treatment == "as_is"
    saved = entries[first].original_tokens - entries[first].token_count
    usage = client.get_usage("d")
    assert (usage.optimisations.duplicate_reads, usage.optimisations.duplicate_tokens_saved) == (
        1,
        saved,
    )
    # The enhanced context shows the notice too; the stored item is unchanged.
    ctx = client.get_context("d", "event handlers", max_tokens=4000)
    shown = {s.seq: s for s in ctx.recent}
    assert shown[first].replaced and "app/handlers.py" in shown[first].content
    assert not shown[second].replaced and "# v2" in shown[second].content
    stored = {i.seq: i for i in client.iter_items("d")}
    assert "# v1" in stored[first].content
    # The replacement is in the context history, with its time.
    (edit,) = client.iter_context_edits("d")
    assert (edit.kind, edit.seqs, edit.related_seq, edit.tokens_saved) == (
        "duplicate_read",
        (first,),
        second,
        saved,
    )
    assert edit.created_at is not None and edit.undone_at is None


def test_writes_count_only_when_whole_and_mentions_never(client: Client) -> None:
    client.create_conversation("w", settings=ConversationSettings(mask_tool_outputs_after_turns=0))
    read = _read(client, "w", "lib/a.py", 1)
    client.append_batch(
        "w",
        [
            NewItem("@@ -1 +1 @@ a small diff", role="tool", file=FileRef("lib/a.py", "write")),
            NewItem("see lib/a.py", role="user", file=FileRef("lib/a.py", "mention")),
        ],
    )
    assert {e.seq: e.treatment for e in client.iter_active_context("w")}[read] == "as_is"
    whole = client.append(
        "w", _source(3), role="tool", file=FileRef("lib/a.py", "write", whole_file=True)
    ).seq
    treatments = {e.seq: e.treatment for e in client.iter_active_context("w")}
    assert treatments[read] == "duplicate_read" and treatments[whole] == "as_is"
    partial = _read(client, "w", "lib/a.py", 4, whole_file=False)  # a ranged read
    assert {e.seq: e.treatment for e in client.iter_active_context("w")}[whole] == "as_is"
    assert partial > whole


def test_replacements_persist_and_a_checkpoint_restore_undoes_them(
    start_service: StartService,
) -> None:
    service = start_service()
    data_dir = service.settings.data_dir
    with Client(f"127.0.0.1:{service.port}") as client:
        first = _read(client, "p", "cfg/settings.toml", 1)
        client.create_checkpoint("p", "before-reread")
        _read(client, "p", "cfg/settings.toml", 2)
        assert client.get_usage("p").optimisations.duplicate_reads == 1
    service.stop(grace=0)
    again = start_service(data_dir=data_dir)
    with Client(f"127.0.0.1:{again.port}") as client:
        entries = {e.seq: e.treatment for e in client.iter_active_context("p")}
        assert entries[first] == "duplicate_read"  # persisted across the restart
        result = client.restore_checkpoint("p", "before-reread")
        assert result.undone_edits == 1
        assert [(e.seq, e.treatment) for e in client.iter_active_context("p")] == [(first, "as_is")]
        assert result.usage.optimisations.duplicate_reads == 0
        (edit,) = client.iter_context_edits("p")
        assert edit.undone_at is not None  # recorded, and marked undone: nothing deleted
        # A later read supersedes the restored copy again.
        third = _read(client, "p", "cfg/settings.toml", 3)
        entries = {e.seq: e.treatment for e in client.iter_active_context("p")}
        assert entries == {first: "duplicate_read", third: "as_is"}


def test_replacement_can_be_switched_off(client: Client) -> None:
    client.create_conversation("o", settings=ConversationSettings(replace_duplicate_reads=False))
    _read(client, "o", "x.py", 1)
    _read(client, "o", "x.py", 2)
    assert all(e.treatment == "as_is" for e in client.iter_active_context("o"))
    assert client.get_usage("o").optimisations.duplicate_reads == 0
