"""A gRPC server that records each call's method and metadata and implements nothing: the
health service reports ready, every ContextService call ends UNIMPLEMENTED. It shows what a
client sends, without a contextwm behind it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

CONTEXT_SERVICE = "/contextwm.v1.ContextService/"


@dataclass(frozen=True, slots=True)
class Call:
    """One call as the server saw it arrive."""

    method: str  # "/contextwm.v1.ContextService/GetConversation"
    metadata: dict[str, str]


class Recorder(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Records every call before handing it on (to nothing, for ContextService calls)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        metadata = {str(k): str(v) for k, v in handler_call_details.invocation_metadata or ()}
        with self._lock:
            self.calls.append(Call(str(handler_call_details.method), metadata))
        return continuation(handler_call_details)

    def context_calls(self) -> list[Call]:
        """The ContextService calls, in the order they arrived."""
        with self._lock:
            return [c for c in self.calls if c.method.startswith(CONTEXT_SERVICE)]


@contextmanager
def recording_server() -> Iterator[tuple[str, Recorder]]:
    """Yields the target of a server on a free loopback port, and its recorder."""
    recorder = Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[recorder])
    servicer = health.HealthServicer()
    servicer.set("contextwm.v1.ContextService", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder
    finally:
        server.stop(0).wait()
