"""The clients' reembed: the scope it asks for, progress read from the wire, the call
cancelled when the generator is closed early, and errors mapped to typed exceptions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from contextwm_client import AsyncClient, Client, FailedPreconditionError, ReembedProgress
from contextwm_client.v1 import contextwm_pb2 as pb

PB_PROGRESS = pb.ReembedProgress(
    model="all-MiniLM-L6-v2",
    conversations_done=1,
    conversations_total=3,
    items_done=40,
    items_total=90,
    items_reused=8,
    items_per_second=12.5,
    namespace="team",
    conversation_id="a",
    finished=True,
)
PROGRESS = ReembedProgress("all-MiniLM-L6-v2", 1, 3, 40, 90, 8, 12.5, "team", "a", True)


class Refused(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return "a re-embed is already running"


class FakeCall:
    """A response stream, sync and asyncio: its messages, then its error if any."""

    def __init__(self, *messages: Any, error: grpc.RpcError | None = None) -> None:
        self.messages = messages
        self.error = error
        self.cancelled = 0

    def __iter__(self) -> Iterator[Any]:
        yield from self.messages
        if self.error is not None:
            raise self.error

    async def __aiter__(self) -> AsyncIterator[Any]:
        for message in self:
            yield message

    def cancel(self) -> bool:
        self.cancelled += 1
        return True


class FakeStub:
    """Answers Reembed with the next call, recording the request and its options."""

    def __init__(self, *calls: FakeCall) -> None:
        self.calls = list(calls)
        self.requests: list[tuple[pb.ReembedRequest, dict[str, Any]]] = []

    def Reembed(self, request: pb.ReembedRequest, **options: Any) -> FakeCall:
        self.requests.append((request, options))
        return self.calls.pop(0)


def client_with(*calls: FakeCall) -> tuple[Client, FakeStub]:
    client = Client("127.0.0.1:1", namespace="team", timeout=7)
    stub = FakeStub(*calls)
    client._stub = stub  # type: ignore[assignment]
    return client, stub


def test_every_field_of_a_progress_report_is_read() -> None:
    assert {f.name for f in PB_PROGRESS.DESCRIPTOR.fields} == {
        f.name for f, _ in PB_PROGRESS.ListFields()
    }
    client, _ = client_with(FakeCall(PB_PROGRESS))
    with client:
        assert list(client.reembed()) == [PROGRESS]


def test_the_scope_asked_for_and_no_deadline_unless_given() -> None:
    client, stub = client_with(*(FakeCall() for _ in range(4)))
    with client:
        list(client.reembed("a"))
        list(client.reembed(namespace="other"))
        list(client.reembed(all_namespaces=True))
        list(client.reembed(timeout=60))
    sent = [(r.namespace, r.conversation_id, r.all_namespaces) for r, _ in stub.requests]
    assert sent == [("team", "a", False), ("other", "", False), ("", "", True), ("team", "", False)]
    assert [options["timeout"] for _, options in stub.requests] == [None, None, None, 60]


def test_closing_early_cancels_the_call() -> None:
    early, done = FakeCall(PB_PROGRESS, PB_PROGRESS), FakeCall(PB_PROGRESS)
    client, _ = client_with(early, done)
    with client:
        reports = client.reembed()
        next(reports)
        assert early.cancelled == 0
        reports.close()
        assert early.cancelled == 1
        list(client.reembed())
    assert done.cancelled == 1  # harmless once the stream ended


def test_an_error_during_the_stream_is_typed() -> None:
    call = FakeCall(PB_PROGRESS, error=Refused())
    client, _ = client_with(call)
    with client, pytest.raises(FailedPreconditionError, match="already running"):
        for _ in client.reembed():
            pass
    assert call.cancelled == 1


def test_async_reembed_reads_cancels_and_maps_errors() -> None:
    early, failing = FakeCall(PB_PROGRESS, PB_PROGRESS), FakeCall(error=Refused())

    async def run() -> list[ReembedProgress]:
        async with AsyncClient("127.0.0.1:1", namespace="team") as client:
            client._stub = FakeStub(early, failing)  # type: ignore[assignment]
            reports = client.reembed("a")
            first = [await anext(reports)]
            await reports.aclose()
            with pytest.raises(FailedPreconditionError):
                async for report in client.reembed():
                    first.append(report)
            return first

    assert asyncio.run(run()) == [PROGRESS]
    assert (early.cancelled, failing.cancelled) == (1, 1)
