"""What an erasure rewrites besides the items it deletes, decided from the conversation's
history: pure logic, no store and no locks.

Decisions (docs/security.md, "Erasure"):
- A compaction summary that quotes an erased item is dropped whole, replaced by a notice. A
  summary is prose: the sentences around a quote refer to it or paraphrase it, so cutting the
  quote out would leave the rest of what the item said, and a summary with holes misleads the
  agent more than none. What remains of the items it summarised stays archived and
  searchable.
- A ledger is made of facts, each from one item: the facts of erased items go and the ledger
  is rendered again from the rest, so nothing else of it is lost.
- A compaction marker (an item that carries the summary and the ledger) gets its text
  rewritten from the rewritten record.
- Context edits lose the erased seqs; an edit left naming nothing, or a duplicate-read edit
  whose copy or superseding copy is gone (its notice names the file), goes. Stored events
  follow the same rules (their payloads carry compaction records, edits, evicted seqs and
  checkpoints), and checkpoints lose the erased seqs from their state runs.
- A session that views a file read by an erased item forgets the view (its path and hash).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
    EventPayload,
    StateRun,
)
from contextwm.domain.items import Item
from contextwm.domain.workspace_files import SessionState
from contextwm.erasure.quotes import quoting
from contextwm.llm_context.compaction_text import marker_text
from contextwm.llm_context.ledger import Ledger
from contextwm.ports.erasure_store import ErasureWrite, MarkerText
from contextwm.ports.tokens import TokenCounter

ERASED_SUMMARY = (
    "[This summary was removed by an erasure: it quoted items that were forgotten. What"
    " remains of the items it summarised is archived and can be searched.]"
)


@dataclass(frozen=True, slots=True)
class History:
    """What a conversation holds besides its items' rows that may name or quote them.

    Attributes:
        compactions: every compaction record, undone ones included.
        markers: the compaction markers' items, by seq.
        edits: every context edit.
        events: the stored events.
        checkpoints: the checkpoints.
        session: the session.
    """

    compactions: Sequence[CompactionRecord] = ()
    markers: Mapping[int, Item] = dataclasses.field(default_factory=dict)
    edits: Sequence[ContextEdit] = ()
    events: Sequence[Event] = ()
    checkpoints: Sequence[Checkpoint] = ()
    session: SessionState = dataclasses.field(default_factory=SessionState)


@dataclass(frozen=True, slots=True)
class Redaction:
    """The store write of an erasure, and what it rewrites, counted for the receipt."""

    write: ErasureWrite
    compactions: int = 0
    summaries: int = 0
    markers: int = 0
    checkpoints: int = 0
    edits: int = 0
    events: int = 0
    sessions: int = 0


def redact(items: Sequence[Item], history: History, counter: TokenCounter) -> Redaction:
    """The rows an erasure of these items deletes and rewrites.

    Args:
        items: the items erased (compaction markers are never among them).
        history: the conversation's compactions, edits, events, checkpoints and session.
        counter: the conversation's token counter (a rewritten marker is counted again).

    Returns:
        The write for ErasureStore.erase, with counts of what it rewrites.
    """
    gone = {i.seq for i in items}
    ordered = sorted(gone)
    records, summaries = _records(items, history.compactions, gone, counter)
    markers = tuple(_markers(records, history.markers, counter))
    edits, dropped_edits = _edits(history.edits, gone)
    by_marker = {r.marker_seq: r for r in records}
    events, dropped_events = _events(history.events, gone, ordered, by_marker)
    checkpoints = tuple(c for c in (_checkpoint(c, ordered) for c in history.checkpoints) if c)
    paths = {i.file.path for i in items if i.file is not None}
    view = history.session.view
    session = None
    if view is not None and view.path in paths:
        session = dataclasses.replace(history.session, view=None)
    return Redaction(
        write=ErasureWrite(
            seqs=tuple(ordered),
            compactions=tuple(records),
            markers=markers,
            edits=edits,
            dropped_edits=dropped_edits,
            events=events,
            dropped_events=dropped_events,
            checkpoints=checkpoints,
            session=session,
        ),
        compactions=len(records),
        summaries=summaries,
        markers=len(markers),
        checkpoints=len(checkpoints),
        edits=len(edits) + len(dropped_edits),
        events=len(events) + len(dropped_events),
        sessions=int(session is not None),
    )


def _records(
    items: Sequence[Item],
    compactions: Sequence[CompactionRecord],
    gone: set[int],
    counter: TokenCounter,
) -> tuple[list[CompactionRecord], int]:
    """The compaction records that change (summaries that quote an erased item dropped,
    ledgers rendered again without the erased items' facts), and how many summaries went."""
    erased = [(i.seq, i.content) for i in items]
    texts = {n: c.summary for n, c in enumerate(compactions)}
    quoted = quoting(texts, erased)
    ledgers = quoting({n: c.ledger for n, c in enumerate(compactions)}, erased)
    changed: list[CompactionRecord] = []
    summaries = 0
    for n, record in enumerate(compactions):
        kept = tuple(f for f in record.facts if f.seq not in gone)
        if n not in quoted and n not in ledgers and len(kept) == len(record.facts):
            continue
        summary = record.summary
        if n in quoted and summary != ERASED_SUMMARY:
            summary = ERASED_SUMMARY
            summaries += 1
        ledger = record.ledger
        if ledger and (n in ledgers or len(kept) != len(record.facts)):
            # Within the tokens the ledger had: the marker must not grow.
            ledger = Ledger(kept).render(counter, counter.count(ledger))
        changed.append(dataclasses.replace(record, summary=summary, ledger=ledger, facts=kept))
    return changed, summaries


def _markers(
    records: Iterable[CompactionRecord], markers: Mapping[int, Item], counter: TokenCounter
) -> Iterable[MarkerText]:
    for record in records:
        marker = markers.get(record.marker_seq)
        if marker is None:
            continue
        text = marker_text(
            record.number, record.summary, record.ledger, extractive=record.extractive
        )
        if text != marker.content:
            yield MarkerText(marker.seq, text, counter.count(text))


def _edit(edit: ContextEdit, gone: set[int]) -> ContextEdit | None:
    """The edit without the erased seqs; None when it must go (see the module's decisions)."""
    if edit.kind is EditKind.DUPLICATE_READ and (
        edit.related_seq in gone or any(s in gone for s in edit.seqs)
    ):
        return None
    seqs = tuple(s for s in edit.seqs if s not in gone)
    if not seqs and edit.kind is not EditKind.COMPACTION:
        return None
    return edit if seqs == edit.seqs else dataclasses.replace(edit, seqs=seqs)


def _edits(
    edits: Sequence[ContextEdit], gone: set[int]
) -> tuple[tuple[ContextEdit, ...], tuple[int, ...]]:
    changed: list[ContextEdit] = []
    dropped: list[int] = []
    for edit in edits:
        new = _edit(edit, gone)
        if new is None:
            dropped.append(edit.id)
        elif new is not edit:
            changed.append(new)
    return tuple(changed), tuple(dropped)


def _events(
    events: Sequence[Event],
    gone: set[int],
    ordered: Sequence[int],
    records: Mapping[int, CompactionRecord],
) -> tuple[tuple[Event, ...], tuple[int, ...]]:
    changed: list[Event] = []
    dropped: list[int] = []
    for event in events:
        payload = event.payload
        new: EventPayload | None = payload
        if isinstance(payload, CompactionRecord):
            record = records.get(payload.marker_seq)
            if record is not None:
                new = dataclasses.replace(
                    payload, summary=record.summary, ledger=record.ledger, facts=record.facts
                )
        elif isinstance(payload, ContextEdit):
            new = _edit(payload, gone)
        elif isinstance(payload, CheckpointChange):
            checkpoint = _checkpoint(payload.checkpoint, ordered)
            if checkpoint is not None:
                new = dataclasses.replace(payload, checkpoint=checkpoint)
        elif isinstance(payload, tuple) and any(s in gone for s in payload):  # evicted seqs
            new = tuple(s for s in payload if s not in gone) or None
        if new is None:
            dropped.append(event.number)
        elif new is not payload:
            changed.append(dataclasses.replace(event, payload=new))
    return tuple(changed), tuple(dropped)


def _checkpoint(checkpoint: Checkpoint, gone: Sequence[int]) -> Checkpoint | None:
    """The checkpoint with its state runs cut around the erased seqs (sorted); None if it
    holds none of them."""
    runs: list[StateRun] = []
    for run in checkpoint.states:
        start = run.first
        for seq in gone[bisect.bisect_left(gone, run.first) : bisect.bisect_right(gone, run.last)]:
            if seq > start:
                runs.append(StateRun(start, seq - 1, run.state))
            start = seq + 1
        if start <= run.last:
            runs.append(StateRun(start, run.last, run.state))
    if tuple(runs) == checkpoint.states:
        return None
    return dataclasses.replace(checkpoint, states=tuple(runs))
