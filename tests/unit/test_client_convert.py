"""Round trips of the client's converters, request builders and the status-to-exception table."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from contextwm_client import (
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    AsyncClient,
    Client,
    ContextWMError,
    Conversation,
    ConversationSettings,
    EnhancedContext,
    FileRef,
    InvalidArgumentError,
    Item,
    NewItem,
    NotFoundError,
    Page,
    RequestCancelledError,
    ScoredItem,
    ScoreParts,
    ScoringWeights,
    SearchResult,
    TimeRange,
    TokenAccount,
    UnavailableError,
    UnexpectedStatusError,
    WindowStats,
    map_rpc_error,
)
from contextwm_client import _convert as convert
from contextwm_client import _requests as requests
from contextwm_client._exceptions import STATUS_EXCEPTIONS
from contextwm_client._generated.contextwm.v1 import contextwm_pb2 as pb
from hypothesis import given
from hypothesis import strategies as st

T0 = datetime(2024, 5, 17, 9, 30, 15, 123456, tzinfo=UTC)
T1 = T0 + timedelta(days=3)

FULL_SETTINGS = ConversationSettings(
    window_max_tokens=8000,
    window_max_items=100,
    encoding="o200k_base",
    recency_half_life_seconds=86400.0,
    recency_half_life_items=50.0,
    focus_items=3,
    similarity_threshold=0.3,
    adaptive_window=True,
    detect_importance=True,
    weights=ScoringWeights(
        recency=0.3, similarity=0.4, importance={"pinned": 0.8}, role={"user": 0.3}
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


TOKENS = TokenAccount(
    budget=1000, total=950, recent=500, history=400, query=50, recent_omitted=1, encoding="x"
)

# (value, to_proto, from_proto): every converter pair, with optional fields set and unset.
ROUND_TRIPS: list[tuple[Any, Callable[[Any], Any], Callable[[Any], Any]]] = [
    (FileRef("a.py", "read"), convert.to_proto_file_ref, convert.from_proto_file_ref),
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
        convert.to_proto_new_item,
        convert.from_proto_new_item,
    ),
    (NewItem(content="bare"), convert.to_proto_new_item, convert.from_proto_new_item),
    (make_item(), convert.to_proto_item, convert.from_proto_item),
    (
        make_item(file=None, flags=(), metadata={}, state="window"),
        convert.to_proto_item,
        convert.from_proto_item,
    ),
    (make_scored(), convert.to_proto_scored_item, convert.from_proto_scored_item),
    (make_scored(neighbor_of=6), convert.to_proto_scored_item, convert.from_proto_scored_item),
    (WINDOW, convert.to_proto_window_stats, convert.from_proto_window_stats),
    (ScoringWeights(), convert.to_proto_scoring_weights, convert.from_proto_scoring_weights),
    (
        FULL_SETTINGS,
        convert.to_proto_conversation_settings,
        convert.from_proto_conversation_settings,
    ),
    (
        ZERO_SETTINGS,
        convert.to_proto_conversation_settings,
        convert.from_proto_conversation_settings,
    ),
    (
        ConversationSettings(),
        convert.to_proto_conversation_settings,
        convert.from_proto_conversation_settings,
    ),
    (make_conversation(), convert.to_proto_conversation, convert.from_proto_conversation),
    (
        make_conversation(last_item_at=None, state="general", settings=ConversationSettings()),
        convert.to_proto_conversation,
        convert.from_proto_conversation,
    ),
    (
        Page(
            items=(make_conversation(), make_conversation(conversation_id="conv-2")),
            next_page_token="t",
        ),
        convert.to_proto_list_conversations_response,
        convert.from_proto_list_conversations_response,
    ),
    (
        Page(items=(), next_page_token=""),
        convert.to_proto_list_conversations_response,
        convert.from_proto_list_conversations_response,
    ),
    (
        Page(items=(make_item(), make_item(seq=8)), next_page_token="next"),
        convert.to_proto_list_items_response,
        convert.from_proto_list_items_response,
    ),
    (
        AppendedItem(seq=3, token_count=5, flags=("question",), duplicate=True),
        convert.to_proto_append_result,
        convert.from_proto_append_result,
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
        convert.to_proto_append_response,
        convert.from_proto_append_response,
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
        convert.to_proto_append_batch_response,
        convert.from_proto_append_batch_response,
    ),
    (TOKENS, convert.to_proto_token_account, convert.from_proto_token_account),
    (TimeRange(T0, T1, "last week"), convert.to_proto_time_range, convert.from_proto_time_range),
    (TimeRange(None, T1, "before May"), convert.to_proto_time_range, convert.from_proto_time_range),
    (TimeRange(T0, None, "since May"), convert.to_proto_time_range, convert.from_proto_time_range),
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
        convert.to_proto_enhanced_context,
        convert.from_proto_enhanced_context,
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
        convert.to_proto_enhanced_context,
        convert.from_proto_enhanced_context,
    ),
    (
        SearchResult(hits=(make_scored(),), time_range=TimeRange(T0, T1, "in May")),
        convert.to_proto_search_response,
        convert.from_proto_search_response,
    ),
    (
        SearchResult(hits=(), time_range=None),
        convert.to_proto_search_response,
        convert.from_proto_search_response,
    ),
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
    assert convert.from_proto_conversation_settings(pb.ConversationSettings()) == (
        ConversationSettings()
    )
    message = convert.to_proto_conversation_settings(ConversationSettings(focus_items=5))
    assert message.HasField("focus_items")
    assert not message.HasField("window_max_tokens")
    assert not message.HasField("weights")


def test_unset_message_fields_read_back_as_none() -> None:
    item = convert.from_proto_new_item(pb.NewItem(content="x"))
    assert (item.timestamp, item.file, item.idempotency_key) == (None, None, None)
    conversation = convert.from_proto_conversation(pb.Conversation())
    assert conversation.last_item_at is None
    assert convert.from_proto_enhanced_context(pb.EnhancedContext()).time_range is None
    assert convert.from_proto_search_response(pb.SearchResponse()).time_range is None
    assert convert.from_proto_scored_item(pb.ScoredItem()).neighbor_of is None


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
    context = convert.from_proto_enhanced_context(
        pb.EnhancedContext(tokens=pb.TokenAccount(total=321))
    )
    assert context.total_tokens == 321


# ---------------------------------------------------------------- timestamps


def test_naive_datetime_is_taken_as_utc() -> None:
    naive = datetime(2024, 1, 2, 3, 4, 5, 678901)
    back = convert.from_proto_timestamp(convert.to_proto_timestamp(naive))
    assert back == naive.replace(tzinfo=UTC)
    assert back.tzinfo is UTC


def test_aware_datetime_comes_back_as_the_same_instant_in_utc() -> None:
    local = datetime(2024, 1, 2, 12, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    back = convert.from_proto_timestamp(convert.to_proto_timestamp(local))
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
    assert convert.from_proto_item(convert.to_proto_item(item)) == item


# ---------------------------------------------------------------- enums


@pytest.mark.parametrize(
    ("enum", "prefix", "to_proto", "from_proto"),
    [
        (
            pb.ItemState,
            "ITEM_STATE_",
            convert.to_proto_item_state,
            convert.from_proto_item_state,
        ),
        (
            pb.ConversationState,
            "CONVERSATION_STATE_",
            convert.to_proto_conversation_state,
            convert.from_proto_conversation_state,
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
            assert convert.to_proto_retrieval_mode(name) == number
    assert convert.to_proto_retrieval_mode(None) == pb.RETRIEVAL_MODE_UNSPECIFIED
    with pytest.raises(ValueError, match="retrieval mode"):
        convert.to_proto_retrieval_mode("semantic")


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
    )
    options = request.options
    assert request.query == ""
    assert not options.HasField("recent_share")
    assert options.HasField("similarity_threshold") and options.similarity_threshold == 0.0
    assert options.HasField("include_neighbors") and options.include_neighbors is False
    assert not options.HasField("time_hints")
    assert options.mode == pb.RETRIEVAL_MODE_UNSPECIFIED


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
    assert convert.from_proto_timestamp(request.filter.since) == T0
    assert not request.filter.HasField("until")
    assert not request.HasField("similarity_threshold")
    assert request.mode == pb.RETRIEVAL_MODE_LEXICAL


def test_list_items_request_states() -> None:
    request = requests.list_items("ns", "conv", 10, "", ["window", "archived"])
    assert list(request.states) == [pb.ITEM_STATE_WINDOW, pb.ITEM_STATE_ARCHIVED]
    with pytest.raises(ValueError):
        requests.list_items("ns", "conv", 10, "", ["deleted"])


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
