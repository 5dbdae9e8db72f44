"""Conversions between the client's value types and the generated protobuf messages.

`to_proto_x` builds the message `x` (named after the proto message, snake_case) from a value,
`from_proto_x` reads it back. Only the directions the clients use live here: requests are
built, responses read. (The tests hold the other directions, for round trips and fakes.)
Proto3 `optional` fields and message fields are read with `HasField`, so "unset" comes back as
None rather than as 0 or "". Strings of a vocabulary are passed on as the server sent them,
typed with their `Literal` (see `_vocabulary`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Final, TypeVar, cast

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from contextwm_client._types import (
    ActiveContext,
    ActiveEntry,
    AllocationReport,
    ApiKey,
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    CategoryAllocation,
    CategoryBudget,
    CategoryOptions,
    Checkpoint,
    ChunkCacheStats,
    Compaction,
    CompactResult,
    ContextEdit,
    ContributorPiece,
    Conversation,
    ConversationRetention,
    ConversationSettings,
    ConversationStats,
    CreatedKey,
    EnhancedContext,
    ErasedConversation,
    ErasureCounts,
    ErasureReceipt,
    Event,
    FileChunk,
    FileEdit,
    FileRef,
    FileSearchLine,
    FileSearchMatches,
    FileSearchPage,
    FileView,
    ImportFailure,
    ImportResult,
    Item,
    LedgerFact,
    NewItem,
    Optimisations,
    Page,
    ReembedProgress,
    RestoreResult,
    RetentionPolicy,
    RetentionReport,
    ScoredItem,
    ScoreParts,
    ScoringWeights,
    SearchResult,
    Session,
    StateStats,
    StatsResult,
    StoreStats,
    TimeRange,
    TokenAccount,
    ToolCheck,
    TruncateResult,
    Usage,
    WindowStats,
)
from contextwm_client._vocabulary import (
    CaseMode,
    Category,
    ChunkStrategy,
    ContributorType,
    ConversationState,
    EditKind,
    EventKind,
    FactKind,
    FileKind,
    Flag,
    ItemKind,
    ItemState,
    RetrievalMode,
    Role,
    Treatment,
    Unspecified,
    UsageSource,
)
from contextwm_client.v1 import contextwm_pb2 as pb

N = TypeVar("N", bound=str)
E = TypeVar("E", bound=int)
V = TypeVar("V")

_UNSPECIFIED: Final = "unspecified"
_MESSAGE_KIND: Final = "message"


def _by_name(pairs: Iterable[tuple[N, E]]) -> Mapping[str, E]:
    return {name: number for name, number in pairs}


def _by_number(pairs: Iterable[tuple[N, E]]) -> Mapping[int, N]:
    return {number: name for name, number in pairs}


# The lower-case names the client uses for the proto enums ("_UNSPECIFIED" has none: it means
# "not set"). A test checks that every proto value is listed.
_ITEM_STATE_PAIRS: tuple[tuple[ItemState, pb.ItemState.ValueType], ...] = (
    ("window", pb.ITEM_STATE_WINDOW),
    ("archived", pb.ITEM_STATE_ARCHIVED),
    ("compacted", pb.ITEM_STATE_COMPACTED),
    ("reverted", pb.ITEM_STATE_REVERTED),
)
_CONVERSATION_STATE_PAIRS: tuple[tuple[ConversationState, pb.ConversationState.ValueType], ...] = (
    ("general", pb.CONVERSATION_STATE_GENERAL),
    ("coding", pb.CONVERSATION_STATE_CODING),
    ("debugging", pb.CONVERSATION_STATE_DEBUGGING),
    ("research", pb.CONVERSATION_STATE_RESEARCH),
)
_RETRIEVAL_MODE_PAIRS: tuple[tuple[RetrievalMode, pb.RetrievalMode.ValueType], ...] = (
    ("hybrid", pb.RETRIEVAL_MODE_HYBRID),
    ("dense", pb.RETRIEVAL_MODE_DENSE),
    ("lexical", pb.RETRIEVAL_MODE_LEXICAL),
)
_CATEGORY_PAIRS: tuple[tuple[Category, pb.Category.ValueType], ...] = (
    ("system", pb.CATEGORY_SYSTEM),
    ("context", pb.CATEGORY_CONTEXT),
    ("dialog", pb.CATEGORY_DIALOG),
    ("system_output", pb.CATEGORY_SYSTEM_OUTPUT),
)
_CONTRIBUTOR_TYPE_PAIRS: tuple[tuple[ContributorType, pb.ContributorType.ValueType], ...] = (
    ("working_files", pb.CONTRIBUTOR_TYPE_WORKING_FILES),
    ("retrieval", pb.CONTRIBUTOR_TYPE_RETRIEVAL),
    ("codebase_map", pb.CONTRIBUTOR_TYPE_CODEBASE_MAP),
    ("project_docs", pb.CONTRIBUTOR_TYPE_PROJECT_DOCS),
)
_CHUNK_STRATEGY_PAIRS: tuple[tuple[ChunkStrategy, pb.ChunkStrategy.ValueType], ...] = (
    ("lines", pb.CHUNK_STRATEGY_LINES),
    ("functions", pb.CHUNK_STRATEGY_FUNCTIONS),
    ("semantic", pb.CHUNK_STRATEGY_SEMANTIC),
)
# CASE_MODE_SMART is 0, the default, so "smart" has a value and no "unspecified" exists.
_CASE_MODE_PAIRS: tuple[tuple[CaseMode, pb.CaseMode.ValueType], ...] = (
    ("smart", pb.CASE_MODE_SMART),
    ("sensitive", pb.CASE_MODE_SENSITIVE),
    ("insensitive", pb.CASE_MODE_INSENSITIVE),
)
_ITEM_STATES = _by_name(_ITEM_STATE_PAIRS)
_RETRIEVAL_MODES = _by_name(_RETRIEVAL_MODE_PAIRS)
_CATEGORIES = _by_name(_CATEGORY_PAIRS)
_CONTRIBUTOR_TYPES = _by_name(_CONTRIBUTOR_TYPE_PAIRS)
_CHUNK_STRATEGIES = _by_name(_CHUNK_STRATEGY_PAIRS)
_CASE_MODES = _by_name(_CASE_MODE_PAIRS)
_ITEM_STATE_NAMES = _by_number(_ITEM_STATE_PAIRS)
_CHUNK_STRATEGY_NAMES = _by_number(_CHUNK_STRATEGY_PAIRS)
_CONVERSATION_STATE_NAMES = _by_number(_CONVERSATION_STATE_PAIRS)
_CATEGORY_NAMES = _by_number(_CATEGORY_PAIRS)
_CONTRIBUTOR_TYPE_NAMES = _by_number(_CONTRIBUTOR_TYPE_PAIRS)


def _enum_value(names: Mapping[str, E], name: str, what: str) -> E:
    # Enums cannot carry an unknown name over the wire, so this check cannot be left to the
    # server: an unknown name fails here, before any call.
    try:
        return names[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r}; expected one of {sorted(names)}") from None


def _optional(message: Message, name: str, value: V) -> V | None:
    # Proto3 `optional` and message fields: unset reads as the zero value, HasField tells.
    return value if message.HasField(name) else None


def _flags(names: Iterable[str]) -> tuple[Flag, ...]:
    # The server returns only names it knows (see _vocabulary for a newer server's).
    return cast("tuple[Flag, ...]", tuple(names))


# ---------------------------------------------------------------- scalars and enums


def to_proto_timestamp(value: datetime) -> Timestamp:
    """Converts a datetime to a Timestamp; a naive datetime is taken as UTC.

    Args:
        value: The datetime.

    Returns:
        The Timestamp, with microsecond precision.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    message = Timestamp()
    message.FromDatetime(value)
    return message


def from_proto_timestamp(message: Timestamp) -> datetime:
    """Converts a Timestamp to a timezone-aware UTC datetime (nanoseconds are truncated)."""
    return message.ToDatetime(tzinfo=UTC)


def to_proto_item_state(state: str) -> pb.ItemState.ValueType:
    """Converts "window", "archived", "compacted" or "reverted" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return _enum_value(_ITEM_STATES, state, "item state")


def from_proto_item_state(state: int) -> ItemState | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _ITEM_STATE_NAMES.get(state, _UNSPECIFIED)


def from_proto_conversation_state(state: int) -> ConversationState | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CONVERSATION_STATE_NAMES.get(state, _UNSPECIFIED)


def to_proto_retrieval_mode(mode: str | None) -> pb.RetrievalMode.ValueType:
    """Converts "hybrid", "dense" or "lexical" to the enum; None leaves it to the server.

    Raises:
        ValueError: For any other name.
    """
    if mode is None:
        return pb.RETRIEVAL_MODE_UNSPECIFIED
    return _enum_value(_RETRIEVAL_MODES, mode, "retrieval mode")


def to_proto_category(category: str) -> pb.Category.ValueType:
    """Converts "system", "context", "dialog" or "system_output" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return _enum_value(_CATEGORIES, category, "category")


def from_proto_category(category: int) -> Category | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CATEGORY_NAMES.get(category, _UNSPECIFIED)


def to_proto_contributor_type(contributor_type: str) -> pb.ContributorType.ValueType:
    """Converts "working_files", "retrieval", "codebase_map" or "project_docs" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return _enum_value(_CONTRIBUTOR_TYPES, contributor_type, "contributor type")


def from_proto_contributor_type(contributor_type: int) -> ContributorType | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CONTRIBUTOR_TYPE_NAMES.get(contributor_type, _UNSPECIFIED)


# ---------------------------------------------------------------- items


def to_proto_file_ref(value: FileRef) -> pb.FileRef:
    """Converts a FileRef to its message; whole_file None stays unset (the server decides)."""
    return pb.FileRef(path=value.path, kind=value.kind, whole_file=value.whole_file)


def from_proto_file_ref(message: pb.FileRef) -> FileRef:
    """Converts a FileRef message to a FileRef; an unset whole_file becomes None."""
    return FileRef(
        path=message.path,
        kind=cast("FileKind", message.kind),
        whole_file=_optional(message, "whole_file", message.whole_file),
    )


def to_proto_new_item(value: NewItem) -> pb.NewItem:
    """Converts an item to append to its message; None fields stay unset.

    Args:
        value: The item.

    Returns:
        The message.
    """
    message = pb.NewItem(
        role=value.role,
        content=value.content,
        flags=value.flags,
        metadata=value.metadata,
        idempotency_key=value.idempotency_key or "",
    )
    if value.timestamp is not None:
        message.timestamp.CopyFrom(to_proto_timestamp(value.timestamp))
    if value.file is not None:
        message.file.CopyFrom(to_proto_file_ref(value.file))
    return message


def from_proto_item(message: pb.Item) -> Item:
    """Converts an Item message to an Item (an empty kind, from an older server, is "message")."""
    return Item(
        conversation_id=message.conversation_id,
        seq=message.seq,
        role=cast("Role", message.role),
        content=message.content,
        timestamp=from_proto_timestamp(message.timestamp),
        token_count=message.token_count,
        flags=_flags(message.flags),
        metadata=dict(message.metadata),
        file=from_proto_file_ref(message.file) if message.HasField("file") else None,
        state=from_proto_item_state(message.state),
        kind=cast("ItemKind", message.kind or _MESSAGE_KIND),
        compaction=from_proto_compaction(message.compaction)
        if message.HasField("compaction")
        else None,
    )


def from_proto_score_parts(message: pb.ScoreParts) -> ScoreParts:
    """Converts a ScoreParts message to ScoreParts."""
    return ScoreParts(
        recency=message.recency,
        importance=message.importance,
        similarity=message.similarity,
        lexical=message.lexical,
        role=message.role,
        time=message.time,
    )


def from_proto_scored_item(message: pb.ScoredItem) -> ScoredItem:
    """Converts a ScoredItem message to a ScoredItem."""
    return ScoredItem(
        item=from_proto_item(message.item),
        score=message.score,
        parts=from_proto_score_parts(message.parts),
        neighbor_of=message.neighbor_of or None,
        replaced=message.replaced,
        category=_CATEGORY_NAMES.get(message.category),
    )


# ---------------------------------------------------------------- category budgets


def to_proto_category_budget(value: CategoryBudget) -> pb.CategoryBudget:
    """Converts a CategoryBudget to its message; None shares stay unset (unchanged).

    Raises:
        ValueError: If the category is not a known category.
    """
    return pb.CategoryBudget(
        category=to_proto_category(value.category),
        share=value.share,
        min_share=value.min_share,
        max_share=value.max_share,
    )


def from_proto_category_budget(message: pb.CategoryBudget) -> CategoryBudget:
    """Converts a CategoryBudget message to a CategoryBudget; unset shares become None."""
    m = message
    return CategoryBudget(
        category=from_proto_category(m.category),
        share=_optional(m, "share", m.share),
        min_share=_optional(m, "min_share", m.min_share),
        max_share=_optional(m, "max_share", m.max_share),
    )


def to_proto_category_budgets(values: Sequence[CategoryBudget]) -> list[pb.CategoryBudget]:
    """Converts budgets to their messages.

    Raises:
        ValueError: If a category is unknown or given twice (the server would refuse it).
    """
    seen: set[str] = set()
    for value in values:
        if value.category in seen:
            raise ValueError(f"category {value.category!r} is given twice in the budgets")
        seen.add(value.category)
    return [to_proto_category_budget(value) for value in values]


def to_proto_contributor_weights(values: Mapping[str, float]) -> list[pb.ContributorWeight]:
    """Converts weights keyed by contributor type to their messages.

    Raises:
        ValueError: If a key is not a known contributor type.
    """
    return [
        pb.ContributorWeight(type=to_proto_contributor_type(name), weight=weight)
        for name, weight in values.items()
    ]


def from_proto_contributor_weights(
    messages: Iterable[pb.ContributorWeight],
) -> dict[str, float]:
    """Converts ContributorWeight messages to weights keyed by contributor type."""
    return {from_proto_contributor_type(m.type): m.weight for m in messages}


def to_proto_category_options(value: CategoryOptions) -> pb.CategoryOptions:
    """Converts CategoryOptions to its message.

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
    return pb.CategoryOptions(
        budgets=to_proto_category_budgets(value.budgets),
        contributor_weights=to_proto_contributor_weights(value.contributor_weights),
        files=value.files,
    )


def from_proto_category_allocation(message: pb.CategoryAllocation) -> CategoryAllocation:
    """Converts a CategoryAllocation message to a CategoryAllocation."""
    return CategoryAllocation(
        category=from_proto_category(message.category),
        minimum=message.minimum,
        maximum=message.maximum,
        granted=message.granted,
        used=message.used,
        lent=message.lent,
        borrowed=message.borrowed,
    )


def from_proto_contributor_piece(message: pb.ContributorPiece) -> ContributorPiece:
    """Converts a ContributorPiece message to a ContributorPiece."""
    return ContributorPiece(
        type=from_proto_contributor_type(message.type),
        source=message.source,
        chosen=message.chosen,
        weight=message.weight,
        salience=message.salience,
        score=message.score,
        tokens=message.tokens,
        detail=message.detail,
        reason=message.reason,
        content=message.content,
    )


def from_proto_allocation_report(message: pb.AllocationReport) -> AllocationReport:
    """Converts an AllocationReport message to an AllocationReport."""
    return AllocationReport(
        allocated=message.allocated,
        categories=tuple(from_proto_category_allocation(c) for c in message.categories),
        contributors=tuple(from_proto_contributor_piece(c) for c in message.contributors),
    )


# ---------------------------------------------------------------- conversations


def from_proto_window_stats(message: pb.WindowStats) -> WindowStats:
    """Converts a WindowStats message to WindowStats."""
    return WindowStats(
        item_count=message.item_count,
        token_count=message.token_count,
        token_limit=message.token_limit,
        item_limit=message.item_limit,
    )


def to_proto_scoring_weights(value: ScoringWeights) -> pb.ScoringWeights:
    """Converts ScoringWeights to its message; None fields stay unset."""
    return pb.ScoringWeights(
        recency=value.recency,
        similarity=value.similarity,
        importance=value.importance,
        role=value.role,
    )


def from_proto_scoring_weights(message: pb.ScoringWeights) -> ScoringWeights:
    """Converts a ScoringWeights message to ScoringWeights; unset fields become None."""
    return ScoringWeights(
        recency=message.recency if message.HasField("recency") else None,
        similarity=message.similarity if message.HasField("similarity") else None,
        importance=dict(message.importance),
        role=dict(message.role),
    )


def to_proto_conversation_settings(value: ConversationSettings) -> pb.ConversationSettings:
    """Converts settings to their message; None fields stay unset (server default/unchanged).

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
    # Passing None for a proto3 optional field leaves it unset, which is what None means here.
    message = pb.ConversationSettings(
        window_max_tokens=value.window_max_tokens,
        window_max_items=value.window_max_items,
        encoding=value.encoding,
        recency_half_life_seconds=value.recency_half_life_seconds,
        recency_half_life_items=value.recency_half_life_items,
        focus_items=value.focus_items,
        similarity_threshold=value.similarity_threshold,
        recent_min_items=value.recent_min_items,
        protected_tail_items=value.protected_tail_items,
        protected_tail_share=value.protected_tail_share,
        adaptive_window=value.adaptive_window,
        detect_importance=value.detect_importance,
        model=value.model,
        context_limit=value.context_limit,
        reserved_reply_tokens=value.reserved_reply_tokens,
        compaction_threshold=value.compaction_threshold,
        compaction_enabled=value.compaction_enabled,
        mask_tool_outputs_after_turns=value.mask_tool_outputs_after_turns,
        replace_duplicate_reads=value.replace_duplicate_reads,
        workspace_root=value.workspace_root,
        category_budgets=to_proto_category_budgets(value.category_budgets or ()),
        contributor_weights=to_proto_contributor_weights(value.contributor_weights or {}),
    )
    if value.weights is not None:
        message.weights.CopyFrom(to_proto_scoring_weights(value.weights))
    if value.retention is not None:
        message.retention.CopyFrom(to_proto_retention_policy(value.retention))
    return message


def from_proto_conversation_settings(message: pb.ConversationSettings) -> ConversationSettings:
    """Converts a ConversationSettings message to settings; unset fields become None.

    Empty category budgets or contributor weights are unset too (a server sends all four).
    """
    m = message
    return ConversationSettings(
        window_max_tokens=_optional(m, "window_max_tokens", m.window_max_tokens),
        window_max_items=_optional(m, "window_max_items", m.window_max_items),
        encoding=_optional(m, "encoding", m.encoding),
        recency_half_life_seconds=_optional(
            m, "recency_half_life_seconds", m.recency_half_life_seconds
        ),
        recency_half_life_items=_optional(m, "recency_half_life_items", m.recency_half_life_items),
        focus_items=_optional(m, "focus_items", m.focus_items),
        similarity_threshold=_optional(m, "similarity_threshold", m.similarity_threshold),
        recent_min_items=_optional(m, "recent_min_items", m.recent_min_items),
        protected_tail_items=_optional(m, "protected_tail_items", m.protected_tail_items),
        protected_tail_share=_optional(m, "protected_tail_share", m.protected_tail_share),
        adaptive_window=_optional(m, "adaptive_window", m.adaptive_window),
        detect_importance=_optional(m, "detect_importance", m.detect_importance),
        weights=from_proto_scoring_weights(m.weights) if m.HasField("weights") else None,
        model=_optional(m, "model", m.model),
        context_limit=_optional(m, "context_limit", m.context_limit),
        reserved_reply_tokens=_optional(m, "reserved_reply_tokens", m.reserved_reply_tokens),
        compaction_threshold=_optional(m, "compaction_threshold", m.compaction_threshold),
        compaction_enabled=_optional(m, "compaction_enabled", m.compaction_enabled),
        mask_tool_outputs_after_turns=_optional(
            m, "mask_tool_outputs_after_turns", m.mask_tool_outputs_after_turns
        ),
        replace_duplicate_reads=_optional(m, "replace_duplicate_reads", m.replace_duplicate_reads),
        workspace_root=_optional(m, "workspace_root", m.workspace_root),
        category_budgets=tuple(from_proto_category_budget(b) for b in m.category_budgets) or None,
        contributor_weights=from_proto_contributor_weights(m.contributor_weights) or None,
        retention=from_proto_retention_policy(m.retention) if m.HasField("retention") else None,
    )


def from_proto_conversation(message: pb.Conversation) -> Conversation:
    """Converts a Conversation message to a Conversation."""
    return Conversation(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        settings=from_proto_conversation_settings(message.settings),
        window=from_proto_window_stats(message.window),
        archived_items=message.archived_items,
        total_items=message.total_items,
        state=from_proto_conversation_state(message.state),
        created_at=from_proto_timestamp(message.created_at),
        last_item_at=from_proto_timestamp(message.last_item_at)
        if message.HasField("last_item_at")
        else None,
        last_seq=message.last_seq,
        pending_embeddings=message.pending_embeddings,
        last_event_id=message.last_event_id,
    )


def from_proto_list_conversations_response(
    message: pb.ListConversationsResponse,
) -> Page[Conversation]:
    """Converts a ListConversationsResponse to a page of conversations."""
    return Page(
        entries=tuple(from_proto_conversation(c) for c in message.conversations),
        next_page_token=message.next_page_token,
    )


def from_proto_list_items_response(message: pb.ListItemsResponse) -> Page[Item]:
    """Converts a ListItemsResponse to a page of items."""
    return Page(
        entries=tuple(from_proto_item(i) for i in message.items),
        next_page_token=message.next_page_token,
    )


# ---------------------------------------------------------------- appends


def from_proto_append_result(message: pb.AppendResult) -> AppendedItem:
    """Converts an AppendResult message to the outcome for one appended item."""
    return AppendedItem(
        seq=message.seq,
        token_count=message.token_count,
        flags=_flags(message.flags),
        duplicate=message.duplicate,
        out_of_order=message.out_of_order,
    )


def from_proto_append_response(message: pb.AppendResponse) -> AppendResult:
    """Converts an AppendResponse to the outcome of a single append."""
    return AppendResult(
        seq=message.result.seq,
        token_count=message.result.token_count,
        flags=_flags(message.result.flags),
        duplicate=message.result.duplicate,
        evicted_seqs=tuple(message.evicted_seqs),
        window=from_proto_window_stats(message.window),
        out_of_order=message.result.out_of_order,
    )


def from_proto_append_batch_response(message: pb.AppendBatchResponse) -> AppendBatchResult:
    """Converts an AppendBatchResponse to the outcome of a batch append."""
    return AppendBatchResult(
        results=tuple(from_proto_append_result(r) for r in message.results),
        evicted_seqs=tuple(message.evicted_seqs),
        window=from_proto_window_stats(message.window),
    )


def joined_batch_results(results: Sequence[AppendBatchResult]) -> AppendBatchResult:
    """The outcome of a batch sent as several calls, in order: every item's result, every
    eviction, and the window after the last call."""
    return AppendBatchResult(
        results=tuple(r for batch in results for r in batch.results),
        evicted_seqs=tuple(s for batch in results for s in batch.evicted_seqs),
        window=results[-1].window,
    )


# The totals of an import before the server has answered any chunk.
NO_IMPORT = ImportResult(
    appended=0, duplicates=0, conversations=0, evicted=0, failed=0, failures=()
)
# Failures an ImportResult lists; more are only counted.
MAX_IMPORT_FAILURES = 1000


def add_import_response(total: ImportResult, message: pb.ImportResponse) -> ImportResult:
    """The totals of an import after the server's answer to one more chunk."""
    room = MAX_IMPORT_FAILURES - len(total.failures)
    failures = tuple(
        ImportFailure(f.index, f.source, f.code, f.message) for f in message.failures[:room]
    )
    return ImportResult(
        appended=total.appended + message.appended,
        duplicates=total.duplicates + message.duplicates,
        conversations=total.conversations + message.conversations,
        evicted=total.evicted + message.evicted,
        failed=total.failed + message.failed,
        failures=total.failures + failures,
        out_of_order=total.out_of_order + message.out_of_order,
    )


# ---------------------------------------------------------------- retrieval


def from_proto_token_account(message: pb.TokenAccount) -> TokenAccount:
    """Converts a TokenAccount message to a TokenAccount."""
    return TokenAccount(
        budget=message.budget,
        total=message.total,
        recent=message.recent,
        history=message.history,
        query=message.query,
        recent_omitted=message.recent_omitted,
        encoding=message.encoding,
        system=message.system,
    )


def from_proto_time_range(message: pb.TimeRange) -> TimeRange:
    """Converts a TimeRange message to a TimeRange; an unset end becomes None."""
    return TimeRange(
        since=from_proto_timestamp(message.since) if message.HasField("since") else None,
        until=from_proto_timestamp(message.until) if message.HasField("until") else None,
        phrase=message.phrase,
    )


def from_proto_enhanced_context(message: pb.EnhancedContext) -> EnhancedContext:
    """Converts an EnhancedContext message to an EnhancedContext; no allocation is None."""
    return EnhancedContext(
        text=message.text,
        recent=tuple(from_proto_scored_item(s) for s in message.recent),
        history=tuple(from_proto_scored_item(s) for s in message.history),
        query=message.query,
        query_from_focus=message.query_from_focus,
        tokens=from_proto_token_account(message.tokens),
        time_range=from_proto_time_range(message.time_range)
        if message.HasField("time_range")
        else None,
        unindexed_items=message.unindexed_items,
        state=from_proto_conversation_state(message.state),
        allocation=from_proto_allocation_report(message.allocation)
        if message.HasField("allocation")
        else None,
    )


def from_proto_search_response(message: pb.SearchResponse) -> SearchResult:
    """Converts a SearchResponse to a SearchResult."""
    return SearchResult(
        hits=tuple(from_proto_scored_item(h) for h in message.hits),
        time_range=from_proto_time_range(message.time_range)
        if message.HasField("time_range")
        else None,
    )


# ---------------------------------------------------------------- agent loop


def from_proto_optimisations(message: pb.Optimisations) -> Optimisations:
    """Converts an Optimisations message to Optimisations."""
    return Optimisations(
        masked_items=message.masked_items,
        masked_tokens_saved=message.masked_tokens_saved,
        duplicate_reads=message.duplicate_reads,
        duplicate_tokens_saved=message.duplicate_tokens_saved,
        truncated_items=message.truncated_items,
        truncated_tokens=message.truncated_tokens,
    )


def from_proto_usage(message: pb.Usage) -> Usage:
    """Converts a Usage message to a Usage."""
    return Usage(
        active_tokens=message.active_tokens,
        reported_tokens=message.reported_tokens,
        used_tokens=message.used_tokens,
        source=cast("UsageSource", message.source),
        context_limit=message.context_limit,
        reserved_reply_tokens=message.reserved_reply_tokens,
        usable_tokens=message.usable_tokens,
        fill_ratio=message.fill_ratio,
        threshold=message.threshold,
        compaction_enabled=message.compaction_enabled,
        should_compact=message.should_compact,
        summary_request=message.summary_request,
        compactions=message.compactions,
        active_items=message.active_items,
        model=message.model,
        optimisations=from_proto_optimisations(message.optimisations),
    )


def from_proto_active_entry(message: pb.ActiveEntry) -> ActiveEntry:
    """Converts an ActiveEntry message to an ActiveEntry; unset timestamp and file are None."""
    return ActiveEntry(
        seq=message.seq,
        role=cast("Role", message.role),
        content=message.content,
        token_count=message.token_count,
        original_tokens=message.original_tokens,
        treatment=cast("Treatment", message.treatment),
        kind=cast("ItemKind", message.kind),
        timestamp=from_proto_timestamp(message.timestamp)
        if message.HasField("timestamp")
        else None,
        metadata=dict(message.metadata),
        file=from_proto_file_ref(message.file) if message.HasField("file") else None,
    )


def from_proto_active_context(message: pb.ActiveContext) -> ActiveContext:
    """Converts an ActiveContext message to a page of the active context."""
    return ActiveContext(
        entries=tuple(from_proto_active_entry(e) for e in message.entries),
        next_page_token=message.next_page_token,
        total_entries=message.total_entries,
        total_tokens=message.total_tokens,
        usage=from_proto_usage(message.usage),
    )


def from_proto_ledger_fact(message: pb.LedgerFact) -> LedgerFact:
    """Converts a LedgerFact message to a LedgerFact."""
    return LedgerFact(
        kind=cast("FactKind", message.kind),
        text=message.text,
        seq=message.seq,
        outcome=message.outcome,
    )


def from_proto_compaction(message: pb.Compaction) -> Compaction:
    """Converts a Compaction message to a Compaction."""
    return Compaction(
        number=message.number,
        created_at=from_proto_timestamp(message.created_at),
        summary=message.summary,
        extractive=message.extractive,
        marker_seq=message.marker_seq,
        items_archived=message.items_archived,
        tokens_before=message.tokens_before,
        tokens_after=message.tokens_after,
        ledger=message.ledger,
        facts=tuple(from_proto_ledger_fact(f) for f in message.facts),
        undone=message.undone,
    )


def from_proto_compact_response(message: pb.CompactResponse) -> CompactResult:
    """Converts a CompactResponse to the outcome of a compaction."""
    return CompactResult(
        compaction=from_proto_compaction(message.compaction),
        usage=from_proto_usage(message.usage),
    )


def from_proto_truncate_response(message: pb.TruncateResponse) -> TruncateResult:
    """Converts a TruncateResponse to the outcome of a truncation."""
    return TruncateResult(
        truncated_seqs=tuple(message.truncated_seqs),
        tokens_removed=message.tokens_removed,
        usage=from_proto_usage(message.usage),
    )


def to_proto_retention_policy(value: RetentionPolicy) -> pb.RetentionPolicy:
    """Converts a retention policy to its message; None fields stay unset (the wider
    policy's)."""
    return pb.RetentionPolicy(
        max_age_seconds=value.max_age_seconds,
        max_archived_items=value.max_archived_items,
        inactive_seconds=value.inactive_seconds,
        remove_pinned=value.remove_pinned,
    )


def from_proto_retention_policy(message: pb.RetentionPolicy) -> RetentionPolicy:
    """Converts a RetentionPolicy message to a policy; unset fields become None."""
    m = message
    return RetentionPolicy(
        max_age_seconds=_optional(m, "max_age_seconds", m.max_age_seconds),
        max_archived_items=_optional(m, "max_archived_items", m.max_archived_items),
        inactive_seconds=_optional(m, "inactive_seconds", m.inactive_seconds),
        remove_pinned=_optional(m, "remove_pinned", m.remove_pinned),
    )


def from_proto_conversation_retention(
    message: pb.ConversationRetention,
) -> ConversationRetention:
    """Converts a ConversationRetention message to what one conversation lost."""
    return ConversationRetention(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        policy=from_proto_retention_policy(message.policy),
        conversation_removed=message.conversation_removed,
        removed_by_age=message.removed_by_age,
        removed_by_count=message.removed_by_count,
        removed_by_inactivity=message.removed_by_inactivity,
        seqs=tuple(message.seqs),
        more_seqs=message.more_seqs,
    )


def from_proto_apply_retention_response(
    message: pb.ApplyRetentionResponse,
) -> RetentionReport:
    """Converts an ApplyRetentionResponse to the outcome of a retention run."""
    return RetentionReport(
        dry_run=message.dry_run,
        conversations=tuple(from_proto_conversation_retention(c) for c in message.conversations),
        conversations_checked=message.conversations_checked,
        items_removed=message.items_removed,
        conversations_removed=message.conversations_removed,
    )


def from_proto_checkpoint(message: pb.Checkpoint) -> Checkpoint:
    """Converts a Checkpoint message to a Checkpoint."""
    return Checkpoint(
        name=message.name,
        created_at=from_proto_timestamp(message.created_at),
        last_seq=message.last_seq,
        active_tokens=message.active_tokens,
        compactions=message.compactions,
    )


def from_proto_list_checkpoints_response(
    message: pb.ListCheckpointsResponse,
) -> list[Checkpoint]:
    """Converts a ListCheckpointsResponse to a list of checkpoints, oldest first."""
    return [from_proto_checkpoint(c) for c in message.checkpoints]


def from_proto_restore_checkpoint_response(
    message: pb.RestoreCheckpointResponse,
) -> RestoreResult:
    """Converts a RestoreCheckpointResponse to the outcome of a restore."""
    return RestoreResult(
        checkpoint=from_proto_checkpoint(message.checkpoint),
        reverted_items=message.reverted_items,
        undone_edits=message.undone_edits,
        usage=from_proto_usage(message.usage),
    )


def from_proto_context_edit(message: pb.ContextEdit) -> ContextEdit:
    """Converts a ContextEdit message to a ContextEdit; an unset undone_at becomes None."""
    return ContextEdit(
        id=message.id,
        created_at=from_proto_timestamp(message.created_at),
        kind=cast("EditKind", message.kind),
        seqs=tuple(message.seqs),
        related_seq=message.related_seq,
        tokens_saved=message.tokens_saved,
        detail=message.detail,
        undone_at=from_proto_timestamp(message.undone_at)
        if message.HasField("undone_at")
        else None,
    )


def from_proto_list_context_edits_response(
    message: pb.ListContextEditsResponse,
) -> Page[ContextEdit]:
    """Converts a ListContextEditsResponse to a page of context edits."""
    return Page(
        entries=tuple(from_proto_context_edit(e) for e in message.edits),
        next_page_token=message.next_page_token,
    )


def from_proto_event(message: pb.Event) -> Event:
    """Converts an Event message to an Event; the parts its payload does not set are empty."""
    payload = message.WhichOneof("payload")
    checkpoint_event = message.checkpoint if payload == "checkpoint" else None
    return Event(
        id=message.id,
        created_at=from_proto_timestamp(message.created_at),
        kind=cast("EventKind", message.kind),
        usage=from_proto_usage(message.usage) if payload == "usage" else None,
        eviction_seqs=tuple(message.eviction.seqs) if payload == "eviction" else (),
        compaction=from_proto_compaction(message.compaction) if payload == "compaction" else None,
        edit=from_proto_context_edit(message.edit) if payload == "edit" else None,
        checkpoint=from_proto_checkpoint(checkpoint_event.checkpoint)
        if checkpoint_event is not None
        else None,
        reverted_items=checkpoint_event.reverted_items if checkpoint_event is not None else 0,
        missed=message.missed if payload == "missed" else 0,
        erased_seqs=tuple(message.erasure.seqs) if payload == "erasure" else (),
    )


# ---------------------------------------------------------------- erasure


def from_proto_erasure_receipt(message: pb.ErasureReceipt) -> ErasureReceipt:
    """Converts an ErasureReceipt message to an ErasureReceipt."""
    c = message.counts
    return ErasureReceipt(
        namespace=message.namespace,
        erased_at=from_proto_timestamp(message.erased_at),
        conversations=tuple(
            ErasedConversation(
                conversation_id=e.conversation_id,
                seqs=tuple((r.first, r.last) for r in e.seqs),
                deleted=e.deleted,
            )
            for e in message.conversations
        ),
        counts=ErasureCounts(
            items=c.items,
            tokens=c.tokens,
            vectors=c.vectors,
            postings=c.postings,
            index_entries=c.index_entries,
            namespace_index_entries=c.namespace_index_entries,
            compactions=c.compactions,
            summaries=c.summaries,
            markers=c.markers,
            facts=c.facts,
            checkpoints=c.checkpoints,
            edits=c.edits,
            events=c.events,
            sessions=c.sessions,
            chunk_cache_entries=c.chunk_cache_entries,
        ),
        digest=message.digest,
    )


# ---------------------------------------------------------------- statistics


def from_proto_state_stats(message: pb.StateStats) -> StateStats:
    """Converts a StateStats message to StateStats."""
    return StateStats(items=message.items, tokens=message.tokens)


def from_proto_store_stats(message: pb.StoreStats) -> StoreStats:
    """Converts a StoreStats message to StoreStats; unset item times become None."""
    m = message
    return StoreStats(
        items=m.items,
        tokens=m.tokens,
        window=from_proto_state_stats(m.window),
        archived=from_proto_state_stats(m.archived),
        compacted=from_proto_state_stats(m.compacted),
        reverted=from_proto_state_stats(m.reverted),
        vectors=m.vectors,
        missing_vectors=m.missing_vectors,
        index_bytes=m.index_bytes,
        oldest_item_at=from_proto_timestamp(m.oldest_item_at)
        if m.HasField("oldest_item_at")
        else None,
        newest_item_at=from_proto_timestamp(m.newest_item_at)
        if m.HasField("newest_item_at")
        else None,
    )


def from_proto_conversation_stats(message: pb.ConversationStats) -> ConversationStats:
    """Converts a ConversationStats message to ConversationStats."""
    return ConversationStats(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        stats=from_proto_store_stats(message.stats),
    )


def from_proto_chunk_cache_stats(message: pb.ChunkCacheStats) -> ChunkCacheStats:
    """Converts a ChunkCacheStats message."""
    return ChunkCacheStats(
        hits=message.hits,
        misses=message.misses,
        hit_rate=message.hit_rate,
        bytes=message.bytes,
        max_bytes=message.max_bytes,
        entries=message.entries,
        evictions=message.evictions,
    )


def from_proto_get_stats_response(message: pb.GetStatsResponse) -> StatsResult:
    """Converts a GetStatsResponse to a StatsResult."""
    return StatsResult(
        conversations=tuple(from_proto_conversation_stats(c) for c in message.conversations),
        total=from_proto_store_stats(message.total),
        conversation_count=message.conversation_count,
        next_page_token=message.next_page_token,
        model=message.model,
        chunk_cache=from_proto_chunk_cache_stats(message.chunk_cache),
    )


def from_proto_reembed_progress(message: pb.ReembedProgress) -> ReembedProgress:
    """Converts a ReembedProgress message to a ReembedProgress."""
    return ReembedProgress(
        model=message.model,
        conversations_done=message.conversations_done,
        conversations_total=message.conversations_total,
        items_done=message.items_done,
        items_total=message.items_total,
        items_reused=message.items_reused,
        items_per_second=message.items_per_second,
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        finished=message.finished,
    )


# ---------------------------------------------------------------- workspace files


def to_proto_chunk_strategy(strategy: str | None) -> pb.ChunkStrategy.ValueType:
    """Converts "lines", "functions" or "semantic" to the enum; None: the server's default.

    Raises:
        ValueError: For any other name.
    """
    if strategy is None:
        return pb.CHUNK_STRATEGY_UNSPECIFIED
    return _enum_value(_CHUNK_STRATEGIES, strategy, "chunk strategy")


def from_proto_chunk_strategy(strategy: int) -> ChunkStrategy | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CHUNK_STRATEGY_NAMES.get(strategy, _UNSPECIFIED)


def to_proto_case_mode(mode: str) -> pb.CaseMode.ValueType:
    """Converts "smart", "sensitive" or "insensitive" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return _enum_value(_CASE_MODES, mode, "case mode")


def from_proto_file_chunk(message: pb.FileChunk) -> FileChunk:
    """Converts a FileChunk message."""
    return FileChunk(
        path=message.path,
        index=message.index,
        first_line=message.first_line,
        last_line=message.last_line,
        content=message.content,
        total_lines=message.total_lines,
        total_chunks=message.total_chunks,
        has_more=message.has_more,
        has_previous=message.has_previous,
        token_count=message.token_count,
        strategy=from_proto_chunk_strategy(message.strategy),
        fallback=message.fallback,
        split=message.split,
        replaced=message.replaced,
        sha256=message.sha256,
        seq=message.seq,
    )


def from_proto_search_files_page(message: pb.SearchFilesPage) -> FileSearchPage:
    """Converts a SearchFilesPage message."""
    return FileSearchPage(
        files=tuple(
            FileSearchMatches(
                path=f.path,
                lines=tuple(FileSearchLine(ln.number, ln.text, ln.match) for ln in f.lines),
                matches_in_file=f.matches_in_file,
                first_match=f.first_match,
                shown=f.shown,
                capped=f.capped,
            )
            for f in message.files
        ),
        next_page_token=message.next_page_token,
        total_matches=message.total_matches,
        total_files=message.total_files,
        remaining_matches=message.remaining_matches,
        remaining_files=message.remaining_files,
        files_searched=message.files_searched,
        binary_skipped=message.binary_skipped,
        too_large_skipped=message.too_large_skipped,
        text=message.text,
        token_count=message.token_count,
    )


def from_proto_edit_file_response(message: pb.EditFileResponse) -> FileEdit:
    """Converts an EditFileResponse."""
    return FileEdit(
        path=message.path,
        first_line=message.first_line,
        last_line=message.last_line,
        sha256_before=message.sha256_before,
        sha256_after=message.sha256_after,
    )


def from_proto_session(message: pb.Session) -> Session:
    """Converts a Session message."""
    view = None
    if message.HasField("view"):
        v = message.view
        view = FileView(
            path=v.path,
            chunk_index=v.chunk_index,
            total_chunks=v.total_chunks,
            strategy=from_proto_chunk_strategy(v.strategy),
            max_lines=v.max_lines,
            max_tokens=v.max_tokens,
            seen_chunks=tuple(v.seen_chunks),
        )
    return Session(
        conversation_id=message.conversation_id,
        states=tuple(message.states),
        tools=tuple(message.tools),
        deciding_state=message.deciding_state,
        view=view,
    )


def from_proto_tool_check(message: pb.ToolCheck) -> ToolCheck:
    """Converts a ToolCheck message."""
    return ToolCheck(
        tool=message.tool,
        allowed=message.allowed,
        reason=message.reason,
        deciding_state=message.deciding_state,
    )


def from_proto_api_key(message: pb.ApiKey) -> ApiKey:
    """Converts an ApiKey message to an ApiKey."""
    return ApiKey(
        key_id=message.key_id,
        name=message.name,
        role=message.role,
        namespaces=tuple(message.namespaces),
        created_at=from_proto_timestamp(message.created_at),
        expires_at=(
            from_proto_timestamp(message.expires_at) if message.HasField("expires_at") else None
        ),
        revoked_at=(
            from_proto_timestamp(message.revoked_at) if message.HasField("revoked_at") else None
        ),
    )


def from_proto_created_key(message: pb.CreatedKey) -> CreatedKey:
    """Converts a CreatedKey message to a CreatedKey."""
    return CreatedKey(key=from_proto_api_key(message.key), token=message.token)
