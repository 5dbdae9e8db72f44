"""OpenTelemetry spans of a real server's calls: one server span per ContextService call,
named and attributed by the GenAI memory conventions (an RPC span for the other calls), the
caller's W3C traceparent continued, content attributes only when asked for; the spans kept by
the SDK's in-memory exporter, or sent over OTLP/gRPC to a receiver the test starts while the
server runs in a subprocess; the tracing page's client example, whose calls join the agent's
span (with asyncio, each task's own); and a server without tracing loads none of
OpenTelemetry."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm_client import AsyncClient, Client, ImportItem, NewItem, NotFoundError
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, Tracer
from otlp_receiver import OtlpReceiver
from server_process import ServerProcess

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"
SERVICE = "contextwm.v1.ContextService"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"


class Spans(InMemorySpanExporter):
    """The SDK's in-memory exporter, telling waiters when spans arrive: a stream's span ends
    after its last answer has gone, so the caller may be back before it."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = threading.Condition()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)
        with self._arrived:
            self._arrived.notify_all()
        return result

    def wait_for(self, count: int, timeout: float = 10.0) -> tuple[ReadableSpan, ...]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(found := self.get_finished_spans()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(found)} of {count} spans arrived")
                self._arrived.wait(left)
        return found


@pytest.fixture
def spans() -> Spans:
    return Spans()


def traced(start_service: StartService, spans: Spans, **settings: Any) -> Service:
    """A server whose every call makes a span into spans."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return start_service(tracer_provider=provider, **settings)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_each_call_is_one_server_span_named_by_the_memory_conventions(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("c1")
        client.append("c1", "the deploy to staging failed")
        client.append_batch(
            "c1",
            [
                NewItem(content="why did the deploy fail?"),
                NewItem(role="assistant", content="the readiness probe timed out"),
            ],
        )
        client.pin("c1", 1)
        hits = client.search("deploy", conversation_id="c1", include_window=True).hits
        context = client.get_context("c1", "deploy", max_tokens=500)
        client.search("deploy", include_window=True)  # the whole namespace
        client.get_conversation("c1")
        client.delete_conversation("c1")

    found = spans.get_finished_spans()
    assert [s.name for s in found] == [
        "create_memory_store",
        "create_memory",
        "create_memory",
        "update_memory",
        "search_memory",
        "search_memory",
        "search_memory",
        f"{SERVICE}/GetConversation",  # not a memory operation: the RPC conventions' name
        "delete_memory_store",
    ]
    methods = [
        "CreateConversation",
        "Append",
        "AppendBatch",
        "Pin",
        "Search",
        "GetContext",
        "Search",
        "GetConversation",
        "DeleteConversation",
    ]
    for span, method in zip(found, methods, strict=True):
        got = attributes(span)
        assert span.kind is SpanKind.SERVER
        assert span.status.status_code is StatusCode.UNSET
        assert got["rpc.system.name"] == "grpc"
        assert got["rpc.method"] == f"{SERVICE}/{method}"
        assert got["rpc.response.status_code"] == "OK"
        assert "error.type" not in got
        if method != "GetConversation":
            assert got["gen_ai.operation.name"] == span.name
            assert got["gen_ai.provider.name"] == "contextwm"
    by_position = [attributes(s) for s in found]
    create, append, batch, pin, search, get_context, wide, get, delete = by_position
    for got in (create, append, batch, pin, search, get_context, delete):
        assert got["gen_ai.memory.store.id"] == "default/c1"
    assert wide["gen_ai.memory.store.id"] == "default"  # a namespace-wide search
    assert (append["gen_ai.memory.record.id"], append["gen_ai.memory.record.count"]) == ("1", 1)
    assert batch["gen_ai.memory.record.count"] == 2 and "gen_ai.memory.record.id" not in batch
    assert pin["gen_ai.memory.record.id"] == "1"
    assert search["gen_ai.memory.record.count"] == len(hits) > 0
    assert get_context["gen_ai.memory.record.count"] == len(context.recent) + len(context.history)
    assert delete["gen_ai.memory.record.count"] == 3
    assert not any(key.startswith("gen_ai.") for key in get)
    assert get["contextwm.conversation.id"] == "c1"


def test_a_refused_call_carries_its_status(start_service: StartService, spans: Spans) -> None:
    service = traced(start_service, spans)
    with Client(f"127.0.0.1:{service.port}") as client, pytest.raises(NotFoundError):
        client.search("anything", conversation_id="missing")
    (span,) = spans.get_finished_spans()
    got = attributes(span)
    assert span.name == "search_memory"
    assert got["rpc.response.status_code"] == got["error.type"] == "NOT_FOUND"
    # The caller's mistake: a gRPC server span is an error only for the server's own.
    assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.memory.record.count" not in got


def test_the_callers_trace_is_continued(start_service: StartService, spans: Spans) -> None:
    service = traced(start_service, spans)
    target = f"127.0.0.1:{service.port}"
    sampled = [("traceparent", f"00-{TRACE_ID}-{PARENT_ID}-01")]
    unsampled = [("traceparent", f"00-{'1' * 32}-{'2' * 16}-00")]
    with Client(target, metadata=sampled) as caller:
        caller.append("c1", "a turn inside the agent's trace")
        caller.get_conversation("c1")
    with Client(target) as untraced:
        untraced.get_conversation("c1")
    with Client(target, metadata=unsampled) as unsampling:
        unsampling.get_conversation("c1")

    continued, also_continued, fresh = spans.get_finished_spans()  # the unsampled: none
    for span in (continued, also_continued):
        assert span.context is not None and span.parent is not None
        assert format(span.context.trace_id, "032x") == TRACE_ID
        assert format(span.parent.span_id, "016x") == PARENT_ID
        assert span.parent.is_remote
    assert fresh.parent is None
    assert fresh.context is not None and format(fresh.context.trace_id, "032x") != TRACE_ID


def test_content_attributes_are_off_unless_asked_for(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c1", "the deploy to staging failed")
        client.search("deploy", conversation_id="c1", include_window=True)
    for span in spans.get_finished_spans():
        got = attributes(span)
        assert "gen_ai.memory.query.text" not in got and "gen_ai.memory.records" not in got
        assert not any("deploy" in str(value) for value in got.values())


def test_content_attributes_follow_the_records_schema_when_on(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans, trace_content=True)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c1", "the deploy to staging failed", metadata={"ticket": "OPS-1"})
        client.append("c1", "lunch is at noon", role="assistant")
        hits = client.search("deploy", conversation_id="c1", include_window=True).hits
        context = client.get_context("c1", max_tokens=500)  # its query made from the focus

    first, second, search, get_context = (attributes(s) for s in spans.get_finished_spans())
    assert json.loads(first["gen_ai.memory.records"]) == [
        {"id": "1", "content": "the deploy to staging failed", "metadata": {"role": "user"}}
    ]
    assert json.loads(second["gen_ai.memory.records"])[0]["metadata"] == {"role": "assistant"}
    assert "gen_ai.memory.query.text" not in first  # no query in an append
    assert search["gen_ai.memory.query.text"] == "deploy"
    records = json.loads(search["gen_ai.memory.records"])
    assert [(r["id"], r["content"], r["score"]) for r in records] == [
        (str(h.item.seq), h.item.content, pytest.approx(h.score)) for h in hits
    ]
    assert records[0]["metadata"] == {"conversation_id": "c1", "role": hits[0].item.role}
    assert get_context["gen_ai.memory.query.text"] == context.query != ""
    shown = {r["content"] for r in json.loads(get_context["gen_ai.memory.records"])}
    assert shown == {s.item.content for s in (*context.recent, *context.history)}


def test_a_streamed_import_is_one_span_counting_its_items(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans)
    items = [
        ImportItem(f"c{i % 2}", NewItem(content=f"imported turn {i}", idempotency_key=f"k{i}"))
        for i in range(5)
    ]
    with Client(f"127.0.0.1:{service.port}") as client:
        client.import_items(items, chunk_size=2)
        client.import_items(items[:1])  # a duplicate: nothing created
    first, again = spans.wait_for(2)
    assert first.name == again.name == "create_memory"
    assert attributes(first)["rpc.method"] == f"{SERVICE}/Import"
    assert attributes(first)["gen_ai.memory.record.count"] == 5
    assert attributes(again)["gen_ai.memory.record.count"] == 0
    assert "gen_ai.memory.store.id" not in attributes(first)  # two conversations: no one store


def docs_example(target: str) -> dict[str, Any]:
    """Runs docs/tracing.md's client example against target; returns what it defined."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(), flags=re.S)
    (example,) = [b for b in blocks if "call_metadata" in b]
    defined: dict[str, Any] = {}
    exec(example.replace("127.0.0.1:50051", target), defined)
    return defined


def agent_tracer() -> Tracer:
    """The agent's own tracing, apart from the server's (its spans are not checked)."""
    return TracerProvider().get_tracer("agent")


def test_the_pages_example_puts_the_servers_spans_under_the_agents(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans)
    client: Client = docs_example(f"127.0.0.1:{service.port}")["client"]
    with client:
        with agent_tracer().start_as_current_span("invoke_agent") as turn:
            client.append("c1", "a turn of the agent")
            client.get_context("c1", "turn", max_tokens=200)
        client.get_conversation("c1")  # after the agent's span: a trace of its own

    inside, also_inside, after = spans.get_finished_spans()
    agent = turn.get_span_context()
    for span in (inside, also_inside):
        assert span.context is not None and span.parent is not None
        assert span.context.trace_id == agent.trace_id
        assert span.parent.span_id == agent.span_id
    assert after.parent is None


def test_the_asyncio_client_sends_each_tasks_own_trace(
    start_service: StartService, spans: Spans
) -> None:
    service = traced(start_service, spans)
    target = f"127.0.0.1:{service.port}"
    trace_headers = docs_example(target)["trace_headers"]
    tracer = agent_tracer()

    async def turn(client: AsyncClient, name: str) -> int:
        with tracer.start_as_current_span(name) as span:
            await asyncio.sleep(0)  # the other task runs its own span meanwhile
            await client.append("c1", name)
            return span.get_span_context().span_id

    async def run() -> list[int]:
        async with AsyncClient(target, call_metadata=trace_headers) as client:
            return list(await asyncio.gather(turn(client, "a"), turn(client, "b")))

    parents = asyncio.run(run())
    found = spans.get_finished_spans()
    assert sorted(s.parent.span_id for s in found if s.parent is not None) == sorted(parents)
    assert len(found) == 2 and parents[0] != parents[1]


# Run in a fresh interpreter: what a server without tracing loads, calls served included.
UNTRACED = """
import sys, tempfile
from pathlib import Path
from contextwm.app import Service
from contextwm.settings import ServerSettings
from contextwm_client import Client

settings = ServerSettings(
    port=0, data_dir=Path(tempfile.mkdtemp()), embedder="hashing", indexer_process=False
)
service = Service.start(settings)
with Client(f"127.0.0.1:{service.port}") as client:
    client.append("c1", "a turn")
    client.search("turn", conversation_id="c1", include_window=True)
service.stop(grace=0)
print(sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry"))
"""


@pytest.mark.slow
def test_a_server_without_tracing_loads_nothing_of_opentelemetry() -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", UNTRACED],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_spans_reach_an_otlp_receiver_named_by_the_standard_variables(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # ms between batches: the test need not wait 5 s
        }
        server = ServerProcess(tmp_path / "data", "--embedder", "hashing", env=env)
        try:
            traceparent = [("traceparent", f"00-{TRACE_ID}-{PARENT_ID}-01")]
            with Client(server.target, metadata=traceparent) as client:
                client.create_conversation("c1")
                client.append("c1", "the deploy to staging failed")
                client.search("deploy", conversation_id="c1", include_window=True)
                client.get_conversation("c1")
            arrived = receiver.wait_for(4)
        finally:
            assert server.terminate() == 0
    assert [s.name for s in arrived] == [
        "create_memory_store",
        "create_memory",
        "search_memory",
        f"{SERVICE}/GetConversation",
    ]
    for span in arrived:
        assert span.trace_id == TRACE_ID and span.parent_span_id == PARENT_ID
        assert span.resource["service.name"] == "contextwm"
    append = arrived[1].attributes
    assert append["gen_ai.memory.store.id"] == "default/c1"
    assert append["gen_ai.memory.record.id"] == "1"
    assert "tracing calls to " + receiver.endpoint in server.log()
