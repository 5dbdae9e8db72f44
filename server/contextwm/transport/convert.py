"""Converters between protobuf messages and core values: to_proto_x / from_proto_x."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from types import MappingProxyType
from typing import TypeVar

from contextwm_client.v1 import contextwm_pb2 as pb
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from contextwm.conversations.appends import AppendedItem
from contextwm.conversations.engine import ConversationInfo
from contextwm.domain.conversations import (
    ConversationSettings,
    ConversationState,
    SettingsPatch,
    WeightsPatch,
    WindowStats,
)
from contextwm.domain.items import (
    FileRef,
    Item,
    ItemFilter,
    ItemState,
    NewItem,
    ScoredItem,
    flag_names,
    parse_flags,
)
from contextwm.retrieval.pipeline import TokenAccount

__all__ = [
    "from_proto_file",
    "from_proto_filter",
    "from_proto_mode",
    "from_proto_new_item",
    "from_proto_settings_patch",
    "from_proto_states",
    "from_proto_timestamp",
    "to_proto_append_result",
    "to_proto_context",
    "to_proto_conversation",
    "to_proto_file",
    "to_proto_item",
    "to_proto_scored",
    "to_proto_settings",
    "to_proto_time_range",
    "to_proto_timestamp",
    "to_proto_tokens",
    "to_proto_window",
]
from contextwm.budgets.assembly import AllocationReport
from contextwm.domain.categories import category_of_role
from contextwm.domain.errors import InvalidArgument
from contextwm.retrieval.requests import EnhancedContext
from contextwm.retrieval.timehints import TimeHint
from contextwm.transport.convert_budgets import (
    from_proto_budget_patches,
    from_proto_contributor_weights,
    to_proto_allocation,
    to_proto_budgets,
    to_proto_category,
    to_proto_contributor_weights,
)
from contextwm.transport.convert_retention import (
    from_proto_retention_policy,
    to_proto_retention_policy,
)

V = TypeVar("V")

_STATE_TO_PROTO = {
    ItemState.WINDOW: pb.ITEM_STATE_WINDOW,
    ItemState.ARCHIVED: pb.ITEM_STATE_ARCHIVED,
    ItemState.COMPACTED: pb.ITEM_STATE_COMPACTED,
    ItemState.REVERTED: pb.ITEM_STATE_REVERTED,
}
_STATE_FROM_PROTO: dict[int, ItemState] = {v: k for k, v in _STATE_TO_PROTO.items()}
_CONVERSATION_STATE = {
    ConversationState.GENERAL: pb.CONVERSATION_STATE_GENERAL,
    ConversationState.CODING: pb.CONVERSATION_STATE_CODING,
    ConversationState.DEBUGGING: pb.CONVERSATION_STATE_DEBUGGING,
    ConversationState.RESEARCH: pb.CONVERSATION_STATE_RESEARCH,
}
_MODES: dict[int, str] = {
    pb.RETRIEVAL_MODE_UNSPECIFIED: "hybrid",
    pb.RETRIEVAL_MODE_HYBRID: "hybrid",
    pb.RETRIEVAL_MODE_DENSE: "dense",
    pb.RETRIEVAL_MODE_LEXICAL: "lexical",
}


def to_proto_timestamp(seconds: float) -> Timestamp:
    # Core timestamps are float seconds, exact to well under a microsecond for any date
    # up to 9999; rounding to whole microseconds gives back what the client sent.
    micros = round(seconds * 1_000_000)
    return Timestamp(seconds=micros // 1_000_000, nanos=(micros % 1_000_000) * 1000)


def from_proto_timestamp(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def to_proto_datetime(moment: datetime) -> Timestamp:
    return to_proto_timestamp(moment.timestamp())


def from_proto_settings_patch(msg: pb.ConversationSettings) -> SettingsPatch:
    # Typed as the base class, whose HasField takes a name held in a variable.
    message: Message = msg

    def opt(name: str, value: V) -> V | None:
        return value if message.HasField(name) else None

    weights = None
    if msg.HasField("weights"):
        w = msg.weights
        weights = WeightsPatch(
            recency=w.recency if w.HasField("recency") else None,
            similarity=w.similarity if w.HasField("similarity") else None,
            importance=dict(w.importance),
            role=dict(w.role),
        )
    return SettingsPatch(
        window_max_tokens=opt("window_max_tokens", msg.window_max_tokens),
        window_max_items=opt("window_max_items", msg.window_max_items),
        encoding=opt("encoding", msg.encoding),
        recency_half_life_seconds=opt("recency_half_life_seconds", msg.recency_half_life_seconds),
        recency_half_life_items=opt("recency_half_life_items", msg.recency_half_life_items),
        focus_items=opt("focus_items", msg.focus_items),
        similarity_threshold=opt("similarity_threshold", msg.similarity_threshold),
        recent_min_items=opt("recent_min_items", msg.recent_min_items),
        protected_tail_items=opt("protected_tail_items", msg.protected_tail_items),
        protected_tail_share=opt("protected_tail_share", msg.protected_tail_share),
        adaptive_window=opt("adaptive_window", msg.adaptive_window),
        detect_importance=opt("detect_importance", msg.detect_importance),
        weights=weights,
        model=opt("model", msg.model),
        context_limit=opt("context_limit", msg.context_limit),
        reserved_reply_tokens=opt("reserved_reply_tokens", msg.reserved_reply_tokens),
        compaction_threshold=opt("compaction_threshold", msg.compaction_threshold),
        compaction_enabled=opt("compaction_enabled", msg.compaction_enabled),
        mask_tool_outputs_after_turns=opt(
            "mask_tool_outputs_after_turns", msg.mask_tool_outputs_after_turns
        ),
        replace_duplicate_reads=opt("replace_duplicate_reads", msg.replace_duplicate_reads),
        workspace_root=opt("workspace_root", msg.workspace_root),
        category_budgets=from_proto_budget_patches(msg.category_budgets),
        contributor_weights=from_proto_contributor_weights(msg.contributor_weights),
        retention=(
            from_proto_retention_policy(msg.retention) if msg.HasField("retention") else None
        ),
    )


def to_proto_settings(s: ConversationSettings) -> pb.ConversationSettings:
    return pb.ConversationSettings(
        window_max_tokens=s.window_max_tokens,
        window_max_items=s.window_max_items,
        encoding=s.encoding,
        recency_half_life_seconds=s.recency_half_life_seconds,
        recency_half_life_items=s.recency_half_life_items,
        focus_items=s.focus_items,
        similarity_threshold=s.similarity_threshold,
        recent_min_items=s.recent_min_items,
        protected_tail_items=s.protected_tail_items,
        protected_tail_share=s.protected_tail_share,
        adaptive_window=s.adaptive_window,
        detect_importance=s.detect_importance,
        weights=pb.ScoringWeights(
            recency=s.weights.recency,
            similarity=s.weights.similarity,
            importance=dict(s.weights.importance),
            role=dict(s.weights.role),
        ),
        model=s.model,
        context_limit=s.context_limit,
        reserved_reply_tokens=s.reserved_reply_tokens,
        compaction_threshold=s.compaction_threshold,
        compaction_enabled=s.compaction_enabled,
        mask_tool_outputs_after_turns=s.mask_tool_outputs_after_turns,
        replace_duplicate_reads=s.replace_duplicate_reads,
        workspace_root=s.workspace_root,
        category_budgets=to_proto_budgets(s.category_budgets),
        contributor_weights=to_proto_contributor_weights(s.contributor_weights),
        retention=to_proto_retention_policy(s.retention),
    )


def from_proto_new_item(msg: pb.NewItem) -> NewItem:
    """Raises InvalidArgument for unknown flags; the engine checks everything else."""
    return NewItem(
        role=msg.role,
        content=msg.content,
        timestamp=from_proto_timestamp(msg.timestamp) if msg.HasField("timestamp") else None,
        flags=parse_flags(msg.flags),
        metadata=MappingProxyType(dict(msg.metadata)),
        file=from_proto_file(msg.file) if msg.HasField("file") else None,
        idempotency_key=msg.idempotency_key or None,
    )


def from_proto_file(msg: pb.FileRef) -> FileRef:
    return FileRef(msg.path, msg.kind, msg.whole_file if msg.HasField("whole_file") else None)


def to_proto_file(f: FileRef) -> pb.FileRef:
    msg = pb.FileRef(path=f.path, kind=f.kind)
    if f.whole_file is not None:
        msg.whole_file = f.whole_file
    return msg


def to_proto_item(item: Item, compaction: pb.Compaction | None = None) -> pb.Item:
    """An item; a compaction marker in a listing carries its compaction record."""
    msg = pb.Item(
        conversation_id=item.conversation_id,
        seq=item.seq,
        role=item.role,
        content=item.content,
        timestamp=to_proto_timestamp(item.timestamp),
        token_count=item.token_count,
        flags=flag_names(item.flags),
        metadata=dict(item.metadata),
        state=_STATE_TO_PROTO[item.state],
        kind=item.kind,
        compaction=compaction,
    )
    if item.file is not None:
        msg.file.CopyFrom(to_proto_file(item.file))
    return msg


def to_proto_append_result(r: AppendedItem) -> pb.AppendResult:
    return pb.AppendResult(
        seq=r.seq,
        token_count=r.token_count,
        flags=flag_names(r.flags),
        duplicate=r.duplicate,
        out_of_order=r.out_of_order,
    )


def to_proto_window(w: WindowStats) -> pb.WindowStats:
    return pb.WindowStats(
        item_count=w.item_count,
        token_count=w.token_count,
        token_limit=w.token_limit,
        item_limit=w.item_limit,
    )


def to_proto_conversation(info: ConversationInfo) -> pb.Conversation:
    msg = pb.Conversation(
        namespace=info.record.namespace,
        conversation_id=info.record.conversation_id,
        settings=to_proto_settings(info.record.settings),
        window=to_proto_window(info.window),
        archived_items=info.archived_items,
        total_items=info.total_items,
        state=_CONVERSATION_STATE[info.state],
        created_at=to_proto_timestamp(info.record.created_at),
        last_seq=info.last_seq,
        pending_embeddings=info.pending_embeddings,
        last_event_id=info.last_event,
    )
    if info.last_item_at is not None:
        msg.last_item_at.CopyFrom(to_proto_timestamp(info.last_item_at))
    return msg


def to_proto_scored(s: ScoredItem) -> pb.ScoredItem:
    p = s.parts
    return pb.ScoredItem(
        item=to_proto_item(s.item),
        score=s.score,
        parts=pb.ScoreParts(
            recency=p.recency,
            importance=p.importance,
            similarity=p.similarity,
            lexical=p.lexical,
            role=p.role,
            time=p.time,
        ),
        neighbor_of=s.neighbor_of or 0,
        replaced=s.replaced,
    )


def to_proto_time_range(hint: TimeHint | None) -> pb.TimeRange | None:
    if hint is None:
        return None
    msg = pb.TimeRange(phrase=hint.phrase)
    if hint.since is not None:
        msg.since.CopyFrom(to_proto_datetime(hint.since))
    if hint.until is not None:
        msg.until.CopyFrom(to_proto_datetime(hint.until))
    return msg


def to_proto_tokens(t: TokenAccount) -> pb.TokenAccount:
    return pb.TokenAccount(
        budget=t.budget,
        total=t.total,
        recent=t.recent,
        history=t.history,
        query=t.query,
        recent_omitted=t.recent_omitted,
        encoding=t.encoding,
        system=t.system,
    )


def to_proto_context(
    ctx: EnhancedContext, allocation: AllocationReport | None = None
) -> pb.EnhancedContext:
    recent = [to_proto_scored(s) for s in ctx.recent]
    history = [to_proto_scored(s) for s in ctx.history]
    if allocation is not None:
        for msg in recent:
            msg.category = to_proto_category(category_of_role(msg.item.role))
        for msg in history:
            msg.category = pb.CATEGORY_CONTEXT
    return pb.EnhancedContext(
        recent=recent,
        history=history,
        text=ctx.text,
        query=ctx.query,
        query_from_focus=ctx.query_from_focus,
        tokens=to_proto_tokens(ctx.tokens),
        time_range=to_proto_time_range(ctx.time_hint),
        unindexed_items=ctx.unindexed_items,
        state=_CONVERSATION_STATE[ctx.state],
        allocation=to_proto_allocation(allocation) if allocation else None,
    )


def from_proto_mode(mode: int) -> str:
    try:
        return _MODES[mode]
    except KeyError:
        raise InvalidArgument(f"unknown retrieval mode {mode}") from None


def from_proto_states(states: Iterable[int]) -> list[ItemState]:
    out: list[ItemState] = []
    for s in states:
        if s not in _STATE_FROM_PROTO:
            raise InvalidArgument(f"unknown item state {s}")
        out.append(_STATE_FROM_PROTO[s])
    return out


def from_proto_filter(msg: pb.SearchFilter) -> ItemFilter:
    return ItemFilter(
        roles=frozenset(msg.roles),
        flags=parse_flags(msg.flags),
        since=from_proto_timestamp(msg.since) if msg.HasField("since") else None,
        until=from_proto_timestamp(msg.until) if msg.HasField("until") else None,
        metadata=dict(msg.metadata),
    )
