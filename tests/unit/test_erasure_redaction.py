"""What an erasure rewrites besides the items it deletes (pure logic): which texts quote an
erased item, summaries and ledgers, markers, edits, events, checkpoints and the session; and
the digest of what went."""

from __future__ import annotations

import dataclasses
import hashlib
from types import MappingProxyType

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.erasure import (
    ErasureDigest,
    SeqRange,
    digest_of,
    forget_filter,
    seq_ranges,
)
from contextwm.domain.errors import InvalidArgument
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
from contextwm.domain.items import FileRef, Flag, Item, ItemState
from contextwm.domain.workspace_files import ChunkSpec, FileView, SessionState
from contextwm.erasure.quotes import QUOTE_CHARS, quoting
from contextwm.erasure.redaction import ERASED_SUMMARY, History, redact
from contextwm.llm_context.compaction_text import extractive_summary, marker_text
from contextwm.llm_context.ledger import Ledger

COUNTER = token_counter("cl100k_base")
A, C, W = ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW


def item(seq: int, content: str, *, path: str | None = None, state: ItemState = A) -> Item:
    return Item(
        conversation_id="c",
        seq=seq,
        role="user",
        content=content,
        timestamp=1000.0 + seq,
        token_count=COUNTER.count(content),
        flags=Flag.NONE,
        metadata=MappingProxyType({}),
        file=FileRef(path, "read") if path else None,
        state=state,
    )


SECRET = item(2, "My passport number is 55-XK-1234 and I live near the harbour.")


# ---------------------------------------------------------------- quotes


def test_a_text_quotes_an_item_that_it_holds_a_run_of_whatever_the_spacing_or_case() -> None:
    texts = {
        1: "The user said: my passport   NUMBER is 55-XK-1234 and so on.",
        2: "The user gave a passport number.",  # a paraphrase, not a quote
        3: "Nothing of it here.",
    }
    assert quoting(texts, [(2, SECRET.content)]) == {1}


def test_short_items_are_quoted_whole_and_tiny_ones_never() -> None:
    texts = {1: "He said: code walnut-77 works. Then: ok.", 2: "ok, fine"}
    assert quoting(texts, [(5, "code walnut-77")]) == {1}
    assert quoting(texts, [(6, "ok")]) == set()
    assert len("code walnut-77") < QUOTE_CHARS


def test_an_extractive_summary_quotes_the_items_it_labels_even_clipped() -> None:
    long = "Deploy the service to the staging cluster first. " * 60
    items = [item(1, "Set up the build."), item(2, long), item(3, "ok")]
    summary = extractive_summary(items, COUNTER, 300, clip_chars=200)
    assert "[seq 2, user]" in summary and long not in summary
    assert quoting({0: summary}, [(2, long)]) == {0}
    assert quoting({0: summary}, [(2, "x")]) == {0}  # by its label alone


# ---------------------------------------------------------------- redaction


def compaction(summary: str, facts: tuple[Fact, ...], marker_seq: int = 10) -> CompactionRecord:
    return CompactionRecord(
        number=1,
        at=2000.0,
        summary=summary,
        extractive=False,
        marker_seq=marker_seq,
        items_archived=9,
        tokens_before=500,
        tokens_after=100,
        ledger=Ledger(facts).render(COUNTER, 300),
        facts=facts,
    )


def marker_of(record: CompactionRecord) -> Item:
    text = marker_text(record.number, record.summary, record.ledger, extractive=False)
    return dataclasses.replace(item(record.marker_seq, text, state=W), kind="compaction")


FACTS = (
    Fact(FactKind.INSTRUCTION, "Always use the aisle seat.", 2),
    Fact(FactKind.FILE_READ, "notes/plan.txt", 3),
    Fact(FactKind.COMMAND, "make deploy", 4, "exit 0"),
)


def test_a_quoting_summary_is_dropped_and_the_ledger_loses_the_erased_items_facts() -> None:
    quoting_record = compaction(f"They said: {SECRET.content}", FACTS)
    clean = compaction("Trains were discussed.", FACTS[2:], marker_seq=20)
    history = History(
        compactions=[quoting_record, clean],
        markers={10: marker_of(quoting_record), 20: marker_of(clean)},
    )
    erased = [SECRET, item(3, "Day 1: the hut.", path="notes/plan.txt")]
    redaction = redact(erased, history, COUNTER)
    (record,) = redaction.write.compactions
    assert record.summary == ERASED_SUMMARY
    assert record.facts == (FACTS[2],)
    assert "aisle" not in record.ledger and "notes/plan.txt" not in record.ledger
    assert "make deploy" in record.ledger
    (marker,) = redaction.write.markers
    assert marker.seq == 10
    assert marker.content == marker_text(1, ERASED_SUMMARY, record.ledger, extractive=False)
    assert marker.tokens == COUNTER.count(marker.content)
    assert (redaction.compactions, redaction.summaries, redaction.markers) == (1, 1, 1)
    assert redaction.write.seqs == (2, 3)


def test_a_summary_that_quotes_nothing_erased_keeps_its_words_and_only_loses_facts() -> None:
    record = compaction("Trains were discussed.", FACTS)
    history = History(compactions=[record], markers={10: marker_of(record)})
    redaction = redact([item(4, "make deploy")], history, COUNTER)
    (new,) = redaction.write.compactions
    assert new.summary == "Trains were discussed."
    assert new.facts == FACTS[:2]
    assert redaction.summaries == 0


def test_edits_lose_erased_seqs_and_go_when_left_naming_nothing_or_a_gone_copy() -> None:
    edits = [
        ContextEdit(1, 1.0, EditKind.COMPACTION, (1, 2, 3), related_seq=10),
        ContextEdit(2, 2.0, EditKind.TRUNCATION, (2,)),
        ContextEdit(3, 3.0, EditKind.TRUNCATION, (4, 5)),
        ContextEdit(4, 4.0, EditKind.DUPLICATE_READ, (6,), related_seq=2, detail="[file a]"),
        ContextEdit(5, 5.0, EditKind.DUPLICATE_READ, (2,), related_seq=7, detail="[file b]"),
        ContextEdit(6, 6.0, EditKind.DUPLICATE_READ, (6,), related_seq=7, detail="[file c]"),
    ]
    redaction = redact([SECRET], History(edits=edits), COUNTER)
    assert redaction.write.edits == (dataclasses.replace(edits[0], seqs=(1, 3)),)
    assert redaction.write.dropped_edits == (2, 4, 5)
    assert redaction.edits == 4


def test_events_are_rewritten_as_their_rows_are() -> None:
    record = compaction(f"They said: {SECRET.content}", FACTS)
    edit = ContextEdit(2, 2.0, EditKind.TRUNCATION, (2,))
    point = Checkpoint("cp", 3.0, 9, 100, 1, 1, 0, 1000, "general", (StateRun(1, 9, A),))
    events = [
        Event(1, 1.0, EventKind.EVICTION, (1, 2)),
        Event(2, 1.0, EventKind.EVICTION, (2,)),
        Event(3, 1.0, EventKind.EVICTION, (3,)),
        Event(4, 2.0, EventKind.COMPACTION, record),
        Event(5, 2.0, EventKind.TRUNCATION, edit),
        Event(6, 3.0, EventKind.CHECKPOINT_CREATED, CheckpointChange(point)),
    ]
    history = History(compactions=[record], markers={10: marker_of(record)}, events=events)
    redaction = redact([SECRET], history, COUNTER)
    changed = {e.number: e.payload for e in redaction.write.events}
    assert changed[1] == (1,)
    assert isinstance(changed[4], CompactionRecord) and changed[4].summary == ERASED_SUMMARY
    assert isinstance(changed[6], CheckpointChange)
    assert changed[6].checkpoint.states == (StateRun(1, 1, A), StateRun(3, 9, A))
    assert sorted(changed) == [1, 4, 6]
    assert redaction.write.dropped_events == (2, 5)
    assert redaction.events == 5


def test_checkpoint_runs_are_cut_around_erased_seqs() -> None:
    runs = (StateRun(1, 4, C), StateRun(5, 5, W), StateRun(6, 9, A))
    point = Checkpoint("cp", 3.0, 9, 100, 1, 1, 0, 1000, "general", runs)
    early = dataclasses.replace(point, name="early", states=(StateRun(1, 1, C),))
    erased = [item(s, f"x{s}") for s in (1, 3, 5, 9)]
    redaction = redact(erased, History(checkpoints=[point, early]), COUNTER)
    new, early = redaction.write.checkpoints
    assert new.states == (StateRun(2, 2, C), StateRun(4, 4, C), StateRun(6, 8, A))
    assert early.states == ()  # it named seq 1 alone
    assert redaction.checkpoints == 2
    assert redact([item(20, "x")], History(checkpoints=[point]), COUNTER).checkpoints == 0


def test_a_session_viewing_an_erased_file_read_forgets_its_view() -> None:
    view = FileView("notes/plan.txt", ChunkSpec(), 0, 1, (0,), "abc")
    history = History(session=SessionState(("editing",), view))
    redaction = redact([item(3, "Day 1", path="notes/plan.txt")], history, COUNTER)
    assert redaction.write.session == SessionState(("editing",))
    assert redaction.sessions == 1
    other = redact([item(3, "Day 1", path="notes/other.txt")], history, COUNTER)
    assert other.write.session is None and other.sessions == 0


# ---------------------------------------------------------------- the digest and the filter


def test_the_digest_is_sha256_over_length_prefixed_fields_in_canonical_order() -> None:
    expected = hashlib.sha256()
    for fields in (("ns", "a", "2", "two"), ("ns", "a", "10", "ten"), ("ns", "b", "1", "é")):
        for field in fields:
            data = field.encode()
            expected.update(len(data).to_bytes(8, "big") + data)
    items = [("b", 1, "é"), ("a", 10, "ten"), ("a", 2, "two")]
    assert digest_of("ns", items) == expected.hexdigest()
    assert digest_of("ns", []) == hashlib.sha256().hexdigest()
    # Fields cannot run into each other: moving a character between them changes the digest.
    assert digest_of("ns", [("a", 1, "bc")]) != digest_of("ns", [("ab", 1, "c")])
    digest = ErasureDigest()
    digest.add("ns", "b", 1, "x")
    with pytest.raises(ValueError, match="order"):
        digest.add("ns", "a", 5, "y")


def test_conversation_ids_are_ordered_as_utf8_bytes() -> None:
    # As UTF-16 code units (the string order of Java and JavaScript) the emoji comes first;
    # as UTF-8 bytes, and code points, "\uff5e" does.
    items = [("\U0001f600", 1, "a"), ("\uff5e", 1, "b")]
    assert digest_of("ns", items) == digest_of("ns", list(reversed(items)))
    digest = ErasureDigest()
    digest.add("ns", "\uff5e", 1, "b")
    digest.add("ns", "\U0001f600", 1, "a")
    assert digest.hexdigest() == digest_of("ns", items)


def test_seq_ranges_are_the_fewest_in_order() -> None:
    assert seq_ranges([5, 1, 2, 3, 9, 8]) == (SeqRange(1, 3), SeqRange(5, 5), SeqRange(8, 9))
    assert seq_ranges([]) == ()


def test_a_forget_filter_needs_a_criterion_and_an_ordered_range() -> None:
    with pytest.raises(InvalidArgument, match="delete"):
        forget_filter({}, None, None)
    with pytest.raises(InvalidArgument, match="before"):
        forget_filter({}, 5.0, 5.0)
    with pytest.raises(InvalidArgument, match="empty"):
        forget_filter({"": "x"}, None, None)
    flt = forget_filter({"user": "42"}, 1.0, None)
    assert (flt.metadata, flt.since, flt.until) == ({"user": "42"}, 1.0, None)
