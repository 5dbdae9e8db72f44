"""Round trips of the client's converters, request builders and the status-to-exception table;
the agent-loop methods' requests over a fake stub, and the watch streams' ending and errors."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import client_roundtrip as roundtrip
import grpc
import pytest
from contextwm_client import (
    ActiveContext,
    ActiveEntry,
    AllocationReport,
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    AsyncClient,
    AsyncEventStream,
    CategoryAllocation,
    CategoryBudget,
    CategoryOptions,
    Checkpoint,
    Client,
    Compaction,
    CompactResult,
    ContextEdit,
    ContextWMError,
    ContributorPiece,
    Conversation,
    ConversationRetention,
    ConversationSettings,
    DeadlineExceededError,
    EnhancedContext,
    Event,
    EventStream,
    FileRef,
    InvalidArgumentError,
    Item,
    LedgerFact,
    NewItem,
    NotFoundError,
    Optimisations,
    Page,
    RequestCancelledError,
    RestoreResult,
    RetentionPolicy,
    RetentionReport,
    ScoredItem,
    ScoreParts,
    ScoringWeights,
    SearchResult,
    TimeRange,
    TokenAccount,
    TruncateResult,
    UnavailableError,
    UnexpectedStatusError,
    Usage,
    WindowStats,
    map_rpc_error,
)
from contextwm_client import _requests as requests
from contextwm_client._convert.agent_loop import (
    from_proto_active_context,
    from_proto_active_entry,
    from_proto_checkpoint,
    from_proto_compact_response,
    from_proto_compaction,
    from_proto_context_edit,
    from_proto_event,
    from_proto_ledger_fact,
    from_proto_list_checkpoints_response,
    from_proto_list_context_edits_response,
    from_proto_optimisations,
    from_proto_restore_checkpoint_response,
    from_proto_truncate_response,
    from_proto_usage,
)
from contextwm_client._convert.budgets import (
    from_proto_allocation_report,
    from_proto_category,
    from_proto_category_allocation,
    from_proto_category_budget,
    from_proto_contributor_piece,
    from_proto_contributor_type,
    to_proto_category,
    to_proto_category_budget,
    to_proto_category_options,
    to_proto_contributor_type,
)
from contextwm_client._convert.common import (
    from_proto_file_ref,
    from_proto_timestamp,
    to_proto_file_ref,
    to_proto_timestamp,
)
from contextwm_client._convert.conversations import (
    from_proto_append_batch_response,
    from_proto_append_response,
    from_proto_append_result,
    from_proto_conversation,
    from_proto_conversation_settings,
    from_proto_conversation_state,
    from_proto_item,
    from_proto_item_state,
    from_proto_list_conversations_response,
    from_proto_list_items_response,
    from_proto_scoring_weights,
    from_proto_window_stats,
    to_proto_conversation_settings,
    to_proto_item_state,
    to_proto_new_item,
    to_proto_scoring_weights,
)
from contextwm_client._convert.retention import from_proto_apply_retention_response
from contextwm_client._convert.retrieval import (
    from_proto_enhanced_context,
    from_proto_scored_item,
    from_proto_search_response,
    from_proto_time_range,
    from_proto_token_account,
    to_proto_retrieval_mode,
)
from contextwm_client._exceptions import STATUS_EXCEPTIONS
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

T0 = datetime(2024, 5, 17, 9, 30, 15, 123456, tzinfo=UTC)
T1 = T0 + timedelta(days=3)

BUDGETS = (
    CategoryBudget("system", share=0.1, min_share=0.1, max_share=0.1),
    CategoryBudget("context", share=0.35, min_share=0.1, max_share=0.7),
    CategoryBudget("dialog", share=0.5, min_share=0.2, max_share=0.85),
    CategoryBudget("system_output", share=0.05, min_share=0.0, max_share=0.25),
)
CONTRIBUTOR_WEIGHTS = {
    "working_files": 0.4,
    "retrieval": 0.25,
    "codebase_map": 0.2,
    "project_docs": 0.15,
}

FULL_SETTINGS = ConversationSettings(
    window_max_tokens=8000,
    window_max_items=100,
    encoding="o200k_base",
    recency_half_life_seconds=86400.0,
    recency_half_life_items=50.0,
    focus_items=3,
    similarity_threshold=0.3,
    recent_min_items=2,
    protected_tail_items=20,
    protected_tail_share=0.5,
    adaptive_window=True,
    detect_importance=True,
    weights=ScoringWeights(
        recency=0.3, similarity=0.4, importance={"pinned": 0.8}, role={"user": 0.3}
    ),
    model="gpt-4o",
    context_limit=128000,
    reserved_reply_tokens=4096,
    compaction_threshold=0.85,
    compaction_enabled=True,
    mask_tool_outputs_after_turns=10,
    replace_duplicate_reads=True,
    workspace_root="/srv/work/repo",
    category_budgets=BUDGETS,
    contributor_weights=CONTRIBUTOR_WEIGHTS,
    retention=RetentionPolicy(
        max_age_seconds=2592000.0,
        max_archived_items=500,
        inactive_seconds=7776000.0,
        remove_pinned=True,
    ),
)
# Zero values that are *set* must survive as 0/False, not turn into None.
ZERO_SETTINGS = ConversationSettings(
    window_max_tokens=0,
    recency_half_life_items=0.0,
    similarity_threshold=0.0,
    adaptive_window=False,
    detect_importance=False,
    encoding="",
    weights=ScoringWeights(),
    model="",
    context_limit=0,
    reserved_reply_tokens=0,
    compaction_threshold=0.0,
    compaction_enabled=False,
    mask_tool_outputs_after_turns=0,
    replace_duplicate_reads=False,
    workspace_root="",
    category_budgets=(CategoryBudget("system_output", share=0.0, min_share=0.0, max_share=0.0),),
    contributor_weights={"codebase_map": 0.0},
    retention=RetentionPolicy(0.0, 0, 0.0, False),
)
WINDOW = WindowStats(item_count=4, token_count=900, token_limit=8000, item_limit=100)


def make_item(**changes: Any) -> Item:
    fields: dict[str, Any] = {
        "conversation_id": "conv-1",
        "seq": 7,
        "role": "assistant",
        "content": "fixed the bug in parser.py",
        "timestamp": T0,
        "token_count": 9,
        "flags": ("solution", "code"),
        "metadata": {"source": "slack", "thread": "42"},
        "file": FileRef(path="src/parser.py", kind="write"),
        "state": "archived",
    }
    fields.update(changes)
    return Item(**fields)


def make_scored(neighbor_of: int | None = None) -> ScoredItem:
    parts = ScoreParts(recency=0.5, importance=0.7, similarity=0.8, lexical=0.2, role=0.2, time=1)
    return ScoredItem(item=make_item(), score=0.93, parts=parts, neighbor_of=neighbor_of)


def make_conversation(**changes: Any) -> Conversation:
    fields: dict[str, Any] = {
        "namespace": "team-a",
        "conversation_id": "conv-1",
        "settings": FULL_SETTINGS,
        "window": WINDOW,
        "archived_items": 12,
        "total_items": 16,
        "state": "debugging",
        "created_at": T0,
        "last_item_at": T1,
        "last_seq": 16,
        "pending_embeddings": 2,
    }
    fields.update(changes)
    return Conversation(**fields)


OPTIMISATIONS = Optimisations(
    masked_items=1,
    masked_tokens_saved=2,
    duplicate_reads=3,
    duplicate_tokens_saved=4,
    truncated_items=5,
    truncated_tokens=6,
)
USAGE = Usage(
    active_tokens=90000,
    reported_tokens=95000,
    used_tokens=95000,
    source="reported",
    context_limit=128000,
    reserved_reply_tokens=4096,
    usable_tokens=123904,
    fill_ratio=0.77,
    threshold=0.85,
    compaction_enabled=True,
    should_compact=True,
    summary_request="Summarise the conversation so far ...",
    compactions=2,
    active_items=41,
    model="gpt-4o",
    optimisations=OPTIMISATIONS,
)
FACT = LedgerFact(kind="command", text="pytest -q", seq=12, outcome="exit 1")
COMPACTION = Compaction(
    number=3,
    created_at=T0,
    summary="We fixed the parser.",
    extractive=True,
    marker_seq=42,
    items_archived=30,
    tokens_before=95000,
    tokens_after=12000,
    ledger="- ran pytest -q (exit 1)",
    facts=(FACT, LedgerFact(kind="instruction", text="use tabs", seq=1, outcome="")),
    undone=True,
)
CHECKPOINT = Checkpoint(
    name="before-refactor", created_at=T0, last_seq=40, active_tokens=9000, compactions=2
)
EDIT = ContextEdit(
    id=5,
    created_at=T0,
    kind="duplicate_read",
    seqs=(7,),
    related_seq=19,
    tokens_saved=800,
    detail="src/parser.py read again",
    undone_at=T1,
)
ENTRY = ActiveEntry(
    seq=9,
    role="tool",
    content="[output of `ls` masked: 40 lines]",
    token_count=12,
    original_tokens=400,
    treatment="masked",
    kind="message",
    timestamp=T0,
    metadata={"tool": "bash"},
    file=FileRef("src/a.py", "read", whole_file=True),
)
NOTICE = ActiveEntry(
    seq=0,
    role="system",
    content="[12 items truncated]",
    token_count=6,
    original_tokens=5000,
    treatment="truncation_notice",
    kind="message",
    timestamp=None,
    metadata={},
    file=None,
)

TOKENS = TokenAccount(
    budget=1000,
    total=950,
    recent=500,
    history=300,
    query=50,
    recent_omitted=1,
    encoding="x",
    system=100,
)
CHOSEN = ContributorPiece(
    type="working_files",
    source="src/parser.py",
    chosen=True,
    weight=0.4,
    salience=0.9,
    score=0.36,
    tokens=120,
    detail="diff against HEAD",
    reason="",
    content="--- a/src/parser.py ...",
)
LEFT_OUT = ContributorPiece(
    type="codebase_map",
    source="codebase",
    chosen=False,
    weight=0.2,
    salience=0.5,
    score=0.1,
    tokens=900,
    detail="content",
    reason="did not fit the CONTEXT grant",
    content="",
)
ALLOCATION = AllocationReport(
    allocated=950,
    categories=(
        CategoryAllocation("system", 95, 95, 95, 100, 0, 5),
        CategoryAllocation("context", 95, 665, 400, 300, 0, 67),
        CategoryAllocation("dialog", 190, 807, 400, 500, 75, 0),
        CategoryAllocation("system_output", 0, 237, 55, 0, 47, 0),
    ),
    contributors=(CHOSEN, LEFT_OUT),
)

# (value, to_proto, from_proto): every converter pair, with optional fields set and unset.
ROUND_TRIPS: list[tuple[Any, Callable[[Any], Any], Callable[[Any], Any]]] = [
    (FileRef("a.py", "read"), to_proto_file_ref, from_proto_file_ref),
    (FileRef("a.py", "read", False), to_proto_file_ref, from_proto_file_ref),
    (FileRef("a.py", "write", True), to_proto_file_ref, from_proto_file_ref),
    (
        NewItem(
            content="hello",
            role="tool",
            timestamp=T0,
            flags=("pinned", "error"),
            metadata={"k": "v"},
            file=FileRef("b.py", "mention"),
            idempotency_key="key-1",
        ),
        to_proto_new_item,
        roundtrip.from_proto_new_item,
    ),
    (NewItem(content="bare"), to_proto_new_item, roundtrip.from_proto_new_item),
    (make_item(), roundtrip.to_proto_item, from_proto_item),
    (
        make_item(file=None, flags=(), metadata={}, state="window"),
        roundtrip.to_proto_item,
        from_proto_item,
    ),
    (
        make_item(kind="compaction", compaction=COMPACTION, state="window"),
        roundtrip.to_proto_item,
        from_proto_item,
    ),
    (make_scored(), roundtrip.to_proto_scored_item, from_proto_scored_item),
    (
        dataclasses.replace(make_scored(), replaced=True),
        roundtrip.to_proto_scored_item,
        from_proto_scored_item,
    ),
    (make_scored(neighbor_of=6), roundtrip.to_proto_scored_item, from_proto_scored_item),
    (WINDOW, roundtrip.to_proto_window_stats, from_proto_window_stats),
    (ScoringWeights(), to_proto_scoring_weights, from_proto_scoring_weights),
    (
        FULL_SETTINGS,
        to_proto_conversation_settings,
        from_proto_conversation_settings,
    ),
    (
        ZERO_SETTINGS,
        to_proto_conversation_settings,
        from_proto_conversation_settings,
    ),
    (
        ConversationSettings(),
        to_proto_conversation_settings,
        from_proto_conversation_settings,
    ),
    (make_conversation(), roundtrip.to_proto_conversation, from_proto_conversation),
    (
        make_conversation(last_item_at=None, state="general", settings=ConversationSettings()),
        roundtrip.to_proto_conversation,
        from_proto_conversation,
    ),
    (
        Page(
            entries=(make_conversation(), make_conversation(conversation_id="conv-2")),
            next_page_token="t",
        ),
        roundtrip.to_proto_list_conversations_response,
        from_proto_list_conversations_response,
    ),
    (
        Page(entries=(), next_page_token=""),
        roundtrip.to_proto_list_conversations_response,
        from_proto_list_conversations_response,
    ),
    (
        Page(entries=(make_item(), make_item(seq=8)), next_page_token="next"),
        roundtrip.to_proto_list_items_response,
        from_proto_list_items_response,
    ),
    (
        AppendedItem(seq=3, token_count=5, flags=("question",), duplicate=True),
        roundtrip.to_proto_append_result,
        from_proto_append_result,
    ),
    (
        AppendResult(
            seq=3,
            token_count=5,
            flags=("code",),
            duplicate=False,
            evicted_seqs=(1, 2),
            window=WINDOW,
        ),
        roundtrip.to_proto_append_response,
        from_proto_append_response,
    ),
    (
        AppendBatchResult(
            results=(
                AppendedItem(seq=3, token_count=5, flags=(), duplicate=False),
                AppendedItem(seq=4, token_count=6, flags=("error",), duplicate=True),
            ),
            evicted_seqs=(1,),
            window=WINDOW,
        ),
        roundtrip.to_proto_append_batch_response,
        from_proto_append_batch_response,
    ),
    (TOKENS, roundtrip.to_proto_token_account, from_proto_token_account),
    (
        dataclasses.replace(TOKENS, system=0),
        roundtrip.to_proto_token_account,
        from_proto_token_account,
    ),
    (BUDGETS[1], to_proto_category_budget, from_proto_category_budget),
    (
        CategoryBudget("dialog", share=0.6),
        to_proto_category_budget,
        from_proto_category_budget,
    ),
    (
        CategoryBudget("context", min_share=0.0),
        to_proto_category_budget,
        from_proto_category_budget,
    ),
    (CategoryOptions(), to_proto_category_options, roundtrip.from_proto_category_options),
    (
        CategoryOptions(
            budgets=(CategoryBudget("context", max_share=0.8), BUDGETS[2]),
            contributor_weights={"retrieval": 0.0, "project_docs": 1.0},
            files=("src/a.py", "/srv/work/repo/b.py"),
        ),
        to_proto_category_options,
        roundtrip.from_proto_category_options,
    ),
    (
        ALLOCATION.categories[2],
        roundtrip.to_proto_category_allocation,
        from_proto_category_allocation,
    ),
    (CHOSEN, roundtrip.to_proto_contributor_piece, from_proto_contributor_piece),
    (LEFT_OUT, roundtrip.to_proto_contributor_piece, from_proto_contributor_piece),
    (ALLOCATION, roundtrip.to_proto_allocation_report, from_proto_allocation_report),
    (
        AllocationReport(allocated=0, categories=(), contributors=()),
        roundtrip.to_proto_allocation_report,
        from_proto_allocation_report,
    ),
    (TimeRange(T0, T1, "last week"), roundtrip.to_proto_time_range, from_proto_time_range),
    (
        TimeRange(None, T1, "before May"),
        roundtrip.to_proto_time_range,
        from_proto_time_range,
    ),
    (
        TimeRange(T0, None, "since May"),
        roundtrip.to_proto_time_range,
        from_proto_time_range,
    ),
    (
        EnhancedContext(
            text="# Recent Context\n...",
            recent=(make_scored(),),
            history=(make_scored(), make_scored(neighbor_of=7)),
            query="what broke?",
            query_from_focus=False,
            tokens=TOKENS,
            time_range=TimeRange(T0, T1, "last week"),
            unindexed_items=3,
            state="coding",
        ),
        roundtrip.to_proto_enhanced_context,
        from_proto_enhanced_context,
    ),
    (
        EnhancedContext(
            text="# System\n...",
            recent=(make_scored(),),
            history=(),
            query="what broke?",
            query_from_focus=False,
            tokens=TOKENS,
            time_range=None,
            unindexed_items=0,
            state="coding",
            allocation=ALLOCATION,
        ),
        roundtrip.to_proto_enhanced_context,
        from_proto_enhanced_context,
    ),
    (
        EnhancedContext(
            text="",
            recent=(),
            history=(),
            query="focus text",
            query_from_focus=True,
            tokens=TOKENS,
            time_range=None,
            unindexed_items=0,
            state="research",
        ),
        roundtrip.to_proto_enhanced_context,
        from_proto_enhanced_context,
    ),
    (
        SearchResult(hits=(make_scored(),), time_range=TimeRange(T0, T1, "in May")),
        roundtrip.to_proto_search_response,
        from_proto_search_response,
    ),
    (
        SearchResult(hits=(), time_range=None),
        roundtrip.to_proto_search_response,
        from_proto_search_response,
    ),
    # agent loop
    (OPTIMISATIONS, roundtrip.to_proto_optimisations, from_proto_optimisations),
    (USAGE, roundtrip.to_proto_usage, from_proto_usage),
    (ENTRY, roundtrip.to_proto_active_entry, from_proto_active_entry),
    (NOTICE, roundtrip.to_proto_active_entry, from_proto_active_entry),
    (
        ActiveContext(
            entries=(NOTICE, ENTRY),
            next_page_token="p2",
            total_entries=30,
            total_tokens=9000,
            usage=USAGE,
        ),
        roundtrip.to_proto_active_context,
        from_proto_active_context,
    ),
    (FACT, roundtrip.to_proto_ledger_fact, from_proto_ledger_fact),
    (COMPACTION, roundtrip.to_proto_compaction, from_proto_compaction),
    (
        dataclasses.replace(COMPACTION, facts=(), extractive=False, undone=False),
        roundtrip.to_proto_compaction,
        from_proto_compaction,
    ),
    (
        CompactResult(compaction=COMPACTION, usage=USAGE),
        roundtrip.to_proto_compact_response,
        from_proto_compact_response,
    ),
    (
        TruncateResult(truncated_seqs=(3, 4, 5), tokens_removed=700, usage=USAGE),
        roundtrip.to_proto_truncate_response,
        from_proto_truncate_response,
    ),
    (CHECKPOINT, roundtrip.to_proto_checkpoint, from_proto_checkpoint),
    (
        [CHECKPOINT, dataclasses.replace(CHECKPOINT, name="later", created_at=T1)],
        roundtrip.to_proto_list_checkpoints_response,
        from_proto_list_checkpoints_response,
    ),
    (
        [],
        roundtrip.to_proto_list_checkpoints_response,
        from_proto_list_checkpoints_response,
    ),
    (
        RestoreResult(checkpoint=CHECKPOINT, reverted_items=4, undone_edits=2, usage=USAGE),
        roundtrip.to_proto_restore_checkpoint_response,
        from_proto_restore_checkpoint_response,
    ),
    (EDIT, roundtrip.to_proto_context_edit, from_proto_context_edit),
    (
        dataclasses.replace(EDIT, undone_at=None, seqs=(), related_seq=0),
        roundtrip.to_proto_context_edit,
        from_proto_context_edit,
    ),
    (
        Page(entries=(EDIT, dataclasses.replace(EDIT, id=6)), next_page_token="n"),
        roundtrip.to_proto_list_context_edits_response,
        from_proto_list_context_edits_response,
    ),
    (Event(1, T0, "usage", usage=USAGE), roundtrip.to_proto_event, from_proto_event),
    (
        Event(2, T0, "eviction", eviction_seqs=(1, 2)),
        roundtrip.to_proto_event,
        from_proto_event,
    ),
    (Event(3, T0, "eviction"), roundtrip.to_proto_event, from_proto_event),
    (
        Event(4, T0, "compaction", compaction=COMPACTION),
        roundtrip.to_proto_event,
        from_proto_event,
    ),
    (Event(5, T0, "truncation", edit=EDIT), roundtrip.to_proto_event, from_proto_event),
    (
        Event(6, T0, "checkpoint_created", checkpoint=CHECKPOINT),
        roundtrip.to_proto_event,
        from_proto_event,
    ),
    (
        Event(7, T0, "checkpoint_restored", checkpoint=CHECKPOINT, reverted_items=3),
        roundtrip.to_proto_event,
        from_proto_event,
    ),
    (Event(8, T0, "gap", missed=17), roundtrip.to_proto_event, from_proto_event),
    (Event(9, T0, "gap"), roundtrip.to_proto_event, from_proto_event),
]


@pytest.mark.parametrize(
    ("value", "to_proto", "from_proto"),
    ROUND_TRIPS,
    ids=[f"{type(case[0]).__name__}-{i}" for i, case in enumerate(ROUND_TRIPS)],
)
def test_round_trip(
    value: Any, to_proto: Callable[[Any], Any], from_proto: Callable[[Any], Any]
) -> None:
    message = to_proto(value)
    # Through the wire format too, so field presence is what a peer would see.
    reparsed = type(message).FromString(message.SerializeToString())
    assert from_proto(reparsed) == value


def test_unset_optional_settings_read_back_as_none() -> None:
    assert from_proto_conversation_settings(pb.ConversationSettings()) == (ConversationSettings())
    message = to_proto_conversation_settings(ConversationSettings(focus_items=5))
    assert message.HasField("focus_items")
    assert not message.HasField("window_max_tokens")
    assert not message.HasField("weights")
    assert not message.HasField("workspace_root")
    assert (list(message.category_budgets), list(message.contributor_weights)) == ([], [])


def test_unset_message_fields_read_back_as_none() -> None:
    item = roundtrip.from_proto_new_item(pb.NewItem(content="x"))
    assert (item.timestamp, item.file, item.idempotency_key) == (None, None, None)
    conversation = from_proto_conversation(pb.Conversation())
    assert conversation.last_item_at is None
    context = from_proto_enhanced_context(pb.EnhancedContext())
    assert (context.time_range, context.allocation, context.tokens.system) == (None, None, 0)
    assert from_proto_search_response(pb.SearchResponse()).time_range is None
    assert from_proto_scored_item(pb.ScoredItem()).neighbor_of is None


def test_scored_item_forwards_to_its_item() -> None:
    scored = make_scored()
    item = scored.item
    assert (scored.content, scored.metadata, scored.seq, scored.role) == (
        item.content,
        item.metadata,
        item.seq,
        item.role,
    )
    assert (scored.timestamp, scored.token_count) == (item.timestamp, item.token_count)


def test_enhanced_context_total_tokens_is_tokens_total() -> None:
    context = from_proto_enhanced_context(pb.EnhancedContext(tokens=pb.TokenAccount(total=321)))
    assert context.total_tokens == 321


# ---------------------------------------------------------------- timestamps


def test_naive_datetime_is_taken_as_utc() -> None:
    naive = datetime(2024, 1, 2, 3, 4, 5, 678901)
    back = from_proto_timestamp(to_proto_timestamp(naive))
    assert back == naive.replace(tzinfo=UTC)
    assert back.tzinfo is UTC


def test_aware_datetime_comes_back_as_the_same_instant_in_utc() -> None:
    local = datetime(2024, 1, 2, 12, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    back = from_proto_timestamp(to_proto_timestamp(local))
    assert back == local
    assert back.utcoffset() == timedelta(0)
    assert back.hour == 6 and back.minute == 30


@given(
    content=st.text(),
    flags=st.lists(st.text(), max_size=4).map(tuple),
    metadata=st.dictionaries(st.text(), st.text(), max_size=4),
    timestamp=st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    ),
    seq=st.integers(min_value=1, max_value=2**63 - 1),
)
def test_item_round_trip_property(
    content: str, flags: tuple[str, ...], metadata: dict[str, str], timestamp: datetime, seq: int
) -> None:
    item = make_item(content=content, flags=flags, metadata=metadata, timestamp=timestamp, seq=seq)
    assert from_proto_item(roundtrip.to_proto_item(item)) == item


# ---------------------------------------------------------------- enums


@pytest.mark.parametrize(
    ("enum", "prefix", "to_proto", "from_proto"),
    [
        (
            pb.ItemState,
            "ITEM_STATE_",
            to_proto_item_state,
            from_proto_item_state,
        ),
        (
            pb.ConversationState,
            "CONVERSATION_STATE_",
            roundtrip.to_proto_conversation_state,
            from_proto_conversation_state,
        ),
        (pb.Category, "CATEGORY_", to_proto_category, from_proto_category),
        (
            pb.ContributorType,
            "CONTRIBUTOR_TYPE_",
            to_proto_contributor_type,
            from_proto_contributor_type,
        ),
    ],
)
def test_every_state_has_a_name(
    enum: Any, prefix: str, to_proto: Callable[[str], int], from_proto: Callable[[int], str]
) -> None:
    for full_name, number in enum.items():
        if number == 0:
            assert from_proto(number) == "unspecified"
            continue
        name = full_name.removeprefix(prefix).lower()
        assert from_proto(number) == name
        assert to_proto(name) == number
    assert from_proto(999) == "unspecified"  # a value from a newer server
    with pytest.raises(ValueError, match="unknown"):
        to_proto("nonsense")


def test_retrieval_modes() -> None:
    for full_name, number in pb.RetrievalMode.items():
        if number:
            name = full_name.removeprefix("RETRIEVAL_MODE_").lower()
            assert to_proto_retrieval_mode(name) == number
    assert to_proto_retrieval_mode(None) == pb.RETRIEVAL_MODE_UNSPECIFIED
    with pytest.raises(ValueError, match="retrieval mode"):
        to_proto_retrieval_mode("semantic")


# ---------------------------------------------------------------- request builders


def test_get_context_request_leaves_unset_options_to_the_server() -> None:
    request = requests.get_context(
        "ns",
        "conv",
        None,
        max_tokens=500,
        recent_share=None,
        similarity_threshold=0.0,
        max_history_items=None,
        include_neighbors=False,
        mode=None,
        time_hints=None,
        categories=None,
    )
    options = request.options
    assert request.query == ""
    assert not options.HasField("categories")
    assert not options.HasField("recent_share")
    assert options.HasField("similarity_threshold") and options.similarity_threshold == 0.0
    assert options.HasField("include_neighbors") and options.include_neighbors is False
    assert not options.HasField("time_hints")
    assert options.mode == pb.RETRIEVAL_MODE_UNSPECIFIED


def get_context_request(categories: CategoryOptions | bool | None) -> Any:
    return requests.get_context(
        "ns",
        "conv",
        "q",
        max_tokens=500,
        recent_share=None,
        similarity_threshold=None,
        max_history_items=None,
        include_neighbors=None,
        mode=None,
        time_hints=None,
        categories=categories,
    )


def test_get_context_request_categories() -> None:
    for unset in (None, False):
        assert not get_context_request(unset).options.HasField("categories")
    empty = get_context_request(True).options
    assert empty.HasField("categories") and empty.categories == pb.CategoryOptions()
    # Empty options are sent as set too: categories with the conversation's budgets.
    assert get_context_request(CategoryOptions()).options.HasField("categories")
    full = CategoryOptions(
        budgets=(CategoryBudget("context", share=0.5, max_share=0.8), CategoryBudget("dialog")),
        contributor_weights={"codebase_map": 0.0, "working_files": 0.7},
        files=("src/a.py",),
    )
    assert get_context_request(full).options.categories == pb.CategoryOptions(
        budgets=[
            pb.CategoryBudget(category=pb.CATEGORY_CONTEXT, share=0.5, max_share=0.8),
            pb.CategoryBudget(category=pb.CATEGORY_DIALOG),
        ],
        contributor_weights=[
            pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_CODEBASE_MAP, weight=0.0),
            pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_WORKING_FILES, weight=0.7),
        ],
        files=["src/a.py"],
    )
    budget = get_context_request(full).options.categories.budgets[0]
    assert not budget.HasField("min_share")


def test_settings_request_with_budgets_weights_and_workspace() -> None:
    settings = ConversationSettings(
        workspace_root="/srv/work",
        category_budgets=(CategoryBudget("system", min_share=0.05),),
        contributor_weights={"retrieval": 0.5},
    )
    for request in (
        requests.create_conversation("ns", "c", settings),
        requests.update_conversation("ns", "c", settings),
    ):
        assert request.settings == pb.ConversationSettings(
            workspace_root="/srv/work",
            category_budgets=[pb.CategoryBudget(category=pb.CATEGORY_SYSTEM, min_share=0.05)],
            contributor_weights=[
                pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_RETRIEVAL, weight=0.5)
            ],
        )


BAD_CATEGORY_OPTIONS = [
    # The error names the known ones.
    (
        CategoryOptions(budgets=(CategoryBudget("history"),)),
        r"unknown category 'history'; expected one of \['context', 'dialog', 'system', "
        r"'system_output'\]",
    ),
    (
        CategoryOptions(contributor_weights={"docs": 0.1}),
        r"unknown contributor type 'docs'; expected one of \['codebase_map', 'project_docs', "
        r"'retrieval', 'working_files'\]",
    ),
    (
        CategoryOptions(budgets=(CategoryBudget("dialog", 0.5), CategoryBudget("dialog"))),
        "'dialog' is given twice",
    ),
]


@pytest.mark.parametrize(("options", "message"), BAD_CATEGORY_OPTIONS)
def test_unknown_or_repeated_category_names_raise(options: CategoryOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_context_request(options)
    settings = ConversationSettings(
        category_budgets=options.budgets, contributor_weights=options.contributor_weights
    )
    with pytest.raises(ValueError, match=message):
        requests.update_conversation("ns", "c", settings)


def test_allocation_report_lookups() -> None:
    assert ALLOCATION.category("dialog") == ALLOCATION.categories[2]
    assert (ALLOCATION.chosen, ALLOCATION.left_out) == ((CHOSEN,), (LEFT_OUT,))
    with pytest.raises(KeyError, match=r"'history'.*'system', 'context', 'dialog'"):
        ALLOCATION.category("history")  # type: ignore[arg-type]


def test_search_request_filter() -> None:
    request = requests.search(
        "ns",
        "q",
        conversation_id=None,
        top_k=5,
        include_window=True,
        roles=["user"],
        flags=["code"],
        since=T0,
        until=None,
        metadata={"k": "v"},
        mode="lexical",
        similarity_threshold=None,
    )
    assert request.conversation_id == ""
    assert list(request.filter.roles) == ["user"] and dict(request.filter.metadata) == {"k": "v"}
    assert from_proto_timestamp(request.filter.since) == T0
    assert not request.filter.HasField("until")
    assert not request.HasField("similarity_threshold")
    assert request.mode == pb.RETRIEVAL_MODE_LEXICAL


def test_list_items_request_states() -> None:
    request = requests.list_items("ns", "conv", 10, "", ["window", "archived"])
    assert list(request.states) == [pb.ITEM_STATE_WINDOW, pb.ITEM_STATE_ARCHIVED]
    with pytest.raises(ValueError):
        requests.list_items("ns", "conv", 10, "", ["deleted"])  # type: ignore[list-item]


# ---------------------------------------------------------------- exceptions


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str | None) -> None:
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str | None:
        return self._details


def test_table_covers_every_status_except_ok() -> None:
    assert set(STATUS_EXCEPTIONS) == set(grpc.StatusCode) - {grpc.StatusCode.OK}


@pytest.mark.parametrize("status", [s for s in grpc.StatusCode if s is not grpc.StatusCode.OK])
def test_map_rpc_error(status: grpc.StatusCode) -> None:
    error = map_rpc_error(FakeRpcError(status, "why"))
    assert type(error) is STATUS_EXCEPTIONS[status]
    assert isinstance(error, ContextWMError)
    assert (error.code, error.details) == (status.name, "why")


def test_specific_classes() -> None:
    cases = {
        grpc.StatusCode.NOT_FOUND: NotFoundError,
        grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
        grpc.StatusCode.CANCELLED: RequestCancelledError,
        grpc.StatusCode.DATA_LOSS: UnexpectedStatusError,
    }
    for status, error_class in cases.items():
        assert isinstance(map_rpc_error(FakeRpcError(status, None)), error_class)
    assert not issubclass(RequestCancelledError, asyncio.CancelledError)


def test_bare_rpc_error_maps_to_unknown() -> None:
    error = map_rpc_error(grpc.RpcError())
    assert isinstance(error, UnexpectedStatusError)
    assert (error.code, error.details) == ("UNKNOWN", "")


def test_sync_client_raises_typed_error_from_rpc_error() -> None:
    # Nothing listens on port 1: the call fails fast with UNAVAILABLE, no server needed.
    with Client("127.0.0.1:1", timeout=10) as client, pytest.raises(UnavailableError) as caught:
        client.get_conversation("conv")
    assert isinstance(caught.value.__cause__, grpc.RpcError)
    assert caught.value.code == "UNAVAILABLE"


def test_async_client_raises_typed_error_from_rpc_error() -> None:
    async def call() -> None:
        async with AsyncClient("127.0.0.1:1", timeout=10) as client:
            await client.search("query")

    with pytest.raises(UnavailableError) as caught:
        asyncio.run(call())
    assert isinstance(caught.value.__cause__, grpc.RpcError)


# ---------------------------------------------------------------- agent loop: from the wire


def ts(value: datetime) -> Any:
    return to_proto_timestamp(value)


PB_USAGE = pb.Usage(
    active_tokens=1,
    reported_tokens=2,
    used_tokens=3,
    source="reported",
    context_limit=5,
    reserved_reply_tokens=6,
    usable_tokens=7,
    fill_ratio=0.8,
    threshold=0.9,
    compaction_enabled=True,
    should_compact=True,
    summary_request="summarise",
    compactions=13,
    active_items=14,
    model="m",
    optimisations=pb.Optimisations(
        masked_items=21,
        masked_tokens_saved=22,
        duplicate_reads=23,
        duplicate_tokens_saved=24,
        truncated_items=25,
        truncated_tokens=26,
    ),
)
EXPECTED_USAGE = Usage(
    active_tokens=1,
    reported_tokens=2,
    used_tokens=3,
    source="reported",
    context_limit=5,
    reserved_reply_tokens=6,
    usable_tokens=7,
    fill_ratio=0.8,
    threshold=0.9,
    compaction_enabled=True,
    should_compact=True,
    summary_request="summarise",
    compactions=13,
    active_items=14,
    model="m",
    optimisations=Optimisations(21, 22, 23, 24, 25, 26),
)
PB_FACT = pb.LedgerFact(kind="error", text="boom", seq=4, outcome="failed")
PB_COMPACTION = pb.Compaction(
    number=2,
    created_at=ts(T0),
    summary="s",
    extractive=True,
    marker_seq=50,
    items_archived=40,
    tokens_before=900,
    tokens_after=100,
    ledger="ledger",
    facts=[PB_FACT],
    undone=True,
)
EXPECTED_COMPACTION = Compaction(
    number=2,
    created_at=T0,
    summary="s",
    extractive=True,
    marker_seq=50,
    items_archived=40,
    tokens_before=900,
    tokens_after=100,
    ledger="ledger",
    facts=(LedgerFact(kind="error", text="boom", seq=4, outcome="failed"),),
    undone=True,
)
PB_CHECKPOINT = pb.Checkpoint(
    name="cp", created_at=ts(T0), last_seq=8, active_tokens=700, compactions=1
)
EXPECTED_CHECKPOINT = Checkpoint(
    name="cp", created_at=T0, last_seq=8, active_tokens=700, compactions=1
)
PB_EDIT = pb.ContextEdit(
    id=3,
    created_at=ts(T0),
    kind="truncation",
    seqs=[4, 5],
    related_seq=9,
    tokens_saved=300,
    detail="half",
    undone_at=ts(T1),
)
EXPECTED_EDIT = ContextEdit(
    id=3,
    created_at=T0,
    kind="truncation",
    seqs=(4, 5),
    related_seq=9,
    tokens_saved=300,
    detail="half",
    undone_at=T1,
)
PB_ENTRY = pb.ActiveEntry(
    seq=11,
    role="file",
    content="[superseded by seq 20]",
    token_count=7,
    original_tokens=900,
    treatment="duplicate_read",
    kind="message",
    timestamp=ts(T1),
    metadata={"k": "v"},
    file=pb.FileRef(path="a.py", kind="read", whole_file=True),
)
EXPECTED_ENTRY = ActiveEntry(
    seq=11,
    role="file",
    content="[superseded by seq 20]",
    token_count=7,
    original_tokens=900,
    treatment="duplicate_read",
    kind="message",
    timestamp=T1,
    metadata={"k": "v"},
    file=FileRef(path="a.py", kind="read", whole_file=True),
)
PB_SETTINGS_LOOP = pb.ConversationSettings(
    window_max_tokens=1,
    window_max_items=2,
    encoding="o200k_base",
    recency_half_life_seconds=4.0,
    recency_half_life_items=5.0,
    focus_items=6,
    similarity_threshold=0.7,
    recent_min_items=4,
    protected_tail_items=7,
    protected_tail_share=0.25,
    adaptive_window=True,
    detect_importance=False,
    weights=pb.ScoringWeights(recency=0.1, similarity=0.2, importance={"code": 0.3}),
    model="claude",
    context_limit=200000,
    reserved_reply_tokens=8192,
    compaction_threshold=0.9,
    compaction_enabled=False,
    mask_tool_outputs_after_turns=0,
    replace_duplicate_reads=False,
    workspace_root="/srv/work",
    category_budgets=[
        pb.CategoryBudget(category=pb.CATEGORY_DIALOG, share=0.6, min_share=0.2, max_share=0.9),
        pb.CategoryBudget(category=pb.CATEGORY_CONTEXT, max_share=0.5),
    ],
    contributor_weights=[
        pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_PROJECT_DOCS, weight=0.5),
        pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_RETRIEVAL, weight=0.0),
    ],
    # Only some fields set: the others are the namespace's, and read back as None.
    retention=pb.RetentionPolicy(max_age_seconds=86400.0, max_archived_items=0),
)
PB_TOKENS = pb.TokenAccount(
    budget=1, total=2, recent=3, history=4, query=5, recent_omitted=6, encoding="e", system=8
)
PB_BUDGET = pb.CategoryBudget(
    category=pb.CATEGORY_SYSTEM_OUTPUT, share=0.05, min_share=0.01, max_share=0.25
)
PB_CATEGORY = pb.CategoryAllocation(
    category=pb.CATEGORY_CONTEXT, minimum=1, maximum=2, granted=3, used=4, lent=5, borrowed=6
)
EXPECTED_CATEGORY = CategoryAllocation(
    category="context", minimum=1, maximum=2, granted=3, used=4, lent=5, borrowed=6
)
PB_PIECE = pb.ContributorPiece(
    type=pb.CONTRIBUTOR_TYPE_RETRIEVAL,
    source="#12",
    chosen=True,
    weight=0.25,
    salience=0.8,
    score=0.2,
    tokens=40,
    detail="content",
    reason="no workspace",
    content="the hit",
)
EXPECTED_PIECE = ContributorPiece(
    type="retrieval",
    source="#12",
    chosen=True,
    weight=0.25,
    salience=0.8,
    score=0.2,
    tokens=40,
    detail="content",
    reason="no workspace",
    content="the hit",
)
PB_ALLOCATION = pb.AllocationReport(
    allocated=900, categories=[PB_CATEGORY], contributors=[PB_PIECE]
)
EXPECTED_ALLOCATION = AllocationReport(
    allocated=900, categories=(EXPECTED_CATEGORY,), contributors=(EXPECTED_PIECE,)
)

# (message with every field set, converter, expected value)
FROM_WIRE: list[tuple[Any, Callable[[Any], Any], Any]] = [
    (PB_USAGE, from_proto_usage, EXPECTED_USAGE),
    (PB_USAGE.optimisations, from_proto_optimisations, EXPECTED_USAGE.optimisations),
    (PB_FACT, from_proto_ledger_fact, EXPECTED_COMPACTION.facts[0]),
    (PB_COMPACTION, from_proto_compaction, EXPECTED_COMPACTION),
    (PB_CHECKPOINT, from_proto_checkpoint, EXPECTED_CHECKPOINT),
    (PB_EDIT, from_proto_context_edit, EXPECTED_EDIT),
    (PB_ENTRY, from_proto_active_entry, EXPECTED_ENTRY),
    (
        pb.ActiveContext(
            entries=[PB_ENTRY],
            next_page_token="next",
            total_entries=31,
            total_tokens=4000,
            usage=PB_USAGE,
        ),
        from_proto_active_context,
        ActiveContext(
            entries=(EXPECTED_ENTRY,),
            next_page_token="next",
            total_entries=31,
            total_tokens=4000,
            usage=EXPECTED_USAGE,
        ),
    ),
    (
        pb.CompactResponse(compaction=PB_COMPACTION, usage=PB_USAGE),
        from_proto_compact_response,
        CompactResult(compaction=EXPECTED_COMPACTION, usage=EXPECTED_USAGE),
    ),
    (
        pb.TruncateResponse(truncated_seqs=[2, 3], tokens_removed=90, usage=PB_USAGE),
        from_proto_truncate_response,
        TruncateResult(truncated_seqs=(2, 3), tokens_removed=90, usage=EXPECTED_USAGE),
    ),
    (
        pb.ListCheckpointsResponse(checkpoints=[PB_CHECKPOINT]),
        from_proto_list_checkpoints_response,
        [EXPECTED_CHECKPOINT],
    ),
    (
        pb.RestoreCheckpointResponse(
            checkpoint=PB_CHECKPOINT, reverted_items=6, undone_edits=2, usage=PB_USAGE
        ),
        from_proto_restore_checkpoint_response,
        RestoreResult(
            checkpoint=EXPECTED_CHECKPOINT, reverted_items=6, undone_edits=2, usage=EXPECTED_USAGE
        ),
    ),
    (
        pb.ListContextEditsResponse(edits=[PB_EDIT], next_page_token="more"),
        from_proto_list_context_edits_response,
        Page(entries=(EXPECTED_EDIT,), next_page_token="more"),
    ),
    (
        pb.FileRef(path="b.py", kind="write", whole_file=False),
        from_proto_file_ref,
        FileRef(path="b.py", kind="write", whole_file=False),
    ),
    (
        pb.ScoredItem(
            item=roundtrip.to_proto_item(make_item()),
            score=0.5,
            parts=roundtrip.to_proto_score_parts(make_scored().parts),
            neighbor_of=3,
            replaced=True,
            category=pb.CATEGORY_DIALOG,
        ),
        from_proto_scored_item,
        ScoredItem(
            item=make_item(),
            score=0.5,
            parts=make_scored().parts,
            neighbor_of=3,
            replaced=True,
            category="dialog",
        ),
    ),
    (
        pb.Item(
            conversation_id="c",
            seq=50,
            role="system",
            content="summary",
            timestamp=ts(T0),
            token_count=3,
            flags=["pinned"],
            metadata={"a": "b"},
            file=pb.FileRef(path="x", kind="mention"),
            state=pb.ITEM_STATE_WINDOW,
            kind="compaction",
            compaction=PB_COMPACTION,
        ),
        from_proto_item,
        Item(
            conversation_id="c",
            seq=50,
            role="system",
            content="summary",
            timestamp=T0,
            token_count=3,
            flags=("pinned",),
            metadata={"a": "b"},
            file=FileRef(path="x", kind="mention"),
            state="window",
            kind="compaction",
            compaction=EXPECTED_COMPACTION,
        ),
    ),
    (
        PB_SETTINGS_LOOP,
        from_proto_conversation_settings,
        ConversationSettings(
            window_max_tokens=1,
            window_max_items=2,
            encoding="o200k_base",
            recency_half_life_seconds=4.0,
            recency_half_life_items=5.0,
            focus_items=6,
            similarity_threshold=0.7,
            recent_min_items=4,
            protected_tail_items=7,
            protected_tail_share=0.25,
            adaptive_window=True,
            detect_importance=False,
            weights=ScoringWeights(recency=0.1, similarity=0.2, importance={"code": 0.3}),
            model="claude",
            context_limit=200000,
            reserved_reply_tokens=8192,
            compaction_threshold=0.9,
            compaction_enabled=False,
            mask_tool_outputs_after_turns=0,
            replace_duplicate_reads=False,
            workspace_root="/srv/work",
            category_budgets=(
                CategoryBudget("dialog", share=0.6, min_share=0.2, max_share=0.9),
                CategoryBudget("context", max_share=0.5),
            ),
            contributor_weights={"project_docs": 0.5, "retrieval": 0.0},
            retention=RetentionPolicy(max_age_seconds=86400.0, max_archived_items=0),
        ),
    ),
    (
        pb.ApplyRetentionResponse(
            dry_run=True,
            conversations=[
                pb.ConversationRetention(
                    namespace="team",
                    conversation_id="c",
                    policy=pb.RetentionPolicy(
                        max_age_seconds=60.0,
                        max_archived_items=3,
                        inactive_seconds=0.0,
                        remove_pinned=False,
                    ),
                    conversation_removed=True,
                    removed_by_age=1,
                    removed_by_count=2,
                    removed_by_inactivity=3,
                    seqs=[4, 5],
                    more_seqs=6,
                )
            ],
            conversations_checked=7,
            items_removed=8,
            conversations_removed=9,
        ),
        from_proto_apply_retention_response,
        RetentionReport(
            dry_run=True,
            conversations=(
                ConversationRetention(
                    namespace="team",
                    conversation_id="c",
                    policy=RetentionPolicy(60.0, 3, 0.0, False),
                    conversation_removed=True,
                    removed_by_age=1,
                    removed_by_count=2,
                    removed_by_inactivity=3,
                    seqs=(4, 5),
                    more_seqs=6,
                ),
            ),
            conversations_checked=7,
            items_removed=8,
            conversations_removed=9,
        ),
    ),
    (
        PB_TOKENS,
        from_proto_token_account,
        TokenAccount(
            budget=1,
            total=2,
            recent=3,
            history=4,
            query=5,
            recent_omitted=6,
            encoding="e",
            system=8,
        ),
    ),
    (
        PB_BUDGET,
        from_proto_category_budget,
        CategoryBudget("system_output", share=0.05, min_share=0.01, max_share=0.25),
    ),
    (
        pb.CategoryOptions(
            budgets=[PB_BUDGET],
            contributor_weights=[
                pb.ContributorWeight(type=pb.CONTRIBUTOR_TYPE_WORKING_FILES, weight=0.9)
            ],
            files=["a.py"],
        ),
        roundtrip.from_proto_category_options,
        CategoryOptions(
            budgets=(CategoryBudget("system_output", share=0.05, min_share=0.01, max_share=0.25),),
            contributor_weights={"working_files": 0.9},
            files=("a.py",),
        ),
    ),
    (PB_CATEGORY, from_proto_category_allocation, EXPECTED_CATEGORY),
    (PB_PIECE, from_proto_contributor_piece, EXPECTED_PIECE),
    (PB_ALLOCATION, from_proto_allocation_report, EXPECTED_ALLOCATION),
    (
        pb.EnhancedContext(
            recent=[roundtrip.to_proto_scored_item(make_scored())],
            history=[roundtrip.to_proto_scored_item(make_scored(neighbor_of=6))],
            text="# System",
            query="q",
            query_from_focus=True,
            tokens=PB_TOKENS,
            time_range=pb.TimeRange(since=ts(T0), until=ts(T1), phrase="last week"),
            unindexed_items=2,
            state=pb.CONVERSATION_STATE_CODING,
            allocation=PB_ALLOCATION,
        ),
        from_proto_enhanced_context,
        EnhancedContext(
            text="# System",
            recent=(make_scored(),),
            history=(make_scored(neighbor_of=6),),
            query="q",
            query_from_focus=True,
            tokens=TokenAccount(1, 2, 3, 4, 5, 6, "e", 8),
            time_range=TimeRange(T0, T1, "last week"),
            unindexed_items=2,
            state="coding",
            allocation=EXPECTED_ALLOCATION,
        ),
    ),
]


def _unset_fields(message: Any) -> set[str]:
    """Fields of a message that are not set (repeated and map fields count when non-empty)."""
    present = {field.name for field, _ in message.ListFields()}
    return {field.name for field in message.DESCRIPTOR.fields} - present


@pytest.mark.parametrize(
    ("message", "from_proto", "expected"),
    FROM_WIRE,
    ids=[f"{type(case[0]).__name__}-{i}" for i, case in enumerate(FROM_WIRE)],
)
def test_from_wire_with_every_field_set(
    message: Any, from_proto: Callable[[Any], Any], expected: Any
) -> None:
    # Guards the fixture: a field the proto gains must be added here (and to the converter).
    assert _unset_fields(message) == set()
    reparsed = type(message).FromString(message.SerializeToString())
    assert from_proto(reparsed) == expected


@pytest.mark.parametrize(
    ("payload", "message", "expected"),
    [
        ("usage", pb.Event(kind="usage", usage=PB_USAGE), {"usage": EXPECTED_USAGE}),
        (
            "eviction",
            pb.Event(kind="eviction", eviction=pb.Eviction(seqs=[1, 2])),
            {"eviction_seqs": (1, 2)},
        ),
        (
            "compaction",
            pb.Event(kind="compaction", compaction=PB_COMPACTION),
            {"compaction": EXPECTED_COMPACTION},
        ),
        ("edit", pb.Event(kind="duplicate_read", edit=PB_EDIT), {"edit": EXPECTED_EDIT}),
        (
            "checkpoint",
            pb.Event(
                kind="checkpoint_restored",
                checkpoint=pb.CheckpointEvent(checkpoint=PB_CHECKPOINT, reverted_items=5),
            ),
            {"checkpoint": EXPECTED_CHECKPOINT, "reverted_items": 5},
        ),
        ("missed", pb.Event(kind="gap", missed=12), {"missed": 12}),
    ],
)
def test_event_payload_variants(payload: str, message: Any, expected: dict[str, Any]) -> None:
    message.id = 77
    message.created_at.CopyFrom(ts(T1))
    assert message.WhichOneof("payload") == payload
    event = from_proto_event(message)
    # The payload's part is set; every other part is empty.
    assert event == Event(id=77, created_at=T1, kind=message.kind, **expected)
    assert roundtrip.to_proto_event(event) == message


def test_event_without_payload() -> None:
    event = from_proto_event(pb.Event(id=1, created_at=ts(T0), kind="future_kind"))
    assert event == Event(id=1, created_at=T0, kind="future_kind")  # type: ignore[arg-type]
    assert roundtrip.to_proto_event(event).WhichOneof("payload") is None


def test_unset_agent_loop_fields_read_back_as_none_or_default() -> None:
    assert from_proto_file_ref(pb.FileRef(path="a", kind="read")).whole_file is None
    item = from_proto_item(pb.Item())
    assert (item.kind, item.compaction) == ("message", None)  # an older server sends no kind
    assert from_proto_scored_item(pb.ScoredItem()).replaced is False
    assert from_proto_scored_item(pb.ScoredItem()).category is None
    entry = from_proto_active_entry(pb.ActiveEntry())
    assert (entry.timestamp, entry.file) == (None, None)
    assert from_proto_context_edit(pb.ContextEdit()).undone_at is None


def test_unset_agent_loop_settings_stay_unset() -> None:
    message = to_proto_conversation_settings(ConversationSettings(context_limit=1000))
    assert message.HasField("context_limit")
    for name in (
        "model",
        "reserved_reply_tokens",
        "compaction_threshold",
        "compaction_enabled",
        "mask_tool_outputs_after_turns",
        "replace_duplicate_reads",
    ):
        assert not message.HasField(name), name
    # Set zero values are sent as set.
    message = to_proto_conversation_settings(ZERO_SETTINGS)
    assert message.HasField("model") and message.HasField("compaction_enabled")
    assert message.HasField("mask_tool_outputs_after_turns")


def test_file_ref_whole_file_presence() -> None:
    assert not to_proto_file_ref(FileRef("a", "read")).HasField("whole_file")
    message = to_proto_file_ref(FileRef("a", "read", whole_file=False))
    assert message.HasField("whole_file") and message.whole_file is False


def test_active_entry_as_message() -> None:
    assert ENTRY.as_message() == {"role": "tool", "content": ENTRY.content}


# ---------------------------------------------------------------- agent loop: request builders


def test_compact_request_summary_presence() -> None:
    assert not requests.compact("ns", "c", None).HasField("summary")
    blank = requests.compact("ns", "c", "")
    assert blank.HasField("summary") and blank.summary == ""  # the server refuses it
    assert requests.compact("ns", "c", "sum").summary == "sum"


def test_get_usage_request_reported_presence() -> None:
    assert not requests.get_usage("ns", "c", None, 0).HasField("reported")
    request = requests.get_usage("ns", "c", 0, 0)
    assert request.HasField("reported")
    request = requests.get_usage("ns", "c", 1200, 800)
    assert (request.reported.input_tokens, request.reported.cache_read_input_tokens) == (1200, 800)
    with pytest.raises(ValueError, match="reported_input_tokens"):
        requests.get_usage("ns", "c", None, 800)


def test_agent_loop_request_builders() -> None:
    assert requests.get_active_context("ns", "c", 50, "t") == pb.GetActiveContextRequest(
        namespace="ns", conversation_id="c", page_size=50, page_token="t"
    )
    assert requests.truncate("ns", "c", "half") == pb.TruncateRequest(
        namespace="ns", conversation_id="c", strategy="half"
    )
    assert requests.create_checkpoint("ns", "c", "cp") == pb.CreateCheckpointRequest(
        namespace="ns", conversation_id="c", name="cp"
    )
    assert requests.list_checkpoints("ns", "c") == pb.ListCheckpointsRequest(
        namespace="ns", conversation_id="c"
    )
    assert requests.restore_checkpoint("ns", "c", "cp") == pb.RestoreCheckpointRequest(
        namespace="ns", conversation_id="c", name="cp"
    )
    assert requests.list_context_edits("ns", "c", 10, "x") == pb.ListContextEditsRequest(
        namespace="ns", conversation_id="c", page_size=10, page_token="x"
    )
    assert requests.watch("ns", "c", 9) == pb.WatchRequest(
        namespace="ns", conversation_id="c", after_event_id=9
    )
    assert requests.apply_retention("ns", "", False, True) == pb.ApplyRetentionRequest(
        namespace="ns", dry_run=True
    )


def test_apply_retention_sends_its_scope() -> None:
    report = pb.ApplyRetentionResponse(conversations_checked=2)
    client, stub = fake_client({"ApplyRetention": [report] * 4})
    with client:
        assert client.apply_retention().conversations_checked == 2
        client.apply_retention("c", dry_run=True)
        client.apply_retention(every_namespace=True)
        client.apply_retention(namespace="other", every_namespace=True)  # the server refuses
    sent = [request for _, request, _ in stub.calls]
    assert sent == [
        pb.ApplyRetentionRequest(namespace="team"),
        pb.ApplyRetentionRequest(namespace="team", conversation_id="c", dry_run=True),
        pb.ApplyRetentionRequest(all_namespaces=True),
        pb.ApplyRetentionRequest(namespace="other", all_namespaces=True),
    ]


# ---------------------------------------------------------------- agent loop: client methods


class FakeStub:
    """Stands in for the generated stub: records each call and answers from a queue per RPC."""

    def __init__(self, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def __getattr__(self, rpc: str) -> Callable[..., Any]:
        def call(request: Any, **kwargs: Any) -> Any:
            self.calls.append((rpc, request, kwargs))
            return self.answers[rpc].pop(0)

        return call


def fake_client(answers: dict[str, list[Any]], **options: Any) -> tuple[Client, FakeStub]:
    client = Client("127.0.0.1:1", namespace="team", metadata=[("k", "v")], **options)
    stub = FakeStub(answers)
    client._stub = stub  # type: ignore[assignment]
    return client, stub


def test_client_agent_loop_methods_send_and_convert() -> None:
    answers: dict[str, list[Any]] = {
        "GetUsage": [PB_USAGE, PB_USAGE],
        "Compact": [pb.CompactResponse(compaction=PB_COMPACTION, usage=PB_USAGE)] * 2,
        "Truncate": [pb.TruncateResponse(truncated_seqs=[4], usage=PB_USAGE)],
        "CreateCheckpoint": [PB_CHECKPOINT],
        "ListCheckpoints": [pb.ListCheckpointsResponse(checkpoints=[PB_CHECKPOINT])],
        "RestoreCheckpoint": [pb.RestoreCheckpointResponse(checkpoint=PB_CHECKPOINT)],
    }
    client, stub = fake_client(answers, timeout=7)
    with client:
        assert client.get_usage("c") == EXPECTED_USAGE
        client.get_usage("c", reported_input_tokens=10, reported_cache_read_input_tokens=5)
        assert client.compact("c").compaction == EXPECTED_COMPACTION
        client.compact("c", "written by the LLM", namespace="other")
        assert client.truncate("c", "quarter").truncated_seqs == (4,)
        assert client.create_checkpoint("c", "cp") == EXPECTED_CHECKPOINT
        assert client.list_checkpoints("c") == [EXPECTED_CHECKPOINT]
        assert client.restore_checkpoint("c", "cp").checkpoint == EXPECTED_CHECKPOINT
    sent = {(rpc, i): request for i, (rpc, request, _) in enumerate(stub.calls)}
    assert not sent["GetUsage", 0].HasField("reported")
    assert sent["GetUsage", 1].reported == pb.ReportedUsage(
        input_tokens=10, cache_read_input_tokens=5
    )
    assert not sent["Compact", 2].HasField("summary")
    assert (sent["Compact", 3].namespace, sent["Compact", 3].summary) == (
        "other",
        "written by the LLM",
    )
    assert sent["Truncate", 4].strategy == "quarter"
    assert sent["RestoreCheckpoint", 7].name == "cp"
    for rpc, request, kwargs in stub.calls:
        assert kwargs == {"timeout": 7, "metadata": (("k", "v"),)}, rpc
        assert request.conversation_id == "c"
        assert request.namespace in ("team", "other")


def test_client_pages_active_context_and_edits() -> None:
    answers: dict[str, list[Any]] = {
        "GetActiveContext": [
            pb.ActiveContext(entries=[PB_ENTRY], next_page_token="p2", usage=PB_USAGE),
            pb.ActiveContext(entries=[PB_ENTRY, PB_ENTRY], usage=PB_USAGE),
        ],
        "ListContextEdits": [
            pb.ListContextEditsResponse(edits=[PB_EDIT], next_page_token="e2"),
            pb.ListContextEditsResponse(edits=[PB_EDIT]),
            pb.ListContextEditsResponse(edits=[PB_EDIT], next_page_token="n"),
        ],
    }
    client, stub = fake_client(answers)
    with client:
        assert list(client.iter_active_context("c", page_size=2)) == [EXPECTED_ENTRY] * 3
        assert list(client.iter_context_edits("c")) == [EXPECTED_EDIT] * 2
        page = client.list_context_edits("c", page_size=5, page_token="t")
        assert page == Page(entries=(EXPECTED_EDIT,), next_page_token="n")
    tokens = [(rpc, request.page_size, request.page_token) for rpc, request, _ in stub.calls]
    assert tokens == [
        ("GetActiveContext", 2, ""),
        ("GetActiveContext", 2, "p2"),
        ("ListContextEdits", 500, ""),
        ("ListContextEdits", 500, "e2"),
        ("ListContextEdits", 5, "t"),
    ]


def test_client_get_context_sends_categories_and_reads_the_allocation() -> None:
    answer = pb.EnhancedContext(tokens=PB_TOKENS, allocation=PB_ALLOCATION)
    client, stub = fake_client({"GetContext": [answer, pb.EnhancedContext()] * 2})
    with client:
        context = client.get_context("c", "q", max_tokens=500, categories=True)
        assert (context.allocation, context.tokens.system) == (EXPECTED_ALLOCATION, 8)
        assert client.get_context("c", max_tokens=500).allocation is None
        options = CategoryOptions(files=("a.py",))
        client.get_context("c", max_tokens=500, categories=options)
        client.get_context("c", max_tokens=500, categories=False)
    sent = [request.options for _, request, _ in stub.calls]
    assert [o.HasField("categories") for o in sent] == [True, False, True, False]
    assert list(sent[2].categories.files) == ["a.py"]


@pytest.mark.parametrize(("options", "message"), BAD_CATEGORY_OPTIONS)
def test_bad_category_options_raise_before_the_call(options: CategoryOptions, message: str) -> None:
    client, stub = fake_client({})
    with client, pytest.raises(ValueError, match=message):
        client.get_context("c", max_tokens=500, categories=options)
    assert stub.calls == []

    async def call() -> None:
        # Nothing listens on port 1; the ValueError comes first.
        async with AsyncClient("127.0.0.1:1", timeout=10) as async_client:
            await async_client.get_context("c", max_tokens=500, categories=options)

    with pytest.raises(ValueError, match=message):
        asyncio.run(call())


def test_get_usage_refuses_cache_tokens_without_input_before_the_call() -> None:
    client, stub = fake_client({})
    with client, pytest.raises(ValueError):
        client.get_usage("c", reported_cache_read_input_tokens=3)
    assert stub.calls == []


def test_watch_has_no_deadline_unless_given() -> None:
    client, stub = fake_client({"Watch": [iter([]), iter([])]}, timeout=7)
    with client:
        assert isinstance(client.watch("c", after_event_id=4), EventStream)
        client.watch("c", timeout=60)
    (_, request, kwargs), (_, _, with_timeout) = stub.calls
    assert request == pb.WatchRequest(namespace="team", conversation_id="c", after_event_id=4)
    assert kwargs == {"timeout": None, "metadata": (("k", "v"),)}
    assert with_timeout["timeout"] == 60


# ---------------------------------------------------------------- agent loop: watch streams


def pb_event(number: int) -> Any:
    return pb.Event(id=number, created_at=ts(T0), kind="gap", missed=number)


class FakeSyncCall:
    """A sync response stream: yields its items; an exception item is raised."""

    def __init__(self, *items: Any) -> None:
        self.items = list(items)
        self.cancelled = 0

    def __iter__(self) -> FakeSyncCall:
        return self

    def __next__(self) -> Any:
        if not self.items:
            raise StopIteration
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> bool:
        self.cancelled += 1
        return True


class FakeAsyncCall:
    """A grpc.aio response stream: read() returns items, then EOF; exception items are raised."""

    def __init__(self, *items: Any) -> None:
        self.items = list(items)
        self.cancelled = 0

    async def read(self) -> Any:
        if not self.items:
            return grpc.aio.EOF  # type: ignore[attr-defined]
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> bool:
        self.cancelled += 1
        return True


def test_event_stream_converts_and_tracks_the_last_id() -> None:
    stream = EventStream(FakeSyncCall(pb_event(4), pb_event(5)), after_event_id=3)
    assert stream.last_event_id == 3
    assert [event.missed for event in stream] == [4, 5]
    assert stream.last_event_id == 5


def test_event_stream_cancel_ends_iteration_quietly() -> None:
    call = FakeSyncCall(pb_event(1), pb_event(2))
    with EventStream(call, 0) as stream:
        assert next(stream).id == 1
        stream.cancel()
        assert list(stream) == []
    assert call.cancelled == 2  # cancel() and the with block; a second cancel is harmless


class BlockingSyncCall(FakeSyncCall):
    """A read blocks until cancel(), then fails with CANCELLED, as grpc's does."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = threading.Event()
        self.released = threading.Event()

    def __next__(self) -> Any:
        self.reading.set()
        self.released.wait()
        raise FakeRpcError(grpc.StatusCode.CANCELLED, "Locally cancelled by application!")

    def cancel(self) -> bool:
        self.released.set()
        return super().cancel()


def test_event_stream_cancel_from_another_thread_ends_a_blocked_read() -> None:
    call = BlockingSyncCall()
    stream = EventStream(call, 0)
    received: list[Any] = []
    consumer = threading.Thread(target=lambda: received.extend(stream))
    consumer.start()
    assert call.reading.wait(10)
    stream.cancel()
    consumer.join(10)
    assert not consumer.is_alive() and received == []


def test_event_stream_maps_other_errors() -> None:
    stream = EventStream(FakeSyncCall(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no such")), 0)
    with pytest.raises(NotFoundError) as caught:
        next(stream)
    assert isinstance(caught.value.__cause__, grpc.RpcError)
    # A CANCELLED status this stream did not ask for is an error (e.g. the channel closed).
    stream = EventStream(FakeSyncCall(FakeRpcError(grpc.StatusCode.CANCELLED, "")), 0)
    with pytest.raises(RequestCancelledError):
        next(stream)


def test_context_manager_cancels_on_error() -> None:
    call = FakeSyncCall(pb_event(1))
    with pytest.raises(RuntimeError), EventStream(call, 0):
        raise RuntimeError("agent crashed")
    assert call.cancelled == 1


class BlockingAsyncCall(FakeAsyncCall):
    """A read waits until cancel(), then raises CancelledError, as grpc.aio's does."""

    def __init__(self) -> None:
        super().__init__()
        self.released = asyncio.Event()

    async def read(self) -> Any:
        await self.released.wait()
        raise asyncio.CancelledError()

    def cancel(self) -> bool:
        self.released.set()
        return super().cancel()


def test_async_event_stream() -> None:
    async def scenario() -> None:
        stream = AsyncEventStream(FakeAsyncCall(pb_event(1), pb_event(2)), after_event_id=0)
        assert [event.id async for event in stream] == [1, 2]
        assert stream.last_event_id == 2

        call = FakeAsyncCall(pb_event(1), pb_event(2))
        async with AsyncEventStream(call, 0) as stream:
            assert (await anext(stream)).id == 1
            stream.cancel()
            assert [event async for event in stream] == []
        assert call.cancelled == 2

        # cancel() while a read waits: the read's CancelledError ends the stream quietly.
        blocked = AsyncEventStream(BlockingAsyncCall(), 0)
        consumer = asyncio.create_task(_collect(blocked))
        await asyncio.sleep(0)  # let the consumer reach its read
        blocked.cancel()
        assert await consumer == []

        failing = AsyncEventStream(
            FakeAsyncCall(FakeRpcError(grpc.StatusCode.UNAVAILABLE, "gone")), 0
        )
        with pytest.raises(UnavailableError):
            await anext(failing)

        # Cancelling the task that waits is not the stream's cancel: it propagates.
        waiting = AsyncEventStream(BlockingAsyncCall(), 0)
        consumer = asyncio.create_task(_collect(waiting))
        await asyncio.sleep(0)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer

    asyncio.run(scenario())


async def _collect(stream: AsyncEventStream) -> list[Event]:
    return [event async for event in stream]


# ---------------------------------------------------------------- watch over real gRPC


class WatchServicer(pb_grpc.ContextServiceServicer):
    """Answers Watch with two events, then holds the stream open until the client ends it."""

    def Watch(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        if request.conversation_id == "missing":
            context.abort(grpc.StatusCode.NOT_FOUND, "no such conversation")
        yield pb_event(request.after_event_id + 1)
        yield pb_event(request.after_event_id + 2)
        ended = threading.Event()
        context.add_callback(ended.set)
        ended.wait()


@pytest.fixture
def watch_target() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    # The typed stubs mark every method abstract; the servicer base class answers the
    # methods it does not override with UNIMPLEMENTED.
    pb_grpc.add_ContextServiceServicer_to_server(WatchServicer(), server)  # type: ignore[abstract]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


def test_watch_over_grpc_cancel_and_errors(watch_target: str) -> None:
    with Client(watch_target) as client:
        received: list[int] = []
        with client.watch("c", after_event_id=10) as events:
            for event in events:
                received.append(event.id)
                if len(received) == 2:
                    events.cancel()
        assert received == [11, 12] and events.last_event_id == 12
        with pytest.raises(NotFoundError):
            list(client.watch("missing"))
        with pytest.raises(DeadlineExceededError):
            list(client.watch("c", timeout=0.2))


def test_async_watch_over_grpc_cancel_and_errors(watch_target: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(watch_target) as client:
            received: list[int] = []
            async with client.watch("c") as events:
                async for event in events:
                    received.append(event.id)
                    if len(received) == 2:
                        events.cancel()
            assert received == [1, 2]
            with pytest.raises(NotFoundError):
                await anext(client.watch("missing"))

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [
        (0, 0),
        (-1, 999_999_999),
        (1_700_000_000, 123_456_789),
        (-62_135_596_800, 0),
        (253_402_300_799, 999_999_999),
    ],
)
def test_timestamps_read_as_protobuf_reads_them(seconds: int, nanos: int) -> None:
    message = Timestamp(seconds=seconds, nanos=nanos)
    assert from_proto_timestamp(message) == message.ToDatetime(tzinfo=UTC)
