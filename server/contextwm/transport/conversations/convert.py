"""Converters of conversations, their settings and items: to_proto_x / from_proto_x."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import TypeVar

from contextwm_client.v1 import contextwm_pb2 as pb
from google.protobuf.message import Message

from contextwm.conversations.appends import AppendedItem
from contextwm.conversations.engine import ConversationInfo
from contextwm.domain.conversations import (
    ConversationSettings,
    ConversationState,
    SettingsPatch,
    WeightsPatch,
    WindowStats,
)
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import FileRef, Item, ItemState, NewItem, flag_names, parse_flags
from contextwm.lru import Lru
from contextwm.transport.budgets.convert import (
    from_proto_budget_patches,
    from_proto_contributor_weights,
    to_proto_budgets,
    to_proto_contributor_weights,
)
from contextwm.transport.retention.convert import (
    from_proto_retention_policy,
    to_proto_retention_policy,
)
from contextwm.transport.timestamps import from_proto_timestamp, to_proto_timestamp

__all__ = [
    "ITEM_MESSAGES",
    "ItemMessages",
    "from_proto_file",
    "from_proto_new_item",
    "from_proto_settings_patch",
    "from_proto_states",
    "to_proto_append_result",
    "to_proto_conversation",
    "to_proto_conversation_state",
    "to_proto_file",
    "to_proto_item",
    "to_proto_settings",
    "to_proto_window",
]

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


# Item messages are kept for the items that responses return again: a window turn, or a hit
# that the next query finds too, is the same Item object call after call (kept by the window
# or by the store's memory of archived items), and building its message costs several times
# more than copying it into a response.
MAX_ITEMS = 4096


class ItemMessages:
    """Messages by the identity of their item, which the cache holds on to (so no other
    object can take its id), least recently used out first. Thread-safe; its hits and misses
    are a CacheCounts for the metrics."""

    def __init__(self, max_items: int = MAX_ITEMS) -> None:
        self._messages: Lru[int, tuple[Item, pb.Item]] = Lru(max_items)

    @property
    def hits(self) -> int:
        return self._messages.hits

    @property
    def misses(self) -> int:
        return self._messages.misses

    def message(self, item: Item) -> pb.Item:
        """The item's message; callers copy it into theirs and never change it."""
        entry = self._messages.get(id(item))
        if entry is not None and entry[0] is item:
            return entry[1]
        msg = to_proto_item(item)
        self._messages.put(id(item), (item, msg))
        return msg

    def clear(self) -> None:
        """Forgets every message (an erasure's items may be among them)."""
        self._messages.clear()


# One per process: the items are the process's.
ITEM_MESSAGES = ItemMessages()


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


def to_proto_conversation_state(state: ConversationState) -> pb.ConversationState.ValueType:
    return _CONVERSATION_STATE[state]


def to_proto_conversation(info: ConversationInfo) -> pb.Conversation:
    msg = pb.Conversation(
        namespace=info.record.namespace,
        conversation_id=info.record.conversation_id,
        settings=to_proto_settings(info.record.settings),
        window=to_proto_window(info.window),
        archived_items=info.archived_items,
        total_items=info.total_items,
        state=to_proto_conversation_state(info.state),
        created_at=to_proto_timestamp(info.record.created_at),
        last_seq=info.last_seq,
        pending_embeddings=info.pending_embeddings,
        last_event_id=info.last_event,
    )
    if info.last_item_at is not None:
        msg.last_item_at.CopyFrom(to_proto_timestamp(info.last_item_at))
    return msg


def from_proto_states(states: Iterable[int]) -> list[ItemState]:
    out: list[ItemState] = []
    for s in states:
        if s not in _STATE_FROM_PROTO:
            raise InvalidArgument(f"unknown item state {s}")
        out.append(_STATE_FROM_PROTO[s])
    return out
