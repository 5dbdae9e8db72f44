"""A call whose client deadline passes stops its work, and the server says so in one line."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

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

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any("STALL" in t for t in texts):
            self.release.wait(60)
        return super().embed(texts)


@pytest.mark.parametrize("call", ["GetContext", "Search"])
def test_a_call_past_its_deadline_stops_waiting_for_vectors(
    start_service: StartService, caplog: pytest.LogCaptureFixture, call: str
) -> None:
    embedder = StalledEmbedder()
    # The server would wait up to 30 s for vectors; the client waits 0.5 s.
    service = start_service(model=embedder, index_wait_seconds=30.0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            stub = pb_grpc.ContextServiceStub(channel)
            item = pb.NewItem(role="user", content="STALL the indexer on this turn")
            stub.Append(pb.AppendRequest(conversation_id="c", item=item))
            request = (
                pb.GetContextRequest(conversation_id="c", query="turn", max_tokens=500)
                if call == "GetContext"
                else pb.SearchRequest(conversation_id="c", query="turn", include_window=True)
            )
            start = time.monotonic()
            with (
                caplog.at_level(logging.INFO, logger="contextwm.requests"),
                pytest.raises(grpc.RpcError) as err,
            ):
                getattr(stub, call)(request, timeout=0.5)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            # The server stops close to the deadline, not after its own 30 s wait.
            while time.monotonic() - start < 5 and not caplog.records:
                time.sleep(0.05)
            lines = [r.getMessage() for r in caplog.records if "deadline" in r.getMessage()]
            assert len(lines) == 1, lines
            assert call in lines[0] and "waiting for the embedder (1 items pending)" in lines[0]
            assert time.monotonic() - start < 5
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
        assert "STALL" in stub.GetContext(request, timeout=10).text
