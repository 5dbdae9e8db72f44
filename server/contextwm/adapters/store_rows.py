"""Rows of the conversation and item tables as domain values, in the column order both
stores read them in (CONVERSATION_COLUMNS, ITEM_COLUMNS), and settings as JSON text."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from contextwm.domain.categories import Category, CategoryBudget, ContributorType
from contextwm.domain.conversations import ConversationSettings, ScoringWeights
from contextwm.domain.items import FileRef, Flag, Item, ItemState
from contextwm.domain.retention import RetentionPolicy
from contextwm.domain.usage import Reported
from contextwm.ports.conversation_store import ConversationRecord

REVERTED = int(ItemState.REVERTED)


CONVERSATION_COLUMNS = (
    "id, namespace, conversation_id, settings, created_at, last_seq, token_limit, state,"
    " active_start, reported_tokens, reported_server_tokens, last_event, embed_model"
)


ITEM_COLUMNS = (
    "c.conversation_id, i.seq, i.role, i.content, i.ts, i.tokens, i.flags, i.metadata,"
    " i.file_path, i.file_kind, i.state, i.kind, i.whole_file"
)


def settings_to_json(settings: ConversationSettings) -> str:
    data: dict[str, Any] = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.name not in ("weights", "category_budgets", "contributor_weights", "retention")
    }
    data["category_budgets"] = {
        str(c): [b.share, b.min_share, b.max_share] for c, b in settings.category_budgets.items()
    }
    data["contributor_weights"] = {str(t): w for t, w in settings.contributor_weights.items()}
    data["weights"] = {
        "recency": settings.weights.recency,
        "similarity": settings.weights.similarity,
        "importance": dict(settings.weights.importance),
        "role": dict(settings.weights.role),
    }
    data["retention"] = dataclasses.asdict(settings.retention)
    return json.dumps(data, sort_keys=True)


# Settings are immutable and most conversations share a few: parsing one took 0.09 ms of the
# 0.13 ms a conversation's record takes to read.
@functools.lru_cache(maxsize=1024)
def settings_from_json(text: str) -> ConversationSettings:
    data = json.loads(text)
    w = data.pop("weights")
    weights = ScoringWeights(
        recency=w["recency"],
        similarity=w["similarity"],
        importance=MappingProxyType(w["importance"]),
        role=MappingProxyType(w["role"]),
    )
    # Rows written before budgets existed have neither field: the defaults apply.
    budgets = data.pop("category_budgets", None)
    if budgets is not None:
        data["category_budgets"] = MappingProxyType(
            {Category(c): CategoryBudget(*b) for c, b in budgets.items()}
        )
    contributors = data.pop("contributor_weights", None)
    if contributors is not None:
        data["contributor_weights"] = MappingProxyType(
            {ContributorType(t): w for t, w in contributors.items()}
        )
    # Rows written before retention existed have none: the namespace's policy applies.
    retention = data.pop("retention", None)
    if retention is not None:
        data["retention"] = RetentionPolicy(**retention)
    known = {f.name for f in dataclasses.fields(ConversationSettings)}
    return ConversationSettings(weights=weights, **{k: v for k, v in data.items() if k in known})


def metadata_json(metadata: Mapping[str, str]) -> str | None:
    """Item metadata as both stores keep it: JSON text, escaped to ASCII, with json.dumps's
    default separators, which metadata_patterns relies on."""
    return json.dumps(dict(metadata)) if metadata else None


def metadata_patterns(key: str, value: str) -> tuple[str, str, str, str]:
    """Texts of which metadata_json's text holds one exactly when the metadata maps key to
    value. The key-value pair with its quotes, after "{" or ", " and before "," or "}": a quote
    inside a JSON string is escaped, so those only occur where a pair starts and ends. (JSON
    functions would decode a \\u0000 in a key or value: SQLite's cut the text there.)"""
    pair = json.dumps({key: value})[1:-1]
    return ("{" + pair + ",", "{" + pair + "}", ", " + pair + ",", ", " + pair + "}")


# Enum lookups by value, which cost a few times less than calling the enum (items are
# read by the hundred per request).
_STATES = {int(s): s for s in ItemState}
_FLAGS: dict[int, Flag] = {}


def _flags(value: int) -> Flag:
    flags = _FLAGS.get(value)
    if flags is None:
        flags = _FLAGS[value] = Flag(value)
    return flags


def item_state(value: int) -> ItemState:
    """An item state by its stored value."""
    return _STATES[value]


def item_of(row: Sequence[Any]) -> Item:
    return Item(
        conversation_id=row[0],
        seq=row[1],
        role=row[2],
        content=row[3],
        timestamp=row[4],
        token_count=row[5],
        flags=_flags(row[6]),
        metadata=MappingProxyType(json.loads(row[7])) if row[7] else MappingProxyType({}),
        file=FileRef(row[8], row[9], None if row[12] is None else bool(row[12]))
        if row[8] is not None
        else None,
        state=_STATES[row[10]],
        kind=row[11],
    )


def record_of(row: Sequence[Any]) -> ConversationRecord:
    return ConversationRecord(
        key=row[0],
        namespace=row[1],
        conversation_id=row[2],
        settings=settings_from_json(row[3]),
        created_at=row[4],
        last_seq=row[5],
        token_limit=row[6],
        state=row[7],
        active_start=row[8],
        reported=Reported(row[9], row[10]) if row[9] is not None else None,
        last_event=row[11],
        embed_model=row[12],
    )
