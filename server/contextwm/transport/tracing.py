"""OpenTelemetry spans of ContextService calls: one server span per call, continuing the
caller's W3C trace context (`traceparent` in its metadata), named and attributed by the GenAI
memory conventions where the call is a memory operation and by the RPC conventions otherwise.
Installed only when tracing is on (`contextwm.observability.tracing` builds the tracer)."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from contextwm.transport.interceptors import SERVICE_PREFIX, as_answered

log = logging.getLogger(__name__)

# The GenAI memory conventions (open-telemetry/semantic-conventions-genai, in development):
# the operations and their attributes.
CREATE_MEMORY_STORE = "create_memory_store"
DELETE_MEMORY_STORE = "delete_memory_store"
CREATE_MEMORY = "create_memory"
UPDATE_MEMORY = "update_memory"
DELETE_MEMORY = "delete_memory"
SEARCH_MEMORY = "search_memory"
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
STORE_ID = "gen_ai.memory.store.id"
RECORD_ID = "gen_ai.memory.record.id"
RECORD_COUNT = "gen_ai.memory.record.count"
QUERY_TEXT = "gen_ai.memory.query.text"  # opt-in: trace_content
RECORDS = "gen_ai.memory.records"  # opt-in: trace_content
ERROR_TYPE = "error.type"
# The RPC conventions, on every span.
RPC_SYSTEM = "rpc.system.name"
RPC_METHOD = "rpc.method"
RPC_STATUS = "rpc.response.status_code"
# Ours: where the call went, on every span whose request names it.
NAMESPACE = "contextwm.namespace"
CONVERSATION = "contextwm.conversation.id"

PROVIDER_NAME = "contextwm"
DEFAULT_NAMESPACE = "default"
# A gRPC server span is an error only for these statuses; the others are the caller's
# mistakes (NOT_FOUND, INVALID_ARGUMENT, ...), which still set error.type.
SERVER_ERRORS = frozenset(
    {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"}
)
TRACE_HEADERS = ("traceparent", "tracestate")
_PROPAGATOR = TraceContextTextMapPropagator()

Record = dict[str, Any]  # one entry of gen_ai.memory.records
Read = Callable[[Any, Any], Any]  # a figure from a call's request and one of its responses


@dataclass(frozen=True, slots=True)
class Operation:
    """What a call is as a memory operation, and where its request and response hold the
    attributes (each function takes the request, None for a request stream, and a response)."""

    name: str
    record: Read | None = None  # the seq of the one record it acts on
    count: Read | None = None  # records read or written; summed over a stream's responses
    query: Read | None = None  # the query text
    records: Callable[[Any, Any], list[Record]] | None = None


def _item(item: Any) -> Record:
    meta = {"conversation_id": item.conversation_id, "role": item.role}
    return {"id": str(item.seq), "content": item.content, "metadata": meta}


def _scored(scored: Any) -> Record:
    return {**_item(scored.item), "score": scored.score}


def _new(item: Any, seq: int) -> Record:
    return {"id": str(seq), "content": item.content, "metadata": {"role": item.role}}


def _batch(request: Any, response: Any) -> list[Record]:
    return [_new(i, r.seq) for i, r in zip(request.items, response.results, strict=False)]


def _context(request: Any, response: Any) -> list[Record]:
    return [_scored(s) for s in (*response.recent, *response.history)]


def _active(request: Any, response: Any) -> list[Record]:
    return [
        {"id": str(e.seq), "content": e.content, "metadata": {"role": e.role}}
        for e in response.entries
    ]


_PIN = Operation(UPDATE_MEMORY, record=lambda q, r: q.seq, count=lambda q, r: 1)

# The calls that are memory operations: a conversation is a memory store, an item a record
# (its id the seq). Other calls (settings, statistics, exports, keys, workspace files, ...)
# get a plain RPC span.
OPERATIONS: Mapping[str, Operation] = {
    "CreateConversation": Operation(CREATE_MEMORY_STORE),
    "DeleteConversation": Operation(DELETE_MEMORY_STORE, count=lambda q, r: r.deleted_items),
    "Append": Operation(
        CREATE_MEMORY,
        record=lambda q, r: r.result.seq,
        count=lambda q, r: 1,
        records=lambda q, r: [_new(q.item, r.result.seq)],
    ),
    "AppendBatch": Operation(CREATE_MEMORY, count=lambda q, r: len(r.results), records=_batch),
    # Its items may go to many conversations: no one store.
    "Import": Operation(CREATE_MEMORY, count=lambda q, r: r.appended),
    "Pin": _PIN,
    "Unpin": _PIN,
    # Items leave the active context (kept, marked): their records change.
    "Compact": Operation(
        UPDATE_MEMORY,
        record=lambda q, r: r.compaction.marker_seq,
        count=lambda q, r: r.compaction.items_archived,
        records=lambda q, r: [
            {"id": str(r.compaction.marker_seq), "content": r.compaction.summary}
        ],
    ),
    "Truncate": Operation(UPDATE_MEMORY, count=lambda q, r: len(r.truncated_seqs)),
    "RestoreCheckpoint": Operation(UPDATE_MEMORY, count=lambda q, r: r.reverted_items),
    "Forget": Operation(DELETE_MEMORY, count=lambda q, r: r.counts.items),
    "ApplyRetention": Operation(
        DELETE_MEMORY, count=lambda q, r: 0 if r.dry_run else r.items_removed
    ),
    "Search": Operation(
        SEARCH_MEMORY,
        count=lambda q, r: len(r.hits),
        query=lambda q, r: q.query,
        records=lambda q, r: [_scored(h) for h in r.hits],
    ),
    # The query a context was ranked for: the caller's, else the one made from its focus.
    "GetContext": Operation(
        SEARCH_MEMORY,
        count=lambda q, r: len(r.recent) + len(r.history),
        query=lambda q, r: q.query or (r.query if r is not None else ""),
        records=_context,
    ),
    "ListItems": Operation(
        SEARCH_MEMORY,
        count=lambda q, r: len(r.items),
        records=lambda q, r: [_item(i) for i in r.items],
    ),
    "GetActiveContext": Operation(
        SEARCH_MEMORY, count=lambda q, r: len(r.entries), records=_active
    ),
}


def store_id(request: Any) -> str | None:
    """The memory store a request names: "namespace/conversation_id", or the namespace alone
    for a call over all of its conversations; None for a call over every namespace, or
    without a request to read (a request stream)."""
    namespace = getattr(request, "namespace", None)
    if namespace is None or getattr(request, "all_namespaces", False):
        return None
    conversation = getattr(request, "conversation_id", "")
    namespace = namespace or DEFAULT_NAMESPACE
    return f"{namespace}/{conversation}" if conversation else namespace


def _parent(metadata: Sequence[tuple[str, Any]] | None) -> Context | None:
    """The caller's trace context from its metadata (None: the call starts a trace)."""
    carrier = {key: value for key, value in metadata or () if key in TRACE_HEADERS}
    return _PROPAGATOR.extract(carrier) if carrier else None


def _status(context: grpc.ServicerContext) -> str:
    """The status a call that raised ends with: the one it was aborted with."""
    # grpcio's servicer context has code(), which the type stubs leave out.
    code = getattr(context, "code", lambda: None)()
    return code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"


class _Call:
    """One call's span: attributes from its request at the start, from its responses as
    they go, and its status at the end."""

    __slots__ = ("_content", "_count", "_op", "_records", "_request", "_response", "_span")

    def __init__(self, span: Span, op: Operation | None, request: Any, content: bool) -> None:
        self._span = span
        self._op = op
        self._request = request
        self._content = content
        self._count = 0
        self._response: Any = None
        self._records: list[Record] = []

    def answered(self, response: Any) -> None:
        op = self._op
        if op is None:
            return
        self._response = response
        if op.count is not None:
            self._count += int(op.count(self._request, response))
        if self._content and op.records is not None:
            self._records.extend(op.records(self._request, response))

    def end(self, outcome: str) -> None:
        span, op = self._span, self._op
        span.set_attribute(RPC_STATUS, outcome)
        if outcome != "OK":
            span.set_attribute(ERROR_TYPE, outcome)
            if outcome in SERVER_ERRORS:
                span.set_status(Status(StatusCode.ERROR))
        elif op is not None:
            self._answer_attributes(op)
        span.end()

    def _answer_attributes(self, op: Operation) -> None:
        span, request, response = self._span, self._request, self._response
        if response is not None:
            if op.record is not None:
                span.set_attribute(RECORD_ID, str(op.record(request, response)))
            if op.count is not None:
                span.set_attribute(RECORD_COUNT, self._count)
        if self._content:
            if op.query is not None and request is not None:
                span.set_attribute(QUERY_TEXT, op.query(request, response))
            if op.records is not None and response is not None:
                span.set_attribute(RECORDS, json.dumps(self._records, ensure_ascii=False))


class _Untraced:
    """Stands for a call whose span failed to start: a bug in tracing must not fail calls."""

    def answered(self, response: Any) -> None:
        pass

    def end(self, outcome: str) -> None:
        pass


Begin = Callable[[Any], "_Call | _Untraced"]


class TracingInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Wraps each ContextService call in a server span; installed before the error
    interceptor, so that the span holds the whole call and its final status."""

    def __init__(self, tracer: Tracer, *, content: bool = False) -> None:
        """Args:
        tracer: where the spans go.
        content: also record query texts and records (gen_ai.memory.query.text, .records).
        """
        self._tracer = tracer
        self._content = content
        self._failed: set[str] = set()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not method.startswith(f"/{SERVICE_PREFIX}"):
            return handler  # health and reflection are library code
        begin: Begin = functools.partial(
            self._begin, method[1:], handler_call_details.invocation_metadata
        )
        kinds = (handler.request_streaming, handler.response_streaming)
        options = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if kinds == (True, True):
            return grpc.stream_stream_rpc_method_handler(
                _streaming(handler.stream_stream, begin, request_stream=True), **options
            )
        if kinds == (False, True):
            return grpc.unary_stream_rpc_method_handler(
                _streaming(handler.unary_stream, begin, request_stream=False), **options
            )
        if kinds == (True, False):
            return grpc.stream_unary_rpc_method_handler(
                _unary(handler.stream_unary, begin, request_stream=True), **options
            )
        return grpc.unary_unary_rpc_method_handler(
            _unary(handler.unary_unary, begin, request_stream=False), **options
        )

    def _begin(
        self, method: str, metadata: Sequence[tuple[str, Any]] | None, request: Any
    ) -> _Call | _Untraced:
        name = method.rpartition("/")[2]
        try:
            op = OPERATIONS.get(name)
            # A request that did not parse reaches here as a stand-in: no attributes from it.
            parsed = request if isinstance(request, Message) else None
            attributes: dict[str, str] = {RPC_SYSTEM: "grpc", RPC_METHOD: method}
            if parsed is not None:
                if namespace := getattr(parsed, "namespace", ""):
                    attributes[NAMESPACE] = namespace
                if conversation := getattr(parsed, "conversation_id", ""):
                    attributes[CONVERSATION] = conversation
            if op is not None:
                attributes[OPERATION] = op.name
                attributes[PROVIDER] = PROVIDER_NAME
                if (store := store_id(parsed)) is not None:
                    attributes[STORE_ID] = store
            span = self._tracer.start_span(
                op.name if op is not None else method,
                context=_parent(metadata),
                kind=SpanKind.SERVER,
                attributes=attributes,
            )
            return _Call(span, op, parsed, self._content)
        except Exception:
            self._failed_once(name)
            return _Untraced()

    def _failed_once(self, name: str) -> None:
        # Logged once per method: a broken mapping would otherwise log on every call.
        if name not in self._failed:
            self._failed.add(name)
            log.exception("%s: could not trace the call; it goes on untraced", name)


def _guarded(step: Callable[[], None]) -> None:
    try:
        step()
    except Exception:  # a span's attributes must never fail the call they describe
        log.exception("could not finish a call's span")


def _unary(
    inner: Callable[[Any, grpc.ServicerContext], Any] | None,
    begin: Begin,
    *,
    request_stream: bool,
) -> Callable[[Any, grpc.ServicerContext], Any]:
    """A call with one response (its request may be a stream) in a span."""
    assert inner is not None

    def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
        call = begin(None if request_stream else request)
        try:
            response = inner(request, context)
        except BaseException:
            _guarded(lambda: call.end(_status(context)))
            raise
        _guarded(lambda: call.answered(response))
        _guarded(lambda: call.end(as_answered("OK", context)))
        return response

    return wrapped


def _streaming(
    inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]] | None,
    begin: Begin,
    *,
    request_stream: bool,
) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    """A call with a stream of responses in a span, ended when the stream ends."""
    assert inner is not None

    def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        call = begin(None if request_stream else request)
        outcome: str | None = None
        responses = inner(request, context)
        try:
            for response in responses:
                _guarded(lambda: call.answered(response))  # noqa: B023 - called at once
                yield response
        except GeneratorExit:  # the client went away
            outcome = "CANCELLED"
            raise
        except BaseException:
            outcome = _status(context)
            raise
        finally:
            close = getattr(responses, "close", None)
            if close is not None:
                close()
            ended = outcome if outcome is not None else as_answered("OK", context)
            _guarded(lambda: call.end(ended))

    return wrapped
