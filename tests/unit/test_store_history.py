"""The history and checkpoint roles of the store, and user text the stores must keep exactly,
the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest
from contextwm.adapters.postgres.codecs import text_in, text_out
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
    EventKind,
    StateRun,
)
from contextwm.domain.items import FileRef, ItemFilter, ItemState
from contextwm.domain.usage import Reported
from hypothesis import given
from hypothesis import strategies as st
from stores import BOTH, MODEL, T0, A, RoleStore, W, add, listed, make_item, new_conversation

C, R = ItemState.COMPACTED, ItemState.REVERTED


@given(st.text())
def test_the_text_codec_gives_back_any_text_and_never_a_nul(text: str) -> None:
    stored = text_in(text)
    assert "\x00" not in stored
    assert text_out(stored) == text


def test_user_text_with_nul_and_escape_characters_round_trips(store: RoleStore) -> None:
    key = new_conversation(store)
    odd = "a\x00b \x01 c\x01\x00 \\u0000 \\u0001 walrus"
    item = make_item(
        1, odd, metadata={"k\x00": "v\x00\x01", "plain": "x"}, file=FileRef("d\x00ir/f.py", "read")
    )
    store.commit_append(
        key,
        [item],
        ["idem\x00key"],
        [],
        1000,
        "general",
        facts=[Fact(FactKind.COMMAND, "run\x00it", 1, "ok\x01")],
        edits=[ContextEdit(1, T0, EditKind.DUPLICATE_READ, (1,), 0, 3, "why\x00")],
    )
    assert store.get_items(key, [1])[1] == item
    assert store.list_items(key, 0, 10, ()) == [item]
    assert store.window_items(key, MODEL)[0][0] == item
    assert store.find_idempotent(key, ["idem\x00key"])["idem\x00key"] == item
    assert store.file_paths(key, 10) == ["d\x00ir/f.py"]
    assert store.whole_file_copies(key) == {"d\x00ir/f.py": 1}
    assert store.facts(key) == [Fact(FactKind.COMMAND, "run\x00it", 1, "ok\x01")]
    assert store.edits(key)[0].detail == "why\x00"
    assert store.pending_vectors(MODEL, 10)[0].text == odd
    assert listed(store, key, "walrus") == [1]
    flt = ItemFilter(metadata={"k\x00": "v\x00\x01"})
    assert store.filtered_seqs(key, flt, BOTH, 10).tolist() == [1]
    assert store.filtered_seqs(key, ItemFilter(metadata={"k": "v"}), BOTH, 10).tolist() == []


def compaction(marker_seq: int, number: int = 1) -> CompactionRecord:
    return CompactionRecord(
        number=number,
        at=T0 + 100,
        summary="summary with a \x00 in it",
        extractive=True,
        marker_seq=marker_seq,
        items_archived=4,
        tokens_before=40,
        tokens_after=10,
        ledger="ledger\x00",
        facts=(Fact(FactKind.INSTRUCTION, "use port 8443", 2),),
    )


def test_a_compaction_moves_earlier_items_behind_its_marker(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 6)], evicted=[])
    add(store, key, [], evicted=[1, 2])
    marker = dataclasses.replace(make_item(6, "the summary"), kind="compaction")
    record = compaction(6)
    cut = ContextEdit(1, T0 + 100, EditKind.COMPACTION, (1, 2, 3, 4, 5), 6, 30)
    events = [Event(1, T0 + 100, EventKind.COMPACTION, cut)]
    store.commit_compaction(key, marker, record, cut, [], events)
    assert [i.state for i in store.list_items(key, 0, 10, ())] == [C, C, C, C, C, W]
    assert store.compactions(key) == [record]
    assert store.compactions(key, [6]) == [record]
    assert store.compactions(key, [5]) == []
    assert store.compactions(key, []) == []
    assert store.edits(key) == [cut]
    conv = store.conversation_record(key)
    assert conv is not None
    assert (conv.last_seq, conv.active_start, conv.last_event) == (6, 6, 1)
    assert [(e.seq, e.kind) for e in store.active_entries(key, conv.active_start)] == [
        (6, "compaction")
    ]
    assert store.get_items(key, [6])[6] == marker
    assert listed(store, key, "summary", (W,)) == [6]


def test_facts_edits_reported_usage_and_truncation(store: RoleStore) -> None:
    key = new_conversation(store)
    facts = [Fact(FactKind.COMMAND, "make test", 2), Fact(FactKind.ERROR, "boom", 2, "failed")]
    first = ContextEdit(1, T0, EditKind.DUPLICATE_READ, (1,), 3, 12, "read again")
    store.commit_append(
        key,
        [make_item(s) for s in range(1, 5)],
        [None] * 4,
        [],
        1000,
        "general",
        facts=facts,
        edits=[first],
        appended_at=T0 + 5,
    )
    assert store.facts(key) == facts
    assert store.max_edit_id(key) == 1
    store.set_reported(key, Reported(500, 450))
    conv = store.conversation_record(key)
    assert conv is not None and conv.reported == Reported(500, 450)
    second = ContextEdit(2, T0 + 1, EditKind.TRUNCATION, (1, 2), 0, 6, "oldest first")
    store.commit_truncation(key, second, [1, 2], [Event(1, T0 + 1, EventKind.TRUNCATION, second)])
    assert [i.state for i in store.list_items(key, 0, 10, ())] == [A, A, W, W]
    conv = store.conversation_record(key)
    assert conv is not None and conv.reported is None and conv.last_event == 1
    assert store.edits(key) == [first, second]
    assert store.edits(key, after_id=1) == [second]
    assert store.edits(key, limit=1) == [first]
    assert store.max_edit_id(key) == 2
    assert [e.number for e in store.events_after(key, 0, 10)] == [1]


def test_checkpoints_record_state_runs_and_restore_them(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 7)], evicted=[])
    add(store, key, [], evicted=[2, 3, 5])
    runs = store.item_state_runs(key)
    assert runs == [
        StateRun(1, 1, W),
        StateRun(2, 3, A),
        StateRun(4, 4, W),
        StateRun(5, 5, A),
        StateRun(6, 6, W),
    ]
    point = Checkpoint(
        "before", T0 + 10, 6, 30, 0, 0, 0, 1000, "general", tuple(runs), Reported(30, 28)
    )
    store.add_checkpoint(
        key, point, [Event(1, T0 + 10, EventKind.CHECKPOINT_CREATED, CheckpointChange(point))]
    )
    with pytest.raises(AlreadyExists, match="before"):
        store.add_checkpoint(key, point, [])
    assert store.checkpoint(key, "before") == point
    assert store.checkpoint(key, "absent") is None
    # After it: more items, an eviction, an edit and a compaction, all undone by a restore.
    later = ContextEdit(1, T0 + 20, EditKind.TRUNCATION, (1,), 0, 3)
    store.commit_append(
        key, [make_item(7), make_item(8)], [None, None], [1, 4], 1000, "coding", edits=[later]
    )
    marker = dataclasses.replace(make_item(9, "summary"), kind="compaction")
    cut = ContextEdit(2, T0 + 30, EditKind.COMPACTION, (6, 7, 8), 9, 10)
    store.commit_compaction(key, marker, compaction(9), cut, [], [])
    second = dataclasses.replace(point, name="after", at=T0 + 40, last_seq=9)
    store.add_checkpoint(key, second, [])
    assert [c.name for c in store.checkpoints(key)] == ["before", "after"]
    assert store.commit_restore(key, point, T0 + 50, []) == (3, 2)
    assert store.item_state_runs(key) == [*runs, StateRun(7, 9, R)]
    assert all(e.undone_at == T0 + 50 for e in store.edits(key))
    assert store.edits(key, live_only=True) == []
    assert store.compactions(key, live_only=True) == []
    assert store.reverted_among(key, [1, 7, 8, 9, 10]) == {7, 8, 9}
    conv = store.conversation_record(key)
    assert conv is not None
    assert (conv.state, conv.active_start, conv.reported) == ("general", 0, Reported(30, 28))
    # Reverted items leave the active context, their facts and file copies.
    assert [e.seq for e in store.active_entries(key, 0)] == [1, 2, 3, 4, 5, 6]
