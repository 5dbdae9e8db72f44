"""Copying a conversation whole out of a store and into one: every row comes back exactly,
within a store and from either store into the other, and the copy reads as the original."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import (
    Checkpoint,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
    EventKind,
    StateRun,
)
from contextwm.domain.items import FileRef, Flag, ItemState
from contextwm.domain.usage import Reported
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.conversation_transfer import ConversationDump
from stores import (
    MODEL,
    STORES,
    T0,
    RoleStore,
    W,
    listed,
    make_item,
    new_conversation,
    open_store,
    unit_vectors,
)

ODD = "a\x00b \x01 c\x01\x00 \\u0000 walrus"


def rich_conversation(store: RoleStore) -> int:
    """A conversation with a row in every table, user text the stores must escape, an
    archived run, a compaction, a checkpoint, a session and some vectors."""
    key = new_conversation(store, "rich")
    items = [
        make_item(1, ODD, metadata={"k\x00": "v\x00\x01", "user": "42"}),
        make_item(2, "cat src/app.py", file=FileRef("d\x00ir/app.py", "read", True)),
        make_item(3, "pinned rule", flags=Flag.PINNED | Flag.ERROR),
        make_item(4, "tool output", role="tool"),
    ]
    store.commit_append(
        key,
        items,
        ["idem\x00one", None, "three", None],
        [],
        1000,
        "general",
        facts=[Fact(FactKind.COMMAND, "run\x00it", 1, "ok\x01")],
        edits=[ContextEdit(1, T0, EditKind.DUPLICATE_READ, (2,), 0, 3, "why\x00")],
        events=[Event(1, T0, EventKind.EVICTION, (1,))],
        appended_at=T0 + 4,
    )
    store.put_vectors(MODEL, [(key, 1), (key, 2)], unit_vectors(2))
    marker = dataclasses.replace(make_item(5, "the summary"), kind="compaction")
    record = CompactionRecord(
        1,
        T0 + 100,
        "summary \x00",
        True,
        5,
        2,
        40,
        10,
        "ledger\x00",
        (Fact(FactKind.INSTRUCTION, "use port 8443", 2),),
    )
    cut = ContextEdit(2, T0 + 100, EditKind.COMPACTION, (1, 2), 5, 30)
    store.commit_compaction(
        key, marker, record, cut, [], [Event(2, T0 + 100, EventKind.COMPACTION, record)]
    )
    store.add_checkpoint(
        key,
        Checkpoint(
            "before",
            T0 + 101,
            5,
            20,
            1,
            2,
            5,
            1000,
            "general",
            (StateRun(1, 2, ItemState.COMPACTED), StateRun(3, 5, W)),
            Reported(9, 8),
        ),
        [],
    )
    store.put_session(key, SessionState(("editing",), None), [])
    store.set_reported(key, Reported(500, 450))
    return key


def without_namespace(dump: ConversationDump) -> ConversationDump:
    return dataclasses.replace(dump, namespace="")


@pytest.mark.parametrize("into", STORES)
def test_a_conversation_copied_into_either_store_is_stored_exactly(
    store: RoleStore, into: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    key = rich_conversation(store)
    dump = store.dump_conversation(key, vectors=True)
    assert dump is not None
    assert {t: len(rows) for t, rows in dump.tables.items()} == {
        "items": 5,
        "compactions": 1,
        "facts": 1,
        "edits": 2,
        "checkpoints": 1,
        "events": 2,
        "sessions": 1,
    }
    assert dump.vectors is not None and [v.seq for v in dump.vectors] == [1, 2]
    (tmp_path / "target").mkdir()
    target = open_store(into, request, tmp_path / "target")
    request.addfinalizer(target.close)
    copied = target.load_conversation(dataclasses.replace(dump, namespace="copy"))
    again = target.dump_conversation(copied, vectors=True)
    assert again is not None and again.namespace == "copy"
    assert without_namespace(again) == without_namespace(dump)
    # And it reads as the original does, through the stores' own reads.
    assert target.list_items(copied, 0, 10, ()) == store.list_items(key, 0, 10, ())
    assert target.find_idempotent(copied, ["idem\x00one"]).keys() == {"idem\x00one"}
    assert target.compactions(copied) == store.compactions(key)
    assert target.facts(copied) == store.facts(key)
    assert target.edits(copied) == store.edits(key)
    assert target.checkpoints(copied) == store.checkpoints(key)
    assert target.session(copied) == store.session(key)
    assert target.events_after(copied, 0, 10) == store.events_after(key, 0, 10)
    original = store.conversation_record(key)
    assert original is not None
    assert target.conversation_record(copied) == dataclasses.replace(
        original, key=copied, namespace="copy"
    )
    assert listed(target, copied, "summary") == listed(store, key, "summary") == [5]
    pending = target.pending_vectors(MODEL, 50)
    assert {p.seq for p in pending if p.conversation_key == copied} == {3, 4, 5}
    assert target.vectors_for(copied, [1, 2], MODEL).keys() == {1, 2}


def test_loading_a_conversation_that_exists_is_refused_and_writes_nothing(
    store: RoleStore,
) -> None:
    key = rich_conversation(store)
    dump = store.dump_conversation(key)
    assert dump is not None and dump.vectors is None
    with pytest.raises(AlreadyExists, match="'rich' already exists in namespace 'default'"):
        store.load_conversation(dump)
    assert store.dump_conversation(key) == dump
    assert [r.conversation_id for r in store.list_conversations("default", "", 10)] == ["rich"]


def test_a_missing_conversation_dumps_as_none(store: RoleStore) -> None:
    assert store.dump_conversation(12345) is None
    assert new_conversation(store) > 0
