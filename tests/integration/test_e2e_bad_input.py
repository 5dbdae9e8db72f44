"""Requests a buggy client or an attacker would send get the status docs/api.md documents for
them, never INTERNAL, and a refused call changes nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.conversations.validation import Limits
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc

INT64_MAX = 2**63 - 1


@pytest.fixture
def stub(service: Service) -> Iterator[pb_grpc.ContextServiceStub]:
    with grpc.insecure_channel(
        f"127.0.0.1:{service.port}",
        options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
    ) as channel:
        yield pb_grpc.ContextServiceStub(channel)


def _outcome(call: Callable[[Any], object], request: object) -> tuple[grpc.StatusCode, str]:
    """The call's status and message (OK and "" when it succeeds)."""
    try:
        call(request)
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


def _status(call: Callable[[Any], object], request: object) -> grpc.StatusCode:
    return _outcome(call, request)[0]


def _append(stub: pb_grpc.ContextServiceStub, conv: str, text: str) -> pb.AppendResponse:
    return stub.Append(
        pb.AppendRequest(conversation_id=conv, item=pb.NewItem(role="user", content=text))
    )


@pytest.mark.parametrize("token", ["²", "¹²³", "٣", "9" * 5000, "18446744073709551616", "-1"])
def test_page_tokens_that_are_no_seq_are_invalid_argument(
    stub: pb_grpc.ContextServiceStub, token: str
) -> None:
    _append(stub, "c", "hello there")
    calls: list[tuple[Callable[[Any], object], object]] = [
        (stub.ListItems, pb.ListItemsRequest(conversation_id="c", page_token=token)),
        (stub.GetActiveContext, pb.GetActiveContextRequest(conversation_id="c", page_token=token)),
        (stub.ListContextEdits, pb.ListContextEditsRequest(conversation_id="c", page_token=token)),
    ]
    for call, request in calls:
        code, details = _outcome(call, request)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert "page_token" in details
        assert len(details) < 200  # a 5,000-digit token is not echoed whole


def test_a_page_token_at_the_int64_bound_is_a_page_past_the_end(
    stub: pb_grpc.ContextServiceStub,
) -> None:
    _append(stub, "c", "hello there")
    page = stub.ListItems(pb.ListItemsRequest(conversation_id="c", page_token=str(INT64_MAX)))
    assert list(page.items) == [] and page.next_page_token == ""


def _usage(stub: pb_grpc.ContextServiceStub, input_tokens: int, cache_read: int = 0) -> pb.Usage:
    reported = pb.ReportedUsage(input_tokens=input_tokens, cache_read_input_tokens=cache_read)
    return stub.GetUsage(pb.GetUsageRequest(conversation_id="c", reported=reported))


@pytest.mark.parametrize(
    ("input_tokens", "cache_read"),
    [(INT64_MAX, 0), (INT64_MAX // 2 + 1, INT64_MAX // 2 + 1), (-1, 0), (0, -5)],
)
def test_a_usage_report_out_of_range_is_refused_and_changes_nothing(
    stub: pb_grpc.ContextServiceStub, service: Service, input_tokens: int, cache_read: int
) -> None:
    _append(stub, "c", "hello there")
    before = _usage(stub, 1234)
    reported = pb.ReportedUsage(input_tokens=input_tokens, cache_read_input_tokens=cache_read)
    code, details = _outcome(
        stub.GetUsage, pb.GetUsageRequest(conversation_id="c", reported=reported)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "reported." in details
    _append(stub, "c", "one more turn")
    after = stub.GetUsage(pb.GetUsageRequest(conversation_id="c"))
    # The earlier report still counts, grown by the new turn: the refused one left no trace.
    assert after.reported_tokens == before.reported_tokens + (
        after.active_tokens - before.active_tokens
    )
    assert list(stub.GetActiveContext(pb.GetActiveContextRequest(conversation_id="c")).entries)


def test_a_report_at_the_bound_works_and_survives_a_restart(start_service: StartService) -> None:
    service = start_service()
    data_dir = service.settings.data_dir
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = pb_grpc.ContextServiceStub(channel)
        _append(stub, "c", "hello there")
        assert _usage(stub, 10**9, 10**9).reported_tokens >= 2 * 10**9
        _append(stub, "c", "one more turn")
    service.stop(grace=0)
    service = start_service(data_dir=data_dir)
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = pb_grpc.ContextServiceStub(channel)
        assert stub.GetUsage(pb.GetUsageRequest(conversation_id="c")).reported_tokens > 2 * 10**9
        assert list(stub.GetActiveContext(pb.GetActiveContextRequest(conversation_id="c")).entries)


def test_texts_of_a_million_characters_and_more_are_counted(
    stub: pb_grpc.ContextServiceStub,
) -> None:
    text = " ".join(["word"] * 300_000)  # 1.5 M characters, 300k tokens, 1.5 MB
    # As an item: counted, then refused for its tokens, naming the setting.
    item = pb.NewItem(role="user", content=text)
    code, details = _outcome(stub.Append, pb.AppendRequest(conversation_id="c", item=item))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "300000 tokens" in details and "limits.max_item_tokens" in details
    _append(stub, "c", "a short turn about sourdough")
    # As a query: counted, and refused when the budget cannot hold it, or answered.
    small = pb.GetContextRequest(conversation_id="c", query=text, max_tokens=500)
    assert _status(stub.GetContext, small) == grpc.StatusCode.INVALID_ARGUMENT
    big = pb.GetContextRequest(conversation_id="c", query=text, max_tokens=400_000)
    assert "sourdough" in stub.GetContext(big).text
    # As a compaction summary: counted, then refused for its size.
    code, details = _outcome(stub.Compact, pb.CompactRequest(conversation_id="c", summary=text))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details


def test_raising_the_item_token_limit_lets_a_large_item_in(start_service: StartService) -> None:
    service = start_service(limits=Limits(max_item_tokens=400_000))
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = pb_grpc.ContextServiceStub(channel)
        response = _append(stub, "c", " ".join(["word"] * 250_000))
        assert response.result.token_count == 250_000


def test_search_filters_are_bounded_and_checked(stub: pb_grpc.ContextServiceStub) -> None:
    _append(stub, "c", "hello there")

    def search(
        search_filter: pb.SearchFilter | None = None, threshold: float | None = None
    ) -> grpc.StatusCode:
        request = pb.SearchRequest(
            conversation_id="c", query="hi", filter=search_filter, similarity_threshold=threshold
        )
        return _status(stub.Search, request)

    huge = pb.SearchFilter(metadata={f"k{i}": "v" for i in range(10_000)})
    assert search(huge) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert search(pb.SearchFilter(roles=["admin"])) == grpc.StatusCode.INVALID_ARGUMENT
    assert search(threshold=float("nan")) == grpc.StatusCode.INVALID_ARGUMENT
    assert search(threshold=2.0) == grpc.StatusCode.INVALID_ARGUMENT
    assert search(pb.SearchFilter(roles=["user"], metadata={"k": "v"})) == grpc.StatusCode.OK


def _raw(service: Service, method: str, payload: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = channel.unary_unary(
            f"/contextwm.v1.ContextService/{method}",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.RpcError) as err:
            call(payload, timeout=10)
        return err.value


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2), lengths under 128 bytes."""
    return bytes([number << 3 | 2, len(payload)]) + payload


@pytest.mark.parametrize(
    ("method", "payload"),
    [
        ("GetConversation", _field(2, b"\xff\xfe bad utf-8")),
        ("Append", _field(3, _field(2, b"caf\xc3"))),  # nested: item.content
        ("Search", b"\x0a\x50short"),  # a length past the end
        ("ListConversations", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
        ("Watch", _field(2, b"\x80")),  # a server-streaming call
    ],
)
def test_unparsable_payloads_are_invalid_argument_logged_in_one_line(
    service: Service, caplog: pytest.LogCaptureFixture, method: str, payload: bytes
) -> None:
    with caplog.at_level(logging.WARNING):
        error = _raw(service, method, payload)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not parse" in (error.details() or "")
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) <= 1 and all(r.exc_info is None for r in records)
    assert all("\n" not in r.getMessage() for r in records)


def test_a_flood_of_garbage_writes_few_log_lines(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        for _ in range(50):
            assert _raw(service, "Search", b"\x0a\x50").code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) <= 2


def test_unknown_fields_are_ignored(stub: pb_grpc.ContextServiceStub, service: Service) -> None:
    _append(stub, "c", "hello there")
    request = pb.GetConversationRequest(conversation_id="c").SerializeToString()
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        call = channel.unary_unary(
            "/contextwm.v1.ContextService/GetConversation",
            request_serializer=lambda b: b,
            response_deserializer=pb.Conversation.FromString,
        )
        info = call(request + _field(15, b"from a newer client"), timeout=10)
    assert info.conversation_id == "c"


@pytest.mark.parametrize("namespace", ["x" * 20_000, "🙂" * 5_000])
def test_an_error_quoting_a_huge_value_still_reaches_the_client(
    stub: pb_grpc.ContextServiceStub, namespace: str
) -> None:
    request = pb.GetConversationRequest(namespace=namespace, conversation_id="c")
    code, details = _outcome(stub.GetConversation, request)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("invalid namespace") and "message cut from" in details


@pytest.mark.parametrize("conversation_id", [" ", "\u3000", " billing", "billing "])
def test_a_new_conversation_id_with_whitespace_at_an_end_is_refused_and_nothing_is_created(
    stub: pb_grpc.ContextServiceStub, conversation_id: str
) -> None:
    item = pb.NewItem(role="user", content="hello")
    calls: list[tuple[Callable[[Any], object], object]] = [
        (stub.CreateConversation, pb.CreateConversationRequest(conversation_id=conversation_id)),
        (stub.Append, pb.AppendRequest(conversation_id=conversation_id, item=item)),
        (
            stub.AppendBatch,
            pb.AppendBatchRequest(conversation_id=conversation_id, items=[item]),
        ),
    ]
    for call, request in calls:
        code, details = _outcome(call, request)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert "whitespace" in details and repr(conversation_id) in details
    listed = stub.ListConversations(pb.ListConversationsRequest())
    assert [c.conversation_id for c in listed.conversations] == []
