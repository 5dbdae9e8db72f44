"""Rows and JSON of the agent-loop tables (facts, edits, compactions, checkpoints, events)
as domain values."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from contextwm.domain.active import ActiveTotals
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Erased,
    EventKind,
    EventPayload,
    StateRun,
)
from contextwm.domain.items import ItemState
from contextwm.domain.usage import ContextLimits, Reported, Usage


def seqs_json(seqs: Sequence[int]) -> str:
    return json.dumps(list(seqs), separators=(",", ":"))


def compaction_of(r: Sequence[Any]) -> CompactionRecord:
    return CompactionRecord(
        number=r[0],
        at=r[1],
        summary=r[2],
        extractive=bool(r[3]),
        marker_seq=r[4],
        items_archived=r[5],
        tokens_before=r[6],
        tokens_after=r[7],
        ledger=r[8],
        facts=tuple(fact_of(f) for f in json.loads(r[9])),
        undone_at=r[10],
    )


def fact_of(d: dict[str, Any]) -> Fact:
    return Fact(FactKind(d["kind"]), d["text"], d["seq"], d.get("outcome", ""))


def fact_json(f: Fact) -> dict[str, Any]:
    return {"kind": str(f.kind), "text": f.text, "seq": f.seq, "outcome": f.outcome}


def compaction_row(key: int, c: CompactionRecord) -> tuple[Any, ...]:
    """The compactions row of a record (SqliteStore writes it with the marker item)."""
    return (
        key,
        c.number,
        c.at,
        c.summary,
        int(c.extractive),
        c.marker_seq,
        c.items_archived,
        c.tokens_before,
        c.tokens_after,
        c.ledger,
        json.dumps([fact_json(f) for f in c.facts]),
    )


def checkpoint_json(c: Checkpoint) -> dict[str, Any]:
    return {
        "name": c.name,
        "at": c.at,
        "last_seq": c.last_seq,
        "active_tokens": c.active_tokens,
        "compactions": c.compactions,
        "edit_id": c.edit_id,
        "active_start": c.active_start,
        "token_limit": c.token_limit,
        "state": c.state,
        "states": [[r.first, r.last, int(r.state)] for r in c.states],
        "reported": [c.reported.tokens, c.reported.server_tokens] if c.reported else None,
    }


def checkpoint_of(d: dict[str, Any]) -> Checkpoint:
    return Checkpoint(
        name=d["name"],
        at=d["at"],
        last_seq=d["last_seq"],
        active_tokens=d["active_tokens"],
        compactions=d["compactions"],
        edit_id=d["edit_id"],
        active_start=d["active_start"],
        token_limit=d["token_limit"],
        state=d["state"],
        states=tuple(StateRun(a, b, ItemState(s)) for a, b, s in d["states"]),
        reported=Reported(*d["reported"]) if d["reported"] else None,
    )


def edit_json(e: ContextEdit) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at,
        "kind": str(e.kind),
        "seqs": list(e.seqs),
        "related_seq": e.related_seq,
        "tokens_saved": e.tokens_saved,
        "detail": e.detail,
        "undone_at": e.undone_at,
    }


def edit_of(d: dict[str, Any]) -> ContextEdit:
    return ContextEdit(
        d["id"],
        d["at"],
        EditKind(d["kind"]),
        tuple(d["seqs"]),
        d["related_seq"],
        d["tokens_saved"],
        d["detail"],
        d["undone_at"],
    )


def encode_payload(payload: EventPayload) -> Any:
    """An event payload as JSON data (the events table keeps them for Watch to replay)."""
    if isinstance(payload, Usage):
        # Field by field rather than dataclasses.asdict, whose deep copy was a fifth of an
        # append's time (one usage event per append).
        data = _fields(payload)
        data["limits"] = _fields(payload.limits)
        data["totals"] = _fields(payload.totals)
        return data
    if isinstance(payload, tuple):
        return list(payload)
    if isinstance(payload, CompactionRecord):
        c = dataclasses.asdict(payload)
        c["facts"] = [fact_json(f) for f in payload.facts]
        return c
    if isinstance(payload, ContextEdit):
        return edit_json(payload)
    if isinstance(payload, Erased):
        return {"seqs": list(payload.seqs)}
    if isinstance(payload, CheckpointChange):
        return {
            "checkpoint": checkpoint_json(payload.checkpoint),
            "reverted": payload.reverted_items,
        }
    return payload


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def decode_payload(kind: EventKind, data: Any) -> EventPayload:
    if kind is EventKind.USAGE:
        limits = ContextLimits(**data.pop("limits"))
        totals = ActiveTotals(**data.pop("totals"))
        return Usage(limits=limits, totals=totals, **data)
    if kind is EventKind.EVICTION:
        return tuple(data)
    if kind is EventKind.COMPACTION:
        data["facts"] = tuple(fact_of(f) for f in data["facts"])
        return CompactionRecord(**data)
    if kind in (EventKind.TRUNCATION, EventKind.DUPLICATE_READ):
        return edit_of(data)
    if kind in (EventKind.CHECKPOINT_CREATED, EventKind.CHECKPOINT_RESTORED):
        return CheckpointChange(checkpoint_of(data["checkpoint"]), data["reverted"])
    if kind is EventKind.ERASURE:
        return Erased(tuple(data["seqs"]))
    return int(data)
