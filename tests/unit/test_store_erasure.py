"""The erasure role of the store, the same tests on SQLite and PostgreSQL: the items a filter
matches, a conversation's footprint, and items erased with every row that holds their text."""

from __future__ import annotations

import dataclasses

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
from contextwm.domain.items import FileRef, ItemFilter, ItemState
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.erasure_store import ErasedRows, ErasureWrite, Footprint, ItemText, MarkerText
from stores import MODEL, T0, A, RoleStore, W, add, listed, make_item, new_conversation, search
from stores import unit_vectors as vectors

USER = {"user": "42"}
C = ItemState.COMPACTED


def _record(marker_seq: int, summary: str) -> CompactionRecord:
    return CompactionRecord(
        number=1,
        at=T0 + 100,
        summary=summary,
        extractive=False,
        marker_seq=marker_seq,
        items_archived=3,
        tokens_before=30,
        tokens_after=10,
        ledger="ledger",
        facts=(Fact(FactKind.INSTRUCTION, "always walrus", 2),),
    )


def test_erasable_items_match_metadata_and_time_exactly_in_any_state_but_markers(
    store: RoleStore,
) -> None:
    key = new_conversation(store)
    items = [
        make_item(1, metadata=USER),
        make_item(2, metadata={"user": "420"}),  # a longer value is another value
        make_item(3, metadata={"user": "42", "team": "x"}),
        make_item(4),
        make_item(5, metadata=USER),
    ]
    add(store, key, items, evicted=[1])
    marker = dataclasses.replace(make_item(6, "summary", metadata=USER), kind="compaction")
    cut = ContextEdit(1, T0, EditKind.COMPACTION, (1, 2, 3, 4, 5), 6, 10)
    store.commit_compaction(key, marker, _record(6, "summary"), cut, [], [])
    found = store.erasable_items(key, ItemFilter(metadata=USER))
    assert [i.seq for i in found] == [1, 3, 5]
    assert found[0] == dataclasses.replace(items[0], state=found[0].state)
    # since is included, until is not.
    by_time = ItemFilter(since=T0 + 2, until=T0 + 5)
    assert [i.seq for i in store.erasable_items(key, by_time)] == [2, 3, 4]
    both = ItemFilter(since=T0 + 2, metadata=USER)
    assert [i.seq for i in store.erasable_items(key, both)] == [3, 5]


def test_erase_deletes_items_with_their_words_vectors_facts_and_rewrites_what_quoted_them(
    store: RoleStore,
) -> None:
    key = new_conversation(store)
    other = new_conversation(store, "other")
    facts = [Fact(FactKind.COMMAND, "walrus deploy", 2), Fact(FactKind.COMMAND, "make", 3)]
    items = [
        make_item(s, f"walrus number {s}", metadata=USER if s in (2, 4) else {})
        for s in (1, 2, 3, 4)
    ]
    items[1] = dataclasses.replace(items[1], file=FileRef("notes/secret.txt", "read"))
    store.commit_append(key, items, [None, "idem-2", None, None], [], 1000, "general", facts=facts)
    add(store, key, [], evicted=[1, 2])
    add(store, other, [make_item(s, "walrus elsewhere", conversation_id="other") for s in (1, 2)])
    marker = dataclasses.replace(make_item(5, "summary quoting walrus number 2"), kind="compaction")
    cut = ContextEdit(1, T0, EditKind.COMPACTION, (1, 2, 3, 4), 5, 10)
    store.commit_compaction(key, marker, _record(5, "walrus number 2 said"), cut, [], [])
    store.put_vectors(MODEL, [(key, s) for s in range(1, 6)] + [(other, 1)], vectors(6))
    truncation = ContextEdit(2, T0 + 1, EditKind.TRUNCATION, (2, 3), 0, 6)
    store.commit_truncation(key, truncation, [], [])
    point = Checkpoint("cp", T0, 5, 20, 1, 2, 5, 1000, "general", (StateRun(1, 5, A),))
    store.add_checkpoint(key, point, [])
    store.put_session(key, SessionState(("editing",)), [])
    before = store.footprint(key)
    assert before == Footprint(
        items=5,
        tokens=15,
        vectors=5,
        postings=before.postings,
        facts=2,
        compactions=1,
        edits=2,
        events=0,
        checkpoints=1,
        sessions=1,
    )
    assert before.postings >= 9  # "walrus", "number", a digit per item, the marker's words
    stored = store.events_after(key, 0, 10)
    assert stored == []

    record = dataclasses.replace(_record(5, "[summary removed]"), facts=())
    write = ErasureWrite(
        seqs=(2, 4, 99),
        compactions=(record,),
        markers=(MarkerText(5, "the marker rewritten", 4),),
        edits=(dataclasses.replace(cut, seqs=(1, 3)),),
        dropped_edits=(2,),
        checkpoints=(dataclasses.replace(point, states=(StateRun(1, 1, A), StateRun(3, 3, A))),),
        session=SessionState(),
    )
    erased_event = Event(1, T0 + 200, EventKind.EVICTION, (1,))
    rows = store.erase(key, write, [erased_event])
    # Two items of three words each ("walrus", "number", the digit); one vector each, and the
    # marker's, which is embedded again from its new text.
    assert rows == ErasedRows(items=2, tokens=6, vectors=3, postings=6, facts=1)
    assert [i.seq for i in store.list_items(key, 0, 10, ())] == [1, 3, 5]
    assert store.get_items(key, [5])[5].content == "the marker rewritten"
    assert store.get_items(key, [5])[5].token_count == 4
    assert sorted(store.vectors_for(key, range(1, 6), MODEL)) == [1, 3]
    assert store.find_idempotent(key, ["idem-2"]) == {}
    assert store.file_paths(key, 10) == []
    assert [f.seq for f in store.facts(key)] == [3]
    assert sorted(search(store, key, "walrus", states=(W, A, C))) == [1, 3]
    assert listed(store, key, "quoting", (W, A, C)) == []
    assert listed(store, key, "rewritten", (W, A, C)) == [5]
    assert store.compactions(key) == [record]
    assert store.edits(key) == [dataclasses.replace(cut, seqs=(1, 3))]
    assert [c.states for c in store.checkpoints(key)] == [(StateRun(1, 1, A), StateRun(3, 3, A))]
    assert store.session(key) == SessionState()
    assert store.events_after(key, 0, 10) == [erased_event]
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.pending_vectors, counts.tokens) == (3, 1, 3 + 3 + 4)
    after = store.footprint(key)
    assert after.items == 3 and after.vectors == 2 and after.facts == 1
    # BM25's statistics are of what is left: items and their lengths, a term's item count.
    assert store.namespace_totals("default") == (5, 10 + 6)
    assert store.term_postings(key, ["walrus"], 10)["walrus"].count == 2
    # The other conversation keeps its words.
    assert sorted(search(store, other, "walrus")) == [1, 2]
    # Erasing what is gone already removes nothing.
    assert store.erase(key, ErasureWrite(seqs=(2, 4)), []) == ErasedRows()


def test_erase_rewrites_and_drops_stored_events(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in (1, 2, 3)])
    events = [
        Event(1, T0, EventKind.EVICTION, (1, 2)),
        Event(2, T0, EventKind.EVICTION, (3,)),
        Event(3, T0, EventKind.EVICTION, (2,)),
    ]
    store.record_events(key, events)
    write = ErasureWrite(
        seqs=(2,),
        events=(Event(1, T0, EventKind.EVICTION, (1,)),),
        dropped_events=(3,),
    )
    store.erase(key, write, [])
    assert store.events_after(key, 0, 10) == [Event(1, T0, EventKind.EVICTION, (1,)), events[1]]


def test_item_texts_pages_every_item_in_seq_order(store: RoleStore) -> None:
    key = new_conversation(store)
    read = FileRef("notes/a.txt", "read")
    add(store, key, [make_item(s, f"text {s}", file=read if s == 2 else None) for s in range(1, 6)])
    assert store.item_texts(key, 0, 2) == [ItemText(1, "text 1"), ItemText(2, "text 2", read.path)]
    assert [t.seq for t in store.item_texts(key, 2, 10)] == [3, 4, 5]
    assert store.item_texts(key, 5, 10) == []


def test_scrub_runs_on_a_store_in_use(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "walrus")])
    store.erase(key, ErasureWrite(seqs=(1,)), [])
    store.scrub()
    assert store.list_items(key, 0, 10, ()) == []
