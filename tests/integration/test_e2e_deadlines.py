"""A call whose client deadline passes stops its work, and the server says so in one line."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import grpc
import pytest
from conftest import StartService
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.ports.embedder import Vectors
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc


class StalledEmbedder(HashingEmbedder):
    """Holds the indexer on texts that say STALL until released, so vectors stay pending."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.stalled = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any("STALL" in t for t in texts):
            self.stalled.set()
            self.release.wait(60)
        return super().embed(texts)


# Generous: a call whose deadline passes while it waits for a worker never reaches the
# servicer (grpcio drops it unseen), and a busy machine may take a while to get it there.
CLIENT_DEADLINE = 2.0
WAIT = 60.0


def wait_until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("call", ["GetContext", "Search"])
def test_a_call_past_its_deadline_stops_waiting_for_vectors(
    start_service: StartService, caplog: pytest.LogCaptureFixture, call: str
) -> None:
    embedder = StalledEmbedder()
    # The server would wait up to 10 minutes for vectors; the client waits seconds.
    service = start_service(model=embedder, index_wait_seconds=600.0)
    # For the whole test, not around the call: the server logs on its own thread, which may
    # run after the client has its DEADLINE_EXCEEDED, when a narrower level would drop it.
    caplog.set_level(logging.DEBUG, logger="contextwm.requests")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            stub = pb_grpc.ContextServiceStub(channel)
            item = pb.NewItem(role="user", content="STALL the indexer on this turn")
            stub.Append(pb.AppendRequest(conversation_id="c", item=item))
            # The indexer holds the item: a reader cannot embed it itself, and waits.
            assert embedder.stalled.wait(WAIT)
            request = (
                pb.GetContextRequest(conversation_id="c", query="turn", max_tokens=500)
                if call == "GetContext"
                else pb.SearchRequest(conversation_id="c", query="turn", include_window=True)
            )
            with pytest.raises(grpc.RpcError) as err:
                getattr(stub, call)(request, timeout=CLIENT_DEADLINE)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

            # The call's report, a debug line, comes after all else it logs, and only once
            # something ended the server's wait: the one line says it was the deadline.
            def reported() -> bool:
                return any(
                    f"ContextService/{call} DEADLINE_EXCEEDED" in r.getMessage()
                    for r in caplog.records
                    if r.levelno == logging.DEBUG
                )

            assert wait_until(reported), [r.getMessage() for r in caplog.records]
            lines = [
                r.getMessage()
                for r in caplog.records
                if r.levelno >= logging.INFO and "deadline" in r.getMessage()
            ]
            assert len(lines) == 1, lines
            assert call in lines[0] and "waiting for the embedder (1 items pending)" in lines[0]
            assert all(r.exc_info is None for r in caplog.records)
    finally:
        embedder.release.set()


def test_a_call_with_time_to_spare_is_answered(start_service: StartService) -> None:
    embedder = StalledEmbedder()
    service = start_service(model=embedder, index_wait_seconds=30.0)
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        stub = pb_grpc.ContextServiceStub(channel)
        item = pb.NewItem(role="user", content="STALL the indexer on this turn")
        stub.Append(pb.AppendRequest(conversation_id="c", item=item))
        threading.Timer(0.3, embedder.release.set).start()
        request = pb.GetContextRequest(conversation_id="c", query="turn", max_tokens=500)
        assert "STALL" in stub.GetContext(request, timeout=WAIT).text
