"""A real OTLP/gRPC trace receiver on a loopback port: opentelemetry-proto's TraceService,
keeping every span it is sent, for tests (and the tracing benchmark) to wait for."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as service_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as service_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def value_of(value: AnyValue) -> Any:
    """An attribute's value as Python: a string, int, float or bool (what spans here carry)."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@dataclass(frozen=True, slots=True)
class Received:
    """One span as the collector got it, with its resource's and its own attributes."""

    span: Span
    resource: dict[str, Any]

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def attributes(self) -> dict[str, Any]:
        return {a.key: value_of(a.value) for a in self.span.attributes}

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def parent_span_id(self) -> str:
        return self.span.parent_span_id.hex()


class OtlpReceiver(service_grpc.TraceServiceServicer):
    """Listens on 127.0.0.1 (port 0 picks one) until closed; a context manager."""

    def __init__(self) -> None:
        self._spans: list[Received] = []
        self._arrived = threading.Condition()
        self.exports = 0  # Export calls answered
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        # The generated registration function has no annotations.
        service_grpc.add_TraceServiceServicer_to_server(self, self._server)  # type: ignore[no-untyped-call]
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        """The URL to give OTEL_EXPORTER_OTLP_ENDPOINT (plaintext gRPC)."""
        return f"http://127.0.0.1:{self.port}"

    def Export(  # the generated servicer's name
        self, request: service_pb.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> service_pb.ExportTraceServiceResponse:
        received = [
            Received(span, {a.key: value_of(a.value) for a in batch.resource.attributes})
            for batch in request.resource_spans
            for scope in batch.scope_spans
            for span in scope.spans
        ]
        with self._arrived:
            self._spans.extend(received)
            self.exports += 1
            self._arrived.notify_all()
        return service_pb.ExportTraceServiceResponse()

    def spans(self) -> list[Received]:
        with self._arrived:
            return list(self._spans)

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """The spans received, once there are at least count of them.

        Raises:
            TimeoutError: fewer arrived within timeout seconds.
        """
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self._spans) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self._spans)} of {count} spans arrived")
                self._arrived.wait(left)
            return list(self._spans)

    def close(self) -> None:
        self._server.stop(0).wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
